// Package config is Sluice's configuration engine, Redis 7.0's config.c:
// every directive with its kind, bounds, default, aliases, validation and
// the text CONFIG GET shows; the parsing of memory units, percentages,
// octal numbers, enums and flag lists with Redis's error messages;
// redis.conf files with includes and command-line options (ApplyArgs);
// CONFIG GET's matching, CONFIG SET's all-or-nothing application of a
// set of values, and CONFIG REWRITE's rewriting of the file. It also
// applies oom-score-adj to the process and gathers the tls-* directives
// for package tlsconf.
//
// The values the server reads on its hot paths are exported atomics of
// Config, stored by the directives' apply functions, so reading one is a
// load. What a change must do to a running server (move listeners, turn
// the AOF on, load TLS, apply maxmemory) goes through Hooks, which the
// server sets; until then values are only stored.
package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicedb/sluice/acl"
)

// Config is the server's configuration: every directive's value as
// CONFIG GET shows it, and the values the server reads on its hot paths
// mirrored into atomics by their directives' apply functions.
type Config struct {
	mu    sync.RWMutex
	vals  map[string]string
	given map[string]bool // directives set at start-up (config file, flags, Set)

	pass atomic.Pointer[string]
	// ACL holds the users and the ACL log: it lives here because
	// requirepass and the "user" directive reach it before the server
	// exists.
	ACL *acl.Store

	MaxClients      atomic.Int64 // maxclients
	TimeoutSec      atomic.Int64 // timeout
	QbufLimit       atomic.Int64 // client-query-buffer-limit
	MaxBulkLen      atomic.Int64 // proto-max-bulk-len
	Hz              atomic.Int64 // hz, kept within 1..500
	OutLimitHard    atomic.Int64 // normal client output buffer hard limit, 0 = none
	OutLimitSoft    atomic.Int64
	OutLimitSecs    atomic.Int64
	PubLimitHard    atomic.Int64 // pubsub class
	PubLimitSoft    atomic.Int64
	PubLimitSecs    atomic.Int64
	ReplLimit       [3]atomic.Int64        // replica class: hard, soft, seconds
	NotifyFlags     atomic.Int64           // notify-keyspace-events, as Notify* flags
	ListPackSize    atomic.Int64           // list-max-listpack-size
	ListCompress    atomic.Int64           // list-compress-depth
	HashMaxEnt      atomic.Int64           // hash-max-listpack-entries
	HashMaxVal      atomic.Int64           // hash-max-listpack-value
	SetMaxIntset    atomic.Int64           // set-max-intset-entries
	SetMaxLP        atomic.Int64           // set-max-listpack-entries
	SetMaxLPVal     atomic.Int64           // set-max-listpack-value
	ZsetMaxEnt      atomic.Int64           // zset-max-listpack-entries
	ZsetMaxVal      atomic.Int64           // zset-max-listpack-value
	TrackingMaxKeys atomic.Int64           // tracking-table-max-keys
	MinReplicas     atomic.Int64           // min-replicas-to-write
	MinReplicasLag  atomic.Int64           // min-replicas-max-lag
	BusyThreshold   atomic.Int64           // busy-reply-threshold, ms
	MaxMemory       atomic.Int64           // maxmemory
	MaxmemClients   atomic.Int64           // maxmemory-clients: bytes, or -percent of maxmemory
	EvictSamples    atomic.Int64           // maxmemory-samples
	MaxmemoryPolicy atomic.Pointer[string] // maxmemory-policy
	EvictTenacity   atomic.Int64           // maxmemory-eviction-tenacity
	LFULogFactor    atomic.Int64           // lfu-log-factor
	LFUDecayTime    atomic.Int64           // lfu-decay-time
	SlowlogThresh   atomic.Int64           // slowlog-log-slower-than, microseconds
	SlowlogMaxLen   atomic.Int64           // slowlog-max-len
	LatencyThresh   atomic.Int64           // latency-monitor-threshold, ms
	LatencyTrack    atomic.Bool            // latency-tracking

	// LoopsWanted is the number of event loops (io-threads, or Sluice's
	// event-loops; 0: one per CPU), -1 after ServeOnGoroutines.
	LoopsWanted int

	// Renames are the rename-command directives read at start-up, in
	// order: a command's name and the name it takes ("" removes it).
	Renames  [][2]string
	commands *acl.Commands
	renamed  map[string]bool // names the renames gave (valid so far)
	removed  map[string]bool // the table's names renamed away

	// Hooks reach the running server; the server sets them.
	Hooks Hooks

	// Running is set once the server listens: listener directives move
	// the listeners from then on, and the hooks that apply after all of a
	// CONFIG SET's values run.
	Running atomic.Bool

	// loaded is set once the defaults are in place.
	loaded bool

	// file is the configuration file the server was started with ("" if none).
	file string

	// OnChange is called after a successful CONFIG SET of name.
	OnChange func(name, value string)
}

