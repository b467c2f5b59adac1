// Command migrate moves Go code written against the old hand-written
// command table onto the generated one (internal/cmdspec), so that a
// branch started before the table existed can be carried over by running
// it rather than by hand. It is idempotent: on code already moved it
// changes nothing.
//
// Run from the repository root:
//
//	go run ./internal/cmdspec/migrate [-dry]
//	go generate ./internal/cmdspec
//
// In package server it
//   - reads every register(&Command{...}) call: a handler not named after
//     its command (see the generator's handlerName) and used for that
//     command only is renamed to the command's name (fooCmd becomes
//     fooCommand everywhere); an inline or local closure becomes a named
//     function; a handler shared by several commands gets an overlay
//     "handler" entry (on the container when all its subcommands share
//     it); the lock_all flag becomes an overlay "lock_all" entry; a
//     registered command marked unimplemented in the overlay loses that
//     mark. Then the register calls go, with the local helpers only they
//     used and init functions left empty;
//   - rewrites the old flag API: cmd.flags&flagWrite becomes
//     cmd.Flags&cmdspec.Write, cmdFlag cmdspec.Flags, hasFlag(cmd, "x") a
//     test of the cmdspec bit;
//   - replaces the RESP encoders appendCmd and appendRESPCommand with
//     resp.AppendCommand, and listOf(e) and zsetOf(e) with e.AsList() and
//     e.AsZSet().
//
// In every package it renames the store's HashVal and SetVal to Hash and
// Set (the store's own keyspace hash Hash becomes keyHash).
//
// What it cannot move (key positions read through keyPositions, First or
// Keys, a registered command Redis 7.0 lacks without an overlay
// definition, metadata that disagrees with Redis's JSON) it reports, with
// positions, for a person to finish.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/internal/cmdspec"
)

var (
	dry      = flag.Bool("dry", false, "report what would change, write nothing")
	specDir  = flag.String("spec", "internal/cmdspec", "the cmdspec directory (commands/, overlay.json)")
	serverPk = flag.String("server", "server", "the server package's directory")
	doTable  = flag.Bool("table", true, "move register calls into the overlay and rename handlers")
	doFlags  = flag.Bool("flags", true, "rewrite the old flag API")
	doEnc    = flag.Bool("encoders", true, "replace appendCmd and appendRESPCommand with resp.AppendCommand")
	doStore  = flag.Bool("store", true, "rename the store's HashVal and SetVal")
)

func main() {
	flag.Parse()
	m := &migrator{fset: token.NewFileSet(), edits: map[string][]edit{}, src: map[string][]byte{}}
	if err := m.run(); err != nil {
		fmt.Fprintln(os.Stderr, "migrate:", err)
		os.Exit(1)
	}
	for _, n := range m.notes {
		fmt.Println(n)
	}
	if len(m.manual) > 0 {
		fmt.Println("left for a person:")
		for _, n := range m.manual {
			fmt.Println("  " + n)
		}
	}
}

type edit struct {
	start, end int // byte offsets
	text       string
}

type pkgFile struct {
	path string
	file *ast.File
}

type migrator struct {
	fset   *token.FileSet
	src    map[string][]byte
	edits  map[string][]edit
	notes  []string
	manual []string
	// appended holds functions to add at the end of a file.
	appended map[string][]string
}

func (m *migrator) note(f string, a ...any)    { m.notes = append(m.notes, fmt.Sprintf(f, a...)) }
func (m *migrator) manualf(f string, a ...any) { m.manual = append(m.manual, fmt.Sprintf(f, a...)) }

func (m *migrator) pos(p token.Pos) string {
	pp := m.fset.Position(p)
	return fmt.Sprintf("%s:%d", pp.Filename, pp.Line)
}

func (m *migrator) off(p token.Pos) int { return m.fset.Position(p).Offset }

func (m *migrator) replace(file string, start, end token.Pos, text string) {
	m.edits[file] = append(m.edits[file], edit{m.off(start), m.off(end), text})
}

func (m *migrator) text(file string, start, end token.Pos) string {
	return string(m.src[file][m.off(start):m.off(end)])
}

// parseDir parses the Go files of dir (tests too), skipping generated ones.
func (m *migrator) parseDir(dir string) ([]pkgFile, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []pkgFile
	for _, n := range names {
		if strings.HasSuffix(n, "_gen.go") {
			continue
		}
		data, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(m.fset, n, data, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		m.src[n] = data
		out = append(out, pkgFile{n, f})
	}
	return out, nil
}

// allPackages lists the directories of the module holding Go files.
func allPackages() ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if g, _ := filepath.Glob(filepath.Join(p, "*.go")); len(g) > 0 {
				dirs = append(dirs, p)
			}
		}
		return nil
	})
	return dirs, err
}

func (m *migrator) run() error {
	files, err := m.parseDir(*serverPk)
	if err != nil {
		return err
	}
	m.appended = map[string][]string{}
	decls := topLevel(files)
	renames := map[string]string{}
	if *doTable {
		if err := m.table(files, decls, renames); err != nil {
			return err
		}
		m.renameIdents(files, decls, renames)
	}
	if *doFlags {
		m.flagAPI(files, decls)
	}
	if data, err := os.ReadFile(filepath.Join("resp", "writer.go")); err != nil || !bytes.Contains(data, []byte("func AppendCommand(")) {
		*doEnc = false // nothing to point the callers at yet
	}
	if *doEnc {
		m.encoders(files, decls)
	}
	m.leftovers(files)
	if *doEnc {
		dirs, err := allPackages()
		if err != nil {
			return err
		}
		if err := m.encoderCopies(dirs); err != nil {
			return err
		}
	}
	if *doStore {
		dirs, err := allPackages()
		if err != nil {
			return err
		}
		if err := m.storeNames(dirs); err != nil {
			return err
		}
	}
	return m.write()
}

