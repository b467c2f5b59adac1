package server_test

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/server"
	"github.com/sluicedb/sluice/store"
)

// The string command tests run every scenario against a real redis-server
// and against Sluice and compare what comes back: replies (raw RESP or as
// go-redis decodes them), encodings, TTLs and keyspace notifications.
// Redis is the reference; nothing here is copied from Sluice's output.

type pair struct {
	srv           *server.Server
	redis, sluice string
}

func startPair(t *testing.T, directives ...string) pair {
	t.Helper()
	var redisArgs []string
	for i := 0; i+1 < len(directives); i += 2 {
		redisArgs = append(redisArgs, "--"+directives[i], directives[i+1])
	}
	r := redistest.StartRedis(t, redisArgs...)
	srv, s := redistest.StartSluice(t, directives...)
	return pair{srv, r, s}
}

func newClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// compare runs each command on both servers over raw connections and
// reports every reply that differs.
func compare(t *testing.T, p pair, cmds ...[]string) {
	t.Helper()
	r, s := redistest.Dial(t, p.redis), redistest.Dial(t, p.sluice)
	for _, args := range cmds {
		want, err := r.Do(args...)
		if err != nil {
			t.Fatalf("redis %q: %v", args, err)
		}
		got, err := s.Do(args...)
		if err != nil {
			t.Fatalf("sluice %q: %v", args, err)
		}
		if want != got {
			t.Errorf("%q\n redis:  %q\n sluice: %q", args, want, got)
		}
	}
}

// cmd splits a command line on spaces; ” is an empty argument.
func cmd(s string) []string {
	args := strings.Fields(s)
	for i, a := range args {
		if a == "''" {
			args[i] = ""
		}
	}
	return args
}

// withKey runs fn on key's entry in Sluice's db 0 under the exclusive lock.
func withKey(p pair, key string, fn func(db *store.DB, e *store.Entry)) {
	ks := p.srv.Keyspace()
	ks.Lock.Lock()
	defer ks.Lock.Unlock()
	db := ks.DB(0)
	fn(db, db.Peek([]byte(key)))
}

// makeList creates a list at key on both servers: with RPUSH where Sluice
// has it, else by placing a list entry in Sluice's keyspace directly (the
// string commands look only at its type).
func makeList(t *testing.T, p pair, key string) {
	t.Helper()
	r, s := redistest.Dial(t, p.redis), redistest.Dial(t, p.sluice)
	if rep, _ := r.Do("RPUSH", key, "a"); rep != ":1\r\n" {
		t.Fatalf("redis RPUSH: %q", rep)
	}
	if rep, _ := s.Do("RPUSH", key, "a"); rep == ":1\r\n" {
		return
	}
	ks := p.srv.Keyspace()
	ks.Lock.Lock()
	ks.DB(0).Set([]byte(key), store.NewObject(store.KindList, nil), false)
	ks.Lock.Unlock()
}

func TestStringsWrongType(t *testing.T) {
	p := startPair(t)
	makeList(t, p, "l")
	compare(t, p,
		cmd("GET l"), cmd("SET l x GET"), cmd("SET l x NX GET"), cmd("GETEX l"), cmd("GETEX l EX 10"),
		cmd("GETEX l EX abc"), cmd("GETEX l FOO"), cmd("GETDEL l"), cmd("GETSET l x"), cmd("APPEND l x"),
		cmd("STRLEN l"), cmd("GETRANGE l 0 1"), cmd("GETRANGE l a 1"), cmd("SUBSTR l 0 1"),
		cmd("SETRANGE l 0 x"), cmd("SETRANGE l 0 ''"), cmd("SETRANGE l -1 x"), cmd("SETRANGE l a x"),
		cmd("INCR l"), cmd("DECR l"), cmd("INCRBY l 2"), cmd("INCRBY l x"), cmd("DECRBY l 2"),
		cmd("INCRBYFLOAT l 1.5"), cmd("INCRBYFLOAT l x"), cmd("MGET a l b"), cmd("SET s str"),
		cmd("LCS l s"), cmd("LCS s l"), cmd("LCS l s FOO"), cmd("LCS s missing LEN"),
		cmd("MSETNX x 1 l 2"), cmd("SETNX l v"), cmd("SET l v XX GET"),
	)
	// Commands that replace a list with a string.
	for _, c := range [][]string{cmd("SET l1 v"), cmd("GETSET l2 v"), cmd("MSET l3 v"), cmd("SETEX l4 100 v"), cmd("SET l5 v GET")} {
		makeList(t, p, c[1])
		compare(t, p, c, []string{"GET", c[1]})
	}
}

