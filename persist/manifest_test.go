package persist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	long := strings.Repeat("file appendonly.aof.1.base.aof seq 1 type b ", 30) + "\n"
	cases := []struct {
		name, text, err string
	}{
		{"ok", "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n", ""},
		{"comment", "# hello\nfile a seq 1 type i\n", ""},
		{"new key", "file a seq 1 type b newkey newvalue\nfile b seq 1 type i\n", ""},
		{"no final newline", "file a seq 1 type i", ""},
		{"empty", "", "Found an empty AOF manifest"},
		{"blank line", "file a seq 1 type i\n\nfile b seq 3 type i\n", "Invalid AOF manifest file format"},
		{"non-monotonic", "file b seq 2 type i\nfile a seq 1 type i\n", "Found a non-monotonic sequence number"},
		{"duplicate base", "file a seq 1 type b\nfile b seq 2 type b\n", "Found duplicate base file information"},
		{"unknown type", "file a seq 1 type x\n", "Unknown AOF file type"},
		{"missing key", "filx a seq 1 type b\n", "Invalid AOF manifest file format"},
		{"too short", "file a seq 1 type b\nfile b type i\n", "Invalid AOF manifest file format"},
		{"odd", "file a seq 1 type i newkey\n", "Invalid AOF manifest file format"},
		{"too long", long, "The AOF manifest file contains too long line"},
		{"path", "file ../a seq 1 type i\n", "File can't be a path, just a filename"},
		{"bad quotes", "file \"a seq 1 type i\n", "Invalid AOF manifest file format"},
	}
	for _, c := range cases {
		_, err := ParseManifest(strings.NewReader(c.text))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%s: got %v, want %q", c.name, err, c.err)
		}
	}
}

func TestManifestRoundTrip(t *testing.T) {
	m := &Manifest{}
	name := " file seq \n\n.aof "
	m.NewBase(name, true)
	m.NewIncr(name)
	text := m.String()
	want := "file \" file seq \\n\\n.aof .1.base.rdb\" seq 1 type b\nfile \" file seq \\n\\n.aof .1.incr.aof\" seq 1 type i\n"
	if text != want {
		t.Fatalf("format:\n%q\nwant\n%q", text, want)
	}
	back, err := ParseManifest(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if back.Base.Name != name+".1.base.rdb" || back.Incr[0].Name != name+".1.incr.aof" {
		t.Errorf("parsed back: %+v %+v", back.Base, back.Incr)
	}
}

// The order Redis gives history files (aof-multi-part's "auto gc" test):
// the newest first, the rewritten incremental files before the old base.
func TestManifestHistoryOrder(t *testing.T) {
	m, err := ParseManifest(strings.NewReader("file appendonly.aof.5.base.rdb seq 5 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		m.NewIncr("appendonly.aof") // the rewrite starts
		m.NewBase("appendonly.aof", true)
		m.MarkIncrHistory(true) // it ends
	}
	want := `file appendonly.aof.7.base.rdb seq 7 type b
file appendonly.aof.2.incr.aof seq 2 type h
file appendonly.aof.6.base.rdb seq 6 type h
file appendonly.aof.1.incr.aof seq 1 type h
file appendonly.aof.5.base.rdb seq 5 type h
file appendonly.aof.3.incr.aof seq 3 type i
`
	if got := m.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWriteManifest(t *testing.T) {
	dir := t.TempDir()
	m := &Manifest{}
	m.NewBase("appendonly.aof", false)
	m.NewIncr("appendonly.aof")
	if err := WriteManifest(dir, "appendonly.aof", m); err != nil {
		t.Fatal(err)
	}
	if m.Dirty {
		t.Error("still dirty after writing")
	}
	got, exists, err := LoadManifest(dir, "appendonly.aof")
	if err != nil || !exists || got.String() != m.String() {
		t.Fatalf("load: %v %v %q", err, exists, got)
	}
	if _, err := os.Stat(filepath.Join(dir, "temp-appendonly.aof.manifest")); !os.IsNotExist(err) {
		t.Errorf("temporary manifest left: %v", err)
	}
	// A missing directory or manifest is no error.
	if m, exists, err := LoadManifest(filepath.Join(dir, "nope"), "appendonly.aof"); err != nil || exists || !m.Empty() {
		t.Errorf("missing dir: %v %v %v", m, exists, err)
	}
}
