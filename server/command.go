package server

import (
	"sort"
	"strings"
)

// Command flags beyond Redis's own (which are kept as names for COMMAND).
type cmdFlag uint32

const (
	flagWrite    cmdFlag = 1 << iota
	flagReadonly         // read-only command
	flagLockAll          // needs the whole keyspace (exclusive lock)
	flagNoLock           // touches no keys: no keyspace lock
	flagNoAuth           // allowed before AUTH
	flagNoMulti          // not allowed inside MULTI
	flagPubSub           // allowed in RESP2 subscribed context
	flagNoScript
	flagBlocking
	flagAdmin
	flagLoading
	flagStale
	flagFast
	flagDenyOOM      // may grow memory: refused when over maxmemory
	flagMayReplicate // may be replicated though not a write (PUBLISH, EVAL): held by CLIENT PAUSE WRITE
	flagSkipSlowlog  // not logged itself (EXEC: its commands are)
)

// Command is one entry of the command table: its metadata (which also
// drives COMMAND, COMMAND DOCS and arity checks) and its handler.
type Command struct {
	Name       string // lower case; subcommands are "parent|sub"
	Arity      int
	Flags      []string // Redis's flag names, as COMMAND reports them
	First      int      // first key position (0: no keys)
	Last       int      // last key position (negative: from the end)
	Step       int
	ACL        []string // ACL categories without '@'
	Group      string
	Since      string
	Summary    string
	Complexity string
	// Keys returns key positions for commands whose keys First/Last/Step
	// cannot describe (numkeys arguments).
	Keys func(args [][]byte) []int
	Fn   func(c *Client, args [][]byte)
	Subs []*Command

	flags  cmdFlag
	id     int
	sub    map[string]*Command
	parent *Command
}

var (
	commands = map[string]*Command{}
	cmdList  []*Command // by id
)

// register adds commands to the table. Each command family file calls it
// from init, beside its handlers.
func register(cmds ...*Command) {
	for _, c := range cmds {
		if _, dup := commands[c.Name]; dup {
			panic("duplicate command " + c.Name)
		}
		c.prepare()
		commands[c.Name] = c
	}
}

func (c *Command) prepare() {
	c.id = len(cmdList)
	cmdList = append(cmdList, c)
	for _, f := range c.Flags {
		switch f {
		case "write":
			c.flags |= flagWrite
		case "readonly":
			c.flags |= flagReadonly
		case "no_auth":
			c.flags |= flagNoAuth
		case "no_multi":
			c.flags |= flagNoMulti
		case "pubsub":
			c.flags |= flagPubSub
		case "noscript":
			c.flags |= flagNoScript
		case "blocking":
			c.flags |= flagBlocking
		case "admin":
			c.flags |= flagAdmin
		case "loading":
			c.flags |= flagLoading
		case "stale":
			c.flags |= flagStale
		case "fast":
			c.flags |= flagFast
		case "denyoom":
			c.flags |= flagDenyOOM
		case "may_replicate":
			c.flags |= flagMayReplicate
		case "skip_slowlog":
			c.flags |= flagSkipSlowlog
		case "lock_all":
			c.flags |= flagLockAll
		}
	}
	if c.First == 0 && c.Keys == nil && c.flags&flagLockAll == 0 {
		c.flags |= flagNoLock
	}
	if c.Step == 0 && c.First > 0 {
		c.Step = 1
	}
	if len(c.Subs) > 0 {
		c.sub = map[string]*Command{}
		for _, s := range c.Subs {
			s.parent = c
			if !strings.Contains(s.Name, "|") {
				s.Name = c.Name + "|" + s.Name
			}
			s.prepare()
			c.sub[s.Name[strings.IndexByte(s.Name, '|')+1:]] = s
		}
	}
}

// publicFlags drops Sluice's internal flag names from COMMAND's output.
func (c *Command) publicFlags() []string {
	out := make([]string, 0, len(c.Flags))
	for _, f := range c.Flags {
		if f != "lock_all" {
			out = append(out, f)
		}
	}
	return out
}

// lookupCommand finds a command by a case-insensitive name without allocating.
func lookupCommand(name []byte) *Command {
	var tmp [32]byte
	if len(name) > len(tmp) {
		return commands[strings.ToLower(string(name))]
	}
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			c += 32
		}
		tmp[i] = c
	}
	return commands[string(tmp[:len(name)])]
}

// nameIs reports whether name, in any case, is lower (a lower-case
// command name).
func nameIs(name []byte, lower string) bool {
	if len(name) != len(lower) {
		return false
	}
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			c += 32
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func (c *Command) lookupSub(name []byte) *Command {
	return c.sub[strings.ToLower(string(name))]
}

// keyPositions returns the argument indexes that are keys.
func (c *Command) keyPositions(args [][]byte, dst []int) []int {
	if c.Keys != nil {
		return append(dst, c.Keys(args)...)
	}
	if c.First <= 0 || c.First >= len(args) {
		return dst
	}
	last := c.Last
	if last < 0 {
		last = len(args) + last
	}
	if last >= len(args) {
		last = len(args) - 1
	}
	for i := c.First; i <= last; i += c.Step {
		dst = append(dst, i)
	}
	return dst
}

// sortedCommands returns the top-level commands by name.
func sortedCommands() []*Command {
	out := make([]*Command, 0, len(commands))
	for _, c := range commands {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
