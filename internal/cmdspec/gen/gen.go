// Package gen writes Sluice's command table from Redis's command JSON and
// Sluice's overlay, as Redis's utils/generate-command-code.py writes
// commands.c. The generate.go program in internal/cmdspec runs it (go
// generate); its test proves the checked-in output current.
package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/internal/cmdspec"
)

// Outputs, relative to the internal/cmdspec directory.
const (
	TableFile    = "table_gen.go"
	HandlersFile = "../../server/commands_gen.go"
)

// File is one generated file.
type File struct {
	Path string // relative to the internal/cmdspec directory
	Data []byte
}

// Generate reads dir/commands/*.json and dir/overlay.json and returns the
// generated files.
func Generate(dir string) ([]File, error) {
	cmds, err := load(dir)
	if err != nil {
		return nil, err
	}
	table, err := writeTable(cmds)
	if err != nil {
		return nil, err
	}
	handlers, err := writeHandlers(cmds)
	if err != nil {
		return nil, err
	}
	return []File{{TableFile, table}, {HandlersFile, handlers}}, nil
}

// jsonCommand is one command in Redis's JSON format.
type jsonCommand struct {
	Summary         string          `json:"summary"`
	Complexity      string          `json:"complexity"`
	Group           string          `json:"group"`
	Since           string          `json:"since"`
	Arity           *int            `json:"arity"`
	Container       string          `json:"container"`
	Function        string          `json:"function"`
	GetKeysFunction string          `json:"get_keys_function"`
	CommandFlags    []string        `json:"command_flags"`
	ACLCategories   []string        `json:"acl_categories"`
	KeySpecs        []jsonKeySpec   `json:"key_specs"`
	Arguments       []jsonArg       `json:"arguments"`
	DocFlags        []string        `json:"doc_flags"`
	DeprecatedSince string          `json:"deprecated_since"`
	ReplacedBy      string          `json:"replaced_by"`
	History         [][2]string     `json:"history"`
	CommandTips     []string        `json:"command_tips"`
	ReplySchema     json.RawMessage `json:"reply_schema"` // not in 7.0; ignored
}

type jsonKeySpec struct {
	Notes       string                     `json:"notes"`
	Flags       []string                   `json:"flags"`
	BeginSearch map[string]json.RawMessage `json:"begin_search"` // one of index, keyword, unknown
	FindKeys    map[string]json.RawMessage `json:"find_keys"`    // one of range, keynum, unknown
}

type jsonArg struct {
	Name            string    `json:"name"`
	Type            string    `json:"type"`
	KeySpecIndex    *int      `json:"key_spec_index"`
	Token           string    `json:"token"`
	Summary         string    `json:"summary"`
	Since           string    `json:"since"`
	DeprecatedSince string    `json:"deprecated_since"`
	Optional        bool      `json:"optional"`
	Multiple        bool      `json:"multiple"`
	MultipleToken   bool      `json:"multiple_token"`
	Arguments       []jsonArg `json:"arguments"`
}

// overlayEntry is Sluice's word on one command (overlay.json, keyed by
// full name).
type overlayEntry struct {
	// Unimplemented drops a Redis command Sluice does not serve.
	Unimplemented bool `json:"unimplemented"`
	// LockAll sets cmdspec.LockAll.
	LockAll bool `json:"lock_all"`
	// Handler names the Go handler where it is not the one the command's
	// name gives (see handlerName); on a container, the handler of every
	// subcommand without its own.
	Handler string `json:"handler"`
	// Command defines a command Redis 7.0 lacks, in Redis's JSON format.
	Command *jsonCommand `json:"command"`
	// Why says why, for the reader.
	Why string `json:"why"`
}

// command is one command being generated.
type command struct {
	name    string // full, lower case
	json    *jsonCommand
	overlay overlayEntry
	subs    []*command
	parent  *command
}

