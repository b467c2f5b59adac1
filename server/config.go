package server

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicedb/sluice/store"
)

// paramKind is how a configuration value is parsed and shown.
type paramKind uint8

const (
	pString paramKind = iota
	pInt
	pMemory // bytes, accepting units (1gb, 512mb, 4k)
	pBool
	pEnum
	pSpecial // parsed by its own apply function
)

// param is one configuration directive, usable in the config file, from
// flags, and with CONFIG GET/SET.
type param struct {
	name      string
	alias     string
	kind      paramKind
	def       string
	min, max  int64
	enum      []string
	immutable bool // cannot be changed with CONFIG SET
	// apply validates and applies a new value (already normalised for its
	// kind) at start-up or at run time; nil for values only stored.
	apply func(cfg *Config, v string) error
	// show formats the value for CONFIG GET (nil: the stored text).
	show func(cfg *Config) string
}

// Config is the server's configuration. Values used on hot paths are
// mirrored into atomics by their apply functions.
type Config struct {
	mu   sync.RWMutex
	vals map[string]string

	pass          atomic.Pointer[string]
	maxClients    atomic.Int64
	timeoutSec    atomic.Int64
	qbufLimit     atomic.Int64
	maxBulkLen    atomic.Int64
	hz            atomic.Int64
	outLimitHard  atomic.Int64 // normal client output buffer hard limit, 0 = none
	outLimitSoft  atomic.Int64
	outLimitSecs  atomic.Int64
	pubLimitHard  atomic.Int64
	pubLimitSoft  atomic.Int64
	pubLimitSecs  atomic.Int64
	notifyFlags   atomic.Int64
	loopsWanted   int
	listPackSize  atomic.Int64
	listCompress  atomic.Int64
	hashMaxEnt    atomic.Int64
	hashMaxVal    atomic.Int64
	setMaxIntset  atomic.Int64
	setMaxLP      atomic.Int64
	setMaxLPVal   atomic.Int64
	zsetMaxEnt    atomic.Int64
	zsetMaxVal    atomic.Int64
	busyThreshold atomic.Int64

	// OnChange is called after a successful CONFIG SET of name.
	OnChange func(name, value string)
}

func (cfg *Config) requirePass() string {
	if p := cfg.pass.Load(); p != nil {
		return *p
	}
	return ""
}

func intApply(dst func(*Config) *atomic.Int64) func(*Config, string) error {
	return func(cfg *Config, v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		dst(cfg).Store(n)
		return nil
	}
}

