package cmdspec

import "github.com/sluicedb/sluice/resp"

// COMMAND's replies rendered from a Spec, in the shapes Redis's server.c
// writes them (RESP3's maps and sets; the Writer turns them into arrays
// for RESP2).

// ArityOK reports whether argc arguments (the name included) fit the
// command's arity.
func (s *Spec) ArityOK(argc int) bool {
	return (s.Arity <= 0 || s.Arity == argc) && argc >= -s.Arity
}

// WriteInfo writes s as COMMAND INFO shows it (Redis's
// addReplyCommandInfo), its subcommands included; a nil s is a null.
func WriteInfo(w *resp.Writer, s *Spec) {
	if s == nil {
		w.Null()
		return
	}
	w.Array(10)
	w.BulkString(s.Name)
	w.Int(int64(s.Arity))
	flags := s.Flags.Names()
	w.Set(len(flags))
	for _, f := range flags {
		w.Simple(f)
	}
	w.Int(int64(s.First))
	w.Int(int64(s.Last))
	w.Int(int64(s.Step))
	cats := s.ACL.Names()
	w.Set(len(cats))
	for _, a := range cats {
		w.Simple("@" + a)
	}
	w.Set(len(s.Doc.Tips))
	for _, t := range s.Doc.Tips {
		w.BulkString(t)
	}
	writeKeySpecs(w, s.KeySpecs)
	if len(s.Subcommands) == 0 {
		w.Set(0)
		return
	}
	w.Array(len(s.Subcommands))
	for _, sub := range s.Subcommands {
		WriteInfo(w, sub)
	}
}

// WriteKeyFlags writes key-spec flags as a set of their names (Redis's
// addReplyFlagsForKeyArgs).
func WriteKeyFlags(w *resp.Writer, f KeyFlags) {
	writeFlagNames(w, uint64(f), KeyFlagNames)
}

// writeKeySpecs is Redis's addReplyCommandKeySpecs.
func writeKeySpecs(w *resp.Writer, specs []KeySpec) {
	w.Set(len(specs))
	for i := range specs {
		ks := &specs[i]
		if ks.Notes != "" {
			w.Map(4)
			w.BulkString("notes")
			w.BulkString(ks.Notes)
		} else {
			w.Map(3)
		}
		w.BulkString("flags")
		WriteKeyFlags(w, ks.Flags)
		w.BulkString("begin_search")
		w.Map(2)
		w.BulkString("type")
		switch ks.Begin {
		case BeginIndex:
			w.BulkString("index")
			w.BulkString("spec")
			w.Map(1)
			w.BulkString("index")
			w.Int(int64(ks.Index))
		case BeginKeyword:
			w.BulkString("keyword")
			w.BulkString("spec")
			w.Map(2)
			w.BulkString("keyword")
			w.BulkString(ks.Keyword)
			w.BulkString("startfrom")
			w.Int(int64(ks.StartFrom))
		default:
			w.BulkString("unknown")
			w.BulkString("spec")
			w.Map(0)
		}
		w.BulkString("find_keys")
		w.Map(2)
		w.BulkString("type")
		var names [3]string
		var vals [3]int
		switch ks.Find {
		case FindRange:
			w.BulkString("range")
			names, vals = [3]string{"lastkey", "keystep", "limit"}, [3]int{ks.LastKey, ks.KeyStep, ks.Limit}
		case FindKeynum:
			w.BulkString("keynum")
			names, vals = [3]string{"keynumidx", "firstkey", "keystep"}, [3]int{ks.KeyNumIdx, ks.FirstKey, ks.KeyStep}
		default:
			w.BulkString("unknown")
			w.BulkString("spec")
			w.Map(0)
			continue
		}
		w.BulkString("spec")
		w.Map(3)
		for i, n := range names {
			w.BulkString(n)
			w.Int(int64(vals[i]))
		}
	}
}