func decodeStrict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func load(dir string) ([]*command, error) {
	files, err := filepath.Glob(filepath.Join(dir, "commands", "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no command JSON in %s", filepath.Join(dir, "commands"))
	}
	byName := map[string]*command{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var m map[string]*jsonCommand
		if err := decodeStrict(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		for k, c := range m {
			name := strings.ToLower(k)
			if c.Container != "" {
				name = strings.ToLower(c.Container) + "|" + name
			}
			if byName[name] != nil {
				return nil, fmt.Errorf("%s: command %s defined twice", f, name)
			}
			byName[name] = &command{name: name, json: c}
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "overlay.json"))
	if err != nil {
		return nil, err
	}
	var overlay map[string]overlayEntry
	if err := decodeStrict(data, &overlay); err != nil {
		return nil, fmt.Errorf("overlay.json: %v", err)
	}
	if err := uniqueKeys(data); err != nil {
		return nil, fmt.Errorf("overlay.json: %v", err)
	}
	for name, o := range overlay {
		c := byName[name]
		switch {
		case o.Command != nil && c != nil:
			return nil, fmt.Errorf("overlay.json: %s is a Redis command; it cannot be defined again", name)
		case o.Command != nil:
			c = &command{name: name, json: o.Command}
			byName[name] = c
		case c == nil:
			return nil, fmt.Errorf("overlay.json: unknown command %s", name)
		}
		c.overlay = o
	}
	var top []*command
	for name, c := range byName {
		if c.overlay.Unimplemented || hasFlag(c.json, "ONLY_SENTINEL") {
			continue
		}
		if i := strings.IndexByte(name, '|'); i >= 0 {
			p := byName[name[:i]]
			if p == nil {
				return nil, fmt.Errorf("%s: no container %s", name, name[:i])
			}
			c.parent = p
			p.subs = append(p.subs, c)
			continue
		}
		top = append(top, c)
	}
	sortCommands(top)
	for _, c := range byName {
		sortCommands(c.subs)
	}
	return top, nil
}

// uniqueKeys fails when the top-level object of data names a key twice
// (encoding/json would keep the last silently).
func uniqueKeys(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	if _, err := d.Token(); err != nil { // {
		return err
	}
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		if seen[k] {
			return fmt.Errorf("%s is named twice", k)
		}
		seen[k] = true
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

func sortCommands(cs []*command) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
}

func hasFlag(c *jsonCommand, f string) bool {
	for _, x := range c.CommandFlags {
		if x == f {
			return true
		}
	}
	return false
}

// spec turns a command into its cmdspec.Spec (without subcommands).
func (c *command) spec() (*cmdspec.Spec, error) {
	j := c.json
	s := &cmdspec.Spec{Name: c.name}
	if j.Arity == nil {
		return nil, fmt.Errorf("%s: no arity", c.name)
	}
	s.Arity = *j.Arity
	for _, f := range j.CommandFlags {
		bit, ok := flagByJSON(f)
		if !ok {
			return nil, fmt.Errorf("%s: unknown command flag %q", c.name, f)
		}
		s.Flags |= bit
	}
	if c.overlay.LockAll {
		s.Flags |= cmdspec.LockAll
	}
	for _, a := range j.ACLCategories {
		cat, ok := cmdspec.Category(a)
		if !ok || strings.ToUpper(a) != a {
			return nil, fmt.Errorf("%s: unknown ACL category %q", c.name, a)
		}
		s.ACL |= cat
	}
	s.ACL = cmdspec.ImplicitCategories(s.Flags, s.ACL)
	for i, k := range j.KeySpecs {
		ks, err := keySpec(k)
		if err != nil {
			return nil, fmt.Errorf("%s: key spec %d: %v", c.name, i, err)
		}
		s.KeySpecs = append(s.KeySpecs, ks)
	}
	if j.GetKeysFunction != "" {
		g, ok := cmdspec.GetKeysFuncs[j.GetKeysFunction]
		if !ok {
			return nil, fmt.Errorf("%s: unknown get_keys_function %q", c.name, j.GetKeysFunction)
		}
		s.GetKeys = g
	}
	legacyRange(s)
	if s.GetKeys == cmdspec.NoGetKeys && s.Flags&cmdspec.MovableKeys != 0 {
		// Access would miss keys the legacy range cannot describe.
		return nil, fmt.Errorf("%s: movable keys need a get_keys_function", c.name)
	}
	if s.GetKeys.RefinesFlags() && (s.First != 1 || s.Last != 1) {
		return nil, fmt.Errorf("%s: %s's keys are not its legacy range", c.name, j.GetKeysFunction)
	}
	s.RangeKeys = s.Step != 0 && (s.GetKeys == cmdspec.NoGetKeys || s.GetKeys.RefinesFlags())
	for _, ks := range s.KeySpecs {
		if ks.Flags&cmdspec.KeyNotKey != 0 {
			s.RangeKeys = false
		}
	}
	if !s.HasKeys() && s.Flags&cmdspec.LockAll == 0 {
		s.Flags |= cmdspec.NoLock
	}
	d, err := c.doc()
	if err != nil {
		return nil, err
	}
	s.Doc = d
	return s, nil
}

func flagByJSON(name string) (cmdspec.Flags, bool) {
	for _, f := range cmdspec.FlagNames {
		if f.JSON != "" && f.JSON == name && !f.Sluice {
			return f.Flag, true
		}
	}
	return 0, false
}

func keySpec(k jsonKeySpec) (cmdspec.KeySpec, error) {
	ks := cmdspec.KeySpec{}
	var err error
	if ks.Notes, err = cString(k.Notes); err != nil {
		return ks, err
	}
	if k.Flags == nil {
		return ks, fmt.Errorf("no flags")
	}
	for _, f := range k.Flags {
		found := false
		for i, n := range cmdspec.KeyFlagNames {
			if strings.EqualFold(n, f) && strings.ToUpper(f) == f {
				ks.Flags |= 1 << i
				found = true
			}
		}
		if !found {
			return ks, fmt.Errorf("unknown key spec flag %q", f)
		}
	}
	if len(k.BeginSearch) != 1 || len(k.FindKeys) != 1 {
		return ks, fmt.Errorf("begin_search and find_keys must have one type each")
	}
	for typ, raw := range k.BeginSearch {
		switch typ {
		case "index":
			var v struct {
				Pos int `json:"pos"`
			}
			err = decodeStrict(raw, &v)
			ks.Begin, ks.Index = cmdspec.BeginIndex, v.Pos
		case "keyword":
			var v struct {
				Keyword   string `json:"keyword"`
				StartFrom int    `json:"startfrom"`
			}
			if err = decodeStrict(raw, &v); err == nil {
				ks.Keyword, err = cString(v.Keyword)
			}
			ks.Begin, ks.StartFrom = cmdspec.BeginKeyword, v.StartFrom
		case "unknown":
			ks.Begin = cmdspec.BeginUnknown
		default:
			err = fmt.Errorf("unknown begin_search %q", typ)
		}
	}
	if err != nil {
		return ks, err
	}
	for typ, raw := range k.FindKeys {
		switch typ {
		case "range":
			var v struct {
				LastKey int `json:"lastkey"`
				Step    int `json:"step"`
				Limit   int `json:"limit"`
			}
			err = decodeStrict(raw, &v)
			ks.Find, ks.LastKey, ks.KeyStep, ks.Limit = cmdspec.FindRange, v.LastKey, v.Step, v.Limit
		case "keynum":
			var v struct {
				KeyNumIdx int `json:"keynumidx"`
				FirstKey  int `json:"firstkey"`
				Step      int `json:"step"`
			}
			err = decodeStrict(raw, &v)
			ks.Find, ks.KeyNumIdx, ks.FirstKey, ks.KeyStep = cmdspec.FindKeynum, v.KeyNumIdx, v.FirstKey, v.Step
		case "unknown":
			ks.Find = cmdspec.FindUnknown
		default:
			err = fmt.Errorf("unknown find_keys %q", typ)
		}
	}
	if err != nil {
		return ks, err
	}
	return ks, nil
}

// legacyRange sets the (first, last, step) COMMAND INFO shows and the
// movablekeys flag, as Redis's populateCommandLegacyRangeSpec does.
func legacyRange(s *cmdspec.Spec) {
	specs := s.KeySpecs
	if len(specs) == 0 {
		return
	}
	plain := func(ks cmdspec.KeySpec) bool {
		return ks.Begin == cmdspec.BeginIndex && ks.Find == cmdspec.FindRange
	}
	set := func(first, last, step int) {
		if last >= 0 {
			last += first
		}
		s.First, s.Last, s.Step = first, last, step
	}
	if len(specs) == 1 && plain(specs[0]) {
		if specs[0].Flags&cmdspec.KeyIncomplete != 0 {
			s.Flags |= cmdspec.MovableKeys
		}
		set(specs[0].Index, specs[0].LastKey, specs[0].KeyStep)
		return
	}
	const none = int(^uint(0) >> 1)
	first, last, prevLast := none, 0, 0
	for _, ks := range specs {
		if !plain(ks) {
			s.Flags |= cmdspec.MovableKeys
			continue
		}
		if ks.KeyStep != 1 || (prevLast != 0 && prevLast != ks.Index-1) {
			s.Flags |= cmdspec.MovableKeys
			continue
		}
		if ks.Flags&cmdspec.KeyIncomplete != 0 {
			s.Flags |= cmdspec.MovableKeys
		}
		first = min(first, ks.Index)
		abs := ks.LastKey
		if abs >= 0 {
			abs += ks.Index
		}
		// Redis compares as unsigned, so a negative (from the end) wins.
		if uint32(int32(abs)) > uint32(int32(last)) {
			last = abs
		}
		prevLast = last
	}
	if first == none {
		s.Flags |= cmdspec.MovableKeys
		return
	}
	if last >= 0 {
		last -= first
	}
	set(first, last, 1)
}

func (c *command) doc() (cmdspec.Doc, error) {
	j := c.json
	var d cmdspec.Doc
	var err error
	for _, f := range []struct {
		dst *string
		src string
	}{{&d.Summary, j.Summary}, {&d.Since, j.Since}, {&d.Complexity, j.Complexity}, {&d.DeprecatedSince, j.DeprecatedSince}, {&d.ReplacedBy, j.ReplacedBy}} {
		if *f.dst, err = cString(f.src); err != nil {
			return d, fmt.Errorf("%s: %v", c.name, err)
		}
	}
	groups := map[string]string{"generic": "generic", "string": "string", "list": "list", "set": "set", "sorted_set": "sorted-set", "hash": "hash", "pubsub": "pubsub", "transactions": "transactions", "connection": "connection", "server": "server", "scripting": "scripting", "hyperloglog": "hyperloglog", "cluster": "cluster", "sentinel": "sentinel", "geo": "geo", "stream": "stream", "bitmap": "bitmap"}
	if d.Group = groups[j.Group]; d.Group == "" {
		return d, fmt.Errorf("%s: unknown group %q", c.name, j.Group)
	}
	for _, f := range j.DocFlags {
		found := false
		for i, n := range cmdspec.DocFlagNames {
			if strings.ToUpper(n) == f {
				d.DocFlags |= 1 << i
				found = true
			}
		}
		if !found {
			return d, fmt.Errorf("%s: unknown doc flag %q", c.name, f)
		}
	}
	for _, h := range j.History {
		v, err1 := cString(h[0])
		t, err2 := cString(h[1])
		if err1 != nil || err2 != nil {
			return d, fmt.Errorf("%s: bad history", c.name)
		}
		d.History = append(d.History, [2]string{v, t})
	}
	for _, t := range j.CommandTips {
		t, err := cString(strings.ToLower(t))
		if err != nil {
			return d, fmt.Errorf("%s: %v", c.name, err)
		}
		d.Tips = append(d.Tips, t)
	}
	if d.Args, err = args(j.Arguments, len(j.KeySpecs)); err != nil {
		return d, fmt.Errorf("%s: %v", c.name, err)
	}
	return d, nil
}

var argTypes = map[string]bool{"string": true, "integer": true, "double": true, "key": true, "pattern": true, "unix-time": true, "pure-token": true, "oneof": true, "block": true}

func args(in []jsonArg, nspecs int) ([]cmdspec.Arg, error) {
	var out []cmdspec.Arg
	for _, a := range in {
		var r cmdspec.Arg
		var err error
		if r.Name, err = cString(strings.ToLower(a.Name)); err != nil || r.Name == "" {
			return nil, fmt.Errorf("argument %q: bad name", a.Name)
		}
		if !argTypes[a.Type] {
			return nil, fmt.Errorf("argument %s: unknown type %q", a.Name, a.Type)
		}
		r.Type = a.Type
		r.KeySpecIndex = -1
		if a.KeySpecIndex != nil {
			if *a.KeySpecIndex < 0 || *a.KeySpecIndex >= nspecs {
				return nil, fmt.Errorf("argument %s: no key spec %d", a.Name, *a.KeySpecIndex)
			}
			r.KeySpecIndex = *a.KeySpecIndex
		}
		for _, f := range []struct {
			dst *string
			src string
		}{{&r.Token, strings.ToUpper(a.Token)}, {&r.Summary, a.Summary}, {&r.Since, a.Since}, {&r.DeprecatedSince, a.DeprecatedSince}} {
			if *f.dst, err = cString(f.src); err != nil {
				return nil, fmt.Errorf("argument %s: %v", a.Name, err)
			}
		}
		r.EmptyToken = a.Token != "" && r.Token == ""
		if a.Optional {
			r.Flags |= cmdspec.ArgOptional
		}
		if a.Multiple {
			r.Flags |= cmdspec.ArgMultiple
		}
		if a.MultipleToken {
			if !a.Multiple {
				return nil, fmt.Errorf("argument %s: multiple_token without multiple", a.Name)
			}
			r.Flags |= cmdspec.ArgMultipleToken
		}
		if a.Type == "oneof" || a.Type == "block" {
			if r.Args, err = args(a.Arguments, nspecs); err != nil {
				return nil, err
			}
		} else if len(a.Arguments) > 0 {
			return nil, fmt.Errorf("argument %s: arguments in a %s", a.Name, a.Type)
		}
		out = append(out, r)
	}
	return out, nil
}

// cString is what Redis serves for a JSON string: its generator pastes
// the string between double quotes into commands.c, so the C compiler
// reads it (the empty-string token `""` becomes an empty string).
func cString(v string) (string, error) {
	lit := `"` + strings.ReplaceAll(v, "\n", `\n`) + `"`
	var b strings.Builder
	in := false
	for i := 0; i < len(lit); i++ {
		ch := lit[i]
		switch {
		case !in && ch == '"':
			in = true
		case !in && (ch == ' ' || ch == '\t'):
		case !in:
			return "", fmt.Errorf("%q is not a C string", v)
		case ch == '"':
			in = false
		case ch == '\\':
			i++
			if i == len(lit) {
				return "", fmt.Errorf("%q is not a C string", v)
			}
			switch e := lit[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '\\', '"', '\'', '?':
				b.WriteByte(e)
			default:
				return "", fmt.Errorf("%q: unsupported escape \\%c", v, e)
			}
		default:
			b.WriteByte(ch)
		}
	}
	if in {
		return "", fmt.Errorf("%q is not a C string", v)
	}
	return b.String(), nil
}

// handlerName is the Go handler of a command: the overlay's, else its
// container's overlay handler, else its full name in camel case plus
// "Command" ("client|no-evict": clientNoEvictCommand; "sort_ro":
// sortRoCommand), the way Redis names getCommand.
func handlerName(c *command) string {
	if c.overlay.Handler != "" {
		return c.overlay.Handler
	}
	if c.parent != nil && c.parent.overlay.Handler != "" {
		return c.parent.overlay.Handler
	}
	parts := strings.FieldsFunc(c.name, func(r rune) bool { return r == '|' || r == '-' || r == '_' })
	name := parts[0]
	for _, p := range parts[1:] {
		name += strings.ToUpper(p[:1]) + p[1:]
	}
	return name + "Command"
}

const header = "// Code generated by internal/cmdspec/gen from Redis 7.0.15's command JSON\n// and Sluice's overlay (internal/cmdspec); DO NOT EDIT.\n\n"

func writeHandlers(cmds []*command) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("package server\n\n")
	b.WriteString("// handlers binds the commands of cmdspec.Table to their handlers (a\n// container only where Redis runs it without a subcommand: COMMAND).\n")
	b.WriteString("var handlers = map[string]func(c *Client, args [][]byte){\n")
	var walk func(cs []*command)
	walk = func(cs []*command) {
		for _, c := range cs {
			if len(c.subs) > 0 {
				if c.json.Function != "" {
					fmt.Fprintf(&b, "%q: %s,\n", c.name, handlerName(c))
				}
				walk(c.subs)
				continue
			}
			fmt.Fprintf(&b, "%q: %s,\n", c.name, handlerName(c))
		}
	}
	walk(cmds)
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

func writeTable(cmds []*command) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("//go:build !cmdspecgen\n\n")
	b.WriteString(header)
	b.WriteString("package cmdspec\n\n")
	b.WriteString("// Table is every command Sluice serves, by name; a container's\n// subcommands are in its Subcommands.\n")
	b.WriteString("var Table = []*Spec{\n")
	if err := writeSpecs(&b, cmds); err != nil {
		return nil, err
	}
	b.WriteString("}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the table: %v", err)
	}
	return out, nil
}