// topLevel returns the package-level names declared in files.
func topLevel(files []pkgFile) map[string]bool {
	out := map[string]bool{}
	for _, f := range files {
		for _, d := range f.file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					out[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							out[n.Name] = true
						}
					case *ast.TypeSpec:
						out[s.Name.Name] = true
					}
				}
			}
		}
	}
	return out
}

// isPackageLevel reports whether id refers to a package-level object (or
// to nothing the file declares, which in a package means another file's).
func isPackageLevel(id *ast.Ident, f *ast.File) bool {
	if id.Obj == nil {
		return true
	}
	return f.Scope.Objects[id.Name] == id.Obj
}

// parents maps each node of f to its parent.
func parents(f *ast.File) map[ast.Node]ast.Node {
	out := map[ast.Node]ast.Node{}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if len(stack) > 0 {
			out[n] = stack[len(stack)-1]
		}
		stack = append(stack, n)
		return true
	})
	return out
}

// refIdents calls fn for each identifier of f that refers to a
// package-level object: not a selector's field, not a composite literal's
// field key, not a declaration of a local, not a method name.
func refIdents(f *ast.File, fn func(id *ast.Ident)) {
	par := parents(f)
	ast.Inspect(f, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || !isPackageLevel(id, f) {
			return true
		}
		switch p := par[id].(type) {
		case *ast.SelectorExpr:
			if p.Sel == id {
				return true
			}
		case *ast.KeyValueExpr:
			if p.Key == id {
				if _, lit := par[p].(*ast.CompositeLit); lit {
					return true
				}
			}
		case *ast.FuncDecl:
			if p.Recv != nil && p.Name == id {
				return true
			}
		case *ast.Field:
			return true // a struct field, parameter or result name
		case *ast.File:
			return true // the package name
		}
		fn(id)
		return true
	})
}

// ---- the command table ----

type overlayEntry struct {
	Unimplemented bool            `json:"unimplemented,omitempty"`
	LockAll       bool            `json:"lock_all,omitempty"`
	Handler       string          `json:"handler,omitempty"`
	Command       json.RawMessage `json:"command,omitempty"`
	Why           string          `json:"why,omitempty"`

	raw   []byte        // as read, written back while unmodified
	blank bool          // a blank line above it (the overlay's groups)
	orig  *overlayEntry // the fields as read
}

func (e *overlayEntry) same(o *overlayEntry) bool {
	return o != nil && e.Unimplemented == o.Unimplemented && e.LockAll == o.LockAll && e.Handler == o.Handler && e.Why == o.Why && bytes.Equal(e.Command, o.Command)
}

type overlay struct {
	order   []string
	entries map[string]*overlayEntry
	changed bool
}

func readOverlay(path string) (*overlay, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	o := &overlay{entries: map[string]*overlayEntry{}}
	d := json.NewDecoder(bytes.NewReader(data))
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	for d.More() {
		before := d.InputOffset()
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		k := t.(string)
		gap := string(data[before:d.InputOffset()])
		blank := strings.Count(strings.TrimLeft(gap, ","), "\n") > 1
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
		var e overlayEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
		e.raw, e.blank = raw, blank
		orig := e
		e.orig = &orig
		o.order = append(o.order, k)
		o.entries[k] = &e
	}
	return o, nil
}

func (o *overlay) get(name string) *overlayEntry {
	if e := o.entries[name]; e != nil {
		return e
	}
	e := &overlayEntry{}
	o.entries[name] = e
	o.order = append(o.order, name)
	return e
}

