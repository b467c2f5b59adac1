package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/rdb"
)

// DUMP/RESTORE against redis-server 7.0: payloads move both ways, and for
// the encodings where Redis's output is deterministic (strings, intsets,
// listpacks, quicklists built by RPUSH, skiplist sorted sets) Sluice's DUMP
// must be byte-identical to redis-server's.

type dumpCase struct {
	name  string
	setup [][]any
	// same: Sluice's DUMP must equal redis-server's byte for byte. Hash
	// tables (big sets and hashes) are written in dict order, which
	// differs between servers.
	same bool
}

func dumpCases() []dumpCase {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(alpha string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		return string(b)
	}
	str := func(v string) [][]any { return [][]any{{"set", "k", v}} }
	var cs []dumpCase
	for _, v := range []string{"bar", "", "0", "-1", "127", "128", "-128", "-129", "32767", "32768", "-32769",
		"2147483647", "2147483648", "-2147483648", "-2147483649", "12345678901", "9223372036854775807",
		"-9223372036854775808", "9223372036854775808", "007", "+1", "1.5", " 1", "a b c"} {
		cs = append(cs, dumpCase{"string " + strconv.Quote(v), str(v), true})
	}
	// LZF: compressible and incompressible strings around the 20-byte limit
	// and the "at least 4 bytes saved" rule, texts and random data.
	for _, n := range []int{20, 21, 22, 24, 30, 40, 64, 100, 1000, 5000, 70000} {
		cs = append(cs,
			dumpCase{fmt.Sprintf("string a*%d", n), str(strings.Repeat("a", n)), true},
			dumpCase{fmt.Sprintf("string ab-random %d", n), str(word("ab", n)), true},
			dumpCase{fmt.Sprintf("string abcd-random %d", n), str(word("abcd", n)), true},
			dumpCase{fmt.Sprintf("string text %d", n), str(strings.Repeat("the quick brown fox jumps over the lazy dog ", n/44+1)[:n]), true},
			dumpCase{fmt.Sprintf("string bytes %d", n), str(word("abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()", n)), true},
		)
	}
	cs = append(cs, dumpCase{"string appended", [][]any{{"set", "k", "12"}, {"append", "k", "34"}}, true})
	cs = append(cs, dumpCase{"string setrange", [][]any{{"setrange", "k", 30, "xyz"}}, true})

	rpush := func(vals ...string) [][]any {
		cmd := []any{"rpush", "k"}
		for _, v := range vals {
			cmd = append(cmd, v)
		}
		return [][]any{cmd}
	}
	cs = append(cs,
		dumpCase{"list small", rpush("a", "b", "1", "-1", "300", "-5000", "70000", "5000000000", "-9223372036854775808", "007", ""), true},
		dumpCase{"list 1 element", rpush("x"), true},
	)
	var many []string
	for i := range 3000 {
		switch i % 4 {
		case 0:
			many = append(many, strconv.Itoa(i*i))
		case 1:
			many = append(many, word("abc", r.IntN(40)))
		case 2:
			many = append(many, "element-"+strconv.Itoa(i))
		default:
			many = append(many, word("xyzw", 50+r.IntN(300)))
		}
	}
	cs = append(cs, dumpCase{"list quicklist 3000 (many nodes)", rpush(many...), true})
	big := strings.Repeat("B", 9000)
	cs = append(cs, dumpCase{"list with elements over a node's size", rpush("a", big, "b", big+"c", "d"), true})
	lpushes := [][]any{}
	for i := range 500 {
		lpushes = append(lpushes, []any{"lpush", "k", "v" + strconv.Itoa(i) + strings.Repeat("x", i%50)})
	}
	cs = append(cs, dumpCase{"list built by LPUSH", lpushes, false})

	sadd := func(vals ...string) [][]any {
		cmd := []any{"sadd", "k"}
		for _, v := range vals {
			cmd = append(cmd, v)
		}
		return [][]any{cmd}
	}
	cs = append(cs,
		dumpCase{"intset 16-bit", sadd("1", "2", "3", "-100", "32767"), true},
		dumpCase{"intset 32-bit", sadd("1", "70000", "-5"), true},
		dumpCase{"intset 64-bit", sadd("1", "5000000000", "-9223372036854775808", "9223372036854775807"), true},
		dumpCase{"set hashtable small", sadd("a", "b", "c", "1"), false},
	)
	var ints, mixed []string
	for i := range 600 {
		ints = append(ints, strconv.Itoa(i*7-1000))
		mixed = append(mixed, "m"+strconv.Itoa(i)+strings.Repeat("z", i%30))
	}
	cs = append(cs,
		dumpCase{"intset 512", sadd(ints[:512]...), true},
		dumpCase{"set of 600 integers (hashtable)", sadd(ints...), false},
		dumpCase{"set hashtable 600", sadd(mixed...), false},
	)

	hset := func(kv ...string) [][]any {
		cmd := []any{"hset", "k"}
		for _, v := range kv {
			cmd = append(cmd, v)
		}
		return [][]any{cmd}
	}
	cs = append(cs,
		dumpCase{"hash listpack", hset("f", "v", "1", "2", "name", "a longer value with spaces", "-7", "", "big", "9223372036854775807"), true},
		dumpCase{"hash listpack updated", append(hset("a", "1", "b", "2", "c", "3"), []any{"hset", "k", "b", "twenty"}, []any{"hdel", "k", "a"}), true},
		dumpCase{"hash hashtable (long value)", hset("f", strings.Repeat("v", 65), "g", "1"), false},
	)
	var kv []string
	for i := range 700 {
		kv = append(kv, "field:"+strconv.Itoa(i), word("abcdef", i%60))
	}
	cs = append(cs,
		dumpCase{"hash listpack 512", hset(kv[:1024]...), true},
		dumpCase{"hash hashtable 700", hset(kv...), false},
	)

	zadd := func(sm ...any) [][]any { return [][]any{append([]any{"zadd", "k"}, sm...)} }
	cs = append(cs,
		dumpCase{"zset listpack", zadd(1, "a", 2.5, "b", -3, "c", "inf", "d", "-inf", "e", 0, "f", 1e300, "g", 1.0/3, "h", -0.0, "i", 4611686018427387904.0, "j", 123456789012, "k", 100, "7"), true},
		dumpCase{"zset skiplist (long member)", zadd(1, strings.Repeat("m", 65), 2, "b", 2, "a", 0.1, "c"), true},
	)
	var zs []any
	for i := range 300 {
		zs = append(zs, float64(r.IntN(100))/4, "member"+strconv.Itoa(i)+word("ab", i%40))
	}
	cs = append(cs,
		dumpCase{"zset listpack 128", zadd(zs[:256]...), true},
		dumpCase{"zset skiplist 300", zadd(zs...), true},
	)
	return cs
}