func writeSpecs(b *bytes.Buffer, cmds []*command) error {
	for _, c := range cmds {
		s, err := c.spec()
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "{\nName: %q,\nArity: %d,\n", s.Name, s.Arity)
		if s.Flags != 0 {
			fmt.Fprintf(b, "Flags: %s,\n", flagsExpr(s.Flags))
		}
		fmt.Fprintf(b, "ACL: %s,\n", catsExpr(s.ACL))
		if len(s.KeySpecs) > 0 {
			b.WriteString("KeySpecs: []KeySpec{\n")
			for _, ks := range s.KeySpecs {
				writeKeySpec(b, ks)
			}
			b.WriteString("},\n")
		}
		if s.GetKeys != cmdspec.NoGetKeys {
			fmt.Fprintf(b, "GetKeys: %s,\n", getKeysName(c.json.GetKeysFunction))
		}
		if s.First != 0 || s.Last != 0 || s.Step != 0 {
			fmt.Fprintf(b, "First: %d, Last: %d, Step: %d,\n", s.First, s.Last, s.Step)
		}
		if s.RangeKeys {
			b.WriteString("RangeKeys: true,\n")
		}
		writeDoc(b, s.Doc)
		if len(c.subs) > 0 {
			b.WriteString("Subcommands: []*Spec{\n")
			if err := writeSpecs(b, c.subs); err != nil {
				return err
			}
			b.WriteString("},\n")
		}
		b.WriteString("},\n")
	}
	return nil
}

