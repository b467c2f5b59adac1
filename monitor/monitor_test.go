package monitor

import (
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
