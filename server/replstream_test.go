package server_test

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// replicationStream attaches to addr as Redis's tests do (SYNC, the RDB
// payload skipped) and returns the reader of the commands that follow.
func replicationStream(t *testing.T, addr string) *redistest.Conn {
	t.Helper()
	c := redistest.Dial(t, addr)
	c.Write(redistest.Encode("SYNC"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		line, err := c.R.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "$"); ok {
			size, _ := strconv.Atoi(n)
			if _, err := io.CopyN(io.Discard, c.R, int64(size)); err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
}

// streamUntil reads commands from a replication stream up to and
// including "SET <marker> ...", as one line each.
func streamUntil(t *testing.T, r *bufio.Reader, marker string) []string {
	t.Helper()
	var out []string
	for {
		line, err := redistest.ReadReply(r)
		if err != nil {
			t.Fatalf("stream after %q: %v", out, err)
		}
		out = append(out, line)
		if strings.Contains(strings.ToLower(line), "$3\r\nset\r\n$"+strconv.Itoa(len(marker))+"\r\n"+marker+"\r\n") {
			return out
		}
	}
}

// What reaches replicas, as Redis's replication-stream tests read it:
// GETDEL as DEL, LMPOP and ZMPOP as the pops they did, and a SWAPDB that wakes a client blocked on a key that
// has expired meanwhile before the DEL of that key (the keys SWAPDB
// signals are looked at without expiring them, as Redis's dictFind).
func TestReplicationStreamVsRedis(t *testing.T) {
	t.Chdir(t.TempDir()) // SYNC's disk-based sync writes dump.rdb here
	raddr := redistest.StartRedis(t, "--enable-debug-command", "yes")
	_, saddr := redistest.StartSluice(t, "enable-debug-command", "yes")
	ms := regexp.MustCompile(`\$13\r\n\d{13}\r\n|\$1[45]\r\n\d{13}-\d+\r\n`)
	run := func(addr string) []string {
		stream := replicationStream(t, addr)
		c := redistest.Dial(t, addr)
		do := func(args ...string) {
			if _, err := c.Do(args...); err != nil {
				t.Fatal(err)
			}
		}
		do("FLUSHALL")
		do("DEBUG", "SET-ACTIVE-EXPIRE", "0")
		do("SET", "foo", "bar")
		do("GETDEL", "foo")
		do("GETDEL", "foo") // nothing deleted: nothing sent
		do("SELECT", "1")
		do("RPUSH", "k", "hello")
		do("PEXPIRE", "k", "100")
		b := redistest.Dial(t, addr)
		b.Do("SELECT", "9")
		b.Write(redistest.Encode("BRPOP", "k", "1"))
		time.Sleep(200 * time.Millisecond)
		do("SWAPDB", "1", "9")
		b.SetReadDeadline(time.Now().Add(5 * time.Second))
		redistest.ReadReply(b.R) // the timeout's nil
		do("DEBUG", "SET-ACTIVE-EXPIRE", "1")
		do("RPUSH", "l", "a", "b", "c")
		do("LMPOP", "2", "nolist", "l", "RIGHT", "COUNT", "5")
		do("ZADD", "z", "1", "m", "2", "n")
		do("ZMPOP", "1", "z", "MAX")
		// XREADGROUP as the XCLAIMs of what it delivered (in MULTI/EXEC
		// when several), XGROUP SETID with NOACK; history reads as nothing.
		do("SELECT", "0")
		for i := 1; i <= 4; i++ {
			do("XADD", "s", strconv.Itoa(i)+"-1", "f", "v")
		}
		do("XGROUP", "CREATE", "s", "g", "0")
		do("XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s", ">")
		do("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0")
		do("MULTI")
		do("XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "STREAMS", "s", ">")
		do("XREADGROUP", "GROUP", "g", "c2", "NOACK", "STREAMS", "s", ">")
		do("EXEC")
		bl := redistest.Dial(t, addr)
		bl.Write(redistest.Encode("XREADGROUP", "GROUP", "g", "c3", "BLOCK", "5000", "STREAMS", "s", ">"))
		time.Sleep(100 * time.Millisecond)
		do("XADD", "s", "9-1", "f", "v")
		bl.SetReadDeadline(time.Now().Add(5 * time.Second))
		redistest.ReadReply(bl.R)
		// NOACK by a consumer the read creates: XGROUP CREATECONSUMER
		// first, also when a blocked read is served.
		do("XADD", "s", "10-1", "f", "v")
		do("XREADGROUP", "GROUP", "g", "c4", "NOACK", "STREAMS", "s", ">")
		bl.Write(redistest.Encode("XREADGROUP", "GROUP", "g", "c5", "BLOCK", "5000", "NOACK", "STREAMS", "s", ">"))
		time.Sleep(100 * time.Millisecond)
		do("XADD", "s", "11-1", "f", "v")
		redistest.ReadReply(bl.R)
		// XADD's generated ID as the one it got; approximate trims made
		// exact (whole nodes of 100 entries go).
		do("XADD", "t", "*", "f", "v")
		do("DEL", "t")
		for i := 1; i <= 150; i++ {
			do("XADD", "t", strconv.Itoa(i)+"-1", "f", "v")
		}
		do("XADD", "t", "MAXLEN", "~", "120", "200-*", "f", "v")
		do("XTRIM", "t", "MAXLEN", "~", "10")
		do("XADD", "t", "NOMKSTREAM", "MINID", "~", "300", "LIMIT", "100", "300-1", "f", "v")
		do("XTRIM", "t", "MINID", "=", "140")
		do("SET", "end", "x")
		stream.SetReadDeadline(time.Now().Add(10 * time.Second))
		var out []string
		for _, l := range streamUntil(t, stream.R, "end") {
			out = append(out, ms.ReplaceAllString(l, "$$13\r\nMS\r\n"))
		}
		return out
	}
	want, got := run(raddr), run(saddr)
	if strings.Join(want, "") != strings.Join(got, "") {
		t.Errorf("replication stream\nredis  %q\nsluice %q", want, got)
	}
}

// redis.set_repl: a script's writes go to the replicas, the AOF, both or
// neither as it says (Redis's "Test selective replication of certain Redis
// commands from Lua"): the replicas get a and d, the AOF a, c and d.
func TestScriptSetReplVsRedis(t *testing.T) {
	args := []string{"--appendonly", "yes", "--enable-debug-command", "yes"}
	raddr := redistest.StartRedis(t, append(args, "--dir", t.TempDir())...)
	_, saddr := redistest.StartSluiceArgs(t, args...)
	script := `redis.call('set','a','1')
redis.set_repl(redis.REPL_NONE)
redis.call('set','b','2')
redis.set_repl(redis.REPL_AOF)
redis.call('set','c','3')
redis.set_repl(redis.REPL_ALL)
redis.call('set','d','4')`
	run := func(addr string) []string {
		stream := replicationStream(t, addr)
		c := redistest.Dial(t, addr)
		rec := redistest.NewRecorder(t, c)
		do := rec.Do
		do("EVAL", script, "0")
		do("EVAL", "redis.set_repl(redis.REPL_NONE) redis.call('set','e','5') redis.call('set','f','6')", "0")
		do("EVAL", "redis.set_repl(42)", "0")
		do("SET", "end", "x")
		stream.SetReadDeadline(time.Now().Add(10 * time.Second))
		rec.Replies = append(rec.Replies, streamUntil(t, stream.R, "end")...)
		do("DEBUG", "LOADAOF")
		do("MGET", "a", "b", "c", "d", "e", "f")
		return rec.Replies
	}
	want, got := run(raddr), run(saddr)
	if strings.Join(want, "") != strings.Join(got, "") {
		t.Errorf("replies and replication stream\nredis  %q\nsluice %q", want, got)
	}
}

// An approximate trim with LIMIT reaches the AOF made exact with its
// LIMIT kept, and the AOF's replay obeys it (Redis's unit/type/stream
// "XADD with ~ MAXLEN and LIMIT can propagate correctly").
func TestStreamTrimLimitAOFVsRedis(t *testing.T) {
	args := []string{"--appendonly", "yes", "--enable-debug-command", "yes", "--stream-node-max-entries", "10"}
	raddr := redistest.StartRedis(t, append(args, "--dir", t.TempDir())...)
	_, saddr := redistest.StartSluiceArgs(t, args...)
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		rec := redistest.NewRecorder(t, c)
		do := rec.Do
		for i := 1; i <= 100; i++ {
			c.Do("XADD", "s", strconv.Itoa(i)+"-1", "f", "v")
		}
		do("XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "101-1", "f", "v")
		do("XTRIM", "s", "MINID", "~", "90", "LIMIT", "10")
		do("XLEN", "s")
		do("DEBUG", "LOADAOF")
		do("XLEN", "s")
		return rec.Replies
	}
	want, got := run(raddr), run(saddr)
	if strings.Join(want, "") != strings.Join(got, "") {
		t.Errorf("redis %q\nsluice %q", want, got)
	}
}