// WriteDocs writes s's documentation as COMMAND DOCS shows it after the
// command's name (Redis's addReplyCommandDocs), its subcommands'
// included.
func WriteDocs(w *resp.Writer, s *Spec) {
	d := &s.Doc
	n := 1
	for _, v := range []string{d.Summary, d.Since, d.Complexity, d.DeprecatedSince, d.ReplacedBy} {
		if v != "" {
			n++
		}
	}
	for _, ok := range []bool{d.DocFlags != 0, len(d.History) > 0, len(d.Args) > 0, len(s.Subcommands) > 0} {
		if ok {
			n++
		}
	}
	w.Map(n)
	field := func(name, v string) {
		if v != "" {
			w.BulkString(name)
			w.BulkString(v)
		}
	}
	field("summary", d.Summary)
	field("since", d.Since)
	w.BulkString("group")
	w.BulkString(d.Group)
	field("complexity", d.Complexity)
	if d.DocFlags != 0 {
		w.BulkString("doc_flags")
		writeFlagNames(w, uint64(d.DocFlags), DocFlagNames)
	}
	field("deprecated_since", d.DeprecatedSince)
	field("replaced_by", d.ReplacedBy)
	if len(d.History) > 0 {
		w.BulkString("history")
		w.Set(len(d.History))
		for _, h := range d.History {
			w.Array(2)
			w.BulkString(h[0])
			w.BulkString(h[1])
		}
	}
	if len(d.Args) > 0 {
		w.BulkString("arguments")
		writeDocArgs(w, d.Args)
	}
	if len(s.Subcommands) > 0 {
		w.BulkString("subcommands")
		w.Map(len(s.Subcommands))
		for _, sub := range s.Subcommands {
			w.BulkString(sub.Name)
			WriteDocs(w, sub)
		}
	}
}

// writeFlagNames writes the names of the bits set in f (bit i named
// names[i]) as a set.
func writeFlagNames(w *resp.Writer, f uint64, names []string) {
	n := 0
	for i := range names {
		if f&(1<<i) != 0 {
			n++
		}
	}
	w.Set(n)
	for i, name := range names {
		if f&(1<<i) != 0 {
			w.Simple(name)
		}
	}
}

// writeDocArgs is Redis's addReplyCommandArgList.
func writeDocArgs(w *resp.Writer, args []Arg) {
	w.Array(len(args))
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
		w.Map(n)
		w.BulkString("name")
		w.BulkString(a.Name)
		w.BulkString("type")
		w.BulkString(a.Type)
		if a.KeySpecIndex >= 0 {
			w.BulkString("key_spec_index")
			w.Int(int64(a.KeySpecIndex))
		}
		for _, kv := range [...][2]string{{"token", a.Token}, {"summary", a.Summary}, {"since", a.Since}, {"deprecated_since", a.DeprecatedSince}} {
			if kv[1] != "" || kv[0] == "token" && a.EmptyToken {
				w.BulkString(kv[0])
				w.BulkString(kv[1])
			}
		}
		if a.Flags != 0 {
			w.BulkString("flags")
			writeFlagNames(w, uint64(a.Flags), ArgFlagNames)
		}
		if a.Type == "oneof" || a.Type == "block" {
			w.BulkString("arguments")
			writeDocArgs(w, a.Args)
		}
	}
}

// List returns the names of the commands in table and of their
// subcommands, in COMMAND LIST's order (each command before its
// subcommands), that keep accepts (every one with a nil keep).
func List(table []*Spec, keep func(*Spec) bool) []string {
	var names []string
	var walk func(specs []*Spec)
	walk = func(specs []*Spec) {
		for _, s := range specs {
			if keep == nil || keep(s) {
				names = append(names, s.Name)
			}
			walk(s.Subcommands)
		}
	}
	walk(table)
	return names
}

// WriteKeys replies to COMMAND GETKEYS (GETKEYSANDFLAGS with withFlags)
// for the command line args, s being its command or subcommand (nil for
// none), as Redis's getKeysSubcommandImpl: the keys the key specs find
// (Declared), or an error.
func WriteKeys(w *resp.Writer, s *Spec, args [][]byte, withFlags bool) {
	switch {
	case s == nil:
		w.Error("ERR Invalid command specified")
		return
	case !s.HasKeys():
		w.Error("ERR The command has no key arguments")
		return
	case !s.ArityOK(len(args)):
		w.Error("ERR Invalid number of arguments specified for command")
		return
	}
	keys := s.Keys(args, nil, Declared)
	if len(keys) == 0 {
		if s.Flags&NoMandatoryKeys != 0 {
			w.Array(0)
		} else {
			w.Error("ERR Invalid arguments specified for command")
		}
		return
	}
	w.Array(len(keys))
	for _, k := range keys {
		if !withFlags {
			w.Bulk(args[k.Pos])
			continue
		}
		w.Array(2)
		w.Bulk(args[k.Pos])
		WriteKeyFlags(w, k.Flags)
	}
}
