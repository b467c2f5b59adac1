package server

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicedb/sluice/acl"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// Server commands: CONFIG COMMAND TIME LASTSAVE SHUTDOWN DEBUG SLOWLOG
// LATENCY ROLE (INFO is in info.go).
func init() {
	register(
		&Command{Name: "config", Arity: -2, Group: "server", Since: "2.0.0", Summary: "A container for server configuration commands", Complexity: "Depends on subcommand.", Subs: []*Command{
			{Name: "get", Arity: -3, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.0.0", Summary: "Get the values of configuration parameters", Complexity: "O(N) when N is the number of configuration parameters provided", Fn: configGetCommand},
			{Name: "help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "server", Since: "5.0.0", Summary: "Show helpful text about the different subcommands", Complexity: "O(1)", Fn: configHelpCommand},
			{Name: "resetstat", Arity: 2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.0.0", Summary: "Reset the stats returned by INFO", Complexity: "O(1)", Fn: configResetstatCommand},
			{Name: "rewrite", Arity: 2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.0", Summary: "Rewrite the configuration file with the in memory configuration", Complexity: "O(1)", Fn: configRewriteCommand},
			{Name: "set", Arity: -4, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.0.0", Summary: "Set configuration parameters to the given values", Complexity: "O(N) when N is the number of configuration parameters provided", Fn: configSetCommand},
		}},
		&Command{Name: "command", Arity: -1, Flags: []string{"loading", "stale", "sentinel"}, ACL: []string{"connection"}, Group: "server", Since: "2.8.13", Summary: "Get array of Redis command details", Complexity: "O(N) where N is the total number of Redis commands", Fn: commandCommand, Subs: []*Command{
			{Name: "count", Arity: 2, Flags: []string{"loading", "stale", "sentinel"}, ACL: []string{"connection"}, Group: "server", Since: "2.8.13", Summary: "Get total number of Redis commands", Complexity: "O(1)", Fn: commandCountCommand},
			{Name: "docs", Arity: -2, Flags: []string{"loading", "stale", "sentinel"}, ACL: []string{"connection"}, Group: "server", Since: "7.0.0", Summary: "Get array of specific Redis command documentation", Complexity: "O(N) where N is the number of commands to look up", Fn: commandDocsCommand},
			{Name: "getkeys", Arity: -4, Flags: []string{"loading", "stale", "sentinel"}, ACL: []string{"connection"}, Group: "server", Since: "2.8.13", Summary: "Extract keys given a full Redis command", Complexity: "O(N) where N is the number of arguments to the command", Fn: commandGetkeysCommand},
			{Name: "getkeysandflags", Arity: -4, Flags: []string{"loading", "stale", "sentinel"}, ACL: []string{"connection"}, Group: "server", Since: "7.0.0", Summary: "Extract keys and access flags given a full Redis command", Complexity: "O(N) where N is the number of arguments to the command", Fn: commandGetkeysandflagsCommand},
			{Name: "help", Arity: 2, Flags: []string{"loading", "stale", "sentinel"}, ACL: []string{"connection"}, Group: "server", Since: "5.0.0", Summary: "Show helpful text about the different subcommands", Complexity: "O(1)", Fn: commandHelpCommand},
			{Name: "info", Arity: -2, Flags: []string{"loading", "stale", "sentinel"}, ACL: []string{"connection"}, Group: "server", Since: "2.8.13", Summary: "Get array of specific Redis command details, or all when no argument is given.", Complexity: "O(N) where N is the number of commands to look up", Fn: commandInfoCommand},
			{Name: "list", Arity: -2, Flags: []string{"loading", "stale", "sentinel"}, ACL: []string{"connection"}, Group: "server", Since: "7.0.0", Summary: "Get an array of Redis command names", Complexity: "O(N) where N is the total number of Redis commands", Fn: commandListCommand},
		}},
		&Command{Name: "time", Arity: 1, Flags: []string{"loading", "stale", "fast"}, Group: "server", Since: "2.6.0", Summary: "Return the current server time", Complexity: "O(1)", Fn: timeCommand},
		&Command{Name: "lastsave", Arity: 1, Flags: []string{"loading", "stale", "fast"}, ACL: []string{"admin", "dangerous"}, Group: "server", Since: "1.0.0", Summary: "Get the UNIX time stamp of the last successful save to disk", Complexity: "O(1)", Fn: lastsaveCommand},
		&Command{Name: "shutdown", Arity: -1, Flags: []string{"admin", "noscript", "loading", "stale", "no_multi", "sentinel", "allow_busy"}, Group: "server", Since: "1.0.0", Summary: "Synchronously save the dataset to disk and then shut down the server", Complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)", Fn: shutdownCommand},
		&Command{Name: "debug", Arity: -2, Flags: []string{"admin", "noscript", "loading", "stale", "protected"}, Group: "server", Since: "1.0.0", Summary: "A container for debugging commands", Complexity: "Depends on subcommand.", Fn: debugCommand},
		&Command{Name: "slowlog", Arity: -2, Group: "server", Since: "2.2.12", Summary: "A container for slow log commands", Complexity: "Depends on subcommand.", Subs: []*Command{
			{Name: "get", Arity: -2, Flags: []string{"admin", "loading", "stale"}, Group: "server", Since: "2.2.12", Summary: "Get the slow log's entries", Complexity: "O(N) where N is the number of entries returned", Fn: slowlogGetCommand},
			{Name: "help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "server", Since: "6.2.0", Summary: "Show helpful text about the different subcommands", Complexity: "O(1)", Fn: slowlogHelpCommand},
			{Name: "len", Arity: 2, Flags: []string{"admin", "loading", "stale"}, Group: "server", Since: "2.2.12", Summary: "Get the slow log's length", Complexity: "O(1)", Fn: slowlogLenCommand},
			{Name: "reset", Arity: 2, Flags: []string{"admin", "loading", "stale"}, Group: "server", Since: "2.2.12", Summary: "Clear all entries from the slow log", Complexity: "O(N) where N is the number of entries in the slowlog", Fn: slowlogResetCommand},
		}},
		&Command{Name: "latency", Arity: -2, Group: "server", Since: "2.8.13", Summary: "A container for latency diagnostics commands", Complexity: "Depends on subcommand.", Subs: []*Command{
			{Name: "doctor", Arity: 2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.13", Summary: "Return a human readable latency analysis report.", Complexity: "O(1)", Fn: latencyDoctorCommand},
			{Name: "graph", Arity: 3, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.13", Summary: "Return a latency graph for the event.", Complexity: "O(1)", Fn: latencyGraphCommand},
			{Name: "help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "server", Since: "2.8.13", Summary: "Show helpful text about the different subcommands.", Complexity: "O(1)", Fn: latencyHelpCommand},
			{Name: "histogram", Arity: -2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "7.0.0", Summary: "Return the cumulative distribution of latencies of a subset of commands or all.", Complexity: "O(N) where N is the number of commands with latency information being retrieved.", Fn: latencyHistogramCommand},
			{Name: "history", Arity: 3, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.13", Summary: "Return timestamp-latency samples for the event.", Complexity: "O(1)", Fn: latencyHistoryCommand},
			{Name: "latest", Arity: 2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.13", Summary: "Return the latest latency samples for all events.", Complexity: "O(1)", Fn: latencyLatestCommand},
			{Name: "reset", Arity: -2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.13", Summary: "Reset latency data for one or more events.", Complexity: "O(1)", Fn: latencyResetCommand},
		}},
		&Command{Name: "role", Arity: 1, Flags: []string{"noscript", "loading", "stale", "fast", "sentinel"}, ACL: []string{"admin", "dangerous"}, Group: "server", Since: "2.8.12", Summary: "Return the role of the instance in the context of replication", Complexity: "O(1)", Fn: roleCommand},
	)
}

func commandCountCommand(c *Client, args [][]byte) { c.w.Int(int64(len(commands))) }

func commandGetkeysCommand(c *Client, args [][]byte) { commandGetKeys(c, args, false) }

func commandGetkeysandflagsCommand(c *Client, args [][]byte) { commandGetKeys(c, args, true) }

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

// ---- COMMAND ----

// aclCategories are Redis's ACL categories in the order COMMAND shows them.
var aclCategories = acl.Categories()

// commandFlagOrder is the order of the flags COMMAND shows.
var commandFlagOrder = []string{"write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript", "blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast", "no_auth", "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys", "allow_busy"}

func (cmd *Command) hasFlag(f string) bool {
	for _, x := range cmd.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// aclCats returns the command's ACL categories with the implicit ones
// Redis adds (from write/readonly/admin/pubsub/fast/blocking), in order.
func (cmd *Command) aclCats(doc *cmdDoc) []string {
	set := map[string]bool{}
	acl, has := cmd.ACL, cmd.hasFlag
	if doc != nil {
		acl = doc.ACL
		has = func(f string) bool {
			for _, x := range doc.Flags {
				if x == f {
					return true
				}
			}
			return false
		}
	}
	for _, a := range acl {
		set[strings.TrimPrefix(strings.ToLower(a), "@")] = true
	}
	if has("write") {
		set["write"] = true
	}
	if has("readonly") && !set["scripting"] {
		set["read"] = true
	}
	if has("admin") {
		set["admin"] = true
		set["dangerous"] = true
	}
	if has("pubsub") {
		set["pubsub"] = true
	}
	if has("fast") {
		set["fast"] = true
	}
	if has("blocking") {
		set["blocking"] = true
	}
	if !set["fast"] {
		set["slow"] = true
	}
	out := make([]string, 0, len(set))
	for _, a := range aclCategories {
		if set[a] {
			out = append(out, a)
		}
	}
	return out
}

// movable reports whether the command's key positions depend on its
// arguments.
func (cmd *Command) movable() bool { return cmd.Keys != nil }

func (c *Client) replyCommandInfo(cmd *Command) {
	if cmd == nil {
		c.w.Null()
		return
	}
	doc := redisDoc(cmd.Name)
	c.w.Array(10)
	c.w.BulkString(cmd.Name)
	c.w.Int(int64(cmd.Arity))
	var flags []string
	if doc != nil {
		flags = doc.Flags
	} else {
		for _, f := range commandFlagOrder {
			if cmd.hasFlag(f) || f == "movablekeys" && cmd.movable() {
				flags = append(flags, f)
			}
		}
	}
	c.w.Set(len(flags))
	for _, f := range flags {
		c.w.Simple(f)
	}
	first, last, step := 0, 0, 0
	if doc != nil {
		first, last, step = doc.Legacy[0], doc.Legacy[1], doc.Legacy[2]
	} else if cmd.First > 0 {
		first, last, step = cmd.First, cmd.Last, cmd.Step
	}
	c.w.Int(int64(first))
	c.w.Int(int64(last))
	c.w.Int(int64(step))
	cats := cmd.aclCats(doc)
	c.w.Set(len(cats))
	for _, a := range cats {
		c.w.Simple("@" + a)
	}
	var tips []string
	if doc != nil {
		tips = doc.Tips
	}
	c.w.Set(len(tips))
	for _, t := range tips {
		c.w.BulkString(t)
	}
	c.replyKeySpecs(cmd, doc)
	if len(cmd.Subs) == 0 {
		c.w.Set(0)
		return
	}
	c.w.Array(len(cmd.Subs))
	for _, s := range sortedSubs(cmd) {
		c.replyCommandInfo(s)
	}
}

func sortedSubs(cmd *Command) []*Command {
	out := append([]*Command(nil), cmd.Subs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// keySpecsOf returns Redis's key specifications of the command, or one
// derived from First/Last/Step for commands Redis 7.0 lacks.
func keySpecsOf(cmd *Command, doc *cmdDoc) []docKeySpec {
	if doc != nil {
		return doc.KeySpecs
	}
	if cmd.First <= 0 {
		return nil
	}
	var ks docKeySpec
	ks.Flags = []string{"RW", "access", "update"}
	if cmd.hasFlag("readonly") {
		ks.Flags = []string{"RO", "access"}
	}
	ks.BS.Type, ks.BS.Index = "index", cmd.First
	last := cmd.Last
	if last >= 0 {
		last -= cmd.First
	}
	ks.FK.Type, ks.FK.A, ks.FK.B = "range", last, cmd.Step
	return []docKeySpec{ks}
}

func (c *Client) replyKeySpecs(cmd *Command, doc *cmdDoc) {
	specs := keySpecsOf(cmd, doc)
	c.w.Set(len(specs))
	for _, ks := range specs {
		n := 3
		if ks.Notes != "" {
			n++
		}
		c.w.Map(n)
		if ks.Notes != "" {
			c.w.BulkString("notes")
			c.w.BulkString(ks.Notes)
		}
		c.w.BulkString("flags")
		c.w.Set(len(ks.Flags))
		for _, f := range ks.Flags {
			c.w.Simple(f)
		}
		c.w.BulkString("begin_search")
		c.w.Map(2)
		c.w.BulkString("type")
		c.w.BulkString(ks.BS.Type)
		c.w.BulkString("spec")
		switch ks.BS.Type {
		case "index":
			c.w.Map(1)
			c.w.BulkString("index")
			c.w.Int(int64(ks.BS.Index))
		case "keyword":
			c.w.Map(2)
			c.w.BulkString("keyword")
			c.w.BulkString(ks.BS.Keyword)
			c.w.BulkString("startfrom")
			c.w.Int(int64(ks.BS.StartFrom))
		default:
			c.w.Map(0)
		}
		c.w.BulkString("find_keys")
		c.w.Map(2)
		c.w.BulkString("type")
		c.w.BulkString(ks.FK.Type)
		c.w.BulkString("spec")
		var names []string
		switch ks.FK.Type {
		case "range":
			names = []string{"lastkey", "keystep", "limit"}
		case "keynum":
			names = []string{"keynumidx", "firstkey", "keystep"}
		}
		c.w.Map(len(names))
		for i, n := range names {
			c.w.BulkString(n)
			c.w.Int(int64([3]int{ks.FK.A, ks.FK.B, ks.FK.C}[i]))
		}
	}
}

func commandCommand(c *Client, args [][]byte) {
	all := sortedCommands()
	c.w.Array(len(all))
	for _, cmd := range all {
		c.replyCommandInfo(cmd)
	}
}

// lookupFullName finds "name" or "container|sub", case-insensitively.
func lookupFullName(name []byte) *Command {
	s := strings.ToLower(string(name))
	if i := strings.IndexByte(s, '|'); i >= 0 {
		parent := commands[s[:i]]
		if parent == nil || parent.sub == nil {
			return nil
		}
		return parent.sub[s[i+1:]]
	}
	return commands[s]
}

func commandInfoCommand(c *Client, args [][]byte) {
	if len(args) == 2 {
		commandCommand(c, args)
		return
	}
	c.w.Array(len(args) - 2)
	for _, a := range args[2:] {
		c.replyCommandInfo(lookupFullName(a))
	}
}

func (c *Client) replyCommandDocs(cmd *Command) {
	d := redisDoc(cmd.Name)
	if d == nil {
		d = &cmdDoc{Summary: cmd.Summary, Since: cmd.Since, Group: cmd.Group, Complexity: cmd.Complexity}
	}
	n := 1
	for _, s := range []string{d.Summary, d.Since, d.Complexity, d.DeprecatedSince, d.ReplacedBy} {
		if s != "" {
			n++
		}
	}
	for _, ok := range []bool{len(d.DocFlags) > 0, d.History != nil, d.Arguments != nil, len(cmd.Subs) > 0} {
		if ok {
			n++
		}
	}
	c.w.Map(n)
	if d.Summary != "" {
		c.w.BulkString("summary")
		c.w.BulkString(d.Summary)
	}
	if d.Since != "" {
		c.w.BulkString("since")
		c.w.BulkString(d.Since)
	}
	c.w.BulkString("group")
	c.w.BulkString(d.Group)
	if d.Complexity != "" {
		c.w.BulkString("complexity")
		c.w.BulkString(d.Complexity)
	}
	if len(d.DocFlags) > 0 {
		c.w.BulkString("doc_flags")
		c.w.Set(len(d.DocFlags))
		for _, f := range d.DocFlags {
			c.w.Simple(f)
		}
	}
	if d.DeprecatedSince != "" {
		c.w.BulkString("deprecated_since")
		c.w.BulkString(d.DeprecatedSince)
	}
	if d.ReplacedBy != "" {
		c.w.BulkString("replaced_by")
		c.w.BulkString(d.ReplacedBy)
	}
	if d.History != nil {
		c.w.BulkString("history")
		c.w.Set(len(d.History))
		for _, h := range d.History {
			c.w.Array(2)
			c.w.BulkString(h[0])
			c.w.BulkString(h[1])
		}
	}
	if d.Arguments != nil {
		c.w.BulkString("arguments")
		c.replyDocArgs(d.Arguments)
	}
	if len(cmd.Subs) > 0 {
		c.w.BulkString("subcommands")
		c.w.Map(len(cmd.Subs))
		for _, s := range sortedSubs(cmd) {
			c.w.BulkString(s.Name)
			c.replyCommandDocs(s)
		}
	}
}

func commandDocsCommand(c *Client, args [][]byte) {
	var list []*Command
	if len(args) == 2 {
		list = sortedCommands()
	} else {
		for _, a := range args[2:] {
			if cmd := lookupFullName(a); cmd != nil {
				list = append(list, cmd)
			}
		}
	}
	c.w.Map(len(list))
	for _, cmd := range list {
		c.w.BulkString(cmd.Name)
		c.replyCommandDocs(cmd)
	}
}

func commandListCommand(c *Client, args [][]byte) {
	var filter func(cmd *Command) bool
	for i := 2; i < len(args); i++ {
		if !eq(args[i], "filterby") || len(args)-1-i != 2 {
			c.w.Error(errSyntax)
			return
		}
		arg := args[i+2]
		switch {
		case eq(args[i+1], "module"):
			filter = func(*Command) bool { return false }
		case eq(args[i+1], "aclcat"):
			cat := strings.ToLower(string(arg))
			filter = func(cmd *Command) bool {
				for _, a := range cmd.aclCats(redisDoc(cmd.Name)) {
					if a == cat {
						return true
					}
				}
				return false
			}
		case eq(args[i+1], "pattern"):
			filter = func(cmd *Command) bool { return store.Match(arg, []byte(cmd.Name), true) }
		default:
			c.w.Error(errSyntax)
			return
		}
		i += 2
	}
	var names []string
	var walk func(cmds []*Command)
	walk = func(cmds []*Command) {
		for _, cmd := range cmds {
			if filter == nil || filter(cmd) {
				names = append(names, cmd.Name)
			}
			if len(cmd.Subs) > 0 {
				walk(sortedSubs(cmd))
			}
		}
	}
	walk(sortedCommands())
	c.w.Array(len(names))
	for _, n := range names {
		c.w.BulkString(n)
	}
}

func commandHelpCommand(c *Client, args [][]byte) {
	c.replyHelp(args[0], []string{
		"(no subcommand)",
		"    Return details about all Redis commands.",
		"COUNT",
		"    Return the total number of commands in this Redis server.",
		"LIST",
		"    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>",
		"    Return the keys from a full Redis command.",
		"GETKEYSANDFLAGS <full-command>",
		"    Return the keys and the access flags from a full Redis command.",
	})
}

func commandGetKeys(c *Client, args [][]byte, withFlags bool) {
	cargs := args[2:]
	cmd := lookupCommand(cargs[0])
	if cmd != nil && cmd.sub != nil && len(cargs) >= 2 {
		cmd = cmd.lookupSub(cargs[1])
	}
	if cmd == nil {
		c.w.Error("ERR Invalid command specified")
		return
	}
	if cmd.First <= 0 && cmd.Keys == nil {
		c.w.Error("ERR The command has no key arguments")
		return
	}
	if (cmd.Arity > 0 && cmd.Arity != len(cargs)) || len(cargs) < -cmd.Arity {
		c.w.Error("ERR Invalid number of arguments specified for command")
		return
	}
	var pos []int
	func() {
		defer func() {
			if recover() != nil {
				pos = nil // a Keys function rejected malformed arguments
			}
		}()
		pos = cmd.keyPositions(cargs, nil)
	}()
	valid := pos[:0]
	for _, p := range pos {
		if p > 0 && p < len(cargs) {
			valid = append(valid, p)
		}
	}
	if len(valid) == 0 {
		if cmd.hasFlag("no_mandatory_keys") {
			c.w.Array(0)
			return
		}
		c.w.Error("ERR Invalid arguments specified for command")
		return
	}
	c.w.Array(len(valid))
	specs := keySpecsOf(cmd, redisDoc(cmd.Name))
	flags := []string{"RW", "access", "update"}
	if cmd.hasFlag("readonly") {
		flags = []string{"RO", "access"}
	}
	var specFlags [][]string
	if withFlags && len(specs) > 0 {
		flags = specs[0].Flags
		specFlags = keySpecFlags(specs, cargs, valid)
	}
	switch cmd.Name {
	case "set":
		// SET's flags depend on its GET option, as Redis's setGetKeys.
		flags = []string{"OW", "update"}
		for _, a := range cargs[3:] {
			if eq(a, "get") {
				flags = []string{"RW", "access", "update"}
			}
		}
	case "bitfield":
		flags = []string{"RO", "access"}
		for _, a := range cargs[2:] {
			if eq(a, "set") || eq(a, "incrby") {
				flags = []string{"RW", "access", "update"}
			}
		}
	}
	for i, p := range valid {
		if !withFlags {
			c.w.Bulk(cargs[p])
			continue
		}
		fl := flags
		if specFlags != nil && specFlags[i] != nil && cmd.Name != "set" && cmd.Name != "bitfield" {
			fl = specFlags[i]
		}
		c.w.Array(2)
		c.w.Bulk(cargs[p])
		c.w.Set(len(fl))
		for _, f := range fl {
			c.w.Simple(f)
		}
	}
}

// keySpecFlags returns, for each key position in pos, the flags of the
// key specification that covers it, evaluated the way Redis walks key
// specs (begin_search index/keyword, find_keys range/keynum). A position
// that no concrete spec covers (one found by a command's own key
// function, as SORT's STORE key) takes the flags of the last spec whose
// search is unknown or marked incomplete; nil when there is none.
func keySpecFlags(specs []docKeySpec, argv [][]byte, pos []int) [][]string {
	argc := len(argv)
	at := make(map[int][]string)
	var fallback []string
	for _, ks := range specs {
		incomplete := false
		for _, f := range ks.Flags {
			if f == "incomplete" {
				incomplete = true
			}
		}
		if incomplete || ks.BS.Type == "unknown" || ks.FK.Type == "unknown" {
			fallback = ks.Flags
		}
		first := 0
		switch ks.BS.Type {
		case "index":
			first = ks.BS.Index
		case "keyword":
			start, end := ks.BS.StartFrom, 1
			if start > 0 {
				end = argc - 1
			} else {
				start = argc + start
			}
			for i := start; i >= 1 && i < argc; {
				if strings.EqualFold(string(argv[i]), ks.BS.Keyword) {
					first = i + 1
					break
				}
				if i == end {
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue
			}
		default:
			continue
		}
		var last, step int
		switch ks.FK.Type {
		case "range":
			step = ks.FK.B
			switch {
			case ks.FK.A >= 0:
				last = first + ks.FK.A
			case ks.FK.C == 0:
				last = argc + ks.FK.A
			default:
				last = first + (argc-first)/ks.FK.C + ks.FK.A
			}
		case "keynum":
			step = ks.FK.C
			if first+ks.FK.A >= argc {
				continue
			}
			n, err := strconv.Atoi(string(argv[first+ks.FK.A]))
			if err != nil || n < 0 {
				continue
			}
			first += ks.FK.B
			last = first + n - 1
		default:
			continue
		}
		if step <= 0 || first >= argc || last >= argc || last < first {
			continue
		}
		for i := first; i <= last; i += step {
			if _, ok := at[i]; !ok {
				at[i] = ks.Flags
			}
		}
	}
	out := make([][]string, len(pos))
	for i, p := range pos {
		if f, ok := at[p]; ok {
			out[i] = f
		} else {
			out[i] = fallback
		}
	}
	return out
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

func latencyDoctorCommand(c *Client, args [][]byte) {
	if c.srv.cfg.latencyThresh.Load() == 0 {
		c.w.Verbatim("txt", "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n")
		return
	}
	m := &c.srv.latmon
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.events) == 0 {
		c.w.Verbatim("txt", "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
		return
	}
	var b strings.Builder
	b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
	for i, name := range m.sortedEvents() {
		ts := m.events[name]
		h := ts.history()
		var sum int64
		for _, s := range h {
			sum += s.latency
		}
		avg := sum / int64(len(h))
		var dev int64
		for _, s := range h {
			dev += max(s.latency-avg, avg-s.latency)
		}
		period := int64(0)
		if len(h) > 1 {
			period = (h[len(h)-1].time - h[0].time) / int64(len(h)-1)
		}
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %d sec). Worst all time event %dms.\n",
			i+1, name, len(h), avg, dev/int64(len(h)), period, ts.max)
	}
	b.WriteString("\nI have a few advices for you:\n\n")
	b.WriteString("- Check your commands: \"command\" events are commands that ran at least latency-monitor-threshold milliseconds; SLOWLOG GET shows which. Commands that scan or delete large values (KEYS, SMEMBERS, DEL of big keys) are the usual cause; UNLINK and SCAN avoid most of them.\n")
	c.w.Verbatim("txt", b.String())
}

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