// marshal writes the overlay one entry a line (a command definition
// indented below its name), in its order, dropping empty entries.
func (o *overlay) marshal() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{\n")
	var keys []string
	for _, k := range o.order {
		e := o.entries[k]
		if !e.Unimplemented && !e.LockAll && e.Handler == "" && e.Command == nil {
			continue
		}
		keys = append(keys, k)
	}
	for i, k := range keys {
		e := o.entries[k]
		var line []byte
		var err error
		if e.same(e.orig) {
			line = e.raw
		} else if e.Command != nil {
			var ind bytes.Buffer
			if err := json.Indent(&ind, e.Command, "  ", "  "); err != nil {
				return nil, err
			}
			c := *e
			c.Command = nil
			head, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			line = []byte(fmt.Sprintf("{\"command\": %s", ind.String()))
			if string(head) != "{}" {
				line = append(line, ", "...)
				line = append(line, head[1:len(head)-1]...)
			}
			line = append(line, '}')
		} else {
			line, err = json.Marshal(e)
			if err != nil {
				return nil, err
			}
			line = bytes.ReplaceAll(line, []byte("\":"), []byte("\": "))
			line = bytes.ReplaceAll(line, []byte(",\""), []byte(", \""))
		}
		if e.blank && i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "  %q: %s", k, line)
		if i < len(keys)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// redisCommand is what the table step needs of Redis's JSON.
type redisCommand struct {
	Arity        int      `json:"arity"`
	Container    string   `json:"container"`
	Function     string   `json:"function"`
	CommandFlags []string `json:"command_flags"`
}

func readRedis(dir string) (map[string]*redisCommand, error) {
	files, err := filepath.Glob(filepath.Join(dir, "commands", "*.json"))
	if err != nil {
		return nil, err
	}
	out := map[string]*redisCommand{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var mm map[string]*redisCommand
		if err := json.Unmarshal(data, &mm); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		for k, c := range mm {
			name := strings.ToLower(k)
			if c.Container != "" {
				name = strings.ToLower(c.Container) + "|" + name
			}
			out[name] = c
		}
	}
	return out, nil
}

// handlerName is the generator's rule: the full name in camel case plus
// "Command" ("client|no-evict": clientNoEvictCommand).
func handlerName(name string) string {
	parts := strings.FieldsFunc(name, func(r rune) bool { return r == '|' || r == '-' || r == '_' })
	out := parts[0]
	for _, p := range parts[1:] {
		out += strings.ToUpper(p[:1]) + p[1:]
	}
	return out + "Command"
}

// registered is one command of a register call.
type registered struct {
	name    string // full
	parent  *registered
	subs    []*registered
	arity   int
	flags   []string
	hasFn   bool
	fnFunc  string       // a package-level function
	fnLit   *ast.FuncLit // a closure
	fnLocal string       // the local variable the closure was bound to
	keys    bool         // a Keys function
	keysFn  string       // ... a package-level one
	at      token.Pos
	file    string
}

type registerCall struct {
	file  string
	f     *ast.File
	stmt  *ast.ExprStmt
	fn    *ast.FuncDecl // the enclosing function
	cmds  []*registered
	local map[string]ast.Expr // local variables of fn: their values
}

func (m *migrator) table(files []pkgFile, decls map[string]bool, renames map[string]string) error {
	var calls []*registerCall
	for _, pf := range files {
		for _, d := range pf.file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			locals := map[string]ast.Expr{}
			for _, st := range fd.Body.List {
				if as, ok := st.(*ast.AssignStmt); ok && as.Tok == token.DEFINE && len(as.Lhs) == len(as.Rhs) {
					for i, l := range as.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							locals[id.Name] = as.Rhs[i]
						}
					}
				}
			}
			for _, st := range fd.Body.List {
				es, ok := st.(*ast.ExprStmt)
				if !ok {
					continue
				}
				call, ok := es.X.(*ast.CallExpr)
				if !ok {
					continue
				}
				if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "register" {
					continue
				}
				rc := &registerCall{file: pf.path, f: pf.file, stmt: es, fn: fd, local: locals}
				var perr error
				for _, a := range call.Args {
					r, err := m.parseRegistered(rc, a, nil)
					if err != nil {
						perr = err
						break
					}
					rc.cmds = append(rc.cmds, r)
				}
				if perr != nil {
					m.manualf("%v: this register call is left as it is", perr)
					continue
				}
				calls = append(calls, rc)
			}
		}
	}
	ov, err := readOverlay(filepath.Join(*specDir, "overlay.json"))
	if err != nil {
		return err
	}
	for _, name := range ov.order {
		if e := ov.entries[name]; e.Unimplemented && decls[handlerName(name)] {
			m.manualf("overlay.json says %s is not served, but %s exists: drop the entry if it serves %s", name, handlerName(name), name)
		}
	}
	if len(calls) == 0 {
		return nil
	}
	redis, err := readRedis(*specDir)
	if err != nil {
		return err
	}

	// Every command with a handler, and who uses each handler.
	var leaves []*registered
	var walk func(rs []*registered)
	walk = func(rs []*registered) {
		for _, r := range rs {
			if r.hasFn {
				leaves = append(leaves, r)
			}
			walk(r.subs)
		}
	}
	for _, c := range calls {
		walk(c.cmds)
	}
	// Handlers the generated table already binds serve other commands too.
	bound := map[string]bool{}
	if data, err := os.ReadFile(filepath.Join(*serverPk, "commands_gen.go")); err == nil {
		for _, mm := range regexp.MustCompile(`(?m)^\s*"[^"]+":\s*(\w+),`).FindAllSubmatch(data, -1) {
			bound[string(mm[1])] = true
		}
	}
	users := map[string][]*registered{}
	key := func(r *registered) string {
		switch {
		case r.fnFunc != "":
			return "func:" + r.fnFunc
		case r.fnLocal != "":
			return "local:" + r.file + ":" + r.fnLocal
		default:
			return fmt.Sprintf("lit:%d", r.fnLit.Pos())
		}
	}
	for _, r := range leaves {
		users[key(r)] = append(users[key(r)], r)
	}
	// Closures become functions: one command's takes its name, a shared
	// one its variable's.
	litName := map[string]string{}
	for k, rs := range users {
		r := rs[0]
		if r.fnLit == nil {
			continue
		}
		name := handlerName(r.name)
		if len(rs) == 1 && decls[name] {
			// The name is taken by the function the closure calls (as
			// evalCommand(c, args, sha, ro)): that one becomes the
			// generic command, as Redis names evalGenericCommand.
			generic := strings.TrimSuffix(name, "Command") + "GenericCommand"
			if !decls[generic] {
				renames[name] = generic
				decls[generic] = true
				m.note("%s: %s renamed %s, so that %s's closure takes its name", m.pos(r.at), name, generic, r.name)
			}
		}
		if len(rs) > 1 || decls[name] && renames[name] == "" {
			name = strings.TrimSuffix(r.fnLocal, "Cmd") + "Command"
			for decls[name] {
				name = "x" + name
			}
		}
		decls[name] = true
		litName[k] = name
		src := m.text(r.file, r.fnLit.Type.Params.Pos(), r.fnLit.End())
		m.appended[r.file] = append(m.appended[r.file], "func "+name+src)
		m.note("%s: %s's closure becomes func %s", m.pos(r.at), r.name, name)
	}
	handler := map[*registered]string{}
	for k, rs := range users {
		h := litName[k]
		if h == "" {
			h = rs[0].fnFunc
		}
		if h == "" {
			return fmt.Errorf("%s: %s: no handler", m.pos(rs[0].at), rs[0].name)
		}
		if rs[0].fnFunc != "" && decls[h] && renames[h] == "" && !bound[h] {
			// The command it is named after names it (the only one, or
			// the one whose name it spells); a shared fooCmd becomes
			// fooCommand.
			want := ""
			base := strings.TrimSuffix(strings.TrimSuffix(h, "Cmd"), "Command")
			for _, r := range rs {
				if handlerName(r.name) == base+"Command" {
					want = base + "Command"
				}
			}
			switch {
			case len(rs) == 1:
				want = handlerName(rs[0].name)
			case want == "" && strings.HasSuffix(h, "Cmd"):
				want = base + "Command"
			}
			if want != "" && h != want && !decls[want] {
				renames[h] = want
				decls[want] = true
				m.note("%s: handler %s renamed %s", m.pos(rs[0].at), h, want)
				h = want
			}
		}
		for _, r := range rs {
			handler[r] = h
		}
	}

	// The overlay.
	seen := map[string]bool{}
	var check func(rs []*registered)
	check = func(rs []*registered) {
		for _, r := range rs {
			seen[r.name] = true
			rc := redis[r.name]
			oe := ov.entries[r.name]
			switch {
			case rc == nil && (oe == nil || oe.Command == nil):
				m.manualf("%s: %s is not a Redis 7.0 command: define it in overlay.json (\"command\": Redis's JSON format)", m.pos(r.at), r.name)
			case rc != nil:
				if rc.Arity != r.arity {
					m.manualf("%s: %s: arity %d, Redis's JSON says %d (the JSON wins)", m.pos(r.at), r.name, r.arity, rc.Arity)
				}
				if d := flagDiff(r.flags, rc.CommandFlags); d != "" {
					m.manualf("%s: %s: flags differ from Redis's JSON (%s; the JSON wins)", m.pos(r.at), r.name, d)
				}
			}
			if oe != nil && oe.Unimplemented {
				oe.Unimplemented, oe.Why = false, ""
				ov.changed = true
				m.note("overlay: %s is served now", r.name)
			}
			if hasString(r.flags, "lock_all") && (oe == nil || !oe.LockAll) {
				e := ov.get(r.name)
				e.LockAll, e.Why = true, ""
				ov.changed = true
				m.note("overlay: %s locks the whole keyspace", r.name)
			}
			check(r.subs)
		}
	}
	for _, c := range calls {
		check(c.cmds)
	}
	// Handlers: a container whose subcommands all share one handler names
	// it once.
	setHandler := func(name, h string) {
		e := ov.entries[name]
		cur := ""
		if e != nil {
			cur = e.Handler
		}
		if cur == h {
			return
		}
		e = ov.get(name)
		e.Handler = h
		if !e.LockAll && !e.Unimplemented {
			e.Why = ""
		}
		ov.changed = true
		m.note("overlay: %s is served by %s", name, h)
	}
	var bind func(rs []*registered)
	bind = func(rs []*registered) {
		for _, r := range rs {
			if len(r.subs) > 0 {
				shared := ""
				for i, s := range r.subs {
					h := handler[s]
					if !s.hasFn || (i > 0 && h != shared) {
						shared = ""
						break
					}
					shared = h
				}
				if shared != "" && shared != handlerName(r.subs[0].name) && len(r.subs) > 1 {
					setHandler(r.name, shared)
					for _, s := range r.subs {
						if e := ov.entries[s.name]; e != nil && e.Handler != "" {
							e.Handler = ""
							ov.changed = true
						}
					}
					if r.hasFn {
						setHandler(r.name, handler[r])
					}
					continue
				}
				if e := ov.entries[r.name]; e != nil && e.Handler != "" && !r.hasFn {
					e.Handler, e.Why = "", ""
					ov.changed = true
					m.note("overlay: %s's subcommands have their own handlers", r.name)
				}
			}
			if r.hasFn {
				h := handler[r]
				want := handlerName(r.name)
				if h == want {
					if e := ov.entries[r.name]; e != nil && e.Handler != "" {
						e.Handler = ""
						ov.changed = true
					}
				} else {
					setHandler(r.name, h)
				}
			}
			bind(r.subs)
		}
	}
	for _, c := range calls {
		bind(c.cmds)
	}
	if ov.changed {
		data, err := ov.marshal()
		if err != nil {
			return err
		}
		path := filepath.Join(*specDir, "overlay.json")
		m.src[path] = data
		m.edits[path] = append(m.edits[path], edit{0, 0, ""}) // mark written
	}

	// The register calls go, with the locals only they used and the init
	// functions they leave empty.
	byFn := map[*ast.FuncDecl][]*registerCall{}
	for _, c := range calls {
		byFn[c.fn] = append(byFn[c.fn], c)
	}
	for fd, cs := range byFn {
		file := cs[0].file
		dead := map[ast.Stmt]bool{}
		for _, c := range cs {
			dead[c.stmt] = true
		}
		// Locals used only by dead statements die too (repeat: a local
		// may feed another).
		for changed := true; changed; {
			changed = false
			for _, st := range fd.Body.List {
				as, ok := st.(*ast.AssignStmt)
				if !ok || dead[st] || as.Tok != token.DEFINE {
					continue
				}
				used := false
				for _, l := range as.Lhs {
					id, _ := l.(*ast.Ident)
					if id == nil {
						used = true
						continue
					}
					for _, other := range fd.Body.List {
						if other == st || dead[other] {
							continue
						}
						if mentions(other, id.Obj) {
							used = true
						}
					}
				}
				if !used {
					dead[st] = true
					changed = true
				}
			}
		}
		alive := 0
		for _, st := range fd.Body.List {
			if !dead[st] {
				alive++
			}
		}
		if alive == 0 && fd.Name.Name == "init" && fd.Recv == nil {
			start := fd.Pos()
			if fd.Doc != nil {
				start = fd.Doc.Pos()
			}
			m.deleteLines(file, start, fd.End())
			continue
		}
		for _, st := range fd.Body.List {
			if dead[st] {
				m.deleteLines(file, st.Pos(), st.End())
			}
		}
	}
	// Keys functions nothing else calls go: keys come from the key specs.
	keysFns := map[string]bool{}
	var keysWalk func(rs []*registered)
	keysWalk = func(rs []*registered) {
		for _, r := range rs {
			if r.keysFn != "" {
				keysFns[r.keysFn] = true
			}
			keysWalk(r.subs)
		}
	}
	for _, c := range calls {
		keysWalk(c.cmds)
	}
	inCall := func(p token.Pos) bool {
		for _, c := range calls {
			if c.stmt.Pos() <= p && p < c.stmt.End() {
				return true
			}
		}
		return false
	}
	for name := range keysFns {
		var decl *ast.FuncDecl
		var declFile string
		used := false
		for _, pf := range files {
			for _, d := range pf.file.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name {
					decl, declFile = fd, pf.path
				}
			}
			refIdents(pf.file, func(id *ast.Ident) {
				if id.Name == name && !inCall(id.Pos()) && (decl == nil || id != decl.Name) {
					used = true
				}
			})
		}
		if decl == nil || used {
			continue
		}
		start := decl.Pos()
		if decl.Doc != nil {
			start = decl.Doc.Pos()
		}
		m.deleteLines(declFile, start, decl.End())
		m.note("%s: %s goes: the command's keys come from its key specs", m.pos(decl.Pos()), name)
	}
	return nil
}

