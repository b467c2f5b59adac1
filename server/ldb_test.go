package server_test

import (
	"bufio"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// The Lua debugger in synchronous mode (SCRIPT DEBUG SYNC), driven as
// redis-cli --ldb-sync-mode drives it, on redis-server and on Sluice, over
// TCP on the event loops and on the goroutine driver (its socket read by a
// relay goroutine), over TLS, and over the embedded mode's in-memory
// connections: the transcripts must be the same, byte for byte.
const ldbScript = `local a = 5
local t = {1,2,'x',{y=true}}
redis.call('set','k',a)
local function f(x)
  local y = x * 2
  return y
end
redis.debug('hello', t)
local r = f(a)
redis.breakpoint()
r = r + 1
return r
`

func TestLuaDebuggerSession(t *testing.T) {
	srv, addr := redistest.StartSluice(t)
	_, tlsAddr := startSluiceTLS(t)
	tlsCfg := testTLSCerts(t).ClientConfig(t)
	dialers := map[string]func() *redistest.Conn{
		"redis":                tcpDialer(t, redistest.StartRedis(t)),
		"sluice":               tcpDialer(t, addr),
		"sluice on goroutines": tcpDialer(t, startGoroutineServer(t)),
		"sluice over TLS":      tlsDialer(t, tlsAddr, tlsCfg),
		"redis over TLS":       tlsDialer(t, startRedisTLS(t), tlsCfg),
		"sluice in memory": func() *redistest.Conn {
			client, server := net.Pipe()
			go srv.ServeConn(server)
			t.Cleanup(func() { client.Close() })
			return &redistest.Conn{Conn: client, R: bufio.NewReader(client)}
		},
	}
	out := map[string]string{}
	for name, dial := range dialers {
		var log strings.Builder
		c := dial()
		do := func(args ...string) {
			r, err := c.Do(args...)
			log.WriteString(strings.Join(args, " ") + " => " + r)
			if err != nil {
				log.WriteString(" error: " + err.Error())
			}
			log.WriteString("\n")
		}
		do("SCRIPT", "DEBUG", "SYNC")
		do("EVAL", ldbScript, "1", "key1", "arg1")
		for _, cmd := range [][]string{{"s"}, {"step"}, {"p"}, {"n"}, {"print", "t"}, {"print", "KEYS"},
			{"print", "nosuch"}, {"l"}, {"list", "2", "1"}, {"b", "9"}, {"b", "11", "x", "99"}, {"b"}, {"c"},
			{"t"}, {"e", "1", "+", "1"}, {"eval", "a"}, {"e", "return", "nil"}, {"e", "error('boom')"},
			{"r", "get", "k"}, {"redis", "hset", "h", "f", "v"}, {"r", "hgetall", "h"}, {"r", "nosuchcommand"},
			{"r"}, {"m", "10"}, {"r", "set", "long", strings.Repeat("x", 100)}, {"r", "get", "long"}, {"maxlen"},
			{"m", "0"}, {"w"}, {"h"}, {"hello\x00world"}, {"b", "-11"}, {"b", "-3"}, {"b", "0"}, {"c"}, {"s"}, {"s"}} {
			do(cmd...)
		}
		// The session ended: the script's reply, then the connection closes.
		r, err := redistest.ReadReply(c.R)
		log.WriteString("reply " + r)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err = c.R.ReadByte(); err == nil {
			log.WriteString("the connection stayed open\n")
		}
		// A script that loops is stopped after busy-reply-threshold, and
		// abort ends it with an error.
		a := dial()
		a.Do("CONFIG", "SET", "busy-reply-threshold", "200")
		c = dial()
		do("SCRIPT", "DEBUG", "SYNC")
		do("EVAL", "local n = 'x'\nwhile true do n = 'x' end", "0")
		do("c")
		do("print")
		do("abort")
		r, _ = redistest.ReadReply(c.R)
		log.WriteString("reply " + r)
		// A client that goes away mid-session: the script runs to its
		// end and the server goes on.
		c = dial()
		do("SCRIPT", "DEBUG", "SYNC")
		do("EVAL", "redis.call('set','gone',1)\nredis.call('incr','gone')\nreturn 1", "0")
		c.Close()
		r, _ = a.Do("GET", "gone")
		log.WriteString("after the client left: " + r)
		// The debug mode's errors.
		c = dial()
		do("SCRIPT", "DEBUG", "MAYBE")
		do("SCRIPT", "DEBUG", "SYNC")
		do("EVALSHA", "abc", "0")
		do("EVALSHA", strings.Repeat("a", 40), "0")
		do("SCRIPT", "DEBUG", "NO")
		do("EVAL", "return 7", "0")
		a.Do("DEL", "gone", "k", "h", "long")
		a.Do("CONFIG", "SET", "busy-reply-threshold", "5000")
		out[name] = log.String()
	}
	for _, name := range []string{"sluice", "sluice on goroutines", "sluice in memory", "sluice over TLS", "redis over TLS"} {
		if out["redis"] != out[name] {
			t.Errorf("transcripts differ:\n--- redis\n%s\n--- %s\n%s", out["redis"], name, out[name])
		}
	}
}

func tcpDialer(t *testing.T, addr string) func() *redistest.Conn {
	return func() *redistest.Conn { return redistest.Dial(t, addr) }
}

func tlsDialer(t *testing.T, addr string, cfg *tls.Config) func() *redistest.Conn {
	return func() *redistest.Conn {
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return &redistest.Conn{Conn: c, R: bufio.NewReader(c)}
	}
}

// SCRIPT DEBUG YES asks for Redis's forked session, whose changes are
// rolled back; Sluice has none, so the EVAL it applies to is refused
// without running (redis-cli --ldb ignores SCRIPT DEBUG's reply), as
// Redis refuses it when the fork fails, and the mode ends there.
func TestLuaDebuggerForkedModeRefused(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	c := redistest.Dial(t, addr)
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"SCRIPT", "DEBUG", "YES"}, "+OK\r\n"},
		{[]string{"EVAL", "redis.call('set','forked',1) return 1", "0"}, "-ERR Fork() failed: can't run EVAL in debugging mode:"},
		{[]string{"EXISTS", "forked"}, ":0\r\n"},
		{[]string{"EVAL", "return 2", "0"}, ":2\r\n"},
	} {
		r, err := c.Do(step.args...)
		if err != nil || !strings.HasPrefix(r, step.want) {
			t.Errorf("%v: %q %v, want %q...", step.args, r, err, step.want)
		}
	}
}
