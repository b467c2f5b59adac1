package monitor

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAppendLine: the lines redis-server 7.0.15's MONITOR showed for these
// commands (its times and client address kept).
func TestAppendLine(t *testing.T) {
	args := func(a ...string) [][]byte {
		out := make([][]byte, len(a))
		for i, s := range a {
			out[i] = []byte(s)
		}
		return out
	}
	for _, c := range []struct {
		sec, usec int64
		db        int
		source    string
		args      [][]byte
		want      string
	}{
		{1795913037, 905671, 0, "127.0.0.1:53130", args("SET", "k", "a\x00b\n\"\\\t\r\a\b\x7f\xff~ "),
			`+1795913037.905671 [0 127.0.0.1:53130] "SET" "k" "a\x00b\n\"\\\t\r\a\b\x7f\xff~ "`},
		{1795913038, 7740, 0, "127.0.0.1:53130", args("AUTH", "secret"),
			`+1795913038.007740 [0 127.0.0.1:53130] "AUTH" "(redacted)"`},
		{1795913038, 107858, 0, "127.0.0.1:53130", args("AUTH", "user", "secret"),
			`+1795913038.107858 [0 127.0.0.1:53130] "AUTH" "(redacted)" "(redacted)"`},
		{1795913038, 208183, 0, "127.0.0.1:53130", args("HELLO", "2", "AUTH", "default", "pw", "SETNAME", "x"),
			`+1795913038.208183 [0 127.0.0.1:53130] "HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "x"`},
		{1795913038, 308276, 3, "127.0.0.1:53130", args("SELECT", "3"),
			`+1795913038.308276 [3 127.0.0.1:53130] "SELECT" "3"`},
		{1795913038, 408622, 3, "lua", args("get", "x"),
			`+1795913038.408622 [3 lua] "get" "x"`},
		// HELLO ... AUTH without both credentials hides nothing (redis-server
		// shows the same).
		{1, 5, 0, "unix:/tmp/s.sock", args("hello", "3", "auth", "u"),
			`+1.000005 [0 unix:/tmp/s.sock] "hello" "3" "auth" "u"`},
	} {
		got := string(AppendLine(nil, time.Unix(c.sec, c.usec*1000+999), c.db, c.source, c.args))
		if got != c.want+"\r\n" {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

// TestRedacted: the arguments redis-server 7.0.15 showed as "(redacted)"
// in MONITOR and SLOWLOG GET for these commands.
func TestRedacted(t *testing.T) {
	for _, c := range []struct {
		args string
		want []int
	}{
		{"auth pw", []int{1}},
		{"AUTH u pw", []int{1, 2}},
		{"auth u pw extra", nil}, // a syntax error before anything is hidden
		{"hello 3 setname n auth u pw", []int{5, 6}},
		{"hello x auth u pw", nil}, // the version is checked first
		{"hello 3 bogus auth u pw", nil},
		{"migrate h 1 k 0 100 copy auth pw", []int{8}},
		{"migrate h 1 k 0 100 AUTH2 u pw replace", []int{7, 8}},
		{"migrate h 1 k 0 100 bogus auth pw", nil},
		{"migrate h 1 '' 0 100 keys auth pw", nil},
		{"acl setuser alice on >pw", []int{2, 3, 4}},
		{"acl setuser", nil},
		{"config set MasterAuth a masteruser b maxmemory 1 requirepass c", []int{3, 5, 9}},
		{"config set requirepass", nil},
		{"get auth", nil},
	} {
		var args [][]byte
		for _, w := range strings.Fields(c.args) {
			args = append(args, []byte(w))
		}
		hide := Redacted(args)
		var got []int
		for i := range args {
			if hide(i) {
				got = append(got, i)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: hides %v, want %v", c.args, got, c.want)
		}
	}
}
