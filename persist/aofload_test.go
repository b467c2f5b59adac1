package persist

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/resp"
)

// recorder is a Replayer that keeps the commands it runs.
type recorder struct {
	cmds  []string
	known map[string]bool
}

func (r *recorder) LoadRDB(p []byte) (int, error) { return 0, fmt.Errorf("no RDB here") }
func (r *recorder) Known(args [][]byte) bool {
	return r.known == nil || r.known[strings.ToLower(string(args[0]))]
}
func (r *recorder) Exec(args [][]byte) {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = string(a)
	}
	r.cmds = append(r.cmds, strings.Join(parts, " "))
}
func (r *recorder) Progress(int64) {}

// logRec keeps log lines.
type logRec struct{ lines []string }

func (l *logRec) Logf(f string, a ...any)  { l.lines = append(l.lines, fmt.Sprintf(f, a...)) }
func (l *logRec) Warnf(f string, a ...any) { l.lines = append(l.lines, fmt.Sprintf(f, a...)) }
func (l *logRec) has(s string) bool {
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func cmd(args ...string) string {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return string(resp.AppendCommand(nil, bs...))
}

func TestLoadFile(t *testing.T) {
	full := cmd("set", "foo", "hello") + "#TS:1628217470\r\n" + cmd("incr", "n")
	cases := []struct {
		name      string
		content   string
		truncated bool // aof-load-truncated
		status    LoadStatus
		cmds      string
		log       string
		size      int // the file's size after loading, -1: unchanged
	}{
		{"whole", full, true, LoadOK, "set foo hello|incr n", "", -1},
		{"short read, truncated yes", full + cmd("incr", "n")[:10], true, LoadTruncated, "set foo hello|incr n", "!!! Truncating the AOF f at offset", len(full)},
		{"short read, truncated no", full + cmd("incr", "n")[:10], false, LoadFailed, "set foo hello|incr n", "Unexpected end of file reading the append only file f", -1},
		{"missing last CR LF", full[:len(full)-1], true, LoadTruncated, "set foo hello", "AOF f loaded anyway because aof-load-truncated is enabled", len(cmd("set", "foo", "hello"))}, // the annotation goes too, as in Redis
		{"bad format", cmd("set", "a", "1") + "!!!\r\n" + cmd("set", "b", "2"), true, LoadFailed, "set a 1", "Bad file format reading the append only file f", -1},
		{"unfinished multi", cmd("set", "a", "1") + cmd("multi") + cmd("set", "b", "2"), true, LoadTruncated, "set a 1", "Revert incomplete MULTI/EXEC transaction in AOF file f", len(cmd("set", "a", "1"))},
		{"unfinished multi, truncated no", cmd("set", "a", "1") + cmd("multi") + cmd("set", "b", "2"), false, LoadFailed, "set a 1", "Unexpected end of file", -1},
		{"multi exec", cmd("multi") + cmd("set", "a", "1") + cmd("set", "b", "2") + cmd("exec"), true, LoadOK, "set a 1|set b 2", "", -1},
		{"unknown command", cmd("set", "a", "1") + cmd("bla", "x"), true, LoadFailed, "set a 1", "Unknown command 'bla' reading the append only file f", -1},
		{"huge length", cmd("set", "a", "1") + "*2\r\n$3\r\nset\r\n$99999999\r\nab", true, LoadTruncated, "set a 1", "short read", len(cmd("set", "a", "1"))},
		{"empty", "", true, LoadEmpty, "", "", -1},
	}
	for _, c := range cases {
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		os.WriteFile(path, []byte(c.content), 0o644)
		rec := &recorder{known: map[string]bool{"set": true, "incr": true, "multi": true, "exec": true}}
		log := &logRec{}
		st := LoadFile(LoadOptions{Dir: dir, Filename: "appendonly.aof", LoadTruncated: c.truncated}, "f", rec, log)
		if st != c.status {
			t.Errorf("%s: status %d, want %d (log %q)", c.name, st, c.status, log.lines)
		}
		if got := strings.Join(rec.cmds, "|"); got != c.cmds {
			t.Errorf("%s: ran %q, want %q", c.name, got, c.cmds)
		}
		if c.log != "" && !log.has(c.log) {
			t.Errorf("%s: log lacks %q: %q", c.name, c.log, log.lines)
		}
		if c.size >= 0 {
			if fi, _ := os.Stat(path); fi.Size() != int64(c.size) {
				t.Errorf("%s: file is %d bytes after loading, want %d", c.name, fi.Size(), c.size)
			}
		}
	}
	// A missing file.
	if st := LoadFile(LoadOptions{Dir: t.TempDir()}, "nope", &recorder{}, &logRec{}); st != LoadNotExist {
		t.Errorf("missing file: %d", st)
	}
}

func TestLoadAll(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b"), []byte(cmd("set", "k1", "v1")), 0o644)
	os.WriteFile(filepath.Join(dir, "i1"), []byte(cmd("set", "k2", "v2")+cmd("set", "k3", "v")[:5]), 0o644)
	os.WriteFile(filepath.Join(dir, "i2"), []byte(cmd("set", "k4", "v4")), 0o644)
	m := &Manifest{Base: &FileInfo{"b", 1, TypeBase}, Incr: []FileInfo{{"i1", 1, TypeIncr}, {"i2", 2, TypeIncr}}}
	log := &logRec{}
	res := LoadAll(LoadOptions{Dir: dir, LoadTruncated: true}, m, &recorder{}, log, nil)
	if res.Status != LoadFailed || !log.has("Fatal error: the truncated file is not the last file") {
		t.Errorf("truncated middle file: %v %q", res.Status, log.lines)
	}
	os.Remove(filepath.Join(dir, "i2"))
	log = &logRec{}
	res = LoadAll(LoadOptions{Dir: dir, LoadTruncated: true}, m, &recorder{}, log, nil)
	if res.Status != LoadFailed || !log.has("Unable to obtain the AOF file i2 length. stat: No such file or directory") {
		t.Errorf("missing file: %v %q", res.Status, log.lines)
	}
}

func TestUpgradeOldAOF(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("appendonly.aof", []byte(cmd("set", "k", "v")), 0o644)
	m := &Manifest{}
	log := &logRec{}
	if err := UpgradeIfNeeded("appendonlydir", "appendonly.aof", m, log); err != nil {
		t.Fatal(err)
	}
	if fileExists("appendonly.aof") || !fileExists("appendonlydir/appendonly.aof") {
		t.Error("the old file was not moved into the directory")
	}
	got, _, err := LoadManifest("appendonlydir", "appendonly.aof")
	if err != nil || got.String() != "file appendonly.aof seq 1 type b\n" {
		t.Errorf("manifest %q %v", got, err)
	}
}
