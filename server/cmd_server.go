package server

import (
	"strconv"
	"strings"
	"sync"
	"time"

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
	ms := matchParams(pats)
	c.w.Map(len(ms))
	for _, m := range ms {
		c.w.BulkString(m.name)
		c.w.BulkString(c.srv.cfg.get(m.p))
	}
}

// isLocalClient reports whether c connects over a unix socket or from a
// loopback address (for the "local" protected-action settings).
func (c *Client) isLocalClient() bool {
	if c.unixSock {
		return true
	}
	host := c.addr
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = strings.Trim(host, "[]")
	return host == "127.0.0.1" || host == "::1" || strings.HasPrefix(host, "127.")
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
	n := (len(args) - 2) / 2
	ps := make([]*param, n)
	vals := make([]string, n)
	var unknown, errArg, errText string
	for i := 0; i < n; i++ {
		name := string(args[2+2*i])
		p := paramByName[strings.ToLower(name)]
		if p == nil {
			if unknown == "" && errText == "" {
				unknown = name
			}
			continue
		}
		if unknown != "" || errText != "" {
			continue
		}
		if p.immutable || p.protected && !c.allowProtected(cfg.Get("enable-protected-configs")) {
			errArg = name
			errText = "can't set immutable config"
			if !p.immutable {
				errText = "can't set protected config"
			}
			continue
		}
		for j := 0; j < i; j++ {
			if ps[j] == p && strings.EqualFold(string(args[2+2*j]), name) {
				errArg, errText = name, "duplicate parameter"
			}
		}
		ps[i] = p
	}
	if unknown != "" {
		c.w.Error("ERR Unknown option or number of arguments for CONFIG SET - '" + unknown + "'")
		return
	}
	if errText != "" {
		c.w.Error("ERR CONFIG SET failed (possibly related to argument '" + errArg + "') - " + errText)
		return
	}
	// Validate every value before changing anything, so that the command
	// applies all of its pairs or none.
	for i, p := range ps {
		v, err := p.normalize(string(args[3+2*i]))
		if err != nil {
			c.w.Error("ERR CONFIG SET failed (possibly related to argument '" + configArgName(p, args[2+2*i]) + "') - " + err.Error())
			return
		}
		vals[i] = v
	}
	old := make([]string, n)
	for i, p := range ps {
		cfg.mu.RLock()
		old[i] = cfg.vals[p.name]
		cfg.mu.RUnlock()
	}
	for i, p := range ps {
		if err := cfg.store(p, vals[i]); err != nil {
			for j := i - 1; j >= 0; j-- {
				cfg.store(ps[j], old[j])
			}
			c.w.Error("ERR CONFIG SET failed (possibly related to argument '" + configArgName(p, args[2+2*i]) + "') - " + err.Error())
			return
		}
	}
	if i, err := cfg.runLater(ps); err != nil {
		c.srv.Warnf("Failed applying new configuration. Possibly related to new %s setting. Restoring previous settings.", ps[i].name)
		for j := len(ps) - 1; j >= 0; j-- {
			cfg.store(ps[j], old[j])
		}
		c.w.Error("ERR CONFIG SET failed (possibly related to argument '" + ps[i].name + "') - " + err.Error())
		return
	}
	if cfg.OnChange != nil {
		for i, p := range ps {
			cfg.OnChange(p.name, vals[i])
		}
	}
	for _, p := range ps {
		if strings.HasPrefix(p.name, "maxmemory") {
			c.evictAfter = true // Redis's updateMaxmemory: performEvictions
		}
	}
	c.w.OK()
}

// configArgName is the directive name Redis shows in CONFIG SET errors: the
// registered name (or alias) the argument matched, in lower case.
func configArgName(p *param, arg []byte) string {
	if strings.EqualFold(p.alias, string(arg)) {
		return p.alias
	}
	return p.name
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
	th := cfg.slowlogThresh.Load()
	if th < 0 || usec < th {
		return
	}
	e := slowEntry{time: time.Now().Unix(), usec: usec, peer: c.addrString(), name: c.name}
	n := len(args)
	if n > 32 {
		n = 32
	}
	for i := 0; i < n; i++ {
		a := args[i]
		if i == 31 && len(args) > 32 {
			a = []byte("... (" + strconv.Itoa(len(args)-31) + " more arguments)")
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
	if max := cfg.slowlogMaxLen.Load(); int64(len(l.entries)) > max {
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
