package server

import (
	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/store"
)

// COMMAND and its subcommands, read from the command table
// (cmdspec.Table) in the shapes Redis's server.c replies with.

func commandCommand(c *Client, args [][]byte) {
	all := sortedCommands()
	c.w.Array(len(all))
	for _, cmd := range all {
		c.replyCommandInfo(cmd)
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
		c.replyCommandInfo(lookupFullName(a))
	}
}

// replyCommandInfo is Redis's addReplyCommandInfo.
func (c *Client) replyCommandInfo(cmd *Command) {
	if cmd == nil {
		c.w.Null()
		return
	}
	c.w.Array(10)
	c.w.BulkString(cmd.Name)
	c.w.Int(int64(cmd.Arity))
	flags := cmd.Flags.Names()
	c.w.Set(len(flags))
	for _, f := range flags {
		c.w.Simple(f)
	}
	c.w.Int(int64(cmd.First))
	c.w.Int(int64(cmd.Last))
	c.w.Int(int64(cmd.Step))
	cats := cmd.ACL.Names()
	c.w.Set(len(cats))
	for _, a := range cats {
		c.w.Simple("@" + a)
	}
	c.w.Set(len(cmd.Doc.Tips))
	for _, t := range cmd.Doc.Tips {
		c.w.BulkString(t)
	}
	c.replyKeySpecs(cmd)
	if len(cmd.Subs) == 0 {
		c.w.Set(0)
		return
	}
	c.w.Array(len(cmd.Subs))
	for _, s := range cmd.Subs {
		c.replyCommandInfo(s)
	}
}

// replyKeyFlags is Redis's addReplyFlagsForKeyArgs.
func (c *Client) replyKeyFlags(f cmdspec.KeyFlags) {
	c.replyFlagNames(uint64(f), cmdspec.KeyFlagNames)
}

