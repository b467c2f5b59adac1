package difftest

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
)

// The randomized differential test: random command sequences over a small
// keyspace of every type, sent to redis-server and Sluice on one connection
// each, raw replies compared after every command. Arguments are drawn to
// hit edge cases: negative and out-of-range indexes, empty strings, huge
// counts, non-numeric numbers, wrong types, encoding conversions (long
// members, many members), float formatting.
//
// The default seeds run in CI; go test -run RandomDifferential
// -difftest.seeds 100 -difftest.ops 20000 hunts further, and
// -difftest.seed N replays one seed.
var (
	randSeeds = flag.Int("difftest.seeds", 4, "random differential: seeds to run (1..N)")
	randSeed  = flag.Int("difftest.seed", 0, "random differential: run only this seed")
	randOps   = flag.Int("difftest.ops", 3000, "random differential: commands per seed")
	histTail  = 15 // commands shown before a mismatch
)

func TestRandomDifferential(t *testing.T) {
	redisAddr := redistest.StartRedis(t)
	_, sluiceAddr := redistest.StartSluice(t)
	seeds := []int{}
	if *randSeed != 0 {
		seeds = append(seeds, *randSeed)
	} else {
		for i := 1; i <= *randSeeds; i++ {
			seeds = append(seeds, i)
		}
	}
	for _, seed := range seeds {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("seed%d/resp%d", seed, proto), func(t *testing.T) {
				runRandom(t, uint64(seed), proto, *randOps, redisAddr, sluiceAddr)
			})
		}
		// Tiny encoding thresholds: collections convert (listpack to
		// hashtable or skiplist, intset to hashtable) every few commands.
		t.Run(fmt.Sprintf("seed%d/small-encodings", seed), func(t *testing.T) {
			r, s := redistest.Dial(t, redisAddr), redistest.Dial(t, sluiceAddr)
			set := func(kv ...string) {
				for _, c := range []*redistest.Conn{r, s} {
					if reply, err := c.Do(append([]string{"CONFIG", "SET"}, kv...)...); err != nil || reply != "+OK\r\n" {
						t.Fatalf("CONFIG SET %v: %q %v", kv, reply, err)
					}
				}
			}
			set("hash-max-listpack-entries", "3", "hash-max-listpack-value", "4",
				"set-max-intset-entries", "4", "zset-max-listpack-entries", "3",
				"zset-max-listpack-value", "4", "list-max-listpack-size", "3")
			defer set("hash-max-listpack-entries", "128", "hash-max-listpack-value", "64",
				"set-max-intset-entries", "512", "zset-max-listpack-entries", "128",
				"zset-max-listpack-value", "64", "list-max-listpack-size", "-2")
			runRandom(t, uint64(seed)+1000, 2, *randOps, redisAddr, sluiceAddr)
		})
	}
}

// compare modes for a generated command.
const (
	exact     = iota
	unordered // the aggregate's elements in any order (hash-table iteration)
	approx    // integer replies within 1 (TTL)
	approxMs  // integer replies within 100 (PTTL)
	scanAll   // a SCAN-family reply: when Redis's cursor is 0, the same elements in any order
)

type randCmd struct {
	args []string
	mode int
}