var params = []*param{
	{name: "port", kind: pInt, def: "6379", min: 0, max: 65535, immutable: true},
	{name: "bind", kind: pString, def: "127.0.0.1", immutable: true},
	{name: "unixsocket", kind: pString, def: "", immutable: true},
	{name: "unixsocketperm", kind: pInt, def: "0", min: 0, max: 0777, immutable: true},
	{name: "requirepass", kind: pString, def: "", apply: func(cfg *Config, v string) error {
		cfg.pass.Store(&v)
		return nil
	}},
	{name: "databases", kind: pInt, def: "16", min: 1, max: math.MaxInt32, immutable: true},
	{name: "maxclients", kind: pInt, def: "10000", min: 1, max: math.MaxInt32, apply: intApply(func(c *Config) *atomic.Int64 { return &c.maxClients })},
	{name: "timeout", kind: pInt, def: "0", min: 0, max: math.MaxInt32, apply: intApply(func(c *Config) *atomic.Int64 { return &c.timeoutSec })},
	{name: "tcp-keepalive", kind: pInt, def: "300", min: 0, max: math.MaxInt32},
	{name: "tcp-backlog", kind: pInt, def: "511", min: 0, max: math.MaxInt32, immutable: true},
	{name: "loglevel", kind: pEnum, def: "notice", enum: []string{"debug", "verbose", "notice", "warning", "nothing"}},
	{name: "logfile", kind: pString, def: "", immutable: true},
	{name: "daemonize", kind: pBool, def: "no", immutable: true},
	{name: "pidfile", kind: pString, def: "", immutable: true},
	{name: "dir", kind: pString, def: "", show: func(*Config) string { return workDir() }},
	{name: "dbfilename", kind: pString, def: "dump.rdb"},
	{name: "save", kind: pString, def: ""},
	{name: "appendonly", kind: pBool, def: "no"},
	{name: "appendfsync", kind: pEnum, def: "everysec", enum: []string{"always", "everysec", "no"}},
	{name: "appendfilename", kind: pString, def: "appendonly.aof", immutable: true},
	{name: "client-query-buffer-limit", kind: pMemory, def: "1gb", min: 1024 * 1024, max: math.MaxInt64, apply: intApply(func(c *Config) *atomic.Int64 { return &c.qbufLimit })},
	{name: "proto-max-bulk-len", kind: pMemory, def: "512mb", min: 1024 * 1024, max: math.MaxInt64, apply: intApply(func(c *Config) *atomic.Int64 { return &c.maxBulkLen })},
	{name: "hz", kind: pInt, def: "10", min: 0, max: math.MaxInt32, apply: func(cfg *Config, v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n < 1 {
			n = 1
		}
		if n > 500 {
			n = 500
		}
		cfg.hz.Store(n)
		return nil
	}},
	{name: "dynamic-hz", kind: pBool, def: "yes"},
	{name: "client-output-buffer-limit", kind: pSpecial, def: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", apply: applyOutputLimits},
	{name: "notify-keyspace-events", kind: pSpecial, def: "", apply: applyNotify, show: showNotify},
	{name: "io-threads", kind: pInt, def: "0", min: 0, max: 128, immutable: true},
	{name: "io-threads-do-reads", kind: pBool, def: "no", immutable: true},
	{name: "maxmemory", kind: pMemory, def: "0", min: 0, max: math.MaxInt64},
	{name: "maxmemory-policy", kind: pEnum, def: "noeviction", enum: []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"}},
	{name: "maxmemory-samples", kind: pInt, def: "5", min: 1, max: 64},
	{name: "maxmemory-eviction-tenacity", kind: pInt, def: "10", min: 0, max: 100},
	{name: "lfu-log-factor", kind: pInt, def: "10", min: 0, max: math.MaxInt32},
	{name: "lfu-decay-time", kind: pInt, def: "1", min: 0, max: math.MaxInt32},
	{name: "active-expire-effort", kind: pInt, def: "1", min: 1, max: 10},
	{name: "lazyfree-lazy-eviction", kind: pBool, def: "no"},
	{name: "lazyfree-lazy-expire", kind: pBool, def: "no"},
	{name: "lazyfree-lazy-server-del", kind: pBool, def: "no"},
	{name: "lazyfree-lazy-user-del", kind: pBool, def: "no"},
	{name: "lazyfree-lazy-user-flush", kind: pBool, def: "no"},
	{name: "list-max-listpack-size", alias: "list-max-ziplist-size", kind: pInt, def: "-2", min: math.MinInt32, max: math.MaxInt32, apply: intApply(func(c *Config) *atomic.Int64 { return &c.listPackSize })},
	{name: "list-compress-depth", kind: pInt, def: "0", min: 0, max: math.MaxInt32, apply: intApply(func(c *Config) *atomic.Int64 { return &c.listCompress })},
	{name: "hash-max-listpack-entries", alias: "hash-max-ziplist-entries", kind: pInt, def: "512", min: 0, max: math.MaxInt64, apply: intApply(func(c *Config) *atomic.Int64 { return &c.hashMaxEnt })},
	{name: "hash-max-listpack-value", alias: "hash-max-ziplist-value", kind: pInt, def: "64", min: 0, max: math.MaxInt64, apply: intApply(func(c *Config) *atomic.Int64 { return &c.hashMaxVal })},
	{name: "set-max-intset-entries", kind: pInt, def: "512", min: 0, max: math.MaxInt64, apply: intApply(func(c *Config) *atomic.Int64 { return &c.setMaxIntset })},
	{name: "set-max-listpack-entries", kind: pInt, def: "128", min: 0, max: math.MaxInt64, apply: intApply(func(c *Config) *atomic.Int64 { return &c.setMaxLP })},
	{name: "set-max-listpack-value", kind: pInt, def: "64", min: 0, max: math.MaxInt64, apply: intApply(func(c *Config) *atomic.Int64 { return &c.setMaxLPVal })},
	{name: "zset-max-listpack-entries", alias: "zset-max-ziplist-entries", kind: pInt, def: "128", min: 0, max: math.MaxInt64, apply: intApply(func(c *Config) *atomic.Int64 { return &c.zsetMaxEnt })},
	{name: "zset-max-listpack-value", alias: "zset-max-ziplist-value", kind: pInt, def: "64", min: 0, max: math.MaxInt64, apply: intApply(func(c *Config) *atomic.Int64 { return &c.zsetMaxVal })},
	{name: "stream-node-max-bytes", kind: pMemory, def: "4096", min: 0, max: math.MaxInt64},
	{name: "stream-node-max-entries", kind: pInt, def: "100", min: 0, max: math.MaxInt64},
	{name: "hll-sparse-max-bytes", kind: pMemory, def: "3000", min: 0, max: math.MaxInt64},
	{name: "activerehashing", kind: pBool, def: "yes"},
	{name: "activedefrag", kind: pBool, def: "no"},
	{name: "lua-time-limit", alias: "busy-reply-threshold", kind: pInt, def: "5000", min: 0, max: math.MaxInt64, apply: intApply(func(c *Config) *atomic.Int64 { return &c.busyThreshold })},
	{name: "slowlog-log-slower-than", kind: pInt, def: "10000", min: -1, max: math.MaxInt64},
	{name: "slowlog-max-len", kind: pInt, def: "128", min: 0, max: math.MaxInt64},
	{name: "latency-monitor-threshold", kind: pInt, def: "0", min: 0, max: math.MaxInt64},
	{name: "latency-tracking", kind: pBool, def: "yes"},
	{name: "protected-mode", kind: pBool, def: "no"},
	{name: "enable-debug-command", kind: pEnum, def: "no", enum: []string{"no", "yes", "local"}, immutable: true},
	{name: "replica-read-only", alias: "slave-read-only", kind: pBool, def: "yes"},
	{name: "repl-diskless-sync", kind: pBool, def: "yes"},
	{name: "rdbcompression", kind: pBool, def: "yes"},
	{name: "rdbchecksum", kind: pBool, def: "yes"},
	{name: "stop-writes-on-bgsave-error", kind: pBool, def: "yes"},
	{name: "close-on-replica-write", kind: pBool, def: "yes"},
	{name: "lazyfree-lazy-user-flush", kind: pBool, def: "no"},
	{name: "cluster-enabled", kind: pBool, def: "no", immutable: true},
	{name: "appenddirname", kind: pString, def: "appendonlydir", immutable: true},
	{name: "acllog-max-len", kind: pInt, def: "128", min: 0, max: math.MaxInt64},
	{name: "tracking-table-max-keys", kind: pInt, def: "1000000", min: 0, max: math.MaxInt64},
	{name: "oom-score-adj", kind: pEnum, def: "no", enum: []string{"no", "yes", "relative", "absolute"}},
	{name: "jemalloc-bg-thread", kind: pBool, def: "yes"},
	{name: "crash-log-enabled", kind: pBool, def: "yes"},
	{name: "set-proc-title", kind: pBool, def: "yes", immutable: true},
	{name: "always-show-logo", kind: pBool, def: "no", immutable: true},
	{name: "lua-replicate-commands", kind: pBool, def: "yes"},
	{name: "io-threads-loops", kind: pInt, def: "0", min: 0, max: 1024, immutable: true},
}

// Dedupe by name (a directive listed twice keeps its first definition).
var paramByName = func() map[string]*param {
	m := map[string]*param{}
	for _, p := range params {
		if _, ok := m[p.name]; ok {
			continue
		}
		m[p.name] = p
		if p.alias != "" {
			m[p.alias] = p
		}
	}
	return m
}()

// NewConfig returns the default configuration.
func NewConfig() *Config {
	cfg := &Config{vals: map[string]string{}}
	seen := map[*param]bool{}
	for _, p := range params {
		if seen[p] || paramByName[p.name] != p {
			continue
		}
		seen[p] = true
		if err := cfg.set(p, p.def, true); err != nil {
			panic("default of " + p.name + ": " + err.Error())
		}
	}
	return cfg
}

// Get returns the stored value of a directive.
func (cfg *Config) Get(name string) string {
	p := paramByName[strings.ToLower(name)]
	if p == nil {
		return ""
	}
	if p.show != nil {
		return p.show(cfg)
	}
	cfg.mu.RLock()
	defer cfg.mu.RUnlock()
	return cfg.vals[p.name]
}

// Set sets a directive at start-up (immutable ones included).
func (cfg *Config) Set(name, value string) error {
	p := paramByName[strings.ToLower(name)]
	if p == nil {
		return fmt.Errorf("Bad directive or wrong number of arguments")
	}
	return cfg.set(p, value, true)
}

// errInvalid is the argument error for CONFIG SET values.
var errInvalid = errors.New("argument must be a memory or a number")

func (cfg *Config) set(p *param, v string, startup bool) error {
	if p.immutable && !startup {
		return errors.New("can't set immutable config")
	}
	norm := v
	switch p.kind {
	case pInt:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || strings.TrimSpace(v) != v {
			return errors.New("argument couldn't be parsed into an integer")
		}
		if n < p.min || n > p.max {
			return fmt.Errorf("argument must be between %d and %d inclusive", p.min, p.max)
		}
		norm = strconv.FormatInt(n, 10)
	case pMemory:
		n, ok := parseMemory(v)
		if !ok {
			return errInvalid
		}
		if n < p.min || n > p.max {
			return fmt.Errorf("argument must be between %d and %d inclusive", p.min, p.max)
		}
		norm = strconv.FormatInt(n, 10)
	case pBool:
		switch strings.ToLower(v) {
		case "yes":
			norm = "yes"
		case "no":
			norm = "no"
		default:
			return errors.New("argument must be 'yes' or 'no'")
		}
	case pEnum:
		found := false
		for _, e := range p.enum {
			if strings.EqualFold(e, v) {
				norm, found = e, true
			}
		}
		if !found {
			return fmt.Errorf("argument(s) must be one of the following: %s", strings.Join(p.enum, ", "))
		}
	}
	if p.apply != nil {
		if err := p.apply(cfg, norm); err != nil {
			return err
		}
	}
	cfg.mu.Lock()
	if p.kind == pSpecial && p.show == nil && p.name == "client-output-buffer-limit" {
		norm = cfg.showOutputLimits()
	}
	cfg.vals[p.name] = norm
	cfg.mu.Unlock()
	return nil
}

// parseMemory parses "1gb", "100mb", "4k", "1024" as Redis's memtoull does.
func parseMemory(s string) (int64, bool) {
	ls := strings.ToLower(s)
	mul := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1000 * 1000 * 1000}, {"m", 1000 * 1000}, {"k", 1000}, {"b", 1}} {
		if strings.HasSuffix(ls, u.suf) {
			ls = ls[:len(ls)-len(u.suf)]
			mul = u.m
			break
		}
	}
	if ls == "" {
		return 0, false
	}
	for _, c := range ls {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(ls, 10, 64)
	if err != nil || n > math.MaxInt64/uint64(mul) {
		return 0, false
	}
	return int64(n) * mul, true
}

func applyOutputLimits(cfg *Config, v string) error {
	f := strings.Fields(v)
	if len(f)%4 != 0 || len(f) == 0 {
		return errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	type lim struct{ hard, soft, secs int64 }
	parsed := map[string]lim{}
	for i := 0; i < len(f); i += 4 {
		class := strings.ToLower(f[i])
		switch class {
		case "normal", "slave", "replica", "pubsub":
		default:
			return errors.New("Invalid client class specified in buffer limit configuration.")
		}
		hard, ok1 := parseMemory(f[i+1])
		soft, ok2 := parseMemory(f[i+2])
		secs, err := strconv.ParseInt(f[i+3], 10, 64)
		if !ok1 || !ok2 || err != nil || secs < 0 {
			return errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		parsed[class] = lim{hard, soft, secs}
	}
	if l, ok := parsed["normal"]; ok {
		cfg.outLimitHard.Store(l.hard)
		cfg.outLimitSoft.Store(l.soft)
		cfg.outLimitSecs.Store(l.secs)
	}
	if l, ok := parsed["pubsub"]; ok {
		cfg.pubLimitHard.Store(l.hard)
		cfg.pubLimitSoft.Store(l.soft)
		cfg.pubLimitSecs.Store(l.secs)
	}
	return nil
}

func (cfg *Config) showOutputLimits() string {
	return fmt.Sprintf("normal %d %d %d slave 268435456 67108864 60 pubsub %d %d %d",
		cfg.outLimitHard.Load(), cfg.outLimitSoft.Load(), cfg.outLimitSecs.Load(),
		cfg.pubLimitHard.Load(), cfg.pubLimitSoft.Load(), cfg.pubLimitSecs.Load())
}

// Keyspace notification flags, as Redis's notify.c names them.
const (
	NotifyKeyspace = 1 << iota // K
	NotifyKeyevent             // E
	NotifyGeneric              // g
	NotifyString               // $
	NotifyList                 // l
	NotifySet                  // s
	NotifyHash                 // h
	NotifyZset                 // z
	NotifyExpired              // x
	NotifyEvicted              // e
	NotifyStream               // t
	NotifyKeyMiss              // m
	NotifyLoaded               // module only
	NotifyModule               // d
	NotifyNew                  // n
	NotifyAll      = NotifyGeneric | NotifyString | NotifyList | NotifySet | NotifyHash | NotifyZset | NotifyExpired | NotifyEvicted | NotifyStream | NotifyModule
)

func parseNotify(v string) (int64, bool) {
	var f int64
	for _, c := range v {
		switch c {
		case 'A':
			f |= NotifyAll
		case 'g':
			f |= NotifyGeneric
		case '$':
			f |= NotifyString
		case 'l':
			f |= NotifyList
		case 's':
			f |= NotifySet
		case 'h':
			f |= NotifyHash
		case 'z':
			f |= NotifyZset
		case 'x':
			f |= NotifyExpired
		case 'e':
			f |= NotifyEvicted
		case 'K':
			f |= NotifyKeyspace
		case 'E':
			f |= NotifyKeyevent
		case 't':
			f |= NotifyStream
		case 'm':
			f |= NotifyKeyMiss
		case 'd':
			f |= NotifyModule
		case 'n':
			f |= NotifyNew
		default:
			return 0, false
		}
	}
	return f, true
}

func applyNotify(cfg *Config, v string) error {
	f, ok := parseNotify(v)
	if !ok {
		return errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
	}
	cfg.notifyFlags.Store(f)
	return nil
}

func showNotify(cfg *Config) string {
	f := cfg.notifyFlags.Load()
	var b []byte
	if f&NotifyAll == NotifyAll {
		b = append(b, 'A')
	} else {
		for _, x := range []struct {
			bit int64
			c   byte
		}{{NotifyGeneric, 'g'}, {NotifyString, '$'}, {NotifyList, 'l'}, {NotifySet, 's'}, {NotifyHash, 'h'}, {NotifyZset, 'z'}, {NotifyExpired, 'x'}, {NotifyEvicted, 'e'}, {NotifyStream, 't'}, {NotifyModule, 'd'}} {
			if f&x.bit != 0 {
				b = append(b, x.c)
			}
		}
	}
	if f&NotifyKeyspace != 0 {
		b = append(b, 'K')
	}
	if f&NotifyKeyevent != 0 {
		b = append(b, 'E')
	}
	if f&NotifyKeyMiss != 0 {
		b = append(b, 'm')
	}
	if f&NotifyNew != 0 {
		b = append(b, 'n')
	}
	return string(b)
}

// matchParams returns the directives whose names match pattern (CONFIG GET).
func matchParams(pattern string) []*param {
	var out []*param
	if !strings.ContainsAny(pattern, "*?[") {
		if p := paramByName[strings.ToLower(pattern)]; p != nil {
			return []*param{p}
		}
		return nil
	}
	names := make([]string, 0, len(paramByName))
	for n := range paramByName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if store.Match([]byte(pattern), []byte(n), true) {
			out = append(out, paramByName[n])
		}
	}
	return out
}
