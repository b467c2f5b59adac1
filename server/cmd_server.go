package server

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/monitor"
	"github.com/sluicedb/sluice/resp"
)

// Server commands: CONFIG TIME LASTSAVE SHUTDOWN DEBUG SLOWLOG LATENCY
// ROLE (COMMAND is in cmd_command.go, INFO in info.go).

func lastsaveCommand(c *Client, args [][]byte) { c.w.Int(c.srv.LastSave()) }

func slowlogLenCommand(c *Client, args [][]byte) { c.w.Int(int64(c.srv.slowlog.len())) }

func slowlogResetCommand(c *Client, args [][]byte) { c.srv.slowlog.reset(); c.w.OK() }

// LastSave returns the unix time of the last successful save (the start
// time when nothing was saved), as LASTSAVE reports it.
func (s *Server) LastSave() int64 {
	if t := s.lastSave.Load(); t != 0 {
		return t
	}
	return s.started.Unix()
}

// SetLastSave records a successful save (for the persistence code).
func (s *Server) SetLastSave(unix int64) {
	s.lastSave.Store(unix)
	s.ks.MarkSaved()
}

func timeCommand(c *Client, args [][]byte) {
	now := c.srv.ks.Clock().Now()
	c.w.Array(2)
	c.w.BulkInt(now.Unix())
	c.w.BulkInt(int64(now.Nanosecond() / 1000))
}

// ---- CONFIG ----

func configGetCommand(c *Client, args [][]byte) {
	pats := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		pats = append(pats, string(a))
	}
	ms := c.srv.cfg.Matching(pats)
	c.w.Map(len(ms))
	for _, m := range ms {
		c.w.BulkString(m.Name)
		c.w.BulkString(m.Value)
	}
}

// isLocalClient reports whether c connects over a unix socket or from a
// loopback address (for the "local" protected-action settings).
func (c *Client) isLocalClient() bool { return isLocalAddr(c.addr, c.unixSock) }

// isLocalAddr is Redis's islocalClient: a unix socket, or a TCP peer at
// 127.0.0.1 or ::1.
func isLocalAddr(addr string, unixSock bool) bool {
	if unixSock {
		return true
	}
	host := addr
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = strings.Trim(host, "[]")
	return host == "127.0.0.1" || host == "::1"
}

// errProtectedMode is what a client refused by protected mode reads
// before the connection closes (Redis's text).
const errProtectedMode = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// protectedModeRefuses applies protected-mode to a new connection from
// addr, as Redis's clientAcceptHandler does: with protected-mode yes and
// no password for the default user, only local clients get in. A refused
// connection counts in rejected_connections; the caller writes
// errProtectedMode to it and closes it.
func (s *Server) protectedModeRefuses(slot int, addr string, unixSock bool) bool {
	if isLocalAddr(addr, unixSock) || s.cfg.Get("protected-mode") != "yes" || !s.cfg.ACL.Default().Rules().Nopass() {
		return false
	}
	s.stats[slot].rejectedConns.Add(1)
	return true
}

// allowProtected applies a protected-action setting ("no", "yes", "local").
func (c *Client) allowProtected(setting string) bool {
	return setting == "yes" || setting == "local" && c.isLocalClient()
}

func configSetCommand(c *Client, args [][]byte) {
	if len(args)%2 != 0 {
		c.w.Error(errSyntax)
		return
	}
	cfg := c.srv.cfg
	names, err := cfg.SetPairs(args[2:], c.allowProtected(cfg.Get("enable-protected-configs")), func(name string) {
		c.srv.Warnf("Failed applying new configuration. Possibly related to new %s setting. Restoring previous settings.", name)
	})
	if err == config.ErrLoading {
		c.w.Error(err.Error())
		return
	}
	if err != nil {
		c.w.Error("ERR " + err.Error())
		return
	}
	for _, name := range names {
		if strings.HasPrefix(name, "maxmemory") {
			c.evictAfter = true // Redis's updateMaxmemory: performEvictions
		}
	}
	c.w.OK()
}

func configHelpCommand(c *Client, args [][]byte) {
	c.replyHelp(args[0], []string{
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>",
		"    Set the configuration <directive> to <value>.",
		"RESETSTAT",
		"    Reset statistics reported by the INFO command.",
		"REWRITE",
		"    Rewrite the configuration file.",
	})
}

func configResetstatCommand(c *Client, args [][]byte) {
	c.srv.ResetStats()
	c.w.OK()
}

