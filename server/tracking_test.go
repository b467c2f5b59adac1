package server_test

import (
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// trackingScenario drives three connections through client side caching:
// a RESP3 tracker, a RESP2 tracker redirecting to a subscriber of
// __redis__:invalidate, and a writer. It returns what each saw, with
// client ids replaced by "ID".
func trackingScenario(t *testing.T, addr string) []string {
	a := redistest.Dial(t, addr) // RESP3 tracker
	b := redistest.Dial(t, addr) // RESP2 tracker, redirects to sub
	sub := redistest.Dial(t, addr)
	w := redistest.Dial(t, addr)
	var out []string
	do := func(name string, c *redistest.Conn, args ...string) string {
		r, err := c.Do(args...)
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		out = append(out, name+" "+strings.Join(args, " ")+" -> "+r)
		return r
	}
	next := func(name string, c *redistest.Conn) {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		r, err := redistest.ReadReply(c.R)
		if err != nil {
			t.Fatalf("%s %s: no push: %v\n%s", addr, name, err, strings.Join(out, "\n"))
		}
		out = append(out, name+" push "+r)
	}
	do("w", w, "FLUSHALL")
	do("a", a, "HELLO", "3")
	do("a", a, "CLIENT", "TRACKING", "ON")
	do("a", a, "GET", "k1")
	do("a", a, "HGETALL", "h")
	do("w", w, "SET", "k1", "v")
	next("a", a)
	do("w", w, "SET", "k1", "v2") // k1 was forgotten after the first invalidation
	do("w", w, "HSET", "h", "f", "v")
	next("a", a)
	do("a", a, "PING")

	subID := strings.TrimSpace(strings.TrimPrefix(do("sub", sub, "CLIENT", "ID"), ":"))
	do("sub", sub, "SUBSCRIBE", "__redis__:invalidate")
	do("b", b, "CLIENT", "TRACKING", "ON", "REDIRECT", subID)
	do("b", b, "CLIENT", "GETREDIR")
	do("b", b, "CLIENT", "INFO")
	do("b", b, "MGET", "m1", "m2")
	do("w", w, "MSET", "m1", "x", "m2", "y")
	next("sub", sub)
	next("sub", sub)
	do("w", w, "CLIENT", "LIST", "ID", subID)

	// The redirect target goes away: the RESP3 tracker is told once.
	do("a", a, "CLIENT", "TRACKING", "ON", "REDIRECT", subID)
	do("a", a, "GET", "k2")
	sub.Close()
	time.Sleep(100 * time.Millisecond)
	do("w", w, "SET", "k2", "x")
	next("a", a)
	do("a", a, "CLIENT", "TRACKINGINFO")

	do("a", a, "CLIENT", "TRACKING", "OFF")
	do("a", a, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p:")
	do("w", w, "MSET", "p:1", "a", "q:1", "b", "p:2", "c")
	next("a", a)
	do("a", a, "PING")
	do("w", w, "FLUSHDB")
	next("a", a)
	do("a", a, "PING")
	re := regexp.MustCompile(`(?m)(id=|:|redir=|REDIRECT )\d+`)
	for i, s := range out {
		s = re.ReplaceAllString(s, "${1}N")
		// CLIENT LIST fields that vary between servers.
		if strings.Contains(s, "CLIENT LIST") || strings.Contains(s, "CLIENT INFO") {
			// Not lib-name and lib-ver: Redis 7.2's fields (CLIENT SETINFO).
			f := regexp.MustCompile(`flags=\S+|redir=\S+`).FindAllString(s, -1)
			s = "CLIENT LIST/INFO " + strings.Join(f, " ")
		}
		if strings.Contains(s, "HELLO") {
			s = "HELLO"
		}
		out[i] = s
	}
	return out
}

// TestTrackingAcrossConnections checks invalidation messages between
// connections (RESP3 pushes, RESP2 redirection to __redis__:invalidate, a
// broken redirection, BCAST and flushes) against redis-server.
func TestTrackingAcrossConnections(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	want := trackingScenario(t, raddr)
	got := trackingScenario(t, saddr)
	if len(want) != len(got) {
		t.Fatalf("redis:\n%s\nsluice:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("step %d\n redis:  %q\n sluice: %q", i, want[i], got[i])
		}
	}
}

// trackingScriptsAndBlocking: scripts track the keys they declare when
// they read (EVAL_RO itself tracks nothing), a client unblocked by a push
// gets its reply before the invalidation its own BLMOVE caused, and
// tracking-table-max-keys evicts tracked keys with invalidations.
func trackingScriptsAndBlocking(t *testing.T, addr string) []string {
	a := redistest.Dial(t, addr)
	w := redistest.Dial(t, addr)
	var out []string
	do := func(name string, c *redistest.Conn, args ...string) {
		r, err := c.Do(args...)
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		out = append(out, name+" "+strings.Join(args, " ")+" -> "+r)
	}
	read := func(name string, c *redistest.Conn) {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		r, err := redistest.ReadReply(c.R)
		if err != nil {
			t.Fatalf("%s %s: nothing to read: %v\n%s", addr, name, err, strings.Join(out, "\n"))
		}
		out = append(out, name+" read "+r)
	}
	do("w", w, "FLUSHALL")
	do("w", w, "CONFIG", "SET", "tracking-table-max-keys", "0")
	if _, err := a.Do("HELLO", "3"); err != nil {
		t.Fatal(err)
	}
	do("a", a, "CLIENT", "TRACKING", "ON")
	do("a", a, "EVAL", "redis.call('set', 'k3', 'v')", "2", "k1", "k2")
	do("a", a, "EVAL_RO", "redis.call('ping')", "2", "k1", "k2")
	do("w", w, "MSET", "k2", "1", "k1", "1") // nothing tracked: no push
	do("a", a, "EVAL", "return redis.call('get', 'k3')", "2", "k1", "k2")
	do("w", w, "MSET", "k2", "2", "k1", "2", "k3", "2")
	read("a", a)
	read("a", a)
	do("a", a, "PING") // no invalidation of k3: the script's own key was not tracked

	do("w", w, "RPUSH", "dst", "a")
	do("a", a, "LRANGE", "dst", "0", "-1")
	if _, err := a.Write(redistest.Encode("BLMOVE", "src", "dst", "LEFT", "LEFT", "0")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	do("w", w, "RPUSH", "src", "foo")
	read("a", a) // the reply first
	read("a", a) // then the invalidation of dst
	do("a", a, "PING")

	do("a", a, "MGET", "m1", "m2", "m3")
	do("w", w, "CONFIG", "SET", "tracking-table-max-keys", "1")
	read("a", a)
	read("a", a)
	do("w", w, "CONFIG", "SET", "tracking-table-max-keys", "1000000")
	return out
}

func TestTrackingScriptsBlockingAndTableLimit(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	want := trackingScriptsAndBlocking(t, raddr)
	got := trackingScriptsAndBlocking(t, saddr)
	// Which two of m1..m3 the table limit evicts is random.
	re := regexp.MustCompile(`m[123]`)
	for i := range want {
		want[i] = re.ReplaceAllString(want[i], "mN")
	}
	for i := range got {
		got[i] = re.ReplaceAllString(got[i], "mN")
	}
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Fatalf("redis:\n%s\nsluice:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// TestTrackingEvictionBeforeReply: a key the client tracks that is evicted
// to make room for its own command is invalidated before that command's
// reply, as Redis does.
func TestTrackingEvictionBeforeReply(t *testing.T) {
	for target, addr := range bothServers(t) {
		t.Run(target, func(t *testing.T) {
			c := redistest.Dial(t, addr)
			do := func(args ...string) string {
				r, err := c.Do(args...)
				if err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				return r
			}
			do("HELLO", "3")
			do("CLIENT", "TRACKING", "ON")
			runtime.GC() // the embedded server shares this process's heap
			used := 0
			for _, line := range strings.Split(do("INFO", "memory"), "\r\n") {
				if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
					used, _ = strconv.Atoi(v)
				}
			}
			do("CONFIG", "SET", "maxmemory-policy", "volatile-random")
			do("CONFIG", "SET", "maxmemory", strconv.Itoa(used+1<<20))
			defer c.Do("CONFIG", "SET", "maxmemory", "0")
			do("SETEX", "volatile-key", "10000", "x")
			do("GET", "volatile-key")
			do("SETBIT", "big-key", strconv.Itoa(8*(3<<20)), "0") // 3 MB
			first := do("GETBIT", "big-key", "0")
			if want := ">2\r\n$10\r\ninvalidate\r\n*1\r\n$12\r\nvolatile-key\r\n"; first != want {
				t.Fatalf("first after GETBIT: %q, want the invalidation %q", first, want)
			}
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if r, err := redistest.ReadReply(c.R); err != nil || r != ":0\r\n" {
				t.Fatalf("GETBIT reply: %q %v", r, err)
			}
		})
	}
}

// Client tracking as redis-server's unit/tracking has it: a key a NOLOOP
// BCAST client set with an expiry is still invalidated when it expires
// (no client changed it then), and keys over
// tracking-table-max-keys are invalidated before a command is processed,
// even one MULTI only queues, the message ahead of the command's reply.
func TestTrackingExpiryAndLimitVsRedis(t *testing.T) {
	raddr := redistest.StartRedis(t, "--enable-debug-command", "yes")
	_, saddr := redistest.StartSluice(t, "enable-debug-command", "yes")
	run := func(addr string) []string {
		var out []string
		r := redistest.Dial(t, addr)
		do := func(c *redistest.Conn, args ...string) string {
			v, err := c.Do(args...)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		read := func(c *redistest.Conn) string {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			v, err := redistest.ReadReply(c.R)
			if err != nil {
				t.Fatalf("%s: %v after %q", addr, err, out)
			}
			return v
		}
		redir := redistest.Dial(t, addr)
		id := strings.Trim(do(redir, "CLIENT", "ID"), ":\r\n")
		out = append(out, do(redir, "SUBSCRIBE", "__redis__:invalidate"))
		do(r, "CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", id, "NOLOOP")
		for _, cmd := range [][]string{{"MULTI"}, {"SET", "k{t}", "v", "PX", "1"}, {"SET", "other{t}", "v"}, {"DEBUG", "SLEEP", "0.1"}, {"GET", "k{t}"}, {"EXEC"}} {
			out = append(out, do(r, cmd...))
		}
		out = append(out, read(redir))
		// The client's own GET finds its key expired (active expiry off):
		// the lazy expiry is no one's change either.
		do(r, "DEBUG", "SET-ACTIVE-EXPIRE", "0")
		out = append(out, do(r, "SET", "lazy{t}", "v", "PX", "1"))
		time.Sleep(20 * time.Millisecond)
		out = append(out, do(r, "GET", "lazy{t}"), read(redir))
		do(r, "DEBUG", "SET-ACTIVE-EXPIRE", "1")
		do(r, "CLIENT", "TRACKING", "off")

		do(r, "CONFIG", "SET", "tracking-table-max-keys", "2")
		rd := redistest.Dial(t, addr)
		out = append(out, do(rd, "HELLO", "3")[:1], do(rd, "CLIENT", "TRACKING", "on"), do(rd, "MGET", "1{tag}", "2{tag}"), do(rd, "MULTI"))
		do(r, "CONFIG", "SET", "tracking-table-max-keys", "1")
		rd.Write(redistest.Encode("PING"))
		rd.Write(redistest.Encode("EXEC"))
		// The victim is either key: keep the message's shape.
		out = append(out, regexp.MustCompile(`[12]\{tag\}`).ReplaceAllString(read(rd), "N{tag}"), read(rd), read(rd))
		do(r, "CONFIG", "SET", "tracking-table-max-keys", "0")
		return out
	}
	want, got := run(raddr), run(saddr)
	for i := range want {
		if i >= len(got) || want[i] != got[i] {
			t.Fatalf("reply %d\nredis  %q\nsluice %q", i, want, got)
		}
	}
}
