package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/sluicedb/sluice/resp"
)

// paramKind is how a configuration value is parsed and shown.
type paramKind uint8

const (
	pString paramKind = iota
	pInt              // numeric; see the num* flags
	pMemory           // numeric in bytes, accepting units (1gb, 512mb, 4k)
	pBool
	pEnum
	pSpecial // parsed by its own apply function
)

// Numeric flags, as Redis's numeric configs have them.
const (
	numMemory   = 1 << iota // accepts memory units
	numPercent              // accepts "N%", stored as -N
	numOctal                // parsed and shown in octal
	numUnsigned             // bounds are compared as unsigned numbers
)

// param is one configuration directive, usable in the config file, from
// flags, and with CONFIG GET/SET. The table mirrors Redis 7.0's config.c:
// every directive exists with its Redis default, even where Sluice only
// stores the value.
type param struct {
	name      string
	alias     string
	kind      paramKind
	def       string
	min, max  int64
	numFlags  int
	enum      []string
	enumVals  []int // values of enum (nil: the index); bitflags when multiArg
	immutable bool  // cannot be changed with CONFIG SET
	protected bool  // CONFIG SET only when enable-protected-configs allows it
	noLoading bool  // CONFIG SET refused while loading (Redis's DENY_LOADING_CONFIG)
	hidden    bool  // not matched by CONFIG GET patterns
	multiArg  bool  // the value is a list of words
	keepEmpty bool  // a string whose empty value is a value (Redis's ALLOW_EMPTY_STRING with an empty default)
	// clamp, for numbers, brings a value within bounds Redis enforces
	// silently (hz).
	clamp func(n int64) int64
	// settle is what Redis's apply function does to a value that CONFIG
	// SET changed: it returns the value kept. hz is server.hz as the
	// apply functions run.
	settle func(v string, hz int64) string
	// check validates a value beyond its kind (the normalised value).
	check func(v string) error
	// apply validates and applies a new value (already normalised for its
	// kind) at start-up or at run time; nil for values only stored.
	apply func(cfg *Config, v string) error
	// show formats the value for CONFIG GET (nil: the stored text).
	show func(cfg *Config) string
	// later, for CONFIG SET, applies the value once all of the command's
	// values are set (Redis's apply functions; the TLS directives).
	later *laterHook
}

func intApply(dst func(*Config) *atomic.Int64) func(*Config, string) error {
	return func(cfg *Config, v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		dst(cfg).Store(n)
		return nil
	}
}

const (
	intMax   = math.MaxInt32
	intMin   = math.MinInt32
	uintMax  = math.MaxUint32
	longMax  = math.MaxInt64
	ullongMx = -1 // ULLONG_MAX, compared as unsigned
)

func boolP(name, def string, immutable bool) *param {
	return &param{name: name, kind: pBool, def: def, immutable: immutable}
}

func strP(name, def string, immutable bool) *param {
	return &param{name: name, kind: pString, def: def, immutable: immutable}
}

func intP(name string, min, max int64, def string) *param {
	return &param{name: name, kind: pInt, def: def, min: min, max: max}
}

func memP(name string, min, max int64, def string) *param {
	return &param{name: name, kind: pMemory, def: def, min: min, max: max, numFlags: numMemory}
}

func enumP(name, def string, vals ...string) *param {
	return &param{name: name, kind: pEnum, def: def, enum: vals}
}

// with helpers set optional fields on a param built above.
func (p *param) aliased(a string) *param                               { p.alias = a; return p }
func (p *param) imm() *param                                           { p.immutable = true; return p }
func (p *param) unsigned() *param                                      { p.numFlags |= numUnsigned; return p }
func (p *param) hide() *param                                          { p.hidden = true; return p }
func (p *param) onSet(fn func(*Config, string) error) *param           { p.apply = fn; return p }
func (p *param) valid(fn func(string) error) *param                    { p.check = fn; return p }
func (p *param) shown(fn func(*Config) string) *param                  { p.show = fn; return p }
func (p *param) vals(v ...int) *param                                  { p.enumVals = v; return p }
func (p *param) multi() *param                                         { p.multiArg = true; return p }
func (p *param) prot() *param                                          { p.protected = true; return p }
func (p *param) denyLoading() *param                                   { p.noLoading = true; return p }
func (p *param) after(h *laterHook) *param                             { p.later = h; return p }
func (p *param) emptyOK() *param                                       { p.keepEmpty = true; return p }
func atom(f func(c *Config) *atomic.Int64) func(*Config, string) error { return intApply(f) }

// mmApply stores a numeric value (dst nil: none) and tells the server its
// maxmemory settings changed.
func mmApply(dst func(c *Config) *atomic.Int64) func(*Config, string) error {
	return func(cfg *Config, v string) error {
		if dst != nil {
			n, _ := strconv.ParseInt(v, 10, 64)
			dst(cfg).Store(n)
		}
		if cfg.Hooks.Maxmemory != nil {
			cfg.Hooks.Maxmemory()
		}
		return nil
	}
}

