package server_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// CLIENT INFO/LIST of the calling client report the query buffer holding
// the batch being executed, as Redis does (qbuf=26 for a lone
// "CLIENT INFO"; a pipeline counts whole).
func TestClientInfoQbufOfSelf(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	qbuf := regexp.MustCompile(`qbuf=\d+`)
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		var out []string
		for _, batch := range [][][]string{
			{{"CLIENT", "INFO"}},
			{{"CLIENT", "LIST", "TYPE", "normal"}},
			{{"PING"}, {"CLIENT", "INFO"}},
			{{"CLIENT", "INFO"}, {"PING"}},
		} {
			var b []byte
			for _, cmd := range batch {
				b = append(b, redistest.Encode(cmd...)...)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(b); err != nil {
				t.Fatal(err)
			}
			for range batch {
				r, err := redistest.ReadReply(c.R)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, qbuf.FindString(r))
			}
		}
		return out
	}
	sameLines(t, run(raddr), run(saddr), func(i int) string { return fmt.Sprintf("reply %d", i) })
}

// MONITOR output of the same command stream, timestamps and client ports
// masked, matches redis-server's: admin commands hidden, credentials
// redacted, MULTI/EXEC order, the database after SELECT, sdscatrepr quoting.
func TestMonitorVsRedis(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	mask := regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) 127\.0\.0\.1:\d+\]`)
	maskLua := regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) lua\]`)
	run := func(addr string) []string {
		mon := redistest.Dial(t, addr)
		var out []string
		idReply, _ := mon.Do("CLIENT", "ID")
		id := idReply[1 : len(idReply)-2]
		r, err := mon.Do("MONITOR")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
		c := redistest.Dial(t, addr)
		for _, cmd := range [][]string{
			{"SET", "k", "v"},
			{"MULTI"}, {"SET", "a", "b"}, {"EXEC"},
			{"MULTI"}, {"NOSUCHCMD"}, {"EXEC"},
			{"GET"}, // arity error: not shown
			{"SELECT", "3"},
			{"SET", "x y", "\x01\n\"\\\t\xff"},
			{"CONFIG", "GET", "maxmemory"}, // admin: not shown
			{"AUTH", "foo"},
			{"AUTH", "a", "b"},
			{"HELLO", "2", "AUTH", "u", "p"},
			{"HELLO", "3", "SETNAME", "n", "AUTH", "u", "p"},
			{"MIGRATE", "127.0.0.1", "1", "nokey", "0", "100"},
			{"MIGRATE", "127.0.0.1", "1", "nokey", "0", "100", "COPY", "AUTH", "pw"},
			{"MIGRATE", "127.0.0.1", "1", "nokey", "0", "100", "AUTH2", "user", "pw"},
			{"MIGRATE", "127.0.0.1", "1", "", "0", "100", "AUTH2", "user", "pw", "KEYS", "auth", "k2"},
			{"CLIENT", "LIST", "TYPE", "pubsub"},
			// Scripts show before the commands they run, which show as "lua".
			{"EVAL", "redis.call('set',KEYS[1],ARGV[1]) return redis.call('get',KEYS[1])", "1", "foo", "bar"},
			{"EVAL", "return 1", "x"},
			{"EVALSHA", "1234", "0"},
			{"FUNCTION", "LOAD", "REPLACE", "#!lua name=montest\nredis.register_function('montest', function() return redis.call('set', 'foo', 'baz') end)"},
			{"FCALL", "montest", "0"},
			{"ECHO", "end"},
		} {
			if _, err := c.Do(cmd...); err != nil {
				t.Fatal(err)
			}
		}
		for {
			r, err := redistest.ReadReply(mon.R)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, maskLua.ReplaceAllString(mask.ReplaceAllString(r, "+T [$1 ADDR]"), "+T [$1 lua]"))
			if r[len(r)-7:] == "\"end\"\r\n" {
				break
			}
		}
		// The monitor shows as flag O; RESET leaves monitor mode.
		flags := regexp.MustCompile(`flags=\w+`)
		list, _ := c.Do("CLIENT", "LIST", "ID", id)
		out = append(out, flags.FindString(list))
		r, _ = mon.Do("RESET")
		out = append(out, r)
		list, _ = c.Do("CLIENT", "LIST", "ID", id)
		out = append(out, flags.FindString(list))
		return out
	}
	sameLines(t, run(raddr), run(saddr), func(i int) string { return fmt.Sprintf("line %d", i) })
}