// deleteLines deletes [start, end) and, when nothing else is on their
// lines, the whole lines.
func (m *migrator) deleteLines(file string, start, end token.Pos) {
	src := m.src[file]
	s, e := m.off(start), m.off(end)
	ls := bytes.LastIndexByte(src[:s], '\n') + 1
	if strings.TrimSpace(string(src[ls:s])) == "" {
		s = ls
		// A comment block right above goes with it.
		for s > 0 {
			prev := bytes.LastIndexByte(src[:s-1], '\n') + 1
			line := strings.TrimSpace(string(src[prev : s-1]))
			if !strings.HasPrefix(line, "//") {
				break
			}
			s = prev
		}
	}
	if le := bytes.IndexByte(src[e:], '\n'); le >= 0 && strings.TrimSpace(string(src[e:e+le])) == "" {
		e += le + 1
	}
	m.edits[file] = append(m.edits[file], edit{s, e, ""})
}

func mentions(n ast.Node, obj *ast.Object) bool {
	found := false
	ast.Inspect(n, func(x ast.Node) bool {
		if id, ok := x.(*ast.Ident); ok && id.Obj == obj && obj != nil {
			found = true
		}
		return !found
	})
	return found
}

func hasString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// flagDiff compares a registration's flags with the JSON's.
func flagDiff(reg, js []string) string {
	want := map[string]bool{}
	for _, f := range js {
		want[strings.ToLower(f)] = true
	}
	have := map[string]bool{}
	for _, f := range reg {
		if f != "lock_all" && f != "movablekeys" {
			have[strings.ToLower(f)] = true
		}
	}
	var d []string
	for f := range have {
		if !want[f] {
			d = append(d, "+"+f)
		}
	}
	for f := range want {
		// The JSON's flags COMMAND INFO hides were never registered.
		if !have[f] && f != "may_replicate" && f != "movablekeys" && f != "sentinel" && f != "only_sentinel" && f != "protected" && f != "touches_arbitrary_keys" {
			d = append(d, "-"+f)
		}
	}
	sort.Strings(d)
	return strings.Join(d, " ")
}