var params = []*param{
	// Bool configs.
	boolP("rdbchecksum", "yes", true),
	boolP("daemonize", "no", true),
	boolP("io-threads-do-reads", "no", true),
	boolP("always-show-logo", "no", true),
	boolP("protected-mode", "yes", false),
	boolP("rdbcompression", "yes", false),
	boolP("rdb-del-sync-files", "no", false),
	boolP("activerehashing", "yes", false),
	boolP("stop-writes-on-bgsave-error", "yes", false),
	boolP("set-proc-title", "yes", true),
	boolP("dynamic-hz", "yes", false),
	boolP("lazyfree-lazy-eviction", "no", false),
	boolP("lazyfree-lazy-expire", "no", false),
	boolP("lazyfree-lazy-server-del", "no", false),
	boolP("lazyfree-lazy-user-del", "no", false),
	boolP("lazyfree-lazy-user-flush", "no", false),
	boolP("repl-disable-tcp-nodelay", "no", false),
	boolP("repl-diskless-sync", "yes", false),
	boolP("aof-rewrite-incremental-fsync", "yes", false),
	boolP("no-appendfsync-on-rewrite", "no", false),
	boolP("cluster-require-full-coverage", "yes", false),
	boolP("rdb-save-incremental-fsync", "yes", false),
	boolP("aof-load-truncated", "yes", false),
	boolP("aof-use-rdb-preamble", "yes", false),
	boolP("aof-timestamp-enabled", "no", false),
	boolP("cluster-replica-no-failover", "no", false).aliased("cluster-slave-no-failover"),
	boolP("replica-lazy-flush", "no", false).aliased("slave-lazy-flush"),
	boolP("replica-serve-stale-data", "yes", false).aliased("slave-serve-stale-data"),
	boolP("replica-read-only", "yes", false).aliased("slave-read-only"),
	boolP("replica-ignore-maxmemory", "yes", false).aliased("slave-ignore-maxmemory"),
	boolP("jemalloc-bg-thread", "yes", false),
	boolP("activedefrag", "no", false).valid(func(v string) error {
		if v == "yes" {
			return errors.New("Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution")
		}
		return nil
	}),
	boolP("syslog-enabled", "no", true),
	boolP("cluster-enabled", "no", true),
	boolP("appendonly", "no", false).denyLoading().onSet(func(cfg *Config, v string) error {
		if cfg.Hooks.Appendonly != nil {
			return cfg.Hooks.Appendonly(v == "yes")
		}
		return nil
	}),
	boolP("cluster-allow-reads-when-down", "no", false),
	boolP("cluster-allow-pubsubshard-when-down", "yes", false),
	boolP("crash-log-enabled", "yes", false),
	boolP("crash-memcheck-enabled", "yes", false),
	boolP("use-exit-on-panic", "no", false).hide(),
	boolP("disable-thp", "yes", true),
	boolP("cluster-allow-replica-migration", "yes", false),
	boolP("replica-announced", "yes", false),
	boolP("latency-tracking", "yes", false).onSet(func(cfg *Config, v string) error {
		cfg.LatencyTrack.Store(v == "yes")
		return nil
	}),
	boolP("aof-disable-auto-gc", "no", false),
	boolP("replica-ignore-disk-write-errors", "no", false),

	// String configs.
	strP("aclfile", "", true).emptyOK(),
	strP("unixsocket", "", true),
	strP("pidfile", "", true),
	strP("replica-announce-ip", "", false).aliased("slave-announce-ip"),
	strP("masteruser", "", false),
	strP("cluster-announce-ip", "", false),
	strP("cluster-config-file", "nodes.conf", true),
	strP("cluster-announce-hostname", "", false).valid(validHostname),
	strP("syslog-ident", "redis", true),
	strP("dbfilename", "dump.rdb", false).prot().valid(func(v string) error {
		if strings.ContainsRune(v, '/') {
			return errors.New("dbfilename can't be a path, just a filename")
		}
		return nil
	}),
	strP("appendfilename", "appendonly.aof", true).valid(func(v string) error {
		if v == "" {
			return errors.New("appendfilename can't be empty")
		}
		if strings.ContainsRune(v, '/') {
			return errors.New("appendfilename can't be a path, just a filename")
		}
		return nil
	}),
	strP("appenddirname", "appendonlydir", true).valid(func(v string) error {
		if v == "" {
			return errors.New("appenddirname can't be empty")
		}
		if strings.ContainsRune(v, '/') {
			return errors.New("appenddirname can't be a path, just a dirname")
		}
		return nil
	}),
	strP("server_cpulist", "", true),
	strP("bio_cpulist", "", true),
	strP("aof_rewrite_cpulist", "", true),
	strP("bgsave_cpulist", "", true),
	strP("ignore-warnings", "", false).emptyOK(),
	strP("proc-title-template", "{title} {listen-addr} {server-mode}", false).valid(validProcTitle),
	strP("bind-source-addr", "", false),
	strP("logfile", "", true).emptyOK(),
	strP("masterauth", "", false),
	strP("requirepass", "", false).onSet(func(cfg *Config, v string) error {
		cfg.pass.Store(&v)
		cfg.ACL.SetRequirePass(v)
		return nil
	}),

	// Enum configs.
	enumP("supervised", "no", "upstart", "systemd", "auto", "no").imm(),
	enumP("syslog-facility", "local0", "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7").imm(),
	enumP("repl-diskless-load", "disabled", "disabled", "on-empty-db", "swapdb").denyLoading(),
	enumP("loglevel", "notice", "debug", "verbose", "notice", "warning"),
	enumP("maxmemory-policy", "noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction").onSet(func(cfg *Config, v string) error {
		cfg.MaxmemoryPolicy.Store(&v)
		return mmApply(nil)(cfg, v)
	}),
	enumP("appendfsync", "everysec", "everysec", "always", "no"),
	enumP("oom-score-adj", "no", "no", "yes", "relative", "absolute").vals(0, 1, 1, 2).onSet(func(cfg *Config, v string) error {
		return oomApply(cfg, "oom-score-adj", v)
	}),
	enumP("acl-pubsub-default", "resetchannels", "allchannels", "resetchannels").vals(1, 0),
	enumP("sanitize-dump-payload", "no", "no", "yes", "clients"),
	enumP("enable-protected-configs", "no", "no", "yes", "local").imm(),
	enumP("enable-debug-command", "no", "no", "yes", "local").imm(),
	enumP("enable-module-command", "no", "no", "yes", "local").imm(),
	enumP("cluster-preferred-endpoint-type", "ip", "ip", "hostname", "unknown-endpoint"),
	enumP("propagation-error-behavior", "ignore", "ignore", "panic", "panic-on-replicas"),
	enumP("shutdown-on-sigint", "default", "default", "save", "nosave", "now", "force").vals(0, 1, 2, 4, 8).multi().valid(validShutdownFlags),
	enumP("shutdown-on-sigterm", "default", "default", "save", "nosave", "now", "force").vals(0, 1, 2, 4, 8).multi().valid(validShutdownFlags),

	// Integer configs.
	intP("databases", 1, intMax, "16").imm(),
	intP("port", 0, 65535, "6379").onSet(func(cfg *Config, v string) error {
		cfg.mu.RLock()
		cur := cfg.vals["port"]
		cfg.mu.RUnlock()
		if cfg.Running.Load() && cur != v {
			cfg.mu.RLock()
			bind := cfg.vals["bind"]
			cfg.mu.RUnlock()
			if cfg.Hooks.Listen == nil || cfg.Hooks.Listen(SplitList(bind), v) != nil {
				return errors.New("Unable to listen on this port. Check server logs.")
			}
		}
		return nil
	}),
	intP("io-threads", 1, 128, "1").imm(),
	intP("auto-aof-rewrite-percentage", 0, intMax, "100"),
	intP("cluster-replica-validity-factor", 0, intMax, "10").aliased("cluster-slave-validity-factor"),
	intP("list-max-listpack-size", intMin, intMax, "-2").aliased("list-max-ziplist-size").onSet(atom(func(c *Config) *atomic.Int64 { return &c.ListPackSize })),
	intP("tcp-keepalive", 0, intMax, "300"),
	intP("cluster-migration-barrier", 0, intMax, "1"),
	intP("active-defrag-cycle-min", 1, 99, "1"),
	intP("active-defrag-cycle-max", 1, 99, "25"),
	intP("active-defrag-threshold-lower", 0, 1000, "10"),
	intP("active-defrag-threshold-upper", 0, 1000, "100"),
	intP("lfu-log-factor", 0, intMax, "10").onSet(mmApply(func(c *Config) *atomic.Int64 { return &c.LFULogFactor })),
	intP("lfu-decay-time", 0, intMax, "1").onSet(mmApply(func(c *Config) *atomic.Int64 { return &c.LFUDecayTime })),
	intP("replica-priority", 0, intMax, "100").aliased("slave-priority"),
	intP("repl-diskless-sync-delay", 0, intMax, "5"),
	intP("maxmemory-samples", 1, intMax, "5").onSet(atom(func(c *Config) *atomic.Int64 { return &c.EvictSamples })),
	intP("maxmemory-eviction-tenacity", 0, 100, "10").onSet(atom(func(c *Config) *atomic.Int64 { return &c.EvictTenacity })),
	intP("timeout", 0, intMax, "0").onSet(atom(func(c *Config) *atomic.Int64 { return &c.TimeoutSec })),
	intP("replica-announce-port", 0, 65535, "0").aliased("slave-announce-port"),
	intP("tcp-backlog", 0, intMax, "511").imm(),
	intP("cluster-port", 0, 65535, "0").imm(),
	intP("cluster-announce-bus-port", 0, 65535, "0"),
	intP("cluster-announce-port", 0, 65535, "0"),
	intP("cluster-announce-tls-port", 0, 65535, "0"),
	intP("repl-timeout", 1, intMax, "60"),
	intP("repl-ping-replica-period", 1, intMax, "10").aliased("repl-ping-slave-period"),
	intP("list-compress-depth", 0, intMax, "0").onSet(atom(func(c *Config) *atomic.Int64 { return &c.ListCompress })),
	intP("rdb-key-save-delay", intMin, intMax, "0").hide(),
	intP("key-load-delay", intMin, intMax, "0").hide(),
	intP("active-expire-effort", 1, 10, "1"),
	// hz is kept within CONFIG_MIN_HZ..CONFIG_MAX_HZ, as Redis's
	// updateHZ and its config loading do.
	(&param{name: "hz", kind: pInt, def: "10", min: 0, max: intMax, clamp: func(n int64) int64 { return min(max(n, 1), 500) }}).onSet(atom(func(c *Config) *atomic.Int64 { return &c.Hz })),
	intP("min-replicas-to-write", 0, intMax, "0").aliased("min-slaves-to-write").onSet(atom(func(c *Config) *atomic.Int64 { return &c.MinReplicas })),
	intP("min-replicas-max-lag", 0, intMax, "10").aliased("min-slaves-max-lag").onSet(atom(func(c *Config) *atomic.Int64 { return &c.MinReplicasLag })),
	// watchdog-period is at least two of server.hz's periods
	// (applyWatchdogPeriod), once set and at start-up.
	(&param{name: "watchdog-period", kind: pInt, def: "0", min: 0, max: intMax, hidden: true, settle: settleWatchdog}),
	intP("shutdown-timeout", 0, intMax, "10"),
	intP("repl-diskless-sync-max-replicas", 0, intMax, "0"),

	// Unsigned int configs.
	intP("maxclients", 1, uintMax, "10000").unsigned().onSet(atom(func(c *Config) *atomic.Int64 { return &c.MaxClients })),
	{name: "unixsocketperm", kind: pInt, def: "0", min: 0, max: 0o777, numFlags: numOctal | numUnsigned, immutable: true},
	intP("socket-mark-id", 0, uintMax, "0").unsigned().imm(),

	// Unsigned long configs (bounds checked as signed, as Redis does).
	intP("active-defrag-max-scan-fields", 1, longMax, "1000"),
	intP("slowlog-max-len", 0, longMax, "128").onSet(atom(func(c *Config) *atomic.Int64 { return &c.SlowlogMaxLen })),
	intP("acllog-max-len", 0, longMax, "128"),

	// Long long configs.
	intP("busy-reply-threshold", 0, longMax, "5000").aliased("lua-time-limit").onSet(atom(func(c *Config) *atomic.Int64 { return &c.BusyThreshold })),
	intP("cluster-node-timeout", 0, longMax, "15000"),
	intP("slowlog-log-slower-than", -1, longMax, "10000").onSet(atom(func(c *Config) *atomic.Int64 { return &c.SlowlogThresh })),
	intP("latency-monitor-threshold", 0, longMax, "0").onSet(atom(func(c *Config) *atomic.Int64 { return &c.LatencyThresh })),
	memP("proto-max-bulk-len", 1024*1024, longMax, "536870912").onSet(atom(func(c *Config) *atomic.Int64 { return &c.MaxBulkLen })),
	intP("stream-node-max-entries", 0, longMax, "100"),
	// repl-backlog-size: CONFIG SET raises it to
	// CONFIG_REPL_BACKLOG_MIN_SIZE (resizeReplicationBacklog); the config
	// file does not.
	(&param{name: "repl-backlog-size", kind: pMemory, def: "1048576", min: 1, max: longMax, numFlags: numMemory, settle: func(v string, _ int64) string {
		if n, _ := strconv.ParseInt(v, 10, 64); n < 16*1024 {
			return "16384"
		}
		return v
	}}),

	// Unsigned long long configs.
	memP("maxmemory", 0, ullongMx, "0").unsigned().onSet(mmApply(func(c *Config) *atomic.Int64 { return &c.MaxMemory })),
	memP("cluster-link-sendbuf-limit", 0, ullongMx, "0").unsigned(),

	// size_t configs.
	intP("hash-max-listpack-entries", 0, longMax, "512").unsigned().aliased("hash-max-ziplist-entries").onSet(atom(func(c *Config) *atomic.Int64 { return &c.HashMaxEnt })),
	intP("set-max-intset-entries", 0, longMax, "512").unsigned().onSet(atom(func(c *Config) *atomic.Int64 { return &c.SetMaxIntset })),
	intP("zset-max-listpack-entries", 0, longMax, "128").unsigned().aliased("zset-max-ziplist-entries").onSet(atom(func(c *Config) *atomic.Int64 { return &c.ZsetMaxEnt })),
	memP("active-defrag-ignore-bytes", 1, longMax, "104857600").unsigned(),
	memP("hash-max-listpack-value", 0, longMax, "64").unsigned().aliased("hash-max-ziplist-value").onSet(atom(func(c *Config) *atomic.Int64 { return &c.HashMaxVal })),
	memP("stream-node-max-bytes", 0, longMax, "4096").unsigned(),
	memP("zset-max-listpack-value", 0, longMax, "64").unsigned().aliased("zset-max-ziplist-value").onSet(atom(func(c *Config) *atomic.Int64 { return &c.ZsetMaxVal })),
	memP("hll-sparse-max-bytes", 0, longMax, "3000").unsigned(),
	intP("tracking-table-max-keys", 0, longMax, "1000000").unsigned().onSet(atom(func(c *Config) *atomic.Int64 { return &c.TrackingMaxKeys })),
	memP("client-query-buffer-limit", 1024*1024, longMax, "1073741824").unsigned().onSet(atom(func(c *Config) *atomic.Int64 { return &c.QbufLimit })),
	(&param{name: "maxmemory-clients", kind: pMemory, def: "0", min: -100, max: longMax, numFlags: numMemory | numPercent}).onSet(func(cfg *Config, v string) error {
		var n int64
		if p, ok := strings.CutSuffix(v, "%"); ok {
			n, _ = strconv.ParseInt(p, 10, 64)
			n = -n
		} else {
			n, _ = strconv.ParseInt(v, 10, 64)
		}
		cfg.MaxmemClients.Store(n)
		if cfg.Hooks.Maxmemory != nil {
			cfg.Hooks.Maxmemory()
		}
		return nil
	}),

	// Other numeric configs.
	intP("repl-backlog-ttl", 0, longMax, "3600"),
	memP("auto-aof-rewrite-min-size", 0, longMax, "67108864"),
	intP("loading-process-events-interval-bytes", 1024, intMax, "2097152").hide(),

	// Redis 7.2 set encodings, kept for the set commands; hidden so that
	// CONFIG GET * lists what Redis 7.0 lists.
	intP("set-max-listpack-entries", 0, longMax, "128").unsigned().hide().onSet(atom(func(c *Config) *atomic.Int64 { return &c.SetMaxLP })),
	memP("set-max-listpack-value", 0, longMax, "64").unsigned().hide().onSet(atom(func(c *Config) *atomic.Int64 { return &c.SetMaxLPVal })),

	// TLS configs (tls.go): CONFIG SET loads the TLS configuration again.
	intP("tls-port", 0, 65535, "0").after(tlsPortHook),
	intP("tls-session-cache-size", 0, intMax, "20480").after(tlsConfigHook),
	intP("tls-session-cache-timeout", 0, intMax, "300").after(tlsConfigHook),
	boolP("tls-cluster", "no", false).after(tlsConfigHook),
	boolP("tls-replication", "no", false).after(tlsConfigHook),
	enumP("tls-auth-clients", "yes", "no", "yes", "optional").onSet(func(cfg *Config, v string) error {
		if cfg.Hooks.TLSAuthClients != nil {
			cfg.Hooks.TLSAuthClients(v)
		}
		return nil
	}),
	boolP("tls-prefer-server-ciphers", "no", false).after(tlsConfigHook),
	boolP("tls-session-caching", "yes", false).after(tlsConfigHook),
	strP("tls-cert-file", "", false).after(tlsConfigHook),
	strP("tls-key-file", "", false).after(tlsConfigHook),
	strP("tls-key-file-pass", "", false).after(tlsConfigHook),
	strP("tls-client-cert-file", "", false).after(tlsConfigHook),
	strP("tls-client-key-file", "", false).after(tlsConfigHook),
	strP("tls-client-key-file-pass", "", false).after(tlsConfigHook),
	strP("tls-dh-params-file", "", false).after(tlsConfigHook),
	strP("tls-ca-cert-file", "", false).after(tlsConfigHook),
	strP("tls-ca-cert-dir", "", false).after(tlsConfigHook),
	strP("tls-protocols", "", false).after(tlsConfigHook),
	strP("tls-ciphers", "", false).after(tlsConfigHook),
	strP("tls-ciphersuites", "", false).after(tlsConfigHook),

	// Special configs.
	{name: "dir", kind: pSpecial, def: "", protected: true, noLoading: true, apply: applyDir, show: func(*Config) string { d, _ := os.Getwd(); return d }},
	// Sluice keeps data in memory only unless save points are given
	// (redis-server's default is "3600 1 300 100 60 10000").
	{name: "save", kind: pSpecial, def: "", multiArg: true, apply: applySave, show: showNumbers("save", true)},
	{name: "client-output-buffer-limit", kind: pSpecial, def: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", multiArg: true, apply: applyOutputLimits, show: func(cfg *Config) string { return cfg.showOutputLimits() }},
	{name: "oom-score-adj-values", kind: pSpecial, def: "0 200 800", multiArg: true, apply: applyOOMValues, show: showNumbers("oom-score-adj-values", false)},
	{name: "notify-keyspace-events", kind: pSpecial, def: "", apply: applyNotify, show: showNotify},
	{name: "bind", kind: pSpecial, def: DefaultBind, multiArg: true, apply: applyBind},
	{name: "replicaof", alias: "slaveof", kind: pSpecial, def: "", multiArg: true, immutable: true, apply: applyReplicaOf, show: showReplicaOf},
	{name: "latency-tracking-info-percentiles", kind: pSpecial, def: "50 99 99.9", multiArg: true, apply: applyPercentiles, show: showPercentiles},
}

var paramByName = func() map[string]*param {
	m := map[string]*param{}
	for _, p := range params {
		if _, ok := m[p.name]; ok {
			panic("duplicate config " + p.name)
		}
		m[p.name] = p
		if p.alias != "" {
			m[p.alias] = p
		}
	}
	return m
}()

// normalize parses v as p's kind and returns the text CONFIG GET shows,
// or Redis's error for an invalid value.
func (p *param) normalize(v string) (string, error) {
	norm := v
	switch p.kind {
	case pInt, pMemory:
		n, err := p.parseNumber(v)
		if err != nil {
			return "", err
		}
		if err := p.checkBounds(n); err != nil {
			return "", err
		}
		if p.clamp != nil {
			n = p.clamp(n)
		}
		norm = p.formatNumber(n)
	case pBool:
		switch strings.ToLower(v) {
		case "yes":
			norm = "yes"
		case "no":
			norm = "no"
		default:
			return "", errors.New("argument must be 'yes' or 'no'")
		}
	case pEnum:
		val, ok := p.enumValue(v)
		if !ok {
			return "", fmt.Errorf("argument(s) must be one of the following: %s", strings.Join(p.enum, ", "))
		}
		norm = p.enumName(val)
	}
	if p.check != nil {
		if err := p.check(norm); err != nil {
			return "", err
		}
	}
	return norm, nil
}

func (p *param) parseNumber(v string) (int64, error) {
	if p.numFlags&numMemory != 0 {
		if n, ok := memToULL(v); ok {
			return int64(n), nil
		}
	}
	if p.numFlags&numPercent != 0 && len(v) > 1 && v[len(v)-1] == '%' {
		if n, ok := resp.ParseInt([]byte(v[:len(v)-1])); ok && n >= 0 {
			return -n, nil
		}
	}
	if p.numFlags&numOctal != 0 {
		if n, ok := cStrtoll(v, 8); ok {
			return n, nil
		}
	}
	if p.numFlags&^numUnsigned == 0 {
		if n, ok := resp.ParseInt([]byte(v)); ok {
			return n, nil
		}
	}
	switch {
	case p.numFlags&numMemory != 0 && p.numFlags&numPercent != 0:
		return 0, errors.New("argument must be a memory or percent value")
	case p.numFlags&numMemory != 0:
		return 0, errors.New("argument must be a memory value")
	case p.numFlags&numOctal != 0:
		return 0, errors.New("argument couldn't be parsed as an octal number")
	}
	return 0, errors.New("argument couldn't be parsed into an integer")
}

func (p *param) checkBounds(n int64) error {
	if p.numFlags&numUnsigned != 0 {
		u, lo, hi := uint64(n), uint64(p.min), uint64(p.max)
		if u > hi || u < lo {
			if p.numFlags&numOctal != 0 {
				return fmt.Errorf("argument must be between %o and %o inclusive", lo, hi)
			}
			return fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
		}
		return nil
	}
	if p.numFlags&numPercent != 0 && n < 0 {
		if n < p.min {
			return fmt.Errorf("percentage argument must be less or equal to %d", -p.min)
		}
		return nil
	}
	if n > p.max || n < p.min {
		return fmt.Errorf("argument must be between %d and %d inclusive", p.min, p.max)
	}
	return nil
}

func (p *param) formatNumber(n int64) string {
	switch {
	case p.numFlags&numPercent != 0 && n < 0:
		return strconv.FormatInt(-n, 10) + "%"
	case p.numFlags&numMemory != 0:
		return strconv.FormatUint(uint64(n), 10)
	case p.numFlags&numOctal != 0:
		return strconv.FormatInt(n, 8)
	}
	return strconv.FormatInt(n, 10)
}

func (p *param) enumVal(i int) int {
	if p.enumVals != nil {
		return p.enumVals[i]
	}
	return i
}

// enumValue parses an enum value (a list of flags for multi-word enums).
func (p *param) enumValue(v string) (int, bool) {
	words := []string{v}
	if p.multiArg {
		words = SplitList(v)
	}
	if len(words) == 0 {
		return 0, false
	}
	val := 0
	for _, w := range words {
		matched := false
		for i, e := range p.enum {
			if strings.EqualFold(e, w) {
				val |= p.enumVal(i)
				matched = true
			}
		}
		if !matched {
			return 0, false
		}
	}
	return val, true
}

// enumName is the inverse of enumValue, as Redis's configEnumGetName.
func (p *param) enumName(val int) string {
	var names []string
	unmatched := val
	for i, e := range p.enum {
		ev := p.enumVal(i)
		if ev == val {
			return e
		}
		if p.multiArg && ev != 0 && ev == unmatched&ev {
			names = append(names, e)
			unmatched &^= ev
		}
	}
	if len(names) == 0 || unmatched != 0 {
		return "unknown"
	}
	return strings.Join(names, " ")
}

// SplitList splits a multi-word value on spaces, as Redis does for
// CONFIG SET of multi-argument directives.
func SplitList(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, " ")
}