// SLOWLOG GET hides the same credentials as redis-server's: AUTH, HELLO
// AUTH, MIGRATE AUTH/AUTH2, ACL SETUSER's rules and CONFIG SET's values of
// masterauth, masteruser and requirepass (admin commands do reach the slow
// log), with the 32-argument cut coming first.
func TestSlowlogRedactsVsRedis(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	long := []string{"MIGRATE", "127.0.0.1", "1", "", "0", "100", "AUTH2", "user", "pw", "KEYS"}
	for i := len(long); i < 40; i++ {
		long = append(long, "k"+strconv.Itoa(i))
	}
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		var out []string
		for _, cmd := range [][]string{
			{"CONFIG", "SET", "slowlog-log-slower-than", "0"},
			{"SLOWLOG", "RESET"},
			{"AUTH", "pw"},
			{"AUTH", "u", "pw"},
			{"AUTH", "u", "pw", "x"},
			{"HELLO", "3", "AUTH", "u", "pw"},
			{"HELLO", "x", "AUTH", "u", "pw"},
			{"MIGRATE", "127.0.0.1", "1", "nokey", "0", "100", "REPLACE", "AUTH", "pw"},
			{"MIGRATE", "127.0.0.1", "1", "nokey", "0", "100", "AUTH2", "user", "pw"},
			{"MIGRATE", "127.0.0.1", "1", "nokey", "0", "100", "BOGUS", "AUTH", "pw"},
			long,
			{"ACL", "SETUSER", "alice", "on", ">secret", "+get"},
			{"ACL", "DELUSER", "alice"},
			{"CONFIG", "SET", "masterauth", "pw1", "MASTERUSER", "u1", "maxmemory-samples", "5"},
			{"CONFIG", "SET", "requirepass", "pw2", "nosuchconfig", "x"},
			{"CONFIG", "SET", "masterauth", "", "masteruser", ""},
			{"CONFIG", "SET", "requirepass", ""},
			{"SLOWLOG", "GET", "-1"},
		} {
			r, err := c.Do(cmd...)
			if err != nil {
				t.Fatal(err)
			}
			if cmd[0] == "SLOWLOG" && len(cmd) == 3 {
				out = append(out, r)
			}
		}
		return out
	}
	// Entries differ in ids, times, durations and client ports: keep the
	// arguments (the lines between the duration and the client address).
	args := func(r string) []string {
		var keep []string
		lines := strings.Split(r, "\r\n")
		for _, l := range lines {
			if strings.HasPrefix(l, "*") || strings.HasPrefix(l, "$") || strings.HasPrefix(l, ":") {
				continue
			}
			if strings.HasPrefix(l, "127.0.0.1:") || l == "" {
				continue
			}
			keep = append(keep, l)
		}
		return keep
	}
	want, got := args(run(raddr)[0]), args(run(saddr)[0])
	if strings.Join(want, "|") != strings.Join(got, "|") {
		t.Errorf("slow log arguments\nredis  %q\nsluice %q", want, got)
	}
	if !strings.Contains(strings.Join(want, "|"), "(redacted)") {
		t.Fatalf("redis-server redacted nothing: %q", want)
	}
}