func TestStringsGoRedis(t *testing.T) {
	p := startPair(t)
	ctx := context.Background()
	type step struct {
		name string
		fn   func(c *redis.Client) any
	}
	res := func(v any, err error) any {
		if err != nil {
			return "error: " + err.Error()
		}
		return v
	}
	steps := []step{
		{"set", func(c *redis.Client) any { return res(c.Set(ctx, "a", "hello", 0).Result()) }},
		{"get", func(c *redis.Client) any { return res(c.Get(ctx, "a").Result()) }},
		{"get missing", func(c *redis.Client) any { return res(c.Get(ctx, "missing").Result()) }},
		{"set nx", func(c *redis.Client) any { return res(c.SetNX(ctx, "a", "x", 0).Result()) }},
		{"set xx", func(c *redis.Client) any { return res(c.SetXX(ctx, "a", "y", 0).Result()) }},
		{"set get", func(c *redis.Client) any {
			return res(c.SetArgs(ctx, "a", "z", redis.SetArgs{Get: true}).Result())
		}},
		{"set keepttl", func(c *redis.Client) any {
			return res(c.SetArgs(ctx, "a", "k", redis.SetArgs{KeepTTL: true}).Result())
		}},
		{"set ex", func(c *redis.Client) any { return res(c.Set(ctx, "e", "v", time.Hour).Result()) }},
		{"setex", func(c *redis.Client) any { return res(c.SetEx(ctx, "e2", "v", time.Hour).Result()) }},
		{"setnx", func(c *redis.Client) any { return res(c.SetNX(ctx, "n", 1, 0).Result()) }},
		{"mset", func(c *redis.Client) any { return res(c.MSet(ctx, "m1", 1, "m2", "two", "m3", 3.5).Result()) }},
		{"mget", func(c *redis.Client) any { return res(c.MGet(ctx, "m1", "m2", "nope", "m3").Result()) }},
		{"msetnx", func(c *redis.Client) any { return res(c.MSetNX(ctx, "m1", 1, "m4", 4).Result()) }},
		{"msetnx new", func(c *redis.Client) any { return res(c.MSetNX(ctx, "m5", 5, "m6", 6).Result()) }},
		{"getset", func(c *redis.Client) any { return res(c.GetSet(ctx, "m1", "new").Result()) }},
		{"getdel", func(c *redis.Client) any { return res(c.GetDel(ctx, "m2").Result()) }},
		{"getdel again", func(c *redis.Client) any { return res(c.GetDel(ctx, "m2").Result()) }},
		{"getex", func(c *redis.Client) any { return res(c.GetEx(ctx, "m3", time.Minute).Result()) }},
		{"getex persist", func(c *redis.Client) any { return res(c.GetEx(ctx, "m3", 0).Result()) }},
		{"append", func(c *redis.Client) any { return res(c.Append(ctx, "ap", "foo").Result()) }},
		{"append2", func(c *redis.Client) any { return res(c.Append(ctx, "ap", "bar").Result()) }},
		{"strlen", func(c *redis.Client) any { return res(c.StrLen(ctx, "ap").Result()) }},
		{"getrange", func(c *redis.Client) any { return res(c.GetRange(ctx, "ap", 1, -2).Result()) }},
		{"setrange", func(c *redis.Client) any { return res(c.SetRange(ctx, "ap", 10, "X").Result()) }},
		{"get ap", func(c *redis.Client) any { return res(c.Get(ctx, "ap").Result()) }},
		{"incr", func(c *redis.Client) any { return res(c.Incr(ctx, "i").Result()) }},
		{"incrby", func(c *redis.Client) any { return res(c.IncrBy(ctx, "i", 41).Result()) }},
		{"decr", func(c *redis.Client) any { return res(c.Decr(ctx, "i").Result()) }},
		{"decrby", func(c *redis.Client) any { return res(c.DecrBy(ctx, "i", 100).Result()) }},
		{"incr wrong", func(c *redis.Client) any { return res(c.Incr(ctx, "ap").Result()) }},
		{"incrbyfloat", func(c *redis.Client) any { return res(c.IncrByFloat(ctx, "f", 10.5).Result()) }},
		{"incrbyfloat2", func(c *redis.Client) any { return res(c.IncrByFloat(ctx, "f", 0.1).Result()) }},
		{"get f", func(c *redis.Client) any { return res(c.Get(ctx, "f").Result()) }},
		{"incrbyfloat int", func(c *redis.Client) any { return res(c.IncrByFloat(ctx, "i", 1e3).Result()) }},
		{"lcs", func(c *redis.Client) any {
			c.MSet(ctx, "l1", "ohmytext", "l2", "mynewtext")
			return res(c.LCS(ctx, &redis.LCSQuery{Key1: "l1", Key2: "l2"}).Result())
		}},
		{"lcs len", func(c *redis.Client) any {
			return res(c.LCS(ctx, &redis.LCSQuery{Key1: "l1", Key2: "l2", Len: true}).Result())
		}},
		{"lcs idx", func(c *redis.Client) any {
			return res(c.LCS(ctx, &redis.LCSQuery{Key1: "l1", Key2: "l2", Idx: true, MinMatchLen: 2, WithMatchLen: true}).Result())
		}},
		{"do substr", func(c *redis.Client) any { return res(c.Do(ctx, "substr", "ap", 0, 2).Result()) }},
		{"do psetex", func(c *redis.Client) any { return res(c.Do(ctx, "psetex", "ps", 100000, "v").Result()) }},
		{"do mset odd", func(c *redis.Client) any { return res(c.Do(ctx, "mset", "a", "1", "b").Result()) }},
	}
	rc, sc := newClient(t, p.redis), newClient(t, p.sluice)
	for _, st := range steps {
		want, got := st.fn(rc), st.fn(sc)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: redis %#v, sluice %#v", st.name, want, got)
		}
	}
}