func (m *migrator) parseRegistered(rc *registerCall, e ast.Expr, parent *registered) (*registered, error) {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("%s: a register argument that is not a Command literal: move it by hand", m.pos(e.Pos()))
	}
	r := &registered{parent: parent, at: lit.Pos(), file: rc.file}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			return nil, fmt.Errorf("%s: a Command literal without field names", m.pos(el.Pos()))
		}
		k := kv.Key.(*ast.Ident).Name
		switch k {
		case "Name":
			s, err := stringLit(kv.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", m.pos(kv.Pos()), err)
			}
			r.name = strings.ToLower(s)
		case "Arity":
			v := kv.Value
			neg := false
			if u, ok := v.(*ast.UnaryExpr); ok && u.Op == token.SUB {
				neg, v = true, u.X
			}
			bl, ok := v.(*ast.BasicLit)
			if !ok {
				return nil, fmt.Errorf("%s: arity is not a literal", m.pos(kv.Pos()))
			}
			n, _ := strconv.Atoi(bl.Value)
			if neg {
				n = -n
			}
			r.arity = n
		case "Flags":
			v := kv.Value
			if id, ok := v.(*ast.Ident); ok && rc.local[id.Name] != nil {
				v = rc.local[id.Name]
			}
			cl, ok := v.(*ast.CompositeLit)
			if !ok {
				return nil, fmt.Errorf("%s: flags are not a literal", m.pos(kv.Pos()))
			}
			for _, f := range cl.Elts {
				s, err := stringLit(f)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", m.pos(f.Pos()), err)
				}
				r.flags = append(r.flags, s)
			}
		case "Keys":
			r.keys = true
			if id, ok := kv.Value.(*ast.Ident); ok && isPackageLevel(id, rc.f) {
				r.keysFn = id.Name
			}
		case "Fn":
			r.hasFn = true
			v := kv.Value
			for {
				id, ok := v.(*ast.Ident)
				if !ok {
					break
				}
				if val := rc.local[id.Name]; val != nil && id.Obj != nil && rc.f.Scope.Objects[id.Name] != id.Obj {
					if _, isLit := val.(*ast.FuncLit); isLit {
						r.fnLocal = id.Name
					}
					v = val
					continue
				}
				r.fnFunc = id.Name
				break
			}
			if fl, ok := v.(*ast.FuncLit); ok {
				r.fnLit = fl
			} else if r.fnFunc == "" {
				return nil, fmt.Errorf("%s: a handler that is neither a function nor a closure", m.pos(kv.Pos()))
			}
		case "Subs":
			cl, ok := kv.Value.(*ast.CompositeLit)
			if !ok {
				return nil, fmt.Errorf("%s: Subs is not a literal", m.pos(kv.Pos()))
			}
			for _, s := range cl.Elts {
				sr, err := m.parseRegistered(rc, s, r)
				if err != nil {
					return nil, err
				}
				r.subs = append(r.subs, sr)
			}
		}
	}
	if r.name == "" {
		return nil, fmt.Errorf("%s: a command without a name", m.pos(lit.Pos()))
	}
	if parent != nil && !strings.Contains(r.name, "|") {
		r.name = parent.name + "|" + r.name
	}
	return r, nil
}

func stringLit(e ast.Expr) (string, error) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", fmt.Errorf("not a string literal")
	}
	return strconv.Unquote(bl.Value)
}

