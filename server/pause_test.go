package server_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// infoField reads one integer field of INFO.
func infoField(t *testing.T, c *redistest.Conn, section, field string) int {
	t.Helper()
	raw, err := c.Do("INFO", section)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(raw, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// waitBlocked waits until INFO reports n blocked clients.
func waitBlocked(t *testing.T, c *redistest.Conn, n int) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if infoField(t, c, "clients", "blocked_clients") == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("blocked_clients never reached %d", n)
}

// send writes commands without reading their replies.
func send(t *testing.T, c *redistest.Conn, cmds ...[]string) {
	t.Helper()
	var b []byte
	for _, args := range cmds {
		b = append(b, redistest.Encode(args...)...)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, c *redistest.Conn, want string) {
	t.Helper()
	got, err := redistest.ReadReply(c.R)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("reply %q, want %q", got, want)
	}
}

// CLIENT PAUSE WRITE holds back writes, may-replicate commands, EXEC of a
// queue with writes and scripts that may write, counting their clients in
// blocked_clients; they run, in order, on UNPAUSE. Reads, read-only
// scripts and read-only transactions go on.
func TestClientPauseWrite(t *testing.T) {
	_, saddr := redistest.StartSluice(t)
	for name, addr := range map[string]string{"redis": redistest.StartRedis(t), "sluice": saddr} {
		t.Run(name, func(t *testing.T) {
			ctl := redistest.Dial(t, addr)
			a, b, d, e := redistest.Dial(t, addr), redistest.Dial(t, addr), redistest.Dial(t, addr), redistest.Dial(t, addr)
			mustDo(t, ctl, "+OK\r\n", "SET", "k", "v0")
			mustDo(t, ctl, "+OK\r\n", "CLIENT", "PAUSE", "60000", "WRITE")
			// A write and the read pipelined behind it wait together.
			send(t, b, []string{"SET", "k", "v1"}, []string{"GET", "k"})
			waitBlocked(t, ctl, 1)
			// PUBLISH and a script without flags may replicate.
			send(t, d, []string{"PUBLISH", "ch", "m"})
			send(t, e, []string{"EVAL", "return 1", "0"})
			waitBlocked(t, ctl, 3)

			mustDo(t, a, "$2\r\nv0\r\n", "GET", "k")
			mustDo(t, a, "$4\r\nro-1\r\n", "EVAL", "#!lua flags=no-writes\nreturn 'ro-1'", "0")
			mustDo(t, a, "+OK\r\n", "MULTI")
			mustDo(t, a, "+QUEUED\r\n", "GET", "k")
			mustDo(t, a, "*1\r\n$2\r\nv0\r\n", "EXEC")
			// Queueing a write inside MULTI is held back too.
			mustDo(t, a, "+OK\r\n", "MULTI")
			send(t, a, []string{"SET", "k", "v2"}, []string{"EXEC"})
			waitBlocked(t, ctl, 4)
			mustDo(t, ctl, "$2\r\nv0\r\n", "GET", "k")

			mustDo(t, ctl, "+OK\r\n", "CLIENT", "UNPAUSE")
			read(t, b, "+OK\r\n")
			read(t, b, "$2\r\nv1\r\n")
			read(t, d, ":0\r\n")
			read(t, e, ":1\r\n")
			read(t, a, "+QUEUED\r\n")
			read(t, a, "*1\r\n+OK\r\n")
			waitBlocked(t, ctl, 0)
		})
	}
}

// CLIENT PAUSE ALL holds back every command until its timeout; a
// transaction's EXEC is held back by WRITE only when it queued a write;
// PAUSE 0 pauses nothing.
func TestClientPauseAllTimeout(t *testing.T) {
	_, saddr := redistest.StartSluice(t)
	for name, addr := range map[string]string{"redis": redistest.StartRedis(t), "sluice": saddr} {
		t.Run(name, func(t *testing.T) {
			ctl, a := redistest.Dial(t, addr), redistest.Dial(t, addr)
			mustDo(t, ctl, "+OK\r\n", "CLIENT", "PAUSE", "0", "ALL")
			mustDo(t, a, "+PONG\r\n", "PING")
			mustDo(t, ctl, "+OK\r\n", "CLIENT", "PAUSE", "300", "ALL")
			start := time.Now()
			mustDo(t, a, "+PONG\r\n", "PING")
			if d := time.Since(start); d < 200*time.Millisecond {
				t.Fatalf("PING answered after %v during a 300 ms pause", d)
			}
			mustDo(t, ctl, "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n", "CLIENT", "PAUSE", "10", "READ")
			mustDo(t, ctl, "-ERR timeout is negative\r\n", "CLIENT", "PAUSE", "-1")
			mustDo(t, ctl, "-ERR timeout is not an integer or out of range\r\n", "CLIENT", "PAUSE", "x")
			mustDo(t, ctl, "+OK\r\n", "CLIENT", "UNPAUSE")
		})
	}
}

// While clients are paused keys are neither expired lazily nor actively:
// they read as absent, and are removed (expired_keys) after the pause.
func TestClientPauseKeepsExpiredKeys(t *testing.T) {
	_, saddr := redistest.StartSluice(t)
	for name, addr := range map[string]string{"redis": redistest.StartRedis(t), "sluice": saddr} {
		t.Run(name, func(t *testing.T) {
			c := redistest.Dial(t, addr)
			c.Do("FLUSHALL")
			c.Do("CONFIG", "RESETSTAT")
			mustDo(t, c, "+OK\r\n", "MULTI")
			mustDo(t, c, "+QUEUED\r\n", "SET", "foo", "bar", "PX", "10")
			mustDo(t, c, "+QUEUED\r\n", "CLIENT", "PAUSE", "50000", "WRITE")
			mustDo(t, c, "*2\r\n+OK\r\n+OK\r\n", "EXEC")
			time.Sleep(200 * time.Millisecond) // active expiry would have run
			mustDo(t, c, "$-1\r\n", "GET", "foo")
			mustDo(t, c, ":0\r\n", "EXISTS", "foo")
			if n := infoField(t, c, "stats", "expired_keys"); n != 0 {
				t.Fatalf("expired_keys %d during the pause", n)
			}
			mustDo(t, c, "+OK\r\n", "CLIENT", "UNPAUSE")
			mustDo(t, c, "$-1\r\n", "GET", "foo")
			if n := infoField(t, c, "stats", "expired_keys"); n != 1 {
				t.Fatalf("expired_keys %d after the pause", n)
			}
		})
	}
}