// replyKeySpecs is Redis's addReplyCommandKeySpecs.
func (c *Client) replyKeySpecs(cmd *Command) {
	c.w.Set(len(cmd.KeySpecs))
	for i := range cmd.KeySpecs {
		ks := &cmd.KeySpecs[i]
		if ks.Notes != "" {
			c.w.Map(4)
			c.w.BulkString("notes")
			c.w.BulkString(ks.Notes)
		} else {
			c.w.Map(3)
		}
		c.w.BulkString("flags")
		c.replyKeyFlags(ks.Flags)
		c.w.BulkString("begin_search")
		c.w.Map(2)
		c.w.BulkString("type")
		switch ks.Begin {
		case cmdspec.BeginIndex:
			c.w.BulkString("index")
			c.w.BulkString("spec")
			c.w.Map(1)
			c.w.BulkString("index")
			c.w.Int(int64(ks.Index))
		case cmdspec.BeginKeyword:
			c.w.BulkString("keyword")
			c.w.BulkString("spec")
			c.w.Map(2)
			c.w.BulkString("keyword")
			c.w.BulkString(ks.Keyword)
			c.w.BulkString("startfrom")
			c.w.Int(int64(ks.StartFrom))
		default:
			c.w.BulkString("unknown")
			c.w.BulkString("spec")
			c.w.Map(0)
		}
		c.w.BulkString("find_keys")
		c.w.Map(2)
		c.w.BulkString("type")
		var names [3]string
		var vals [3]int
		switch ks.Find {
		case cmdspec.FindRange:
			c.w.BulkString("range")
			names, vals = [3]string{"lastkey", "keystep", "limit"}, [3]int{ks.LastKey, ks.KeyStep, ks.Limit}
		case cmdspec.FindKeynum:
			c.w.BulkString("keynum")
			names, vals = [3]string{"keynumidx", "firstkey", "keystep"}, [3]int{ks.KeyNumIdx, ks.FirstKey, ks.KeyStep}
		default:
			c.w.BulkString("unknown")
			c.w.BulkString("spec")
			c.w.Map(0)
			continue
		}
		c.w.BulkString("spec")
		c.w.Map(3)
		for i, n := range names {
			c.w.BulkString(n)
			c.w.Int(int64(vals[i]))
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

// replyCommandDocs is Redis's addReplyCommandDocs.
func (c *Client) replyCommandDocs(cmd *Command) {
	d := &cmd.Doc
	n := 1
	for _, s := range []string{d.Summary, d.Since, d.Complexity, d.DeprecatedSince, d.ReplacedBy} {
		if s != "" {
			n++
		}
	}
	for _, ok := range []bool{d.DocFlags != 0, len(d.History) > 0, len(d.Args) > 0, len(cmd.Subs) > 0} {
		if ok {
			n++
		}
	}
	c.w.Map(n)
	field := func(name, v string) {
		if v != "" {
			c.w.BulkString(name)
			c.w.BulkString(v)
		}
	}
	field("summary", d.Summary)
	field("since", d.Since)
	c.w.BulkString("group")
	c.w.BulkString(d.Group)
	field("complexity", d.Complexity)
	if d.DocFlags != 0 {
		c.w.BulkString("doc_flags")
		c.replyFlagNames(uint64(d.DocFlags), cmdspec.DocFlagNames)
	}
	field("deprecated_since", d.DeprecatedSince)
	field("replaced_by", d.ReplacedBy)
	if len(d.History) > 0 {
		c.w.BulkString("history")
		c.w.Set(len(d.History))
		for _, h := range d.History {
			c.w.Array(2)
			c.w.BulkString(h[0])
			c.w.BulkString(h[1])
		}
	}
	if len(d.Args) > 0 {
		c.w.BulkString("arguments")
		c.replyDocArgs(d.Args)
	}
	if len(cmd.Subs) > 0 {
		c.w.BulkString("subcommands")
		c.w.Map(len(cmd.Subs))
		for _, s := range cmd.Subs {
			c.w.BulkString(s.Name)
			c.replyCommandDocs(s)
		}
	}
}

// replyFlagNames replies the names of the bits set in f (bit i named
// names[i]) as a set.
func (c *Client) replyFlagNames(f uint64, names []string) {
	n := 0
	for i := range names {
		if f&(1<<i) != 0 {
			n++
		}
	}
	c.w.Set(n)
	for i, name := range names {
		if f&(1<<i) != 0 {
			c.w.Simple(name)
		}
	}
}

// replyDocArgs is Redis's addReplyCommandArgList.
func (c *Client) replyDocArgs(args []cmdspec.Arg) {
	c.w.Array(len(args))
	for i := range args {
		a := &args[i]
		n := 2
		if a.KeySpecIndex >= 0 {
			n++
		}
		for _, s := range []string{a.Token, a.Summary, a.Since, a.DeprecatedSince} {
			if s != "" {
				n++
			}
		}
		if a.EmptyToken {
			n++
		}
		if a.Flags != 0 {
			n++
		}
		if a.Type == "oneof" || a.Type == "block" {
			n++
		}
		c.w.Map(n)
		c.w.BulkString("name")
		c.w.BulkString(a.Name)
		c.w.BulkString("type")
		c.w.BulkString(a.Type)
		if a.KeySpecIndex >= 0 {
			c.w.BulkString("key_spec_index")
			c.w.Int(int64(a.KeySpecIndex))
		}
		for _, kv := range [...][2]string{{"token", a.Token}, {"summary", a.Summary}, {"since", a.Since}, {"deprecated_since", a.DeprecatedSince}} {
			if kv[1] != "" || kv[0] == "token" && a.EmptyToken {
				c.w.BulkString(kv[0])
				c.w.BulkString(kv[1])
			}
		}
		if a.Flags != 0 {
			c.w.BulkString("flags")
			c.replyFlagNames(uint64(a.Flags), cmdspec.ArgFlagNames)
		}
		if a.Type == "oneof" || a.Type == "block" {
			c.w.BulkString("arguments")
			c.replyDocArgs(a.Args)
		}
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
			cat, ok := cmdspec.Category(string(arg))
			filter = func(cmd *Command) bool { return ok && cmd.ACL&cat != 0 }
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

func commandGetkeysCommand(c *Client, args [][]byte)         { commandGetKeys(c, args, false) }
func commandGetkeysandflagsCommand(c *Client, args [][]byte) { commandGetKeys(c, args, true) }

// commandGetKeys is Redis's getKeysSubcommandImpl.
func commandGetKeys(c *Client, args [][]byte, withFlags bool) {
	cargs := args[2:]
	cmd := lookupCommand(cargs[0])
	if cmd != nil && cmd.sub != nil && len(cargs) >= 2 {
		cmd = cmd.lookupSub(cargs[1])
	}
	switch {
	case cmd == nil:
		c.w.Error("ERR Invalid command specified")
		return
	case !cmd.HasKeys():
		c.w.Error("ERR The command has no key arguments")
		return
	case !cmd.checkArity(len(cargs)):
		c.w.Error("ERR Invalid number of arguments specified for command")
		return
	}
	keys := cmd.Keys(cargs, nil, cmdspec.Declared)
	if len(keys) == 0 {
		if cmd.Flags&cmdspec.NoMandatoryKeys != 0 {
			c.w.Array(0)
		} else {
			c.w.Error("ERR Invalid arguments specified for command")
		}
		return
	}
	c.w.Array(len(keys))
	for _, k := range keys {
		if !withFlags {
			c.w.Bulk(cargs[k.Pos])
			continue
		}
		c.w.Array(2)
		c.w.Bulk(cargs[k.Pos])
		c.replyKeyFlags(k.Flags)
	}
}