// INFO's rdb_changes_since_last_save moves as Redis's server.dirty for the
// bit and HyperLogLog commands (the unit/bitops dirty test, extended):
// created keys, unchanged bits, grown strings, BITFIELD changes.
func TestDirtyCounterVsRedis(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	dirty := regexp.MustCompile(`rdb_changes_since_last_save:(\d+)`)
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		var out []string
		for _, cmd := range [][]string{
			{"SETBIT", "foo", "0", "0"},
			{"BITFIELD", "foo2", "SET", "i5", "0", "0"},
			{"SETBIT", "foo", "0", "0"},
			{"BITFIELD", "foo2", "SET", "i5", "0", "0"},
			{"SETBIT", "foo", "0", "1"},
			{"SETBIT", "foo", "0", "1"},
			{"BITFIELD", "foo2", "SET", "i5", "0", "1"},
			{"BITFIELD", "foo3", "INCRBY", "i5", "0", "1", "INCRBY", "i5", "8", "1", "GET", "u8", "0"},
			{"BITFIELD", "foo3", "INCRBY", "i5", "0", "1", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9"},
			{"SETBIT", "foo", "90", "0"},
			{"BITFIELD", "foo2", "SET", "i5", "90", "0"},
			{"BITOP", "OR", "dst", "foo", "foo2"},
			{"BITOP", "AND", "dst", "nokey"},
			{"PFADD", "hll", "a", "b", "c"},
			{"PFADD", "hll", "a", "b", "c"},
			{"PFADD", "hll2"},
			{"PFCOUNT", "hll"},
			{"PFCOUNT", "hll"},
			{"PFMERGE", "hll3", "hll", "hll2"},
			{"PFMERGE", "hll3", "hll"},
			{"PFDEBUG", "TODENSE", "hll"},
			{"SET", "k", "v"},
			{"DEL", "k", "foo", "nokey"},
		} {
			before, _ := c.Do("INFO", "persistence")
			if _, err := c.Do(cmd...); err != nil {
				t.Fatal(err)
			}
			after, _ := c.Do("INFO", "persistence")
			b, _ := strconv.Atoi(dirty.FindStringSubmatch(before)[1])
			a, _ := strconv.Atoi(dirty.FindStringSubmatch(after)[1])
			out = append(out, fmt.Sprint(cmd, " +", a-b))
		}
		return out
	}
	sameLines(t, run(raddr), run(saddr), func(i int) string { return fmt.Sprintf("entry %d", i) })
}

// CLIENT LIST shows a client's transaction as redis-server does: flags x
// (in MULTI) and d (a watched key changed), the commands queued (none
// once EXEC is bound to fail), multi-mem (the queued arguments), and cmd
// (the command named last, queued too, NULL when unknown), seen by
// another client and, inside EXEC, by the client itself; and the
// arguments of a client blocked in BLPOP (argv-mem).
func TestClientListTransactionVsRedis(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	field := regexp.MustCompile(` (flags|multi|argv-mem|multi-mem|cmd)=\S*`)
	run := func(addr string) []string {
		a, b := redistest.Dial(t, addr), redistest.Dial(t, addr)
		var out []string
		show := func(who *redistest.Conn, args ...string) {
			r, err := who.Do(args...)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(r, "\n") {
				if strings.Contains(line, " name=a ") {
					out = append(out, strings.Join(field.FindAllString(line, -1), ""))
				}
			}
		}
		for _, cmd := range [][]string{
			{"CLIENT", "SETNAME", "a"}, {"WATCH", "k"}, {"MULTI"}, {"SET", "x", "1"}, {"INCR", "y"},
		} {
			a.Do(cmd...)
		}
		show(b, "CLIENT", "LIST")
		b.Do("SET", "k", "1") // a's EXEC will fail
		show(b, "CLIENT", "LIST")
		a.Do("GET", "x") // not kept: EXEC is bound to fail
		show(b, "CLIENT", "LIST")
		a.Do("EXEC")
		show(b, "CLIENT", "LIST")
		a.Do("MULTI")
		a.Do("CLIENT", "INFO")
		a.Do("SET", "x", "2")
		show(a, "EXEC") // CLIENT INFO's reply, an element of EXEC's
		show(b, "CLIENT", "LIST")
		a.Do("MULTI")
		a.Do("NOSUCH")
		a.Do("PING")
		show(b, "CLIENT", "LIST")
		a.Do("DISCARD")
		a.Do("CLIENT", "NOSUCH")
		show(b, "CLIENT", "LIST")
		// Blocked: its command's arguments stay (argv-mem).
		if _, err := a.Write(redistest.Encode("BLPOP", "nolist", "0")); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for r, _ := b.Do("INFO", "clients"); !strings.Contains(r, "blocked_clients:1"); r, _ = b.Do("INFO", "clients") {
			if time.Now().After(deadline) {
				t.Fatal("BLPOP did not block")
			}
			time.Sleep(5 * time.Millisecond)
		}
		show(b, "CLIENT", "LIST")
		return out
	}
	sameLines(t, run(raddr), run(saddr), func(i int) string { return fmt.Sprintf("view %d", i) })
}