func getKeysName(fn string) string {
	switch cmdspec.GetKeysFuncs[fn] {
	case cmdspec.GetKeysNumkeys1:
		return "GetKeysNumkeys1"
	case cmdspec.GetKeysNumkeys2:
		return "GetKeysNumkeys2"
	case cmdspec.GetKeysStore:
		return "GetKeysStore"
	case cmdspec.GetKeysSort:
		return "GetKeysSort"
	case cmdspec.GetKeysSortRO:
		return "GetKeysSortRO"
	case cmdspec.GetKeysMigrate:
		return "GetKeysMigrate"
	case cmdspec.GetKeysGeoradius:
		return "GetKeysGeoradius"
	case cmdspec.GetKeysXread:
		return "GetKeysXread"
	case cmdspec.GetKeysSet:
		return "GetKeysSet"
	case cmdspec.GetKeysBitfield:
		return "GetKeysBitfield"
	}
	panic("no Go name for " + fn)
}

// Go names of the constants, in bit order.
var (
	flagConsts     = []string{"Write", "Readonly", "DenyOOM", "Module", "Admin", "PubSub", "NoScript", "Blocking", "Loading", "Stale", "SkipMonitor", "SkipSlowlog", "Asking", "Fast", "NoAuth", "MayReplicate", "Sentinel", "OnlySentinel", "NoMandatoryKeys", "Protected", "NoAsyncLoading", "NoMulti", "MovableKeys", "AllowBusy", "TouchesArbitraryKeys", "LockAll", "NoLock"}
	catConsts      = []string{"CatKeyspace", "CatRead", "CatWrite", "CatSet", "CatSortedSet", "CatList", "CatHash", "CatString", "CatBitmap", "CatHyperLogLog", "CatGeo", "CatStream", "CatPubSub", "CatAdmin", "CatFast", "CatSlow", "CatBlocking", "CatDangerous", "CatConnection", "CatTransaction", "CatScripting"}
	keyFlagConsts  = []string{"KeyRO", "KeyRW", "KeyOW", "KeyRM", "KeyAccess", "KeyUpdate", "KeyInsert", "KeyDelete", "KeyNotKey", "KeyIncomplete", "KeyVariableFlags"}
	docFlagConsts  = []string{"DocDeprecated", "DocSyscmd"}
	argFlagConsts  = []string{"ArgOptional", "ArgMultiple", "ArgMultipleToken"}
	beginConsts    = []string{"BeginUnknown", "BeginIndex", "BeginKeyword"}
	findKeysConsts = []string{"FindUnknown", "FindRange", "FindKeynum"}
)

