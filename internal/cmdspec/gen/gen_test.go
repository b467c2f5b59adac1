package gen

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesCurrent regenerates the table into memory and
// compares it with the checked-in files: run go generate ./internal/cmdspec
// after editing commands/*.json or overlay.json.
func TestGeneratedFilesCurrent(t *testing.T) {
	files, err := Generate("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, f.Data) {
			t.Errorf("%s is stale: run go generate ./internal/cmdspec", f.Path)
		}
	}
}

// TestConstantNames checks that the generator's names for cmdspec's
// constants are the constants of spec.go, in bit order.
func TestConstantNames(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../spec.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string][]string{} // type -> names in order
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		typ := ""
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); ok {
				typ = id.Name
			}
			for _, n := range v.Names {
				consts[typ] = append(consts[typ], n.Name)
			}
		}
	}
	for typ, want := range map[string][]string{
		"Flags": flagConsts, "Categories": catConsts, "KeyFlags": keyFlagConsts, "DocFlags": docFlagConsts,
		"ArgFlags": argFlagConsts, "BeginSearch": beginConsts, "FindKeys": findKeysConsts,
	} {
		if got := strings.Join(consts[typ], " "); got != strings.Join(want, " ") {
			t.Errorf("%s constants: spec.go has %s, the generator %s", typ, got, strings.Join(want, " "))
		}
	}
}

func TestCString(t *testing.T) {
	for in, want := range map[string]string{`""`: "", "a b": "a b", `a\"b`: `a"b`, "x\ny": "x\ny"} {
		if got, err := cString(in); err != nil || got != want {
			t.Errorf("cString(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := cString(`a"b`); err == nil {
		t.Error(`cString("a\"b") accepted text outside a C string`)
	}
}

func TestHandlerName(t *testing.T) {
	for name, want := range map[string]string{"get": "getCommand", "client|no-evict": "clientNoEvictCommand", "sort_ro": "sortRoCommand", "memory|malloc-stats": "memoryMallocStatsCommand"} {
		if got := handlerName(&command{name: name}); got != want {
			t.Errorf("handlerName(%s) = %s, want %s", name, got, want)
		}
	}
}

// TestRejectsUnknownNames: a misspelt flag, category or overlay field
// fails generation instead of silently dropping a bit.
func TestRejectsUnknownNames(t *testing.T) {
	get := `{"GET": {"summary": "s", "group": "string", "since": "1.0.0", "arity": 2, "function": "getCommand",
		"command_flags": [%s], "acl_categories": [%s],
		"key_specs": [{"flags": [%s], "begin_search": {"index": {"pos": 1}}, "find_keys": {"range": {"lastkey": 0, "step": 1, "limit": 0}}}]}}`
	for _, c := range []struct{ flags, cats, keyFlags, overlay, want string }{
		{`"READONLY"`, `"STRING"`, `"RO"`, `{}`, ""},
		{`"READONLY", "FAAST"`, `"STRING"`, `"RO"`, `{}`, `unknown command flag "FAAST"`},
		{`"READONLY"`, `"STRNG"`, `"RO"`, `{}`, `unknown ACL category "STRNG"`},
		{`"READONLY"`, `"STRING"`, `"RO", "ACCES"`, `{}`, `unknown key spec flag "ACCES"`},
		{`"READONLY"`, `"STRING"`, `"RO"`, `{"get": {"lockall": true}}`, `unknown field "lockall"`},
		{`"READONLY"`, `"STRING"`, `"RO"`, `{"gett": {"lock_all": true}}`, `unknown command gett`},
		{`"READONLY"`, `"STRING"`, `"RO"`, `{"get": {"lock_all": true}, "get": {"handler": "x"}}`, `get is named twice`},
	} {
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, "commands"), 0o755)
		json := strings.Replace(get, "[%s]", "["+c.flags+"]", 1)
		json = strings.Replace(json, "[%s]", "["+c.cats+"]", 1)
		json = strings.Replace(json, "[%s]", "["+c.keyFlags+"]", 1)
		os.WriteFile(filepath.Join(dir, "commands", "get.json"), []byte(json), 0o644)
		os.WriteFile(filepath.Join(dir, "overlay.json"), []byte(c.overlay), 0o644)
		_, err := Generate(dir)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("valid input: %v", err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("got %v, want an error with %q", err, c.want)
		}
	}
}