// ---- renames and the old API ----

func (m *migrator) renameIdents(files []pkgFile, decls map[string]bool, renames map[string]string) {
	if len(renames) == 0 {
		return
	}
	for _, pf := range files {
		refIdents(pf.file, func(id *ast.Ident) {
			if to, ok := renames[id.Name]; ok {
				m.replace(pf.path, id.Pos(), id.End(), to)
			}
		})
		// Doc comments that start with the old name.
		for _, d := range pf.file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Doc != nil {
				if to, ok := renames[fd.Name.Name]; ok {
					c := fd.Doc.List[0]
					if strings.HasPrefix(c.Text, "// "+fd.Name.Name+" ") {
						p := c.Slash + 3
						m.replace(pf.path, p, p+token.Pos(len(fd.Name.Name)), to)
					}
				}
			}
		}
	}
}

var oldFlags = map[string]string{
	"flagWrite": "Write", "flagReadonly": "Readonly", "flagLockAll": "LockAll", "flagNoLock": "NoLock",
	"flagNoAuth": "NoAuth", "flagNoMulti": "NoMulti", "flagPubSub": "PubSub", "flagNoScript": "NoScript",
	"flagBlocking": "Blocking", "flagAdmin": "Admin", "flagLoading": "Loading", "flagStale": "Stale",
	"flagFast": "Fast", "flagDenyOOM": "DenyOOM", "flagMayReplicate": "MayReplicate", "flagSkipSlowlog": "SkipSlowlog",
}

// flagConst returns the cmdspec constant of a flag's name ("may_replicate").
func flagConst(name string) string {
	for _, f := range cmdspec.FlagNames {
		if strings.EqualFold(f.JSON, name) || (f.Reply != "" && strings.EqualFold(f.Reply, name)) {
			for c, n := range constNames {
				if n == f.Flag {
					return c
				}
			}
		}
	}
	return ""
}

var constNames = map[string]cmdspec.Flags{
	"Write": cmdspec.Write, "Readonly": cmdspec.Readonly, "DenyOOM": cmdspec.DenyOOM, "Module": cmdspec.Module,
	"Admin": cmdspec.Admin, "PubSub": cmdspec.PubSub, "NoScript": cmdspec.NoScript, "Blocking": cmdspec.Blocking,
	"Loading": cmdspec.Loading, "Stale": cmdspec.Stale, "SkipMonitor": cmdspec.SkipMonitor,
	"SkipSlowlog": cmdspec.SkipSlowlog, "Asking": cmdspec.Asking, "Fast": cmdspec.Fast, "NoAuth": cmdspec.NoAuth,
	"MayReplicate": cmdspec.MayReplicate, "Sentinel": cmdspec.Sentinel, "OnlySentinel": cmdspec.OnlySentinel,
	"NoMandatoryKeys": cmdspec.NoMandatoryKeys, "Protected": cmdspec.Protected, "NoAsyncLoading": cmdspec.NoAsyncLoading,
	"NoMulti": cmdspec.NoMulti, "MovableKeys": cmdspec.MovableKeys, "AllowBusy": cmdspec.AllowBusy,
	"TouchesArbitraryKeys": cmdspec.TouchesArbitraryKeys, "LockAll": cmdspec.LockAll, "NoLock": cmdspec.NoLock,
}

func (m *migrator) flagAPI(files []pkgFile, decls map[string]bool) {
	for _, pf := range files {
		par := parents(pf.file)
		refIdents(pf.file, func(id *ast.Ident) {
			if decls[id.Name] {
				return // still declared: not the old API
			}
			if c, ok := oldFlags[id.Name]; ok {
				m.replace(pf.path, id.Pos(), id.End(), "cmdspec."+c)
				// The operand it is and-ed with reads .flags: .Flags.
				for n := par[id]; n != nil; n = par[n] {
					be, ok := n.(*ast.BinaryExpr)
					if !ok {
						if _, paren := n.(*ast.ParenExpr); paren {
							continue
						}
						break
					}
					if be.Op == token.OR {
						continue
					}
					if be.Op == token.AND {
						if sel, ok := be.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "flags" {
							m.replace(pf.path, sel.Sel.Pos(), sel.Sel.End(), "Flags")
						}
					}
					break
				}
			}
			if id.Name == "cmdFlag" {
				m.replace(pf.path, id.Pos(), id.End(), "cmdspec.Flags")
			}
		})
		if decls["hasFlag"] {
			continue
		}
		ast.Inspect(pf.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "hasFlag" || !isPackageLevel(id, pf.file) {
				return true
			}
			name, err := stringLit(call.Args[1])
			if err != nil {
				m.manualf("%s: hasFlag with a flag that is not a literal", m.pos(call.Pos()))
				return true
			}
			c := flagConst(name)
			if c == "" {
				m.manualf("%s: hasFlag(%q): no such flag", m.pos(call.Pos()), name)
				return true
			}
			x := m.text(pf.path, call.Args[0].Pos(), call.Args[0].End())
			if u, ok := par[call].(*ast.UnaryExpr); ok && u.Op == token.NOT {
				m.replace(pf.path, u.Pos(), u.End(), x+".Flags&cmdspec."+c+" == 0")
			} else {
				m.replace(pf.path, call.Pos(), call.End(), "("+x+".Flags&cmdspec."+c+" != 0)")
			}
			return true
		})
	}
}