// DEBUG DIGEST and DEBUG DIGEST-VALUE agree with redis-server's for the
// same data: every type and encoding (integers, small and big sets,
// hashes, sorted sets with infinite and fractional scores, a list of
// several nodes, a stream with a deleted entry and a group), expiries,
// several databases, and a key that does not exist.
func TestDebugDigestVsRedis(t *testing.T) {
	raddr := redistest.StartRedis(t, "--enable-debug-command", "yes")
	_, saddr := redistest.StartSluice(t, "enable-debug-command", "yes")
	var cmds [][]string
	add := func(args ...string) { cmds = append(cmds, args) }
	add("SET", "s", "v")
	add("SET", "n", "12345")
	add("SET", "neg", "-5")
	add("SET", "f", "3.14")
	add("SET", "big", strings.Repeat("x", 300))
	add("APPEND", "a", "tail")
	l := []string{"RPUSH", "l"}
	for i := 0; i < 400; i++ {
		l = append(l, strconv.Itoa(i*7-300), "e"+strconv.Itoa(i), "00"+strconv.Itoa(i))
	}
	add(l...)
	add("LPUSH", "l", "head")
	si, ss, hs, zb := []string{"SADD", "si"}, []string{"SADD", "ss"}, []string{"HSET", "hs"}, []string{"ZADD", "zb"}
	for i := 0; i < 600; i++ {
		si = append(si, strconv.Itoa(i*3))
		hs = append(hs, "f"+strconv.Itoa(i), strconv.Itoa(i*i))
		zb = append(zb, strconv.FormatFloat(float64(i)/3, 'g', -1, 64), "m"+strconv.Itoa(i))
		if i < 20 {
			ss = append(ss, "m"+strconv.Itoa(i))
		}
	}
	add(si...)
	add(ss...)
	add("SADD", "sint", "1", "2", "-3")
	add(hs...)
	add("HSET", "hl", "a", "1", "b", "two")
	add(zb...)
	add("ZADD", "zl", "inf", "top", "-inf", "bottom", "0.1", "tenth", "1e20", "huge", "7", "12")
	add("XADD", "x", "1-1", "f", "v", "g", "w")
	add("XADD", "x", "1-2", "f", "v2")
	add("XADD", "x", "2-0", "a", "b")
	add("XDEL", "x", "1-2")
	add("XGROUP", "CREATE", "x", "grp", "0")
	add("SET", "e", "v", "PXAT", "4000000000000")
	add("HSET", "he", "f", "v")
	add("EXPIRE", "he", "100000")
	add("SELECT", "3")
	add("SET", "s", "in db 3")
	add("SELECT", "0")
	keys := []string{"s", "n", "neg", "f", "big", "a", "l", "si", "ss", "sint", "hs", "hl", "zb", "zl", "x", "e", "he", "nokey"}
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		for _, cmd := range cmds {
			if r, err := c.Do(cmd...); err != nil || strings.HasPrefix(r, "-") {
				t.Fatalf("%v: %q %v", cmd, r, err)
			}
		}
		var out []string
		for _, cmd := range [][]string{{"DEBUG", "DIGEST"}, append([]string{"DEBUG", "DIGEST-VALUE"}, keys...)} {
			r, err := c.Do(cmd...)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.Split(r, "\r\n")...)
		}
		return out
	}
	// Lines: DEBUG DIGEST's reply, then DIGEST-VALUE's array header and
	// one line for each key.
	sameLines(t, run(raddr), run(saddr), func(i int) string {
		switch {
		case i < 2:
			return "DEBUG DIGEST"
		case i >= 3 && i-3 < len(keys):
			return "DIGEST-VALUE " + keys[i-3]
		}
		return fmt.Sprintf("DIGEST-VALUE line %d", i)
	})
}