// snapshot describes a key's value and encoding in a comparable form.
func snapshot(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	ctx := context.Background()
	typ := c.Type(ctx, key).Val()
	enc := c.ObjectEncoding(ctx, key).Val()
	var body string
	switch typ {
	case "string":
		body = strconv.Quote(c.Get(ctx, key).Val())
	case "list":
		body = fmt.Sprintf("%q", c.LRange(ctx, key, 0, -1).Val())
	case "set":
		m := c.SMembers(ctx, key).Val()
		slices.Sort(m)
		body = fmt.Sprintf("%q", m)
	case "hash":
		m := c.HGetAll(ctx, key).Val()
		var lines []string
		for f, v := range m {
			lines = append(lines, strconv.Quote(f)+"="+strconv.Quote(v))
		}
		slices.Sort(lines)
		body = strings.Join(lines, ",")
	case "zset":
		var lines []string
		for _, z := range c.ZRangeWithScores(ctx, key, 0, -1).Val() {
			lines = append(lines, fmt.Sprintf("%q:%v", z.Member, z.Score))
		}
		body = strings.Join(lines, ",")
	}
	return typ + "/" + enc + ":" + body
}

func TestDumpRestoreWithRedis(t *testing.T) {
	_, saddr := redistest.StartSluice(t)
	raddr := redistest.StartRedis(t)
	sl, rd := newClient(t, saddr), newClient(t, raddr)
	ctx := context.Background()
	identical, total := 0, 0
	for _, tc := range dumpCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []*redis.Client{sl, rd} {
				c.FlushAll(ctx)
				for _, cmd := range tc.setup {
					if err := c.Do(ctx, cmd...).Err(); err != nil {
						t.Fatalf("%v: %v", cmd, err)
					}
				}
			}
			want := snapshot(t, rd, "k")
			if got := snapshot(t, sl, "k"); got != want {
				t.Fatalf("setup differs:\n sluice %.300s\n redis  %.300s", got, want)
			}
			sdump, err := sl.Dump(ctx, "k").Result()
			if err != nil {
				t.Fatal(err)
			}
			rdump, err := rd.Dump(ctx, "k").Result()
			if err != nil {
				t.Fatal(err)
			}
			total++
			if sdump == rdump {
				identical++
			} else if tc.same {
				t.Errorf("DUMP differs from redis-server's:\n sluice %q\n redis  %q", trunc(sdump), trunc(rdump))
			}

			// What redis-server makes of its own payload is the reference
			// (RESTORE re-encodes: a raw "1234" comes back as an int).
			if err := rd.Restore(ctx, "w", 0, rdump).Err(); err != nil {
				t.Fatal(err)
			}
			want = snapshot(t, rd, "w")
			// redis-server's payload into Sluice, Sluice's into redis-server.
			for _, step := range []struct {
				name    string
				payload string
				into    *redis.Client
			}{{"redis->sluice", rdump, sl}, {"sluice->redis", sdump, rd}} {
				if err := step.into.Restore(ctx, "r", 0, step.payload).Err(); err != nil {
					t.Fatalf("%s: RESTORE: %v", step.name, err)
				}
				if got := snapshot(t, step.into, "r"); got != want {
					t.Errorf("%s: restored value differs:\n got  %.300s\n want %.300s", step.name, got, want)
				}
			}
		})
	}
	t.Logf("%d of %d DUMP payloads byte-identical to redis-server's", identical, total)
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// Encoding choices on RESTORE follow the loading server's limits, as in
// Redis: the same payload restored under small limits converts.
func TestRestoreEncodingLimits(t *testing.T) {
	_, saddr := redistest.StartSluice(t)
	raddr := redistest.StartRedis(t)
	sl, rd := newClient(t, saddr), newClient(t, raddr)
	ctx := context.Background()
	setups := [][]any{
		{"hset", "k", "a", "1", "b", "2", "c", "3"},
		{"zadd", "k", 1, "a", 2, "b", 3, "c"},
		{"sadd", "k", 1, 2, 3, 4},
		{"hset", "k", "a", "xxxxxxxxxxxx"},
		{"zadd", "k", 1, "xxxxxxxxxxxx"},
	}
	for _, setup := range setups {
		for _, limits := range [][]string{{"512", "64", "512"}, {"2", "5", "2"}} {
			t.Run(fmt.Sprint(setup[0], limits), func(t *testing.T) {
				var payloads []string
				for _, c := range []*redis.Client{rd, sl} {
					c.FlushAll(ctx)
					c.ConfigSet(ctx, "hash-max-listpack-entries", "512")
					c.ConfigSet(ctx, "zset-max-listpack-entries", "128")
					c.ConfigSet(ctx, "set-max-intset-entries", "512")
					c.ConfigSet(ctx, "hash-max-listpack-value", "64")
					c.ConfigSet(ctx, "zset-max-listpack-value", "64")
					c.Do(ctx, setup...)
					p, err := c.Dump(ctx, "k").Result()
					if err != nil {
						t.Fatal(err)
					}
					payloads = append(payloads, p)
				}
				for _, c := range []*redis.Client{rd, sl} {
					c.ConfigSet(ctx, "hash-max-listpack-entries", limits[0])
					c.ConfigSet(ctx, "zset-max-listpack-entries", limits[0])
					c.ConfigSet(ctx, "set-max-intset-entries", limits[2])
					c.ConfigSet(ctx, "hash-max-listpack-value", limits[1])
					c.ConfigSet(ctx, "zset-max-listpack-value", limits[1])
				}
				for i, p := range payloads {
					for _, c := range []*redis.Client{rd, sl} {
						c.Del(ctx, "r")
						if err := c.Restore(ctx, "r", 0, p).Err(); err != nil {
							t.Fatal(err)
						}
					}
					if got, want := snapshot(t, sl, "r"), snapshot(t, rd, "r"); got != want {
						t.Errorf("payload %d: sluice %s, redis %s", i, got, want)
					}
				}
				for _, c := range []*redis.Client{rd, sl} {
					c.ConfigSet(ctx, "hash-max-listpack-entries", "512")
					c.ConfigSet(ctx, "zset-max-listpack-entries", "128")
					c.ConfigSet(ctx, "set-max-intset-entries", "512")
					c.ConfigSet(ctx, "hash-max-listpack-value", "64")
					c.ConfigSet(ctx, "zset-max-listpack-value", "64")
				}
			})
		}
	}
}

