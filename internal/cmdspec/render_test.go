package cmdspec

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/resp"
)

// The files in testdata are redis-server 7.0.15's replies, byte for byte,
// to the command named in the file's name (in RESP2 and in RESP3, after
// HELLO 3); the differential suite compares every command's the same way
// against a running redis-server.

func golden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWriteInfo: COMMAND INFO get set zadd xreadgroup nosuch.
func TestWriteInfo(t *testing.T) {
	for _, proto := range []int{2, 3} {
		w := &resp.Writer{Proto: proto}
		names := []string{"get", "set", "zadd", "xreadgroup"}
		w.Array(len(names) + 1)
		for _, n := range names {
			WriteInfo(w, lookup(t, n))
		}
		WriteInfo(w, nil)
		want := golden(t, "info-get-set-zadd-xreadgroup.resp"+string(rune('0'+proto)))
		if got := string(w.Buf); got != want {
			t.Errorf("RESP%d:\n got %q\nwant %q", proto, got, want)
		}
	}
}

// TestWriteDocs: COMMAND DOCS sort (arguments, blocks, oneofs, key spec
// indexes, tokens and flags).
func TestWriteDocs(t *testing.T) {
	for _, proto := range []int{2, 3} {
		w := &resp.Writer{Proto: proto}
		w.Map(1)
		w.BulkString("sort")
		WriteDocs(w, lookup(t, "sort"))
		want := golden(t, "docs-sort.resp"+string(rune('0'+proto)))
		if got := string(w.Buf); got != want {
			t.Errorf("RESP%d:\n got %q\nwant %q", proto, got, want)
		}
	}
}

// TestWriteKeys: COMMAND GETKEYS and GETKEYSANDFLAGS (RESP3) as
// redis-server 7.0.15 answers them.
func TestWriteKeys(t *testing.T) {
	for _, c := range []struct {
		cmd       string
		withFlags bool
		want      string
	}{
		{"lmove a b left right", true, "*2\r\n*2\r\n$1\r\na\r\n~3\r\n+RW\r\n+access\r\n+delete\r\n*2\r\n$1\r\nb\r\n~2\r\n+RW\r\n+insert\r\n"},
		{"xreadgroup group g c streams s1 s2 > >", true, "*2\r\n*2\r\n$2\r\ns1\r\n~2\r\n+RO\r\n+access\r\n*2\r\n$2\r\ns2\r\n~2\r\n+RO\r\n+access\r\n"},
		{"set k v get", false, "*1\r\n$1\r\nk\r\n"},
		{"eval return 0", false, "*0\r\n"},
		{"nosuch x", false, "-ERR Invalid command specified\r\n"},
		{"ping x", false, "-ERR The command has no key arguments\r\n"},
		{"get a b", false, "-ERR Invalid number of arguments specified for command\r\n"},
		{"zunionstore d 0", false, "-ERR Invalid number of arguments specified for command\r\n"},
	} {
		args := split(c.cmd)
		var s *Spec
		for _, sp := range Table {
			if sp.Name == string(args[0]) {
				s = sp
			}
		}
		w := &resp.Writer{Proto: 3}
		WriteKeys(w, s, args, c.withFlags)
		if got := string(w.Buf); got != c.want {
			t.Errorf("%s: got %q, want %q", c.cmd, got, c.want)
		}
	}
}

// TestList: COMMAND LIST's walk, subcommands after their container, and a
// filter (FILTERBY ACLCAT hyperloglog, whose members redis-server 7.0.15
// lists in its dictionary's order).
func TestList(t *testing.T) {
	all := List(Table, nil)
	at := map[string]int{}
	for i, n := range all {
		at[n] = i
	}
	if i, ok := at["config|get"]; !ok || i <= at["config"] {
		t.Errorf("config|get at %d, config at %d", i, at["config"])
	}
	got := List(Table, func(s *Spec) bool { return s.ACL&CatHyperLogLog != 0 })
	sort.Strings(got)
	if want := "pfadd pfcount pfdebug pfmerge pfselftest"; strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}