// DEBUG LISTPACK, QUICKLIST and STRINGMATCH-TEST answer as redis-server's
// do, errors included, and DEBUG OBJECT reports a list's quicklist nodes
// and their size as redis-server's (for a list filled by RPUSH).
func TestDebugStructureVsRedis(t *testing.T) {
	raddr := redistest.StartRedis(t, "--enable-debug-command", "yes")
	_, saddr := redistest.StartSluice(t, "enable-debug-command", "yes")
	big := []string{"RPUSH", "big"}
	for i := 0; i < 3000; i++ {
		big = append(big, strconv.Itoa(i*37-1000), "e"+strconv.Itoa(i))
	}
	cmds := [][]string{
		{"RPUSH", "l", "a", "b", "c"}, {"HSET", "h", "a", "b"}, {"ZADD", "z", "1", "a"}, {"SET", "s", "v"}, big,
		{"DEBUG", "LISTPACK", "l"}, {"DEBUG", "LISTPACK", "h"}, {"DEBUG", "LISTPACK", "z"}, {"DEBUG", "LISTPACK", "s"},
		{"DEBUG", "LISTPACK", "nokey"}, {"DEBUG", "QUICKLIST", "l"}, {"DEBUG", "QUICKLIST", "l", "1"},
		{"DEBUG", "QUICKLIST", "h"}, {"DEBUG", "QUICKLIST", "nokey"}, {"DEBUG", "STRINGMATCH-TEST"},
		{"DEBUG", "OBJECT", "l"}, {"DEBUG", "OBJECT", "big"},
	}
	mask := regexp.MustCompile(`Value at:\S+ |lru:\d+ lru_seconds_idle:\d+ `)
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		var out []string
		for _, cmd := range cmds {
			r, err := c.Do(cmd...)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, mask.ReplaceAllString(r, ""))
		}
		return out
	}
	sameLines(t, run(raddr), run(saddr), func(i int) string { return fmt.Sprint(cmds[i][:min(len(cmds[i]), 3)]) })
}

// LOLWUT answers as redis-server's: byte for byte where its art is not
// random (the version line, Schotter's first two rows, errors, clamped
// sizes), and with the same number of lines where it is.
func TestLolwutVsRedis(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	exact := [][]string{
		{"LOLWUT"}, {"LOLWUT", "5"}, {"LOLWUT", "VERSION"}, {"LOLWUT", "VERSION", "5", "20", "3", "2"},
		{"LOLWUT", "VERSION", "5", "1", "1", "1"}, {"LOLWUT", "VERSION", "5", "0", "0", "0"},
		{"LOLWUT", "VERSION", "5", "100", "10", "2"}, {"LOLWUT", "VERSION", "5", "abc"},
		{"LOLWUT", "VERSION", "x"}, {"LOLWUT", "VERSION", "4"}, {"LOLWUT", "VERSION", "-1"},
		{"LOLWUT", "VERSION", "4294967301", "20", "3", "2"}, {"LOLWUT", "version", "6", "1", "1"},
		{"COMMAND", "COUNT"}, {"COMMAND", "INFO", "lolwut"},
	}
	shaped := [][]string{{"LOLWUT", "VERSION", "5"}, {"LOLWUT", "VERSION", "5", "30", "4", "7"}, {"LOLWUT", "VERSION", "6"}, {"LOLWUT", "VERSION", "6", "10", "5"}}
	rc, sc := redistest.Dial(t, raddr), redistest.Dial(t, saddr)
	do := func(c *redistest.Conn, cmd []string) string {
		r, err := c.Do(cmd...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, cmd := range exact {
		if want, got := do(rc, cmd), do(sc, cmd); want != got {
			t.Errorf("%v: redis %q, sluice %q", cmd, want, got)
		}
	}
	for _, cmd := range shaped {
		want, got := do(rc, cmd), do(sc, cmd)
		wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
		if len(wl) != len(gl) || wl[len(wl)-2] != gl[len(gl)-2] {
			t.Errorf("%v: redis %d lines ending %q, sluice %d ending %q", cmd, len(wl), wl[len(wl)-2], len(gl), gl[len(gl)-2])
		}
	}
}

// sameLines fails t for each line of Sluice's got that differs from
// redis-server's want (label names line i), or when their counts differ.
func sameLines(t *testing.T, want, got []string, label func(i int) string) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("redis %q\nsluice %q", want, got)
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("%s: redis %q, sluice %q", label(i), want[i], got[i])
		}
	}
}