// ziplist builds a Redis ziplist of small entries (integers 0..12 as
// immediates, other 16-bit integers as int16, strings up to 63 bytes).
func ziplist(entries ...string) []byte {
	var body []byte
	prev, tail := 0, 10
	for _, e := range entries {
		tail = 10 + len(body)
		ent := []byte{byte(prev)}
		if v, err := strconv.Atoi(e); err == nil && strconv.Itoa(v) == e && v >= -32768 && v <= 32767 {
			if v >= 0 && v <= 12 {
				ent = append(ent, byte(0xF1+v))
			} else {
				ent = append(ent, 0xC0, byte(v), byte(v>>8))
			}
		} else {
			ent = append(ent, byte(len(e)))
			ent = append(ent, e...)
		}
		prev = len(ent)
		body = append(body, ent...)
	}
	n := 10 + len(body) + 1
	out := []byte{byte(n), byte(n >> 8), 0, 0, byte(tail), byte(tail >> 8), 0, 0, byte(len(entries)), 0}
	out = append(out, body...)
	return append(out, 0xFF)
}

// Payloads in the encodings older Redis versions wrote (ziplists, zipmaps,
// plain lists, text-scored sorted sets) restore in Sluice as in Redis 7.0.
func TestRestoreOldEncodingsWithRedis(t *testing.T) {
	_, saddr := redistest.StartSluice(t)
	raddr := redistest.StartRedis(t)
	sl, rd := newClient(t, saddr), newClient(t, raddr)
	ctx := context.Background()
	blob := func(typ byte, b []byte) string { return string(rdb.Finish(rdb.AppendString([]byte{typ}, b))) }
	var many []string
	for i := range 140 {
		many = append(many, "m"+strconv.Itoa(i), strconv.Itoa(i%20))
	}
	quicklist1 := []byte{rdb.TypeListQuicklist, 2}
	quicklist1 = rdb.AppendString(quicklist1, ziplist("a", "b", "7"))
	quicklist1 = rdb.AppendString(quicklist1, ziplist("1000", "c"))
	plainList := rdb.AppendLen([]byte{rdb.TypeList}, 3)
	for _, v := range []string{"x", "12", strings.Repeat("y", 30)} {
		plainList = rdb.AppendString(plainList, []byte(v))
	}
	plainZSet := rdb.AppendLen([]byte{rdb.TypeZSet}, 4)
	for _, ms := range [][2]string{{"a", "\x011"}, {"b", "\x032.5"}, {"c", "\xfe"}, {"d", "\xff"}} {
		plainZSet = rdb.AppendString(plainZSet, []byte(ms[0]))
		plainZSet = append(plainZSet, ms[1]...)
	}
	for _, tc := range []struct {
		name    string
		payload string
	}{
		{"list ziplist", blob(rdb.TypeListZiplist, ziplist("a", "5", "1000", "-3", "hello"))},
		{"list quicklist v1", string(rdb.Finish(quicklist1))},
		{"list plain", string(rdb.Finish(plainList))},
		{"hash ziplist", blob(rdb.TypeHashZiplist, ziplist("f", "v", "1", "2"))},
		{"hash ziplist too many", blob(rdb.TypeHashZiplist, ziplist(many...))},
		{"hash zipmap", blob(rdb.TypeHashZipmap, []byte("\x02\x01f\x01\x00v\x03abc\x02\x01xyz\xff"))},
		{"zset ziplist", blob(rdb.TypeZSetZiplist, ziplist("b", "-2", "a", "1", "c", "3.5"))},
		{"zset ziplist too many", blob(rdb.TypeZSetZiplist, ziplist(many...))},
		{"zset text scores", string(rdb.Finish(plainZSet))},
		{"hash ziplist odd", blob(rdb.TypeHashZiplist, ziplist("f", "v", "g"))},
		{"ziplist bad count", blob(rdb.TypeListZiplist, append(ziplist("a")[:8:8], append([]byte{2, 0}, ziplist("a")[10:]...)...))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res []string
			for _, c := range []*redis.Client{rd, sl} {
				c.Del(ctx, "r")
				err := c.Restore(ctx, "r", 0, tc.payload).Err()
				if err != nil {
					res = append(res, "error: "+err.Error())
					continue
				}
				res = append(res, snapshot(t, c, "r"))
			}
			if res[0] != res[1] {
				t.Errorf("redis %.300s\nsluice %.300s", res[0], res[1])
			}
		})
	}
}