// memToULL parses "1gb", "100mb", "4k", "1024" as Redis's memtoull does.
func memToULL(s string) (uint64, bool) {
	if strings.HasPrefix(s, "-") {
		return 0, false
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	var mul uint64
	switch strings.ToLower(s[i:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1024
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1024 * 1024
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1024 * 1024 * 1024
	default:
		return 0, false
	}
	if i >= 128 {
		return 0, false
	}
	var n uint64
	if i > 0 {
		var err error
		n, err = strconv.ParseUint(s[:i], 10, 64)
		if err != nil {
			n = math.MaxUint64 // strtoull saturates
		}
	}
	return n * mul, true
}

// cStrtoll parses s as C's strtoll does when the whole string must be
// consumed and errno is checked: leading blanks and a sign are accepted,
// overflow fails.
func cStrtoll(s string, base int) (int64, bool) {
	n, ok, rangeErr := strtoll(s, base)
	return n, ok && !rangeErr
}

// strtoll is C's strtoll where the whole string must be consumed: ok
// when it was, rangeErr when the number overflowed (n is then LLONG_MAX
// or LLONG_MIN, as strtoll saturates).
func strtoll(s string, base int) (n int64, ok, rangeErr bool) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	if t == "" {
		// Nothing to convert: strtoll returns 0 and the end pointer at
		// the start, which is the end only for an empty string.
		return 0, s == "", false
	}
	n, err := strconv.ParseInt(t, base, 64)
	if err != nil && errors.Is(err, strconv.ErrRange) {
		return n, true, true
	}
	return n, err == nil, false
}

// strtollSat is strtoll without errno checked: overflow saturates.
func strtollSat(s string) (int64, bool) {
	n, ok, _ := strtoll(s, 10)
	return n, ok
}

// settleWatchdog is applyWatchdogPeriod: a period under two of hz's is
// raised to that.
func settleWatchdog(v string, hz int64) string {
	n, _ := strconv.ParseInt(v, 10, 64)
	if least := 1000 / max(hz, 1) * 2; n != 0 && n < least {
		return strconv.FormatInt(least, 10)
	}
	return v
}

func validHostname(v string) error {
	if len(v) >= 256 {
		return errors.New("Hostnames must be less than 256 characters")
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return errors.New("Hostnames may only contain alphanumeric characters, hyphens or dots")
		}
	}
	return nil
}

