package server

import (
	"strings"

	"github.com/sluicedb/sluice/internal/cmdspec"
)

// Command is one entry of the command table: its spec (arity, flags, key
// specs, docs: cmdspec.Table, generated from Redis's command JSON and
// Sluice's overlay) and its handler (commands_gen.go binds them by name).
type Command struct {
	cmdspec.Spec // a copy, so that dispatch reads its flags without a pointer
	Fn           func(c *Client, args [][]byte)
	Subs         []*Command // a container's subcommands, by name

	id     int // index in cmdList: per-command stats and ACL bits
	sub    map[string]*Command
	parent *Command
}

var (
	commands    map[string]*Command // top-level commands by name
	cmdList     []*Command          // every command and subcommand, by id
	topCommands []*Command          // top-level commands, by name
)

func init() {
	commands = map[string]*Command{}
	bound := 0
	var add func(s *cmdspec.Spec, parent *Command) *Command
	add = func(s *cmdspec.Spec, parent *Command) *Command {
		c := &Command{Spec: *s, Fn: handlers[s.Name], id: len(cmdList), parent: parent}
		if c.Fn != nil {
			bound++
		}
		cmdList = append(cmdList, c)
		if len(s.Subcommands) > 0 {
			c.sub = map[string]*Command{}
			for _, ss := range s.Subcommands {
				sc := add(ss, c)
				c.Subs = append(c.Subs, sc)
				c.sub[strings.TrimPrefix(ss.Name, s.Name+"|")] = sc
			}
		}
		return c
	}
	for _, s := range cmdspec.Table {
		c := add(s, nil)
		commands[s.Name] = c
		topCommands = append(topCommands, c)
	}
	if bound != len(handlers) {
		panic("commands_gen.go names a handler for a command cmdspec.Table lacks: run go generate ./internal/cmdspec")
	}
}

// lookupCommand finds a command by a case-insensitive name without allocating.
func lookupCommand(name []byte) *Command { return lookupIn(commands, name) }

// lookupIn finds name, in any case, in a table of lower-case names
// without allocating.
func lookupIn(table map[string]*Command, name []byte) *Command {
	var tmp [32]byte
	if len(name) > len(tmp) {
		return table[strings.ToLower(string(name))]
	}
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			c += 32
		}
		tmp[i] = c
	}
	return table[string(tmp[:len(name)])]
}

// lookupCommand finds a command by the name clients use for it: with
// rename-command, in the server's own table.
func (s *Server) lookupCommand(name []byte) *Command {
	if s.cmds == nil {
		return lookupCommand(name)
	}
	return lookupIn(s.cmds, name)
}

// lookupCommandOrOriginal is lookupCommand for the streams the server
// writes and reads itself (the AOF, a master's stream to its replicas):
// a client's commands go there under the names the client gave, the
// server's own (DEL of an expired key, SELECT, MULTI) under the commands'
// own names, as Redis's lookupCommandOrOriginal finds both.
func (s *Server) lookupCommandOrOriginal(name []byte) *Command {
	if c := s.lookupCommand(name); c != nil || s.cmds == nil {
		return c
	}
	return lookupCommand(name)
}

// applyRenames builds the server's table from rename-command's
// directives (config checked them as it read them).
func (s *Server) applyRenames(renames [][2]string) {
	if len(renames) == 0 {
		return
	}
	s.cmds = make(map[string]*Command, len(commands))
	for name, c := range commands {
		s.cmds[name] = c
	}
	for _, r := range renames {
		c := s.cmds[r[0]]
		delete(s.cmds, r[0])
		if r[1] != "" && c != nil {
			s.cmds[r[1]] = c
		}
	}
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

// checkArity reports whether argc arguments (the name included) fit the
// command's arity.
func (c *Command) checkArity(argc int) bool { return c.ArityOK(argc) }

// sortedCommands returns the top-level commands by name.
func sortedCommands() []*Command { return topCommands }

// sortedSubs returns a container's subcommands by name.
func sortedSubs(cmd *Command) []*Command { return cmd.Subs }