// RESTORE's keyspace events and change counts (rdb_changes_since_last_save)
// are redis-server's.
func TestRestoreEventsAndDirty(t *testing.T) {
	_, saddr := redistest.StartSluice(t)
	raddr := redistest.StartRedis(t)
	ctx := context.Background()
	payload := "\x00\x03bar\n\x00\xe6\xbeI`\xeef\xfd\x17"
	dirty := func(c *redis.Client) int {
		info := c.Info(ctx, "persistence").Val()
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "rdb_changes_since_last_save:"); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
		t.Fatal("no rdb_changes_since_last_save")
		return 0
	}
	run := func(addr string) []string {
		c := newClient(t, addr)
		c.ConfigSet(ctx, "notify-keyspace-events", "KEAn")
		sub := c.PSubscribe(ctx, "__keyevent@0__:*")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		var log []string
		step := func(args ...any) {
			before := dirty(c)
			r, err := c.Do(ctx, args...).Result()
			log = append(log, fmt.Sprintf("%v -> %v %v dirty+%d", args[:3], r, err, dirty(c)-before))
		}
		step("restore", "a", 0, payload)
		step("restore", "a", 0, payload)
		step("restore", "a", 0, payload, "replace")
		step("restore", "a", 1000, payload, "replace", "absttl")
		step("restore", "b", 1000, payload, "absttl")
		step("restore", "c", 100000, payload)
		step("restore", "c", 0, "bad", "replace")
		c.Do(ctx, "set", "end", "1")
		for {
			m, err := sub.ReceiveMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Payload == "end" {
				break
			}
			log = append(log, m.Channel+" "+m.Payload)
		}
		return log
	}
	want, got := run(raddr), run(saddr)
	if !slices.Equal(got, want) {
		t.Errorf("sluice:\n%s\nredis:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// corruptStream is a stream payload of one node (entries 1-1 and 1-2, one
// field each) and one group whose list holds both entries, held by the
// consumers named, each with its pending IDs (as seqs of 1-x). lpCount is
// the second entry's lp-count (4 is right).
func corruptStream(lpCount int64, consumers ...[]any) string {
	var lp rdb.Listpack
	for _, v := range []int64{2, 0, 1} { // live, deleted, master fields
		lp.AppendInt(v)
	}
	lp.Append([]byte("f"))
	lp.AppendInt(0)
	for seq, count := range []int64{4, lpCount} {
		lp.AppendInt(2) // same fields as the master
		lp.AppendInt(0)
		lp.AppendInt(int64(seq))
		lp.Append([]byte("v"))
		lp.AppendInt(count)
	}
	p := rdb.AppendLen([]byte{rdb.TypeStreamLP2}, 1)
	p = rdb.AppendString(p, []byte("\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01"))
	p = rdb.AppendString(p, lp.Bytes())
	p = rdb.AppendStreamMeta(p, 2, rdb.StreamID{Ms: 1, Seq: 2}, rdb.StreamID{Ms: 1, Seq: 1}, rdb.StreamID{}, 2, 1)
	p = rdb.AppendStreamGroup(p, []byte("g"), rdb.StreamID{Ms: 1, Seq: 2}, 2, []rdb.StreamNACK{{ID: rdb.StreamID{Ms: 1, Seq: 1}}, {ID: rdb.StreamID{Ms: 1, Seq: 2}}})
	p = rdb.AppendLen(p, uint64(len(consumers)))
	for _, c := range consumers {
		var ids []rdb.StreamID
		for _, seq := range c[1:] {
			ids = append(ids, rdb.StreamID{Ms: 1, Seq: uint64(seq.(int))})
		}
		p = rdb.AppendStreamConsumer(p, []byte(c[0].(string)), 0, ids)
	}
	return string(rdb.Finish(p))
}

// RESTORE of damaged payloads, with DEBUG SET-SKIP-CHECKSUM-VALIDATION 1,
// under sanitize-dump-payload no and yes: Sluice takes or refuses each as
// redis-server does (the checks Redis makes only when it sanitizes are
// Sluice's too), with the same error. One difference: a hash listpack
// with a field twice, which Redis takes as it is without sanitizing, is
// refused, as Sluice's hashes cannot hold a field twice.
func TestRestoreCorruptWithRedis(t *testing.T) {
	_, saddr := redistest.StartSluice(t, "enable-debug-command", "yes")
	raddr := redistest.StartRedis(t, "--enable-debug-command", "yes")
	sl, rd := newClient(t, saddr), newClient(t, raddr)
	ctx := context.Background()
	blob := func(typ byte, b []byte) string { return string(rdb.Finish(rdb.AppendString([]byte{typ}, b))) }
	badCRC := []byte(blob(rdb.TypeString, []byte("hello")))
	badCRC[len(badCRC)-1] ^= 0xFF
	var lp rdb.Listpack
	for _, s := range []string{"f0", "v0", "f1", "v1"} {
		lp.Append([]byte(s))
	}
	badBacklen := lp.Bytes()
	badBacklen[len(badBacklen)-2] ^= 0x7F // the last entry's back length
	lp.Reset()
	for _, s := range []string{"a", "1", "a", "2"} {
		lp.Append([]byte(s))
	}
	dupListpack := lp.Bytes()
	for _, tc := range []struct {
		name     string
		payload  string
		sanitize bool // compared only under sanitize-dump-payload yes
	}{
		{"wrong CRC", string(badCRC), false},
		{"hash listpack, wrong back length", blob(rdb.TypeHashListpack, badBacklen), false},
		{"hash listpack, field twice", blob(rdb.TypeHashListpack, dupListpack), true},
		{"hash ziplist, field twice", blob(rdb.TypeHashZiplist, ziplist("a", "1", "a", "2")), false},
		{"stream", corruptStream(4, []any{"alice", 1}, []any{"bob", 2}), false},
		{"stream, wrong lp-count", corruptStream(5, []any{"alice", 1}, []any{"bob", 2}), false},
		{"stream, pending entry without a consumer", corruptStream(4, []any{"alice", 1}), false},
		{"stream, consumer twice", corruptStream(4, []any{"alice", 1}, []any{"alice", 2}), false},
		{"stream, entry claimed twice", corruptStream(4, []any{"alice", 1}, []any{"bob", 1}), false},
	} {
		for _, sanitize := range []string{"no", "yes"} {
			if tc.sanitize && sanitize == "no" {
				continue
			}
			for _, skip := range []string{"0", "1"} {
				var res []string
				for _, c := range []*redis.Client{rd, sl} {
					c.ConfigSet(ctx, "sanitize-dump-payload", sanitize)
					c.Do(ctx, "debug", "set-skip-checksum-validation", skip)
					c.Del(ctx, "r")
					res = append(res, fmt.Sprint(c.Restore(ctx, "r", 0, tc.payload).Err()))
				}
				if res[0] != res[1] {
					t.Errorf("%s, sanitize-dump-payload %s, skip checksum %s: redis %q, sluice %q", tc.name, sanitize, skip, res[0], res[1])
				}
			}
		}
	}
}