func bitsExpr(v uint64, names []string) string {
	var parts []string
	for i, n := range names {
		if v&(1<<i) != 0 {
			parts = append(parts, n)
			v &^= 1 << i
		}
	}
	if v != 0 {
		panic(fmt.Sprintf("bits %#x have no name", v))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " | ")
}

func flagsExpr(f cmdspec.Flags) string       { return bitsExpr(uint64(f), flagConsts) }
func catsExpr(c cmdspec.Categories) string   { return bitsExpr(uint64(c), catConsts) }
func keyFlagsExpr(f cmdspec.KeyFlags) string { return bitsExpr(uint64(f), keyFlagConsts) }

func writeKeySpec(b *bytes.Buffer, ks cmdspec.KeySpec) {
	b.WriteString("{")
	if ks.Notes != "" {
		fmt.Fprintf(b, "Notes: %q, ", ks.Notes)
	}
	fmt.Fprintf(b, "Flags: %s, Begin: %s, ", keyFlagsExpr(ks.Flags), beginConsts[ks.Begin])
	switch ks.Begin {
	case cmdspec.BeginIndex:
		fmt.Fprintf(b, "Index: %d, ", ks.Index)
	case cmdspec.BeginKeyword:
		fmt.Fprintf(b, "Keyword: %q, StartFrom: %d, ", ks.Keyword, ks.StartFrom)
	}
	fmt.Fprintf(b, "Find: %s", findKeysConsts[ks.Find])
	switch ks.Find {
	case cmdspec.FindRange:
		fmt.Fprintf(b, ", LastKey: %d, KeyStep: %d, Limit: %d", ks.LastKey, ks.KeyStep, ks.Limit)
	case cmdspec.FindKeynum:
		fmt.Fprintf(b, ", KeyNumIdx: %d, FirstKey: %d, KeyStep: %d", ks.KeyNumIdx, ks.FirstKey, ks.KeyStep)
	}
	b.WriteString("},\n")
}