// validProcTitle checks a proc-title-template as Redis does (sdstemplate):
// known {variables} only, "{{" for a brace ("}" stands for itself), and a
// non-empty expansion.
func validProcTitle(v string) error {
	known := map[string]bool{"title": true, "listen-addr": true, "server-mode": true, "port": true, "tls-port": true, "unixsocket": true, "config-file": true}
	bad := errors.New("template format is invalid or contains unknown variables")
	nonEmpty := false
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '{':
			if i+1 == len(v) {
				return bad
			}
			if v[i+1] == '{' {
				i++
				nonEmpty = true
				continue
			}
			j := strings.IndexByte(v[i:], '}')
			if j < 0 || !known[v[i+1:i+j]] {
				return bad
			}
			if v[i+1:i+j] != "title" {
				nonEmpty = true
			}
			i += j
		case ' ':
		default:
			nonEmpty = true
		}
	}
	if !nonEmpty {
		return bad
	}
	return nil
}

func validShutdownFlags(v string) error {
	if strings.Contains(" "+v+" ", " save ") && strings.Contains(" "+v+" ", " nosave ") {
		return errors.New("shutdown options SAVE and NOSAVE can't be used simultaneously")
	}
	return nil
}

func applyDir(cfg *Config, v string) error {
	if v == "" && !cfg.loaded {
		return nil // the default: the working directory at start-up
	}
	if err := os.Chdir(v); err != nil {
		return errors.New(strerror(err))
	}
	return nil
}