func TestStringsEncoding(t *testing.T) {
	p := startPair(t)
	rc := newClient(t, p.redis)
	ctx := context.Background()
	steps := [][]string{
		cmd("SET int 12345"), cmd("SET neg -9223372036854775808"), cmd("SET big 9223372036854775808"),
		cmd("SET lead 012"), cmd("SET short hello"), {"SET", "long", strings.Repeat("x", 45)},
		{"SET", "e44", strings.Repeat("y", 44)}, cmd("APPEND app1 123"), cmd("APPEND app2 abc"),
		cmd("SET app3 abc"), cmd("APPEND app3 ''"), cmd("SET app4 12"), cmd("APPEND app4 3"),
		cmd("SETRANGE sr1 0 5"), cmd("SET sr2 12"), cmd("SETRANGE sr2 0 3"), cmd("INCR inc1"),
		cmd("SET inc2 5"), cmd("APPEND inc2 0"), cmd("INCR inc2"), cmd("INCRBYFLOAT fl1 3"),
		cmd("INCRBYFLOAT fl2 1.5"), {"SET", "fl3", strings.Repeat("1", 40)}, {"INCRBYFLOAT", "fl3", "0.5"},
		cmd("GETSET gs 77"), cmd("MSET ms1 1 ms2 a"), cmd("SETNX nx 99"), cmd("SETEX ex 100 1"),
		cmd("SET inc3 10"), cmd("INCRBYFLOAT inc3 1"), cmd("INCR inc3"),
	}
	s := redistest.Dial(t, p.sluice)
	for _, args := range steps {
		if err := rc.Do(ctx, toAny(args)...).Err(); err != nil && err != redis.Nil {
			t.Fatalf("redis %q: %v", args, err)
		}
		if _, err := s.Do(args...); err != nil {
			t.Fatal(err)
		}
		key := args[1]
		want, err := rc.ObjectEncoding(ctx, key).Result()
		if err != nil {
			t.Fatalf("redis OBJECT ENCODING %s: %v", key, err)
		}
		var got string
		withKey(p, key, func(_ *store.DB, e *store.Entry) {
			if e != nil {
				got = e.StringEncoding()
			}
		})
		if got != want {
			t.Errorf("after %q: encoding redis %q, sluice %q", args, want, got)
		}
	}
}