func runRandom(t *testing.T, seed uint64, proto, ops int, redisAddr, sluiceAddr string) {
	r := redistest.Dial(t, redisAddr)
	s := redistest.Dial(t, sluiceAddr)
	setup := [][]string{{"FLUSHALL"}}
	if proto == 3 {
		setup = append(setup, []string{"HELLO", "3"})
	}
	for _, args := range setup {
		for _, c := range []*redistest.Conn{r, s} {
			if _, err := c.Do(args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	g := &gen{rng: rand.New(rand.NewPCG(seed, uint64(proto)))}
	var history []string
	for i := 0; i < ops; i++ {
		cmd := g.next()
		history = append(history, quoteArgs(cmd.args))
		want, err := r.Do(cmd.args...)
		if err != nil {
			t.Fatalf("op %d %s: redis: %v", i, quoteArgs(cmd.args), err)
		}
		got, err := s.Do(cmd.args...)
		if err != nil {
			t.Fatalf("op %d %s: sluice: %v (redis replied %q)", i, quoteArgs(cmd.args), err, want)
		}
		if !sameRandom(cmd.mode, want, got) {
			from := max(0, len(history)-histTail)
			t.Fatalf("seed %d resp%d op %d: %s\n redis:  %q\n sluice: %q\nlast commands:\n  %s",
				seed, proto, i, quoteArgs(cmd.args), want, got, strings.Join(history[from:], "\n  "))
		}
	}
}

func sameRandom(mode int, want, got string) bool {
	switch mode {
	case unordered:
		return sortedElems(want) == sortedElems(got)
	case approx:
		return same(line{directive: "approx"}, want, got)
	case approxMs:
		return same(line{directive: "approx", arg: "100"}, want, got)
	case scanAll:
		wc, we, ok1 := splitScan(want)
		gc, ge, ok2 := splitScan(got)
		if !ok1 || !ok2 {
			return want == got // an error reply
		}
		if wc != "0" {
			return true // a partial iteration: cursors are the server's own
		}
		return gc == "0" && sortedElems(we) == sortedElems(ge)
	}
	return want == got
}

// splitScan splits a SCAN-family reply into its cursor and its raw
// element array.
func splitScan(raw string) (cursor, elems string, ok bool) {
	if !strings.HasPrefix(raw, "*2\r\n") {
		return "", "", false
	}
	rd := bufio.NewReader(strings.NewReader(raw[4:]))
	c, err := redistest.ReadReply(rd)
	if err != nil || !strings.HasPrefix(c, "$") {
		return "", "", false
	}
	e, err := redistest.ReadReply(rd)
	if err != nil {
		return "", "", false
	}
	_, v, _ := strings.Cut(c, "\r\n")
	return strings.TrimSuffix(v, "\r\n"), e, true
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \"'\\") || strings.IndexFunc(a, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
			q[i] = strconv.Quote(a)
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}

// gen draws commands.
type gen struct {
	rng   *rand.Rand
	queue int // commands left to queue in an open MULTI; EXEC follows
	multi bool
}

func (g *gen) n(k int) int           { return g.rng.IntN(k) }
func (g *gen) chance(p float64) bool { return g.rng.Float64() < p }
func (g *gen) pick(s ...string) string {
	return s[g.n(len(s))]
}

// Keys by the type they usually hold; any command may be aimed at a key of
// another type (WRONGTYPE) or at a missing one.
var (
	strKeys  = []string{"s0", "s1", "n0"}
	hashKeys = []string{"h0", "h1"}
	listKeys = []string{"l0", "l1", "sd"}
	setKeys  = []string{"S0", "S1", "S2"}
	zsetKeys = []string{"z0", "z1"}
	lexKey   = "zl" // a sorted set whose scores are all 0, for the BYLEX ranges
	// Not lexKey: commands that write scores or move keys must leave it alone.
	allKeys = []string{"s0", "s1", "n0", "h0", "h1", "l0", "l1", "S0", "S1", "S2", "z0", "z1", "sd", "nokey"}
)

func (g *gen) key(own []string) string {
	if g.chance(0.08) {
		return g.pick(allKeys...)
	}
	return own[g.n(len(own))]
}

// member draws a collection member or string value.
func (g *gen) member() string {
	switch g.n(20) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("x", 60+g.n(10)) // around the 64-byte listpack limit
	case 2, 3, 4:
		return strconv.Itoa(g.n(40) - 5) // integers (intsets)
	case 5:
		return g.pick("3.5", "-0.25", "1e3", "inf", "12345678901234567890", "0x10", " 1", "nan")
	}
	return g.pick("a", "b", "c", "d", "e", "f", "foo", "bar", "zap", "apple", "Apple", "b\x00c", "é")
}

func (g *gen) members(max int) []string {
	n := 1 + g.n(max)
	out := make([]string, n)
	for i := range out {
		out[i] = g.member()
	}
	return out
}

// index draws a list or string index, often negative or out of range.
func (g *gen) index() string {
	switch g.n(10) {
	case 0:
		return g.pick("100", "-100", "9223372036854775807", "-9223372036854775808")
	case 1:
		return g.pick("x", "1.5", "")
	}
	return strconv.Itoa(g.n(12) - 6)
}

// count draws a count argument.
func (g *gen) count() string {
	switch g.n(10) {
	case 0:
		return g.pick("-1", "0", "x", "1000000", "-5")
	}
	return strconv.Itoa(1 + g.n(5))
}

// score draws a sorted-set score.
func (g *gen) score() string {
	switch g.n(12) {
	case 0:
		return g.pick("inf", "-inf", "+inf", "1e308", "-0", "0.1", "3.0000000000000001", "1.5e-7")
	case 1:
		return g.pick("x", "nan", "", "1.2.3")
	}
	return strconv.Itoa(g.n(20) - 5)
}

// rangeBound draws a ZRANGEBYSCORE bound.
func (g *gen) rangeBound() string {
	switch g.n(8) {
	case 0:
		return g.pick("-inf", "+inf", "inf", "(inf", "x", "(x", "(", "")
	case 1, 2:
		return "(" + strconv.Itoa(g.n(20)-5)
	}
	return strconv.Itoa(g.n(20) - 5)
}

// lexBound draws a BYLEX bound.
func (g *gen) lexBound() string {
	switch g.n(8) {
	case 0:
		return g.pick("-", "+", "x", "", "(")
	case 1:
		return "(" + g.member()
	}
	return "[" + g.member()
}

func (g *gen) next() randCmd {
	if g.multi {
		if g.queue == 0 {
			g.multi = false
			return cmd(g.pick("EXEC", "EXEC", "EXEC", "DISCARD"))
		}
		g.queue--
		// EXEC's reply holds each command's reply in order: only commands
		// whose replies compare exactly may be queued.
		for {
			if c := g.draw(); c.mode == exact {
				return c
			}
		}
	}
	if g.chance(0.02) {
		g.multi, g.queue = true, 1+g.n(4)
		return cmd("MULTI")
	}
	if g.chance(0.05) {
		return g.script()
	}
	return g.draw()
}

// script runs a drawn command through EVAL: its reply converted to Lua
// and back (or, with pcall, its error as a table), as scripts see them.
func (g *gen) script() randCmd {
	var c randCmd
	for c = g.draw(); c.mode != exact || c.args[0] == "MULTI" || strings.HasPrefix(c.args[0], "B"); c = g.draw() {
	}
	body := g.pick(
		"return redis.call(unpack(ARGV))",
		"return redis.pcall(unpack(ARGV))",
		"local r = redis.pcall(unpack(ARGV)); if type(r) == 'table' and r.err then return 'E:' .. r.err end; return r",
		"return type(redis.call(unpack(ARGV)))",
	)
	return cmd(append([]string{"EVAL", body, "0"}, c.args...)...)
}

func (g *gen) draw() randCmd {
	switch g.n(7) {
	case 5:
		return g.bitCmd()
	case 0:
		return g.stringCmd()
	case 1:
		return g.hashCmd()
	case 2:
		return g.listCmd()
	case 3:
		return g.setCmd()
	case 4:
		return g.zsetCmd()
	}
	return g.keyCmd()
}

func cmd(args ...string) randCmd { return randCmd{args: args} }

func (g *gen) bitCmd() randCmd {
	k := g.key(strKeys)
	switch g.n(9) {
	case 0, 1:
		return cmd("SETBIT", k, g.pick("0", "1", "7", "9", "100", "-1", "x", "4294967296"), g.pick("0", "1", "2"))
	case 2:
		return cmd("GETBIT", k, g.pick("0", "1", "7", "100", "-1"))
	case 3:
		args := []string{"BITCOUNT", k}
		if g.chance(0.6) {
			args = append(args, g.index(), g.index())
			if g.chance(0.4) {
				args = append(args, g.pick("BIT", "BYTE", "WORD"))
			}
		}
		return cmd(args...)
	case 4:
		args := []string{"BITPOS", k, g.pick("0", "1", "2")}
		if g.chance(0.6) {
			args = append(args, g.index())
			if g.chance(0.5) {
				args = append(args, g.index())
				if g.chance(0.4) {
					args = append(args, g.pick("BIT", "BYTE"))
				}
			}
		}
		return cmd(args...)
	case 5:
		op := g.pick("AND", "OR", "XOR", "NOT", "NOR")
		if op == "NOT" {
			return cmd("BITOP", op, g.key(strKeys), k)
		}
		return cmd("BITOP", op, g.key(strKeys), k, g.key(strKeys))
	case 6:
		return cmd("SETRANGE", k, g.pick("100", "600", "0"), g.member())
	case 7:
		return cmd("BITFIELD", k, g.pick("GET", "SET", "INCRBY"), g.pick("u8", "i5", "u63", "i64", "u64", "x"), g.pick("0", "#1", "3", "-1"), g.pick("1", "100", "-3"))
	}
	return cmd("GETRANGE", k, "0", "-1")
}

func (g *gen) stringCmd() randCmd {
	k := g.key(strKeys)
	switch g.n(22) {
	case 0, 1:
		args := []string{"SET", k, g.member()}
		for _, opt := range []string{"NX", "XX", "GET", "KEEPTTL"} {
			if g.chance(0.15) {
				args = append(args, opt)
			}
		}
		if g.chance(0.1) {
			args = append(args, g.pick("EX", "PX"), g.pick("1000", "0", "-1", "x"))
		}
		return cmd(args...)
	case 2:
		return cmd("GET", k)
	case 3:
		return cmd("APPEND", k, g.member())
	case 4:
		return cmd("STRLEN", k)
	case 5:
		return cmd("GETRANGE", k, g.index(), g.index())
	case 6:
		return cmd("SETRANGE", k, g.pick("0", "1", "5", "20", "-1", "x"), g.member())
	case 7:
		return cmd("INCR", k)
	case 8:
		return cmd("INCRBY", k, g.pick("1", "-7", "100", "x", "9223372036854775807", "1.5"))
	case 9:
		return cmd("DECRBY", k, g.pick("1", "3", "-9223372036854775808", "y"))
	case 10:
		return cmd("INCRBYFLOAT", k, g.pick("1.5", "-0.1", "1e3", "3", "inf", "x", "0.1", "5.0e3", "-1.5e-5"))
	case 11:
		return cmd("GETDEL", k)
	case 12:
		return cmd("GETSET", k, g.member())
	case 13:
		return cmd("MSET", k, g.member(), g.key(strKeys), g.member())
	case 14:
		return cmd("MGET", k, g.key(strKeys), g.pick(allKeys...))
	case 15:
		return cmd("MSETNX", k, g.member(), g.key(strKeys), g.member())
	case 16:
		return cmd("SETNX", k, g.member())
	case 17:
		return cmd("LCS", k, g.key(strKeys), g.pick("LEN", "IDX", "IDX", "MINMATCHLEN"), g.pick("1", "WITHMATCHLEN", "2"))
	case 18:
		return cmd("SET", "n0", strconv.Itoa(g.n(2000)-1000))
	case 19:
		return cmd("OBJECT", "ENCODING", k)
	case 20:
		return cmd("GETEX", k, g.pick("PERSIST", "EX", "PXAT"), g.pick("100", "x"))
	}
	return cmd("SETEX", k, g.pick("100", "0", "-3", "x"), g.member())
}

func (g *gen) hashCmd() randCmd {
	k := g.key(hashKeys)
	switch g.n(20) {
	case 0, 1, 2:
		args := []string{"HSET", k}
		for _, m := range g.members(3) {
			args = append(args, m, g.member())
		}
		return cmd(args...)
	case 3:
		return cmd("HSETNX", k, g.member(), g.member())
	case 4:
		return cmd("HGET", k, g.member())
	case 5:
		return cmd(append([]string{"HMGET", k}, g.members(3)...)...)
	case 6:
		return cmd(append([]string{"HDEL", k}, g.members(3)...)...)
	case 7:
		return cmd("HEXISTS", k, g.member())
	case 8:
		return cmd("HLEN", k)
	case 9:
		return randCmd{args: []string{"HKEYS", k}, mode: unordered}
	case 10:
		return randCmd{args: []string{"HVALS", k}, mode: unordered}
	case 11:
		if g.chance(0.5) {
			// RESP2's flat field/value list compared as a multiset of
			// elements; RESP3's map as pairs.
			return randCmd{args: []string{"HGETALL", k}, mode: unordered}
		}
		return cmd("HLEN", k)
	case 12:
		return cmd("HINCRBY", k, g.member(), g.pick("1", "-3", "x", "9223372036854775807"))
	case 13:
		return cmd("HINCRBYFLOAT", k, g.member(), g.pick("1.5", "-0.1", "x", "1e2", "inf", "0.3"))
	case 14:
		return cmd("HSTRLEN", k, g.member())
	case 15:
		return cmd("OBJECT", "ENCODING", k)
	case 16:
		// Past hash-max-listpack-entries: the hash converts to a table.
		args := []string{"HSET", k}
		for i := 0; i < 130; i++ {
			args = append(args, "f"+strconv.Itoa(g.n(300)), strconv.Itoa(i))
		}
		return cmd(args...)
	case 17:
		return cmd("HMSET", k, g.member(), g.member())
	case 18:
		return cmd("HRANDFIELD", k, g.pick("0", "-0", "x"))
	}
	return cmd("HSET", k, g.member()) // wrong arity
}

func (g *gen) listCmd() randCmd {
	k := g.key(listKeys)
	switch g.n(24) {
	case 0, 1:
		return cmd(append([]string{g.pick("LPUSH", "RPUSH")}, append([]string{k}, g.members(4)...)...)...)
	case 2:
		return cmd(g.pick("LPUSHX", "RPUSHX"), k, g.member())
	case 3:
		if g.chance(0.5) {
			return cmd(g.pick("LPOP", "RPOP"), k)
		}
		return cmd(g.pick("LPOP", "RPOP"), k, g.count())
	case 4:
		return cmd("LLEN", k)
	case 5, 6:
		return cmd("LRANGE", k, g.index(), g.index())
	case 7:
		return cmd("LINDEX", k, g.index())
	case 8:
		return cmd("LSET", k, g.index(), g.member())
	case 9:
		return cmd("LINSERT", k, g.pick("BEFORE", "AFTER", "MIDDLE"), g.member(), g.member())
	case 10:
		return cmd("LREM", k, g.pick("0", "1", "-1", "2", "-2", "x"), g.member())
	case 11:
		return cmd("LTRIM", k, g.index(), g.index())
	case 12:
		args := []string{"LPOS", k, g.member()}
		if g.chance(0.4) {
			args = append(args, "RANK", g.pick("1", "-1", "2", "-2", "0", "x"))
		}
		if g.chance(0.4) {
			args = append(args, "COUNT", g.pick("0", "1", "2", "-1"))
		}
		if g.chance(0.3) {
			args = append(args, "MAXLEN", g.pick("0", "1", "3", "-1"))
		}
		return cmd(args...)
	case 13:
		return cmd("LMOVE", k, g.key(listKeys), g.pick("LEFT", "RIGHT", "UP"), g.pick("LEFT", "RIGHT"))
	case 14:
		return cmd("RPOPLPUSH", k, g.key(listKeys))
	case 15:
		args := []string{"LMPOP", g.pick("1", "2", "0", "x"), k, g.key(listKeys), g.pick("LEFT", "RIGHT")}
		if g.chance(0.5) {
			args = append(args, "COUNT", g.count())
		}
		return cmd(args...)
	case 16:
		return cmd("OBJECT", "ENCODING", k)
	case 17:
		// Past list-max-listpack-size: a quicklist of several nodes.
		args := []string{"RPUSH", k}
		for i := 0; i < 140; i++ {
			args = append(args, strconv.Itoa(g.n(50)))
		}
		return cmd(args...)
	case 18:
		return g.sortCmd(k)
	case 19:
		return cmd("SORT", k)
	case 20:
		return cmd("LRANGE", k, "0", "-1")
	case 21:
		return cmd("BLPOP", k, g.key(listKeys), "0.01")
	case 22:
		return cmd("BLMOVE", k, g.key(listKeys), g.pick("LEFT", "RIGHT"), g.pick("LEFT", "RIGHT"), "0.01")
	}
	return cmd("LPUSH", k) // wrong arity
}

// sortCmd draws a SORT. ALPHA sorts without STORE collate C strings
// (strcoll), so members equal up to a NUL byte come out in an order
// Redis leaves to its quicksort; those go through STORE, which compares
// binary strings, and the stored list is read back by the list commands.
func (g *gen) sortCmd(k string) randCmd {
	args := []string{"SORT", k}
	alpha := g.chance(0.7)
	if alpha {
		args = append(args, "ALPHA")
	}
	if g.chance(0.5) {
		args = append(args, g.pick("DESC", "ASC"))
	}
	if g.chance(0.5) {
		args = append(args, "LIMIT", g.pick("0", "1", "-1", "x"), g.pick("2", "-1", "5", "0"))
	}
	if alpha || g.chance(0.3) {
		args = append(args, "STORE", "sd")
	}
	return cmd(args...)
}

func (g *gen) setCmd() randCmd {
	k := g.key(setKeys)
	two := []string{k, g.key(setKeys)}
	if g.chance(0.5) {
		two = append(two, g.key(setKeys))
	}
	switch g.n(22) {
	case 0, 1, 2:
		return cmd(append([]string{"SADD", k}, g.members(4)...)...)
	case 3:
		return cmd(append([]string{"SREM", k}, g.members(3)...)...)
	case 4:
		return randCmd{args: []string{"SMEMBERS", k}, mode: unordered}
	case 5:
		return cmd("SISMEMBER", k, g.member())
	case 6:
		return cmd(append([]string{"SMISMEMBER", k}, g.members(3)...)...)
	case 7:
		return cmd("SCARD", k)
	case 8:
		return cmd("SMOVE", k, g.key(setKeys), g.member())
	case 9:
		return randCmd{args: append([]string{"SINTER"}, two...), mode: unordered}
	case 10:
		return cmd(append([]string{"SINTERCARD", strconv.Itoa(len(two))}, append(two, g.pick("LIMIT", "LIMIT", "x"), g.pick("0", "1", "-1"))...)...)
	case 11:
		return cmd(append([]string{"SINTERSTORE", g.key(setKeys)}, two...)...)
	case 12:
		return randCmd{args: append([]string{"SUNION"}, two...), mode: unordered}
	case 13:
		return cmd(append([]string{"SUNIONSTORE", g.key(setKeys)}, two...)...)
	case 14:
		return randCmd{args: append([]string{"SDIFF"}, two...), mode: unordered}
	case 15:
		return cmd(append([]string{"SDIFFSTORE", g.key(setKeys)}, two...)...)
	case 16:
		return cmd("OBJECT", "ENCODING", k)
	case 17:
		// An intset past set-max-intset-entries (512) becomes a table.
		args := []string{"SADD", k}
		for i := 0; i < 100+g.n(500); i++ {
			args = append(args, strconv.Itoa(g.n(2000)))
		}
		return cmd(args...)
	case 18:
		// With a count at least the set's size, SRANDMEMBER returns it whole.
		return randCmd{args: []string{"SRANDMEMBER", k, "100000"}, mode: unordered}
	case 19:
		return g.sortCmd(k)
	case 20:
		return cmd("SPOP", k, "0")
	}
	return cmd("SRANDMEMBER", k, "0")
}

func (g *gen) zsetCmd() randCmd {
	k := g.key(zsetKeys)
	if g.chance(0.15) {
		return g.lexCmd()
	}
	if g.chance(0.12) {
		return g.geoCmd(k)
	}
	rev := g.chance(0.3)
	withScores := g.chance(0.5)
	switch g.n(30) {
	case 0, 1, 2:
		args := []string{"ZADD", k}
		for _, opt := range []string{"NX", "XX", "GT", "LT", "CH", "INCR"} {
			if g.chance(0.08) {
				args = append(args, opt)
			}
		}
		for i := 0; i < 1+g.n(3); i++ {
			args = append(args, g.score(), g.member())
		}
		return cmd(args...)
	case 3:
		return cmd("ZINCRBY", k, g.score(), g.member())
	case 4:
		return cmd(append([]string{"ZREM", k}, g.members(3)...)...)
	case 5:
		return cmd("ZCARD", k)
	case 6:
		return cmd("ZSCORE", k, g.member())
	case 7:
		return cmd(append([]string{"ZMSCORE", k}, g.members(3)...)...)
	case 8:
		return cmd(g.pick("ZRANK", "ZREVRANK"), k, g.member())
	case 9, 10:
		args := []string{"ZRANGE", k, g.index(), g.index()}
		if rev {
			args = append(args, "REV")
		}
		if withScores {
			args = append(args, "WITHSCORES")
		}
		return cmd(args...)
	case 11, 12:
		lo, hi := g.rangeBound(), g.rangeBound()
		args := []string{"ZRANGE", k, lo, hi, "BYSCORE"}
		if rev {
			args = append(args, "REV")
		}
		if g.chance(0.4) {
			args = append(args, "LIMIT", g.pick("0", "1", "-1", "x"), g.pick("1", "2", "-1", "0"))
		}
		if withScores {
			args = append(args, "WITHSCORES")
		}
		return cmd(args...)
	case 13:
		args := []string{g.pick("ZRANGEBYSCORE", "ZREVRANGEBYSCORE"), k, g.rangeBound(), g.rangeBound()}
		if withScores {
			args = append(args, "WITHSCORES")
		}
		return cmd(args...)
	case 14:
		return cmd("ZCOUNT", k, g.rangeBound(), g.rangeBound())
	case 15:
		if g.chance(0.5) {
			return cmd(g.pick("ZPOPMIN", "ZPOPMAX"), k)
		}
		return cmd(g.pick("ZPOPMIN", "ZPOPMAX"), k, g.count())
	case 16:
		args := []string{"ZMPOP", g.pick("1", "2", "0"), k, g.key(zsetKeys), g.pick("MIN", "MAX", "MID")}
		if g.chance(0.5) {
			args = append(args, "COUNT", g.count())
		}
		return cmd(args...)
	case 17:
		return cmd("ZREMRANGEBYRANK", k, g.index(), g.index())
	case 18:
		return cmd("ZREMRANGEBYSCORE", k, g.rangeBound(), g.rangeBound())
	case 19, 20:
		op := g.pick("ZUNION", "ZINTER", "ZDIFF")
		args := []string{op, "2", k, g.pick(append(zsetKeys, setKeys[0], "nokey")...)}
		if op != "ZDIFF" && g.chance(0.4) {
			args = append(args, "WEIGHTS", g.pick("1", "2", "-1", "0.5", "x"), g.pick("1", "3", "inf"))
		}
		if op != "ZDIFF" && g.chance(0.4) {
			args = append(args, "AGGREGATE", g.pick("SUM", "MIN", "MAX", "AVG"))
		}
		if g.chance(0.5) {
			args = append(args, "WITHSCORES")
		}
		return cmd(args...)
	case 21:
		op := g.pick("ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE")
		return cmd(op, g.key(zsetKeys), "2", k, g.pick(append(zsetKeys, setKeys[0])...))
	case 22:
		return cmd("ZINTERCARD", "2", k, g.key(zsetKeys), "LIMIT", g.pick("0", "1", "-1"))
	case 23:
		return cmd("ZRANGESTORE", g.key(zsetKeys), k, g.index(), g.index())
	case 24:
		return cmd("OBJECT", "ENCODING", k)
	case 25:
		// Past zset-max-listpack-entries: the skiplist form.
		args := []string{"ZADD", k}
		for i := 0; i < 130; i++ {
			args = append(args, strconv.Itoa(g.n(100)), "m"+strconv.Itoa(g.n(400)))
		}
		return cmd(args...)
	case 26:
		return cmd("ZRANDMEMBER", k, "0")
	case 27:
		return cmd("ZSCORE", k, g.member(), "extra")
	case 28:
		return cmd("BZPOPMIN", k, g.key(zsetKeys), "0.01")
	}
	return cmd("ZRANGE", k, "0", "-1", "WITHSCORES")
}

// lexCmd works on lexKey, whose members all have score 0, as the BYLEX
// commands require for a defined result.
func (g *gen) lexCmd() randCmd {
	k := lexKey
	switch g.n(8) {
	case 0, 1:
		args := []string{"ZADD", k}
		for _, m := range g.members(4) {
			args = append(args, "0", m)
		}
		return cmd(args...)
	case 2:
		args := []string{g.pick("ZRANGEBYLEX", "ZREVRANGEBYLEX"), k, g.lexBound(), g.lexBound()}
		if g.chance(0.3) {
			args = append(args, "LIMIT", g.pick("0", "1"), g.pick("1", "-1", "2"))
		}
		return cmd(args...)
	case 3:
		args := []string{"ZRANGE", k, g.lexBound(), g.lexBound(), "BYLEX"}
		if g.chance(0.4) {
			args = append(args, "REV")
		}
		return cmd(args...)
	case 4:
		return cmd("ZLEXCOUNT", k, g.lexBound(), g.lexBound())
	case 5:
		return cmd("ZREMRANGEBYLEX", k, g.lexBound(), g.lexBound())
	case 6:
		return cmd("ZRANGE", k, "0", "-1")
	}
	return cmd("ZREM", k, g.member())
}

// scanCmd draws a SCAN, HSCAN, SSCAN or ZSCAN from cursor 0 with a COUNT
// large enough that Redis usually finishes in one call.
func (g *gen) scanCmd() randCmd {
	var args []string
	switch g.n(4) {
	case 0:
		args = []string{"SCAN", "0"}
	case 1:
		args = []string{"HSCAN", g.key(hashKeys), "0"}
	case 2:
		args = []string{"SSCAN", g.key(setKeys), "0"}
	default:
		args = []string{"ZSCAN", g.key(zsetKeys), "0"}
	}
	if g.chance(0.5) {
		args = append(args, "MATCH", g.pick("*", "f1*", "*a*", "[ab]*", "?", "m*", "1*"))
	}
	args = append(args, "COUNT", g.pick("1000", "1000", "0", "x"))
	if args[0] == "SCAN" && g.chance(0.5) {
		args = append(args, "TYPE", g.pick("string", "hash", "list", "set", "zset", "nosuch"))
	}
	return randCmd{args: args, mode: scanAll}
}

func (g *gen) keyCmd() randCmd {
	k := g.pick(allKeys...)
	switch g.n(23) {
	case 0:
		return cmd("DEL", k, g.pick(allKeys...))
	case 1:
		return cmd("EXISTS", k, k, g.pick(allKeys...))
	case 2, 3:
		return cmd("TYPE", k)
	case 4:
		return cmd("RENAME", k, g.pick(allKeys...))
	case 5:
		return cmd("RENAMENX", k, g.pick(allKeys...))
	case 6:
		args := []string{"COPY", k, g.pick(allKeys...)}
		if g.chance(0.5) {
			args = append(args, "REPLACE")
		}
		return cmd(args...)
	case 7:
		args := []string{"EXPIRE", k, g.pick("1000", "2000", "100000", "x", "0")}
		if g.chance(0.4) {
			args = append(args, g.pick("NX", "XX", "GT", "LT", "NX"))
		}
		return cmd(args...)
	case 8:
		return randCmd{args: []string{"TTL", k}, mode: approx}
	case 9:
		return cmd("PERSIST", k)
	case 10:
		return cmd("DBSIZE")
	case 11:
		return randCmd{args: []string{"KEYS", g.pick("*", "s*", "?0", "[hl]*", "*[^0]", "z\\*")}, mode: unordered}
	case 12:
		return cmd("OBJECT", "ENCODING", k)
	case 13:
		return cmd("TOUCH", k, "nokey")
	case 14:
		return cmd("UNLINK", k)
	case 15:
		return randCmd{args: []string{"EXPIRETIME", k}, mode: approx}
	case 16:
		return cmd("STRLEN", k)
	case 17:
		args := []string{"PEXPIRE", k, g.pick("500000", "900000", "-5")}
		if g.chance(0.4) {
			args = append(args, g.pick("NX", "XX", "GT", "LT"))
		}
		return cmd(args...)
	case 18:
		return randCmd{args: []string{"PTTL", k}, mode: approxMs}
	case 19:
		return cmd("EXPIREAT", k, g.pick("1", "0", "-1"))
	case 20:
		return cmd("GETEX", k, "PERSIST")
	case 21:
		return g.scanCmd()
	}
	return cmd("TYPE", k)
}

// geoCmd draws a GEO command on a sorted set: geo sets are sorted sets of
// geohash scores, and the small integer scores other commands write decode
// to positions near (-180, -85). STOREDIST is left out: a stored distance
// shows all 17 digits, where glibc's trigonometry is an ulp off the
// correctly rounded result in about 0.1% of cases.
func (g *gen) geoCmd(k string) randCmd {
	lon := func() string {
		return g.pick("-180", "-179.9999", "0", "13.361389", "15.087269", "180", "-100.5", "x", "200")
	}
	lat := func() string {
		return g.pick("-85.05112878", "-85", "0", "37.502669", "38.115556", "85.05112878", "45.5", "90")
	}
	unit := func() string { return g.pick("m", "km", "KM", "mi", "ft", "yd") }
	dist := func() string { return g.pick("0", "1", "100", "5000", "300000", "20000000", "x", "-1") }
	opts := func(store bool) []string {
		var out []string
		for _, o := range []string{"WITHDIST", "WITHCOORD", "WITHHASH", "ASC", "DESC", "ANY"} {
			if (!store || o[0] != 'W') && g.chance(0.2) {
				out = append(out, o)
			}
		}
		if g.chance(0.4) {
			out = append(out, "COUNT", g.pick("1", "2", "5", "0", "x"))
		}
		return out
	}
	from := func() []string {
		if g.chance(0.5) {
			return []string{"FROMMEMBER", g.member()}
		}
		return []string{"FROMLONLAT", lon(), lat()}
	}
	by := func() []string {
		if g.chance(0.5) {
			return []string{"BYRADIUS", dist(), unit()}
		}
		return []string{"BYBOX", dist(), dist(), unit()}
	}
	switch g.n(9) {
	case 0, 1:
		args := []string{"GEOADD", k}
		for _, opt := range []string{"NX", "XX", "CH"} {
			if g.chance(0.1) {
				args = append(args, opt)
			}
		}
		for i := 0; i < 1+g.n(3); i++ {
			args = append(args, lon(), lat(), g.member())
		}
		return cmd(args...)
	case 2:
		return cmd(append([]string{g.pick("GEOPOS", "GEOHASH"), k}, g.members(3)...)...)
	case 3:
		args := []string{"GEODIST", k, g.member(), g.member()}
		if g.chance(0.5) {
			args = append(args, unit())
		}
		return cmd(args...)
	case 4:
		args := append([]string{"GEOSEARCH", k}, from()...)
		return cmd(append(append(args, by()...), opts(false)...)...)
	case 5:
		args := append([]string{"GEOSEARCHSTORE", g.key(zsetKeys), k}, from()...)
		return cmd(append(append(args, by()...), opts(true)...)...)
	case 6:
		args := append([]string{g.pick("GEORADIUS", "GEORADIUS_RO"), k, lon(), lat(), dist(), unit()}, opts(false)...)
		return cmd(args...)
	case 7:
		args := append([]string{g.pick("GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO"), k, g.member(), dist(), unit()}, opts(false)...)
		return cmd(args...)
	}
	store := opts(true)
	args := append([]string{g.pick("GEORADIUS", "GEORADIUSBYMEMBER"), k}, lon(), lat(), dist(), unit())
	if args[0] == "GEORADIUSBYMEMBER" {
		args = append([]string{args[0], k, g.member()}, args[4:]...)
	}
	return cmd(append(append(args, store...), "STORE", g.key(zsetKeys))...)
}