// encoders replaces the old RESP command encoders with resp.AppendCommand.
func (m *migrator) encoders(files []pkgFile, decls map[string]bool) {
	for _, pf := range files {
		ast.Inspect(pf.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			id, ok := call.Fun.(*ast.Ident)
			if !ok || !isPackageLevel(id, pf.file) || decls[id.Name] {
				return true
			}
			switch id.Name {
			case "appendCmd":
				m.replace(pf.path, id.Pos(), id.End(), "resp.AppendCommand")
				if call.Ellipsis == token.NoPos && len(call.Args) == 2 {
					m.replace(pf.path, call.Rparen, call.Rparen, "...")
				}
			case "appendRESPCommand":
				m.replace(pf.path, id.Pos(), id.End(), "resp.AppendCommand")
			case "listOf", "zsetOf":
				// The store's accessors, as for the other types.
				if len(call.Args) == 1 {
					x := m.text(pf.path, call.Args[0].Pos(), call.Args[0].End())
					acc := map[string]string{"listOf": "AsList", "zsetOf": "AsZSet"}[id.Name]
					m.replace(pf.path, call.Pos(), call.End(), x+"."+acc+"()")
				}
			}
			return true
		})
	}
}

// encoderCopies removes the other packages' copies of resp.AppendCommand
// (appendCmd, AppendCmd, appendCommand, AppendCommand over a []byte and
// the arguments as [][]byte or ...[]byte) and points their callers at
// resp.AppendCommand.
func (m *migrator) encoderCopies(dirs []string) error {
	type copyOf struct {
		pkg      string // import path
		name     string
		variadic bool
	}
	names := map[string]bool{"appendCmd": true, "AppendCmd": true, "appendCommand": true, "AppendCommand": true, "appendRESPCommand": true}
	byDir := map[string][]pkgFile{}
	var copies []copyOf
	for _, dir := range dirs {
		if filepath.ToSlash(dir) == "resp" {
			continue
		}
		files, err := m.parseDir(dir)
		if err != nil {
			return err
		}
		byDir[dir] = files
		for _, pf := range files {
			if strings.HasSuffix(pf.path, "_test.go") {
				continue
			}
			for _, d := range pf.file.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Recv != nil || !names[fd.Name.Name] {
					continue
				}
				ps, rs := fd.Type.Params.List, fd.Type.Results
				if rs == nil || len(rs.List) != 1 || m.text(pf.path, rs.List[0].Type.Pos(), rs.List[0].Type.End()) != "[]byte" {
					continue
				}
				var types []string
				for _, f := range ps {
					t := m.text(pf.path, f.Type.Pos(), f.Type.End())
					for range max(1, len(f.Names)) {
						types = append(types, t)
					}
				}
				if len(types) != 2 || types[0] != "[]byte" || (types[1] != "[][]byte" && types[1] != "...[]byte") {
					continue
				}
				start := fd.Pos()
				if fd.Doc != nil {
					start = fd.Doc.Pos()
				}
				m.deleteLines(pf.path, start, fd.End())
				copies = append(copies, copyOf{"github.com/sluicedb/sluice/" + filepath.ToSlash(dir), fd.Name.Name, types[1] == "...[]byte"})
				m.note("%s: %s is resp.AppendCommand", m.pos(fd.Pos()), fd.Name.Name)
			}
		}
	}
	for _, cp := range copies {
		for dir, files := range byDir {
			same := "github.com/sluicedb/sluice/"+filepath.ToSlash(dir) == cp.pkg
			for _, pf := range files {
				local := ""
				for _, im := range pf.file.Imports {
					if p, _ := strconv.Unquote(im.Path.Value); p == cp.pkg {
						local = p[strings.LastIndexByte(p, '/')+1:]
						if im.Name != nil {
							local = im.Name.Name
						}
					}
				}
				ast.Inspect(pf.file, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					hit := false
					switch f := call.Fun.(type) {
					case *ast.Ident:
						hit = same && f.Name == cp.name && isPackageLevel(f, pf.file)
					case *ast.SelectorExpr:
						x, ok := f.X.(*ast.Ident)
						hit = ok && local != "" && x.Name == local && x.Obj == nil && f.Sel.Name == cp.name
					}
					if !hit {
						return true
					}
					m.replace(pf.path, call.Fun.Pos(), call.Fun.End(), "resp.AppendCommand")
					if !cp.variadic && call.Ellipsis == token.NoPos && len(call.Args) == 2 {
						m.replace(pf.path, call.Rparen, call.Rparen, "...")
					}
					return true
				})
			}
		}
	}
	return nil
}

// leftovers reports uses of the old table the migration cannot rewrite.
func (m *migrator) leftovers(files []pkgFile) {
	for _, pf := range files {
		ast.Inspect(pf.file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch sel.Sel.Name {
			case "keyPositions":
				m.manualf("%s: keyPositions: use cmd.Keys(args, dst, cmdspec.Access) (keys, not positions: k.Pos)", m.pos(sel.Pos()))
			case "publicFlags":
				m.manualf("%s: publicFlags: use cmd.Flags.Names()", m.pos(sel.Pos()))
			}
			return true
		})
	}
}

// ---- store names ----

var storeRenames = map[string]string{"Hash": "keyHash", "HashVal": "Hash", "SetVal": "Set"}

func (m *migrator) storeNames(dirs []string) error {
	for _, dir := range dirs {
		files, err := m.parseDir(dir)
		if err != nil {
			return err
		}
		isStore := filepath.ToSlash(dir) == "store"
		for _, pf := range files {
			if isStore {
				// Hash is renamed only where it is called: halfway through
				// (a merge), Hash may already name the type.
				par := parents(pf.file)
				refIdents(pf.file, func(id *ast.Ident) {
					to, ok := storeRenames[id.Name]
					if !ok {
						return
					}
					if id.Name == "Hash" {
						call, isCall := par[id].(*ast.CallExpr)
						fd, isDecl := par[id].(*ast.FuncDecl)
						if !(isCall && call.Fun == id) && !(isDecl && fd.Recv == nil && fd.Type.Params.NumFields() == 1 && fd.Type.Results.NumFields() == 1 && m.text(pf.path, fd.Type.Results.Pos(), fd.Type.Results.End()) == "uint64") {
							return
						}
					}
					m.replace(pf.path, id.Pos(), id.End(), to)
				})
				for _, cg := range pf.file.Comments {
					for _, c := range cg.List {
						m.commentRename(pf.path, c)
					}
				}
				continue
			}
			name := ""
			for _, im := range pf.file.Imports {
				if p, _ := strconv.Unquote(im.Path.Value); strings.HasSuffix(p, "/sluice/store") {
					name = "store"
					if im.Name != nil {
						name = im.Name.Name
					}
				}
			}
			if name == "" {
				continue
			}
			ast.Inspect(pf.file, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == name && x.Obj == nil {
					if sel.Sel.Name == "HashVal" || sel.Sel.Name == "SetVal" {
						m.replace(pf.path, sel.Sel.Pos(), sel.Sel.End(), storeRenames[sel.Sel.Name])
					}
				}
				return true
			})
		}
	}
	return nil
}

