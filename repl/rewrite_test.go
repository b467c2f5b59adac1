package repl

import (
	"fmt"
	"strings"
	"testing"
)

// dataset is a fake Dataset: expiries by key (0: none), keys absent.
type dataset struct {
	exp  map[string]int64
	gone []string
	lazy bool
}

func (d dataset) Expire(key []byte) (int64, bool) {
	e, ok := d.exp[string(key)]
	return e, ok
}

func (d dataset) Gone() [][]byte {
	var out [][]byte
	for _, k := range d.gone {
		out = append(out, []byte(k))
	}
	return out
}

func (d dataset) Del(string) []byte {
	if d.lazy {
		return []byte("UNLINK")
	}
	return []byte("DEL")
}

func ops(o [][][]byte) string {
	var parts []string
	for _, op := range o {
		var a []string
		for _, x := range op {
			a = append(a, string(x))
		}
		parts = append(parts, strings.Join(a, " "))
	}
	return strings.Join(parts, " | ")
}

func TestRewrite(t *testing.T) {
	live := map[string]int64{"k": 1700000000123, "p": 0}
	cases := []struct {
		cmd   string
		reply string
		d     dataset
		want  string
	}{
		{"EXPIRE k 10", ":1\r\n", dataset{exp: live}, "PEXPIREAT k 1700000000123"},
		{"PEXPIRE k 10 NX", ":1\r\n", dataset{exp: live}, "PEXPIREAT k 1700000000123 NX"},
		{"EXPIRE k -1", ":1\r\n", dataset{}, "DEL k"},
		{"EXPIRE k -1", ":1\r\n", dataset{lazy: true}, "UNLINK k"},
		{"EXPIRE p 10", ":0\r\n", dataset{exp: live}, "EXPIRE p 10"},
		{"SETEX k 10 v", "+OK\r\n", dataset{exp: live}, "SET k v PXAT 1700000000123"},
		{"GETSET k v", "$-1\r\n", dataset{exp: live}, "SET k v"},
		{"SET k v EX 10 GET", "$-1\r\n", dataset{exp: live}, "SET k v PXAT 1700000000123"},
		{"SET k v EX 10", "+OK\r\n", dataset{}, "DEL k"},
		{"SET k v GET NX", "$-1\r\n", dataset{exp: live}, "SET k v NX"},
		{"SET k v NX", "+OK\r\n", dataset{exp: live}, "SET k v NX"},
		{"GETEX k PERSIST", "$1\r\nv\r\n", dataset{exp: live}, "PEXPIREAT k 1700000000123"},
		{"GETEX p PERSIST", "$1\r\nv\r\n", dataset{exp: live}, "PERSIST p"},
		{"GETEX k EX -1", "$1\r\nv\r\n", dataset{}, "DEL k"},
		{"RESTORE k 5000 payload", "+OK\r\n", dataset{exp: live}, "RESTORE k 1700000000123 payload ABSTTL"},
		{"RESTORE k 5000 payload ABSTTL", "+OK\r\n", dataset{exp: live}, "RESTORE k 5000 payload ABSTTL"},
		{"RESTORE k 0 payload", "+OK\r\n", dataset{exp: live}, "RESTORE k 0 payload"},
		{"MIGRATE h 1 k 0 10", "+OK\r\n", dataset{gone: []string{"k"}}, "DEL k"},
		{"MIGRATE h 1 k 0 10", "+NOKEY\r\n", dataset{}, ""},
		{"INCRBYFLOAT k 1.5", "$3\r\n2.5\r\n", dataset{}, "SET k 2.5 KEEPTTL"},
		{"HINCRBYFLOAT h f 1.5", "$3\r\n2.5\r\n", dataset{}, "HSET h f 2.5"},
		{"SPOP s", "$1\r\na\r\n", dataset{}, "SREM s a"},
		{"SPOP s", "$-1\r\n", dataset{}, ""},
		{"SPOP s 2", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", dataset{exp: map[string]int64{"s": 0}}, "SREM s a b"},
		{"SPOP s 5", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", dataset{lazy: true}, "UNLINK s"},
		{"BLPOP a b 0", "*2\r\n$1\r\nb\r\n$1\r\nx\r\n", dataset{}, "LPOP b"},
		{"BRPOP a 0", "*2\r\n$1\r\na\r\n$1\r\nx\r\n", dataset{}, "RPOP a"},
		{"BLMPOP 0 1 l RIGHT COUNT 2", "*2\r\n$1\r\nl\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n", dataset{}, "RPOP l 2"},
		{"BZMPOP 0 1 z MIN", "*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nm\r\n,1\r\n", dataset{}, "ZPOPMIN z 1"},
		{"BZPOPMAX z 0", "*3\r\n$1\r\nz\r\n$1\r\nm\r\n$1\r\n1\r\n", dataset{}, "ZPOPMAX z"},
		{"BLMOVE a b LEFT RIGHT 0", "$1\r\nx\r\n", dataset{}, "LMOVE a b LEFT RIGHT"},
		{"BRPOPLPUSH a b 0", "$1\r\nx\r\n", dataset{}, "RPOPLPUSH a b"},
		{"BLPOP a 1", "*-1\r\n", dataset{}, ""},
		{"EVAL script 0", "+OK\r\n", dataset{}, ""},
		{"LPUSH l a", ":1\r\n", dataset{}, "LPUSH l a"},
	}
	for _, tc := range cases {
		var args [][]byte
		for _, a := range strings.Fields(tc.cmd) {
			args = append(args, []byte(a))
		}
		name := strings.ToLower(tc.cmd[:strings.IndexByte(tc.cmd, ' ')])
		got := ops(Rewrite(name, args, []byte(tc.reply), tc.d))
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.cmd, got, tc.want)
		}
		if v := Verbatim(name, len(args)); v && got != tc.cmd {
			t.Errorf("%s: verbatim, but rewritten as %q", tc.cmd, got)
		}
	}
}

func TestRewriteSpopInBatches(t *testing.T) {
	reply := fmt.Sprintf("*%d\r\n", 2500)
	for i := 0; i < 2500; i++ {
		reply += "$1\r\nm\r\n"
	}
	o := Rewrite("spop", [][]byte{[]byte("SPOP"), []byte("s"), []byte("2500")}, []byte(reply), dataset{exp: map[string]int64{"s": 0}})
	if len(o) != 3 || len(o[0]) != 2+1024 || len(o[2]) != 2+452 {
		t.Fatalf("%d batches", len(o))
	}
}

func TestParseReply(t *testing.T) {
	cases := []struct {
		in   string
		want string
		ok   bool
	}{
		{"+OK\r\n", "OK", true},
		{":12\r\n", "12", true},
		{"$-1\r\n", "<nil>", true},
		{"_\r\n", "<nil>", true},
		{"$3\r\nabc\r\n", "abc", true},
		{"$3\r\nab", "", false},
		{"*2\r\n$1\r\na\r\n:1\r\n", "[a 1]", true},
		{"%1\r\n+k\r\n+v\r\n", "[k v]", true},
		{"~1\r\n,1.5\r\n", "[1.5]", true},
		{"*2\r\n$1\r\na\r\n", "", false},
		{"", "", false},
		{"?x\r\n", "", false},
	}
	for _, tc := range cases {
		v, ok := parseReply([]byte(tc.in))
		if ok != tc.ok {
			t.Errorf("%q: ok %v", tc.in, ok)
			continue
		}
		if !ok {
			continue
		}
		if got := show(v); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.in, got, tc.want)
		}
	}
}

func show(v any) string {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, show(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case nil:
		return "<nil>"
	}
	return fmt.Sprint(v)
}