// Hooks are what the configuration needs of a running server: each is
// nil until the server sets it, and directives changed before then are
// only stored (the server reads them when it starts).
type Hooks struct {
	// Maxmemory applies maxmemory, its policy, maxmemory-clients and the
	// LFU parameters after a change.
	Maxmemory func()
	// Appendonly turns the AOF on or off.
	Appendonly func(on bool) error
	// Listen moves the TCP listeners (CONFIG SET port, bind).
	Listen func(bind []string, port string) error
	// LoadTLS loads the TLS configuration from the tls-* directives and
	// puts it in force; TLSLoaded reports whether one is in force.
	LoadTLS   func() error
	TLSLoaded func() bool
	// ListenTLS moves the TLS listeners (CONFIG SET tls-port).
	ListenTLS func(bind []string, port string) error
	// TLSAuthClients applies tls-auth-clients.
	TLSAuthClients func(v string)
	// Loading reports whether the server is loading its dataset: CONFIG
	// SET of dir, appendonly and repl-diskless-load is refused meanwhile.
	Loading func() bool
	// Master returns the master the server replicates ("host port"),
	// "" when it is a master: CONFIG GET replicaof and CONFIG REWRITE
	// show it.
	Master func() string
}

// RequirePass is non-empty when connections must authenticate: the
// default user has a password (requirepass sets it) or is off.
func (cfg *Config) RequirePass() string {
	if cfg.ACL != nil && cfg.ACL.AuthRequired() {
		return "auth"
	}
	return ""
}

// File returns the path of the configuration file loaded at start-up.
func (cfg *Config) File() string { return cfg.file }

// New returns the default configuration. cmds is the command table as
// ACL rules see it (for the "user" directive and the ACL store).
func New(cmds *acl.Commands) *Config {
	cfg := &Config{vals: map[string]string{}, commands: cmds}
	cfg.ACL = acl.NewStore(cmds, func() bool {
		// Read directly: Get would make an initialization cycle through
		// requirepass's setter.
		cfg.mu.RLock()
		v := cfg.vals["acl-pubsub-default"]
		cfg.mu.RUnlock()
		return v == "allchannels"
	})
	for _, p := range params {
		if err := cfg.set(p, p.def, true); err != nil {
			panic("default of " + p.name + ": " + err.Error())
		}
	}
	cfg.loaded = true
	return cfg
}

// Get returns the value of a directive as CONFIG GET shows it.
func (cfg *Config) Get(name string) string {
	p := paramByName[strings.ToLower(name)]
	if p == nil {
		return ""
	}
	return cfg.get(p)
}

func (cfg *Config) get(p *param) string {
	if p.show != nil {
		return p.show(cfg)
	}
	cfg.mu.RLock()
	defer cfg.mu.RUnlock()
	return cfg.vals[p.name]
}

// ServeOnGoroutines makes a server built from cfg serve each connection on
// a goroutine of its own, through Go's network poller, instead of on event
// loops: the embedded mode's choice. When the clients run in the server's
// own process, the runtime hands a request from the client's goroutine to
// the server's and back on one thread, where an event loop's locked thread
// would pay two thread wake-ups per round trip.
func (cfg *Config) ServeOnGoroutines() { cfg.LoopsWanted = -1 }

// Set sets a directive at start-up (immutable ones included).
func (cfg *Config) Set(name, value string) error {
	p := paramByName[strings.ToLower(name)]
	if p == nil {
		return fmt.Errorf("Bad directive or wrong number of arguments")
	}
	if err := cfg.set(p, value, true); err != nil {
		return err
	}
	cfg.markGiven(p.name)
	if p.name == "io-threads" {
		// Sluice runs io-threads event loops (default: one per two CPUs).
		cfg.LoopsWanted, _ = strconv.Atoi(value)
	}
	return nil
}

func (cfg *Config) markGiven(name string) {
	cfg.mu.Lock()
	if cfg.given == nil {
		cfg.given = map[string]bool{}
	}
	cfg.given[name] = true
	cfg.mu.Unlock()
}

// Given reports whether a directive was set at start-up (in the config
// file, as a flag or through Set), rather than left at its default.
func (cfg *Config) Given(name string) bool {
	cfg.mu.RLock()
	defer cfg.mu.RUnlock()
	return cfg.given[strings.ToLower(name)]
}

// errImmutable is CONFIG SET's error for start-up only directives.
var errImmutable = errors.New("can't set immutable config")

// set validates v for p, then applies and stores it.
func (cfg *Config) set(p *param, v string, startup bool) error {
	if p.immutable && !startup {
		return errImmutable
	}
	norm, err := p.normalize(v)
	if err != nil {
		return err
	}
	return cfg.store(p, norm)
}

// store applies an already normalised value.
func (cfg *Config) store(p *param, norm string) error {
	if p.apply != nil {
		if err := p.apply(cfg, norm); err != nil {
			return err
		}
	}
	cfg.mu.Lock()
	cfg.vals[p.name] = norm
	cfg.mu.Unlock()
	return nil
}

// renameCommand reads "rename-command name newname" as Redis does: name
// must be a command under the names given so far, and newname ("": the
// command goes) must not be one.
func (cfg *Config) renameCommand(from, to string) error {
	from, to = strings.ToLower(from), strings.ToLower(to)
	if cfg.renamed == nil {
		cfg.renamed, cfg.removed = map[string]bool{}, map[string]bool{}
	}
	exists := func(name string) bool {
		if cfg.renamed[name] {
			return true
		}
		c := cfg.commands.Lookup(name)
		return c != nil && !strings.Contains(c.Name, "|") && !cfg.removed[name]
	}
	if !exists(from) {
		return errors.New("No such command in rename-command")
	}
	if cfg.renamed[from] {
		delete(cfg.renamed, from)
	} else {
		cfg.removed[from] = true
	}
	if to != "" {
		if exists(to) {
			return errors.New("Target command name already exists")
		}
		cfg.renamed[to] = true
	}
	cfg.Renames = append(cfg.Renames, [2]string{from, to})
	return nil
}