var wordVal = regexp.MustCompile(`\b(HashVal|SetVal)\b`)

func (m *migrator) commentRename(file string, c *ast.Comment) {
	for _, loc := range wordVal.FindAllStringIndex(c.Text, -1) {
		w := c.Text[loc[0]:loc[1]]
		p := c.Slash + token.Pos(loc[0])
		m.replace(file, p, p+token.Pos(len(w)), storeRenames[w])
	}
	if strings.HasPrefix(c.Text, "// Hash returns") || strings.HasPrefix(c.Text, "// Hash is") {
		p := c.Slash + 3
		m.replace(file, p, p+4, "keyHash")
	}
}

// ---- writing ----

func (m *migrator) write() error {
	var paths []string
	for p := range m.edits {
		paths = append(paths, p)
	}
	// Every server file: an import a conflict resolution dropped comes back.
	for p := range m.src {
		if filepath.Dir(p) == filepath.Clean(*serverPk) && m.edits[p] == nil {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		out := applyEdits(m.src[p], m.edits[p])
		if strings.HasSuffix(p, ".go") {
			for _, fn := range m.appended[p] {
				out = append(bytes.TrimRight(out, "\n"), "\n\n"+fn+"\n"...)
			}
			var err error
			out, err = fixImports(p, out)
			if err != nil {
				os.WriteFile(p+".migrate-failed", out, 0o644)
				return fmt.Errorf("%s: %v (the result is in %s.migrate-failed)", p, err, p)
			}
		}
		if bytes.Equal(out, m.src[p]) && !strings.HasSuffix(p, "overlay.json") {
			continue
		}
		m.note("changed %s", p)
		if *dry {
			continue
		}
		if err := os.WriteFile(p, out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func applyEdits(src []byte, edits []edit) []byte {
	// Edits inside a deleted region (or repeated) go; the rest apply from
	// the end, so earlier offsets stay true.
	sort.SliceStable(edits, func(i, j int) bool {
		if edits[i].start != edits[j].start {
			return edits[i].start < edits[j].start
		}
		return edits[i].end > edits[j].end
	})
	var kept []edit
	end := -1
	for _, e := range edits {
		if len(kept) > 0 && (e.start < end || e.start == end && e.end == end && e == kept[len(kept)-1]) {
			continue
		}
		kept = append(kept, e)
		if e.end > end {
			end = e.end
		}
	}
	out := append([]byte(nil), src...)
	for i := len(kept) - 1; i >= 0; i-- {
		e := kept[i]
		out = append(out[:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	return out
}

// fixImports adds the imports of cmdspec and resp where the file now
// uses them, drops the imports it no longer uses, and formats it.
func fixImports(path string, src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return src, err
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil {
				used[x.Name] = true
			}
		}
		return true
	})
	have := map[string]bool{}
	type cut struct{ s, e int }
	var cuts []cut
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		elems := strings.Split(p, "/")
		name := elems[len(elems)-1]
		if len(elems) > 1 && regexp.MustCompile(`^v[0-9]+$`).MatchString(name) {
			name = elems[len(elems)-2] // math/rand/v2 is rand
		}
		if im.Name != nil {
			name = im.Name.Name
		}
		have[p] = true
		if name == "_" || name == "." || strings.ContainsAny(name, "-.") {
			continue
		}
		if !used[name] {
			s := fset.Position(im.Pos()).Offset
			if im.Doc != nil {
				s = fset.Position(im.Doc.Pos()).Offset
			}
			e := fset.Position(im.End()).Offset
			s = bytes.LastIndexByte(src[:s], '\n') + 1
			if le := bytes.IndexByte(src[e:], '\n'); le >= 0 {
				e += le + 1
			}
			cuts = append(cuts, cut{s, e})
		}
	}
	var add []string
	for name, p := range map[string]string{"cmdspec": "github.com/sluicedb/sluice/internal/cmdspec", "resp": "github.com/sluicedb/sluice/resp"} {
		if used[name] && !have[p] {
			add = append(add, p)
		}
	}
	sort.Strings(add)
	for i := len(cuts) - 1; i >= 0; i-- {
		src = append(src[:cuts[i].s], src[cuts[i].e:]...)
	}
	if len(add) > 0 {
		f, err = parser.ParseFile(fset, path, src, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return src, err
		}
		var lines string
		for _, p := range add {
			lines += "\t" + strconv.Quote(p) + "\n"
		}
		var at int
		var after string
		// Beside the module's other imports, else after the last import,
		// else after the package clause.
		var last *ast.ImportSpec
		for _, im := range f.Imports {
			if strings.Contains(im.Path.Value, "github.com/sluicedb/sluice/") {
				last = im
			}
		}
		switch {
		case last != nil:
			at = fset.Position(last.End()).Offset
			at += bytes.IndexByte(src[at:], '\n') + 1
			after = lines
		case len(f.Imports) > 0 && f.Decls[0].(*ast.GenDecl).Lparen.IsValid():
			gd := f.Decls[0].(*ast.GenDecl)
			at = fset.Position(gd.Rparen).Offset
			after = "\n" + lines
		default:
			at = fset.Position(f.Name.End()).Offset
			after = "\n\nimport (\n" + lines + ")"
		}
		src = append(src[:at], append([]byte(after), src[at:]...)...)
	}
	return format.Source(src)
}