func toAny(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

// TestStringsTTL checks which commands keep, set or clear a key's TTL.
func TestStringsTTL(t *testing.T) {
	p := startPair(t)
	s := redistest.Dial(t, p.sluice)
	r := redistest.Dial(t, p.redis)
	run := func(args ...string) {
		r.Do(args...)
		s.Do(args...)
	}
	cases := [][]string{
		cmd("SET k v"), cmd("SET k v KEEPTTL"), cmd("SET k v XX"), cmd("SET k v GET"), cmd("SET k v NX"),
		cmd("GETSET k v"), cmd("MSET k v"), cmd("INCR k"), cmd("INCRBY k 5"), cmd("DECR k"),
		cmd("INCRBYFLOAT k 1.5"), cmd("APPEND k x"), cmd("SETRANGE k 0 x"), cmd("SETRANGE k 0 ''"),
		cmd("GETEX k"), cmd("GETEX k PERSIST"), cmd("GETEX k EX 500"), cmd("GETEX k PX 500000"),
		cmd("GETEX k EXAT 4000000000"), cmd("GETEX k EX 0"), cmd("SETEX k 700 v"), cmd("PSETEX k 700000 v"),
		cmd("SET k v EX 800"), cmd("SET k v PXAT 4000000000000"), cmd("GET k"), cmd("STRLEN k"),
		cmd("GETDEL k"), cmd("SETNX k v"), cmd("MSETNX k v"),
	}
	for _, c := range cases {
		run("SET", "k", "5", "EX", "1000")
		run(c...)
		rep, err := r.Do("PTTL", "k")
		if err != nil {
			t.Fatal(err)
		}
		var want int64
		fmt.Sscanf(rep, ":%d", &want)
		got := int64(-2)
		withKey(p, "k", func(db *store.DB, e *store.Entry) {
			switch {
			case e == nil:
			case !e.Volatile():
				got = -1
			default:
				got = db.ExpireOf([]byte("k"), e) - db.Keyspace().Now()
			}
		})
		if (want < 0 || got < 0) && want != got || want-got > 1000 || got-want > 1000 {
			t.Errorf("after %q: redis PTTL %d, sluice %d", c, want, got)
		}
	}
}

func TestStringsProtoMaxBulkLen(t *testing.T) {
	p := startPair(t, "proto-max-bulk-len", "1mb")
	big := strings.Repeat("a", 600)
	compare(t, p,
		cmd("SETRANGE k 1048575 x"), cmd("SETRANGE k 1048576 x"), cmd("SETRANGE k 1048574 xyz"),
		cmd("SETRANGE k 1048577 ''"), []string{"SET", "a", strings.Repeat("b", 1048570)},
		cmd("APPEND a 123456"), cmd("APPEND a 7"), cmd("STRLEN a"), cmd("SETRANGE a 1048575 z"),
		cmd("SETRANGE a 1048576 z"), cmd("APPEND a ''"),
		[]string{"MSET", "b1", big, "b2", big}, cmd("LCS b1 b2 LEN"), []string{"SET", "b2", big[:400]},
		cmd("LCS b1 b2 LEN"),
	)
}

// TestStringsNotifications compares the keyspace events of a script of
// commands: Redis's as received by a pattern subscriber, Sluice's as its
// notification hook receives them.
func TestStringsNotifications(t *testing.T) {
	// Sluice is built here so the hook is in place before it serves.
	var mu sync.Mutex
	var got []string
	cfg := server.NewConfig()
	cfg.Set("port", "0")
	if err := cfg.Set("notify-keyspace-events", "E$gmn"); err != nil {
		t.Fatal(err)
	}
	srv := server.New(cfg)
	srv.SetLogger(nil)
	srv.SetNotifyHookForTest(func(db int, class int64, event string, key []byte) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%d %s %s", db, event, key))
		mu.Unlock()
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	p := pair{srv, redistest.StartRedis(t, "--notify-keyspace-events", "E$gmn"), srv.Addrs()[0].String()}
	ctx := context.Background()
	rc := newClient(t, p.redis)
	sub := rc.PSubscribe(ctx, "__keyevent@0__:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	script := [][]string{
		cmd("GET a"), cmd("SET a 1"), cmd("SET a 2"), cmd("SET a 3 NX"), cmd("SET b 1 XX"),
		cmd("SET a 4 GET"), cmd("SET c 5 GET"), cmd("SET d v EX 100"), cmd("SET d v PXAT 1"),
		cmd("SETNX e 1"), cmd("SETNX e 1"), cmd("SETEX f 10 v"), cmd("PSETEX f 10000 v"), cmd("SETEX f 0 v"),
		cmd("MSET g 1 h 2 g 3"), cmd("MSETNX g 1 i 2"), cmd("MSETNX i 1 j 2"), cmd("MGET a x g"),
		cmd("GETSET a 9"), cmd("GETSET k 9"), cmd("GETDEL a"), cmd("GETDEL a"),
		cmd("GETEX g"), cmd("GETEX g EX 100"), cmd("GETEX g PERSIST"), cmd("GETEX g PERSIST"),
		cmd("GETEX x PERSIST"), cmd("GETEX g PXAT 1"), cmd("GETEX h EX 0"),
		cmd("APPEND l x"), cmd("APPEND l y"), cmd("STRLEN l"), cmd("STRLEN nol"), cmd("GETRANGE nol 0 1"),
		cmd("SETRANGE m 0 ''"), cmd("SETRANGE m 2 x"), cmd("SETRANGE m 0 y"), cmd("SETRANGE m 0 ''"),
		cmd("INCR n"), cmd("INCR n"), cmd("DECRBY n 5"), cmd("INCRBY n x"), cmd("INCRBYFLOAT o 1.5"),
		cmd("INCRBYFLOAT o 2"), cmd("INCRBYFLOAT o x"), cmd("LCS n o"), cmd("LCS y z"),
		cmd("SET zz end"),
	}
	s := redistest.Dial(t, p.sluice)
	r := redistest.Dial(t, p.redis)
	for _, args := range script {
		r.Do(args...)
		s.Do(args...)
	}
	var want []string
	for {
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ev := strings.TrimPrefix(msg.Channel, "__keyevent@0__:")
		want = append(want, "0 "+ev+" "+msg.Payload)
		if ev == "set" && msg.Payload == "zz" {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(want, got) {
		t.Errorf("events differ\n redis:  %q\n sluice: %q", want, got)
	}
}

// TestStringsRandom replays seeded random commands with random and edge
// arguments on both servers.
func TestStringsRandom(t *testing.T) {
	p := startPair(t)
	rnd := rand.New(rand.NewSource(7))
	ints := []string{"9223372036854775807", "-9223372036854775808", "abc", "1.5", "", "01", "-0", " 1", "0"}
	randInt := func() string {
		switch rnd.Intn(5) {
		case 0:
			return fmt.Sprint(rnd.Int63() - rnd.Int63())
		case 1:
			return ints[rnd.Intn(len(ints))]
		}
		return fmt.Sprint(rnd.Intn(30) - 10)
	}
	randStr := func() string {
		if rnd.Intn(4) == 0 {
			return fmt.Sprint(rnd.Intn(2000) - 1000)
		}
		b := make([]byte, rnd.Intn(14))
		for i := range b {
			b[i] = "abcab123\x00 "[rnd.Intn(10)]
		}
		return string(b)
	}
	randFloat := func() string {
		var b strings.Builder
		if rnd.Intn(3) == 0 {
			b.WriteByte('-')
		}
		if rnd.Intn(8) == 0 {
			b.WriteString("0x")
			n := 1 + rnd.Intn(18)
			for i := 0; i < n; i++ {
				b.WriteByte("0123456789abcdef."[rnd.Intn(17)])
			}
			if rnd.Intn(2) == 0 {
				fmt.Fprintf(&b, "p%d", rnd.Intn(200)-100)
			}
			return b.String()
		}
		n, pt := 1+rnd.Intn(28), rnd.Intn(30)
		for i := 0; i < n; i++ {
			if i == pt {
				b.WriteByte('.')
			}
			b.WriteByte(byte('0' + rnd.Intn(10)))
		}
		switch rnd.Intn(6) {
		case 0:
			fmt.Fprintf(&b, "e%d", rnd.Intn(60)-30)
		case 1:
			fmt.Fprintf(&b, "E%d", rnd.Intn(9900)-4950)
		}
		return b.String()
	}
	opts := []string{"IDX", "LEN", "WITHMATCHLEN", "MINMATCHLEN", "NX", "XX", "GET", "KEEPTTL", "EX", "PX", "PERSIST", "EXAT", "PXAT"}
	var cmds [][]string
	for i := 0; i < 3000; i++ {
		k := func() string { return fmt.Sprintf("k%d", rnd.Intn(8)) }
		var args []string
		switch rnd.Intn(16) {
		case 0:
			args = []string{"SET", k(), randStr()}
		case 1:
			args = []string{"GETRANGE", k(), randInt(), randInt()}
		case 2:
			args = []string{"SETRANGE", k(), fmt.Sprint(rnd.Intn(24) - 2), randStr()}
		case 3:
			args = []string{"APPEND", k(), randStr()}
		case 4:
			args = []string{"LCS", k(), k()}
			for j := rnd.Intn(4); j > 0; j-- {
				args = append(args, opts[rnd.Intn(4)])
				if rnd.Intn(2) == 0 {
					args = append(args, randInt())
				}
			}
		case 5:
			args = []string{"INCRBY", k(), randInt()}
		case 6:
			args = []string{"DECRBY", k(), randInt()}
		case 7:
			args = []string{"STRLEN", k()}
		case 8:
			args = []string{"MGET", k(), k(), k()}
		case 9, 10:
			args = []string{"SET", k(), randStr()}
			if rnd.Intn(2) == 0 {
				args[0] = "GETEX"
				args = args[:2]
			}
			for j := rnd.Intn(4); j > 0; j-- {
				args = append(args, opts[4+rnd.Intn(9)])
				if rnd.Intn(2) == 0 {
					args = append(args, fmt.Sprint(rnd.Intn(100000)+1000))
				}
			}
		case 11:
			args = []string{"GETSET", k(), randStr()}
		case 12:
			args = []string{"MSETNX", k(), randStr(), k(), randStr()}
		case 13:
			args = []string{"GETDEL", k()}
		default:
			args = []string{"INCRBYFLOAT", k(), randFloat()}
		}
		cmds = append(cmds, args)
	}
	compare(t, p, cmds...)
}