// ResetStats clears the statistics INFO reports (CONFIG RESETSTAT).
func (s *Server) ResetStats() {
	for i := range s.stats {
		s.stats[i].reset()
	}
	s.ks.ExpiredKeys.Store(0)
	s.ev.evicted.Store(0)
	s.mem.evictedClients.Store(0)
	s.lazyfreed.Store(0)
	s.replyShrinks.Store(0)
	s.replyExpands.Store(0)
	s.repl.m.SyncFull.Store(0)
	s.repl.m.SyncPartialOK.Store(0)
	s.repl.m.SyncPartialErr.Store(0)
	s.errStatsMu.Lock()
	s.errStats = nil
	s.errStatsMu.Unlock()
	s.statResets.Add(1)
}

func configRewriteCommand(c *Client, args [][]byte) {
	path := c.srv.cfg.File()
	if path == "" {
		c.w.Error("ERR The server is running without a config file")
		return
	}
	if err := c.srv.cfg.Rewrite(path); err != nil {
		c.w.Error("ERR Rewriting config file: " + strerror(err))
		return
	}
	c.w.OK()
}

// ---- SLOWLOG ----

// slowLog keeps the most recent slow commands (newest first).
type slowLog struct {
	mu      sync.Mutex
	nextID  int64
	entries []slowEntry
}

type slowEntry struct {
	id, time, usec int64
	args           [][]byte
	peer, name     string
}

func (l *slowLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *slowLog) reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

// RecordSlow adds a command that ran for usec microseconds to the slow log
// when it passes slowlog-log-slower-than, keeping slowlog-max-len entries.
func (c *Client) RecordSlow(args [][]byte, usec int64) {
	cfg := c.srv.cfg
	th := cfg.SlowlogThresh.Load()
	if th < 0 || usec < th {
		return
	}
	e := slowEntry{time: time.Now().Unix(), usec: usec, peer: c.addrString(), name: c.name}
	n := len(args)
	if n > 32 {
		n = 32
	}
	redact := monitor.Redacted(args)
	for i := 0; i < n; i++ {
		a := args[i]
		if i == 31 && len(args) > 32 {
			a = []byte("... (" + strconv.Itoa(len(args)-31) + " more arguments)")
		} else if redact(i) {
			a = []byte("(redacted)")
		} else if len(a) > 128 {
			a = append(append([]byte(nil), a[:128]...), "... ("+strconv.Itoa(len(a)-128)+" more bytes)"...)
		} else {
			a = append([]byte(nil), a...)
		}
		e.args = append(e.args, a)
	}
	l := &c.srv.slowlog
	l.mu.Lock()
	e.id = l.nextID
	l.nextID++
	l.entries = append([]slowEntry{e}, l.entries...)
	if max := cfg.SlowlogMaxLen.Load(); int64(len(l.entries)) > max {
		l.entries = l.entries[:max]
	}
	l.mu.Unlock()
}

func slowlogGetCommand(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.subcommandSyntaxError(args)
		return
	}
	count := int64(10)
	if len(args) == 3 {
		n, ok := resp.ParseInt(args[2])
		if !ok || n < -1 {
			c.w.Error("ERR count should be greater than or equal to -1")
			return
		}
		count = n
	}
	l := &c.srv.slowlog
	l.mu.Lock()
	entries := l.entries
	if count >= 0 && int64(len(entries)) > count {
		entries = entries[:count]
	}
	entries = append([]slowEntry(nil), entries...)
	l.mu.Unlock()
	c.w.Array(len(entries))
	for _, e := range entries {
		c.w.Array(6)
		c.w.Int(e.id)
		c.w.Int(e.time)
		c.w.Int(e.usec)
		c.w.Array(len(e.args))
		for _, a := range e.args {
			c.w.Bulk(a)
		}
		c.w.BulkString(e.peer)
		c.w.BulkString(e.name)
	}
}

func slowlogHelpCommand(c *Client, args [][]byte) {
	c.replyHelp(args[0], []string{
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN",
		"    Return the length of the slowlog.",
		"RESET",
		"    Reset the slowlog.",
	})
}

// ---- LATENCY ----

func latencyHelpCommand(c *Client, args [][]byte) {
	c.replyHelp(args[0], []string{
		"DOCTOR",
		"    Return a human readable latency analysis report.",
		"GRAPH <event>",
		"    Return an ASCII latency graph for the <event> class.",
		"HISTORY <event>",
		"    Return time-latency samples for the <event> class.",
		"LATEST",
		"    Return the latest latency samples for all events.",
		"RESET [<event> ...]",
		"    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
		"HISTOGRAM [COMMAND ...]",
		"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
		"    If no commands are specified then all histograms are replied.",
	})
}