// strerror returns the C library's text for a system call error.
func strerror(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func applySave(_ *Config, v string) error {
	args := SplitList(v)
	if len(args) == 1 && args[0] == "" {
		args = nil
	}
	if len(args)%2 != 0 {
		return errors.New("Invalid save parameters")
	}
	for i, a := range args {
		n, ok := strtollSat(a)
		if !ok || (i%2 == 0 && n < 1) || (i%2 == 1 && n < 0) {
			return errors.New("Invalid save parameters")
		}
	}
	return nil
}

func applyOOMValues(cfg *Config, v string) error {
	args := SplitList(v)
	if len(args) != 3 {
		return errors.New("wrong number of arguments")
	}
	for _, a := range args {
		n, ok := cStrtoll(a, 10)
		if !ok || n < -2000 || n > 2000 {
			return errors.New("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
		}
	}
	return oomApply(cfg, "oom-score-adj-values", strings.Join(args, " "))
}

func applyBind(cfg *Config, v string) error {
	addrs := SplitList(v)
	if len(addrs) > 16 {
		return errors.New("Too many bind addresses specified.")
	}
	if cfg.Running.Load() && cfg.Hooks.Listen != nil {
		cfg.mu.RLock()
		port := cfg.vals["port"]
		cfg.mu.RUnlock()
		if err := cfg.Hooks.Listen(addrs, port); err != nil {
			return errors.New("Failed to bind to specified addresses.")
		}
	}
	return nil
}

func applyReplicaOf(_ *Config, v string) error {
	if v == "" {
		return nil
	}
	args := SplitList(v)
	if len(args) != 2 {
		return errors.New("wrong number of arguments")
	}
	if strings.EqualFold(args[0], "no") && strings.EqualFold(args[1], "one") {
		return nil
	}
	n, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil || n < 0 || n > 65535 {
		return errors.New("Invalid master port")
	}
	return nil // the server connects at start (wireReplication)
}

// showReplicaOf is the master the server replicates, once it runs, as
// REPLICAOF set it; before, the directive's value.
func showReplicaOf(cfg *Config) string {
	if cfg.Hooks.Master != nil {
		return cfg.Hooks.Master()
	}
	cfg.mu.RLock()
	a := SplitList(cfg.vals["replicaof"])
	cfg.mu.RUnlock()
	if len(a) != 2 || strings.EqualFold(a[0], "no") && strings.EqualFold(a[1], "one") {
		return ""
	}
	port, _ := strconv.ParseInt(a[1], 10, 64)
	return a[0] + " " + strconv.FormatInt(port, 10)
}

func applyPercentiles(_ *Config, v string) error {
	args := SplitList(v)
	if len(args) == 1 && args[0] == "" {
		return nil
	}
	for _, a := range args {
		f, ok := string2d(a)
		if !ok {
			return errors.New("Invalid latency-tracking-info-percentiles parameters")
		}
		if f > 100 || f < 0 {
			return errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
		}
	}
	return nil
}

// string2d parses a double as Redis's string2d does with strtod: no
// blanks around it, hexadecimal mantissas with or without an exponent,
// inf; NaN, overflow and an underflow to zero refused.
func string2d(s string) (float64, bool) {
	isSpace := func(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
	if s == "" || isSpace(s[0]) || isSpace(s[len(s)-1]) || strings.ContainsRune(s, '_') {
		return 0, false
	}
	t := strings.TrimLeft(s, "+-")
	hex := len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')
	if hex && !strings.ContainsAny(t, "pP") {
		s += "p0" // strtod's exponent is optional, Go's is not
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 {
		// ERANGE with a zero result: the mantissa was not zero.
		mant := t
		if hex {
			mant = t[2:]
			if i := strings.IndexAny(mant, "pP"); i >= 0 {
				mant = mant[:i]
			}
		} else if i := strings.IndexAny(mant, "eE"); i >= 0 {
			mant = mant[:i]
		}
		if strings.Trim(mant, "0.") != "" {
			return 0, false
		}
	}
	return f, true
}

func applyOutputLimits(cfg *Config, v string) error {
	f := SplitList(v)
	if len(f)%4 != 0 {
		return errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	type lim struct{ hard, soft, secs int64 }
	parsed := map[string]lim{}
	for i := 0; i < len(f); i += 4 {
		class := strings.ToLower(f[i])
		switch class {
		case "normal", "pubsub":
		case "slave", "replica":
			class = "slave"
		default:
			return errors.New("Invalid client class specified in buffer limit configuration.")
		}
		hard, ok1 := memToULL(f[i+1])
		soft, ok2 := memToULL(f[i+2])
		secs, ok3 := strtollSat(f[i+3])
		secs = int64(int32(secs)) // soft_limit_seconds is read into an int
		if !ok1 || !ok2 || !ok3 || secs < 0 {
			return errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		parsed[class] = lim{int64(hard), int64(soft), secs}
	}
	if l, ok := parsed["normal"]; ok {
		cfg.OutLimitHard.Store(l.hard)
		cfg.OutLimitSoft.Store(l.soft)
		cfg.OutLimitSecs.Store(l.secs)
	}
	if l, ok := parsed["slave"]; ok {
		cfg.ReplLimit[0].Store(l.hard)
		cfg.ReplLimit[1].Store(l.soft)
		cfg.ReplLimit[2].Store(l.secs)
	}
	if l, ok := parsed["pubsub"]; ok {
		cfg.PubLimitHard.Store(l.hard)
		cfg.PubLimitSoft.Store(l.soft)
		cfg.PubLimitSecs.Store(l.secs)
	}
	return nil
}

func (cfg *Config) showOutputLimits() string {
	return fmt.Sprintf("normal %d %d %d slave %d %d %d pubsub %d %d %d",
		uint64(cfg.OutLimitHard.Load()), uint64(cfg.OutLimitSoft.Load()), cfg.OutLimitSecs.Load(),
		uint64(cfg.ReplLimit[0].Load()), uint64(cfg.ReplLimit[1].Load()), cfg.ReplLimit[2].Load(),
		uint64(cfg.PubLimitHard.Load()), uint64(cfg.PubLimitSoft.Load()), cfg.PubLimitSecs.Load())
}

// showNumbers formats a list of integers as Redis shows save parameters
// and oom-score-adj-values ("3600 1 300 100"): as strtoll reads them,
// an empty word as 0, and with int32 set, every second number as the C
// int it is stored in (a save point's changes).
func showNumbers(name string, int32s bool) func(cfg *Config) string {
	return func(cfg *Config) string {
		cfg.mu.RLock()
		args := SplitList(cfg.vals[name])
		cfg.mu.RUnlock()
		out := make([]string, 0, len(args))
		for i, a := range args {
			n, _ := strtollSat(a)
			if int32s && i%2 == 1 {
				n = int64(int32(n))
			}
			out = append(out, strconv.FormatInt(n, 10))
		}
		return strings.Join(out, " ")
	}
}

// showPercentiles formats latency-tracking-info-percentiles as "%f" with
// the trailing zeros trimmed, as Redis does.
func showPercentiles(cfg *Config) string {
	cfg.mu.RLock()
	args := SplitList(cfg.vals["latency-tracking-info-percentiles"])
	cfg.mu.RUnlock()
	out := make([]string, 0, len(args))
	for _, a := range args {
		if a == "" {
			continue
		}
		f, _ := string2d(a)
		s := strconv.FormatFloat(f, 'f', 6, 64)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		out = append(out, s)
	}
	return strings.Join(out, " ")
}
