package server

import (
	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/store"
)

// COMMAND and its subcommands, read from the command table
// (cmdspec.Table) in the shapes Redis's server.c replies with.

func commandCommand(c *Client, args [][]byte) {
	c.w.Array(len(cmdspec.Table))
	for _, s := range cmdspec.Table {
		cmdspec.WriteInfo(&c.w, s)
	}
}

func commandCountCommand(c *Client, args [][]byte) { c.w.Int(int64(len(commands))) }

func commandInfoCommand(c *Client, args [][]byte) {
	if len(args) == 2 {
		commandCommand(c, args)
		return
	}
	c.w.Array(len(args) - 2)
	for _, a := range args[2:] {
		cmdspec.WriteInfo(&c.w, specOf(lookupFullName(a)))
	}
}

// specOf is cmd's spec, nil for none.
func specOf(cmd *Command) *cmdspec.Spec {
	if cmd == nil {
		return nil
	}
	return &cmd.Spec
}

func commandDocsCommand(c *Client, args [][]byte) {
	list := cmdspec.Table
	if len(args) > 2 {
		list = nil
		for _, a := range args[2:] {
			if cmd := lookupFullName(a); cmd != nil {
				list = append(list, &cmd.Spec)
			}
		}
	}
	c.w.Map(len(list))
	for _, s := range list {
		c.w.BulkString(s.Name)
		cmdspec.WriteDocs(&c.w, s)
	}
}

func commandListCommand(c *Client, args [][]byte) {
	var filter func(*cmdspec.Spec) bool
	for i := 2; i < len(args); i++ {
		if !eq(args[i], "filterby") || len(args)-1-i != 2 {
			c.w.Error(errSyntax)
			return
		}
		arg := args[i+2]
		switch {
		case eq(args[i+1], "module"):
			filter = func(*cmdspec.Spec) bool { return false }
		case eq(args[i+1], "aclcat"):
			cat, ok := cmdspec.Category(string(arg))
			filter = func(s *cmdspec.Spec) bool { return ok && s.ACL&cat != 0 }
		case eq(args[i+1], "pattern"):
			filter = func(s *cmdspec.Spec) bool { return store.Match(arg, []byte(s.Name), true) }
		default:
			c.w.Error(errSyntax)
			return
		}
		i += 2
	}
	names := cmdspec.List(cmdspec.Table, filter)
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

func commandGetkeysCommand(c *Client, args [][]byte)         { commandGetKeys(c, args, false) }
func commandGetkeysandflagsCommand(c *Client, args [][]byte) { commandGetKeys(c, args, true) }

// commandGetKeys is Redis's getKeysSubcommandImpl.
func commandGetKeys(c *Client, args [][]byte, withFlags bool) {
	cargs := args[2:]
	cmd := c.srv.lookupCommand(cargs[0])
	if cmd != nil && cmd.sub != nil && len(cargs) >= 2 {
		cmd = cmd.lookupSub(cargs[1])
	}
	cmdspec.WriteKeys(&c.w, specOf(cmd), cargs, withFlags)
}