func writeDoc(b *bytes.Buffer, d cmdspec.Doc) {
	b.WriteString("Doc: Doc{\n")
	for _, f := range []struct{ name, v string }{{"Summary", d.Summary}, {"Since", d.Since}, {"Group", d.Group}, {"Complexity", d.Complexity}, {"DeprecatedSince", d.DeprecatedSince}, {"ReplacedBy", d.ReplacedBy}} {
		if f.v != "" {
			fmt.Fprintf(b, "%s: %s,\n", f.name, strconv.Quote(f.v))
		}
	}
	if d.DocFlags != 0 {
		fmt.Fprintf(b, "DocFlags: %s,\n", bitsExpr(uint64(d.DocFlags), docFlagConsts))
	}
	if len(d.History) > 0 {
		b.WriteString("History: [][2]string{\n")
		for _, h := range d.History {
			fmt.Fprintf(b, "{%q, %q},\n", h[0], h[1])
		}
		b.WriteString("},\n")
	}
	if len(d.Tips) > 0 {
		b.WriteString("Tips: []string{")
		for i, t := range d.Tips {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "%q", t)
		}
		b.WriteString("},\n")
	}
	if len(d.Args) > 0 {
		b.WriteString("Args: ")
		writeArgs(b, d.Args)
		b.WriteString(",\n")
	}
	b.WriteString("},\n")
}

func writeArgs(b *bytes.Buffer, as []cmdspec.Arg) {
	b.WriteString("[]Arg{\n")
	for _, a := range as {
		fmt.Fprintf(b, "{Name: %q, Type: %q, KeySpecIndex: %d", a.Name, a.Type, a.KeySpecIndex)
		for _, f := range []struct{ name, v string }{{"Token", a.Token}, {"Summary", a.Summary}, {"Since", a.Since}, {"DeprecatedSince", a.DeprecatedSince}} {
			if f.v != "" {
				fmt.Fprintf(b, ", %s: %q", f.name, f.v)
			}
		}
		if a.EmptyToken {
			b.WriteString(", EmptyToken: true")
		}
		if a.Flags != 0 {
			fmt.Fprintf(b, ", Flags: %s", bitsExpr(uint64(a.Flags), argFlagConsts))
		}
		if len(a.Args) > 0 {
			b.WriteString(", Args: ")
			writeArgs(b, a.Args)
		}
		b.WriteString("},\n")
	}
	b.WriteString("}")
}
