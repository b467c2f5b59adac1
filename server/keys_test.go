package server_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// Tests of the generic keyspace commands that a case file cannot express:
// whole SCAN iterations, random glob patterns, timing, and replies whose
// element order differs between servers. redis-server is the reference.

// reply is a parsed RESP reply: string (bulk or simple), int64, error
// (as replyErr), nil, or []any.
type replyErr string

func parse(t testing.TB, raw string) any {
	t.Helper()
	r := bufio.NewReader(strings.NewReader(raw))
	v, err := parseValue(r)
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return v
}

func parseValue(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	body := strings.TrimSuffix(line[1:], "\r\n")
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return replyErr(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := ioFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = parseValue(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected %q", line)
}

func ioFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := r.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func do(t testing.TB, c *redistest.Conn, args ...string) any {
	t.Helper()
	raw, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return parse(t, raw)
}

// pipeline sends all commands at once and reads every reply.
func pipeline(t testing.TB, c *redistest.Conn, cmds [][]string) {
	t.Helper()
	var buf []byte
	for _, a := range cmds {
		buf = append(buf, redistest.Encode(a...)...)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	go c.Write(buf)
	for range cmds {
		if _, err := redistest.ReadReply(c.R); err != nil {
			t.Fatal(err)
		}
	}
}

// servers returns a connection to a real redis-server and one to Sluice,
// both flushed.
func servers(t *testing.T) (r, s *redistest.Conn) {
	t.Helper()
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	r, s = redistest.Dial(t, raddr), redistest.Dial(t, saddr)
	return r, s
}

// unsupported reports whether Sluice does not have a command yet (another
// family's), so a test that needs it is skipped in a partial build.
func unsupported(t *testing.T, s *redistest.Conn, args ...string) bool {
	t.Helper()
	raw, err := s.Do(args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.HasPrefix(raw, "-ERR unknown command")
}

// scanAll runs a whole SCAN iteration and returns every key it returned,
// with the number of calls and the largest batch.
func scanAll(t *testing.T, c *redistest.Conn, opts ...string) (keys []string, calls, biggest int) {
	t.Helper()
	cursor := "0"
	for {
		v := do(t, c, append([]string{"SCAN", cursor}, opts...)...)
		arr, ok := v.([]any)
		if !ok || len(arr) != 2 {
			t.Fatalf("SCAN %s %v replied %#v", cursor, opts, v)
		}
		cursor = arr[0].(string)
		batch := arr[1].([]any)
		for _, k := range batch {
			keys = append(keys, k.(string))
		}
		calls++
		biggest = max(biggest, len(batch))
		if cursor == "0" {
			return keys, calls, biggest
		}
		if calls > 100000 {
			t.Fatal("SCAN does not end")
		}
	}
}

func distinct(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return slices.Compact(out)
}

// TestScanWholeIterations compares the set of keys a complete SCAN
// iteration returns, with MATCH, TYPE and several COUNTs, and checks that
// Sluice returns each key once and about COUNT keys per call.
func TestScanWholeIterations(t *testing.T) {
	r, s := servers(t)
	var cmds [][]string
	for i := 0; i < 3000; i++ {
		cmds = append(cmds, []string{"SET", "key:" + strconv.Itoa(i), "v"})
	}
	cmds = append(cmds, []string{"SET", "other", "x"}, []string{"SET", "gone", "x", "PX", "1"})
	pipeline(t, r, cmds)
	pipeline(t, s, cmds)
	time.Sleep(10 * time.Millisecond)
	for _, opts := range [][]string{
		nil,
		{"COUNT", "1"},
		{"COUNT", "7"},
		{"COUNT", "1000"},
		{"COUNT", "100000"},
		{"MATCH", "key:1*"},
		{"MATCH", "key:1?3", "COUNT", "50"},
		{"MATCH", "o*", "TYPE", "string"},
		{"TYPE", "list"},
		{"TYPE", "STRING", "COUNT", "500"},
		{"MATCH", "gone"},
	} {
		want, _, _ := scanAll(t, r, opts...)
		got, calls, biggest := scanAll(t, s, opts...)
		if !slices.Equal(distinct(want), distinct(got)) {
			t.Errorf("SCAN %v: redis returned %d keys, sluice %d (distinct %d vs %d)", opts, len(want), len(got), len(distinct(want)), len(distinct(got)))
		}
		if len(got) != len(distinct(got)) {
			t.Errorf("SCAN %v: sluice returned duplicates", opts)
		}
		count := 10
		if len(opts) > 0 && opts[0] == "COUNT" {
			count, _ = strconv.Atoi(opts[1])
		}
		if len(opts) == 0 || opts[0] == "COUNT" {
			// No filter: every call but the last returns COUNT keys.
			if wantCalls := (3001 + count - 1) / count; count < 3001 && (calls < wantCalls || calls > wantCalls+1) || biggest > count+1 {
				t.Errorf("SCAN %v: %d calls, biggest batch %d, for 3001 keys", opts, calls, biggest)
			}
		}
	}
}

// TestScanWhileWriting checks the guarantee: keys present during the whole
// iteration are returned, while other keys are added and deleted between
// calls (from another connection).
func TestScanWhileWriting(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	s, w := redistest.Dial(t, addr), redistest.Dial(t, addr)
	var cmds [][]string
	for i := 0; i < 2000; i++ {
		cmds = append(cmds, []string{"SET", "stable:" + strconv.Itoa(i), "v"}, []string{"SET", "tmp:" + strconv.Itoa(i), "v"})
	}
	pipeline(t, s, cmds)
	seen := map[string]int{}
	cursor := "0"
	rnd := rand.New(rand.NewPCG(7, 8))
	for n := 0; ; n++ {
		arr := do(t, s, "SCAN", cursor, "COUNT", strconv.Itoa(1+rnd.IntN(30))).([]any)
		for _, k := range arr[1].([]any) {
			seen[k.(string)]++
		}
		cursor = arr[0].(string)
		if cursor == "0" {
			break
		}
		pipeline(t, w, [][]string{
			{"DEL", "tmp:" + strconv.Itoa(rnd.IntN(2000))},
			{"SET", "new:" + strconv.Itoa(n), "v"},
			{"SET", "new:" + strconv.Itoa(n) + ":b", "v"},
		})
	}
	for i := 0; i < 2000; i++ {
		if k := "stable:" + strconv.Itoa(i); seen[k] != 1 {
			t.Fatalf("%s returned %d times", k, seen[k])
		}
	}
}

// TestKeysRandomPatterns compares KEYS for random glob patterns over keys
// full of glob metacharacters.
func TestKeysRandomPatterns(t *testing.T) {
	r, s := servers(t)
	rnd := rand.New(rand.NewPCG(9, 10))
	keyAlpha := []byte("ab]^-\\*[?A")
	patAlpha := []byte("ab*?[]^-\\A")
	gen := func(alpha []byte, n int) string {
		b := make([]byte, 1+rnd.IntN(n))
		for i := range b {
			b[i] = alpha[rnd.IntN(len(alpha))]
		}
		return string(b)
	}
	var cmds [][]string
	for i := 0; i < 300; i++ {
		cmds = append(cmds, []string{"SET", gen(keyAlpha, 5), "v"})
	}
	cmds = append(cmds, []string{"SET", "", "empty"})
	pipeline(t, r, cmds)
	pipeline(t, s, cmds)
	for i := 0; i < 400; i++ {
		pat := gen(patAlpha, 7)
		want := do(t, r, "KEYS", pat)
		got := do(t, s, "KEYS", pat)
		toStrings := func(v any) []string {
			var out []string
			for _, e := range v.([]any) {
				out = append(out, e.(string))
			}
			slices.Sort(out)
			return out
		}
		if w, g := toStrings(want), toStrings(got); !slices.Equal(w, g) {
			t.Fatalf("KEYS %q: redis %q, sluice %q", pat, w, g)
		}
	}
}

// TestActiveExpiry: keys with a TTL that nobody reads are reclaimed.
func TestActiveExpiry(t *testing.T) {
	t.Parallel()
	_, addr := redistest.StartSluice(t)
	s := redistest.Dial(t, addr)
	var cmds [][]string
	for i := 0; i < 500; i++ {
		cmds = append(cmds, []string{"SET", "vol:" + strconv.Itoa(i), "v", "PX", "100"})
	}
	cmds = append(cmds, []string{"SET", "keep", "v"})
	pipeline(t, s, cmds)
	if n := do(t, s, "DBSIZE"); n != int64(501) {
		t.Fatalf("DBSIZE after loading = %v", n)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := do(t, s, "DBSIZE")
		if n == int64(1) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("DBSIZE is still %v 3s after the keys expired", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v := do(t, s, "EXISTS", "keep"); v != int64(1) {
		t.Fatalf("the persistent key is gone: %v", v)
	}
}

// TestObjectIdletime compares OBJECT IDLETIME after two idle seconds, and
// after a read resets it.
func TestObjectIdletime(t *testing.T) {
	t.Parallel()
	r, s := servers(t)
	for _, c := range []*redistest.Conn{r, s} {
		do(t, c, "SET", "idle", "v")
		do(t, c, "SET", "busy", "v")
	}
	time.Sleep(2100 * time.Millisecond)
	for _, c := range []*redistest.Conn{r, s} {
		do(t, c, "GET", "busy")
	}
	for _, key := range []string{"idle", "busy"} {
		want := do(t, r, "OBJECT", "IDLETIME", key).(int64)
		got, ok := do(t, s, "OBJECT", "IDLETIME", key).(int64)
		if !ok || got < want-1 || got > want+1 {
			t.Errorf("OBJECT IDLETIME %s: redis %d, sluice %v", key, want, got)
		}
	}
	// TYPE, EXISTS and TTL do not touch the key; TOUCH does.
	for _, c := range []*redistest.Conn{r, s} {
		do(t, c, "TYPE", "idle")
		do(t, c, "EXISTS", "idle")
		do(t, c, "TTL", "idle")
	}
	// Both clocks tick in whole seconds at their own phase: allow one.
	want := do(t, r, "OBJECT", "IDLETIME", "idle").(int64)
	if got, ok := do(t, s, "OBJECT", "IDLETIME", "idle").(int64); !ok || got < want-1 || got > want+1 {
		t.Errorf("OBJECT IDLETIME after TYPE/EXISTS/TTL: redis %d, sluice %v", want, got)
	}
	for _, c := range []*redistest.Conn{r, s} {
		do(t, c, "TOUCH", "idle")
	}
	want = do(t, r, "OBJECT", "IDLETIME", "idle").(int64)
	if got, ok := do(t, s, "OBJECT", "IDLETIME", "idle").(int64); !ok || got < want-1 || got > want+1 {
		t.Errorf("OBJECT IDLETIME after TOUCH: redis %d, sluice %v", want, got)
	}
}

// TestObjectUnderLFU: with an LFU policy FREQ answers and IDLETIME errs.
func TestObjectUnderLFU(t *testing.T) {
	raddr := redistest.StartRedis(t, "--maxmemory-policy", "allkeys-lfu")
	_, saddr := redistest.StartSluice(t, "maxmemory-policy", "allkeys-lfu")
	r, s := redistest.Dial(t, raddr), redistest.Dial(t, saddr)
	for _, c := range []*redistest.Conn{r, s} {
		do(t, c, "SET", "k", "a string")
	}
	for _, args := range [][]string{{"OBJECT", "IDLETIME", "k"}, {"OBJECT", "FREQ", "nokey"}, {"OBJECT", "IDLETIME", "nokey"}} {
		want, _ := r.Do(args...)
		got, _ := s.Do(args...)
		if want != got {
			t.Errorf("%v: redis %q, sluice %q", args, want, got)
		}
	}
	if _, ok := do(t, s, "OBJECT", "FREQ", "k").(int64); !ok {
		t.Errorf("OBJECT FREQ under LFU did not answer an integer")
	}
	// Shared integers are not used with an LRU/LFU policy and maxmemory.
	raddr = redistest.StartRedis(t, "--maxmemory-policy", "allkeys-lru", "--maxmemory", "100mb")
	_, saddr = redistest.StartSluice(t, "maxmemory-policy", "allkeys-lru", "maxmemory", "100mb")
	r, s = redistest.Dial(t, raddr), redistest.Dial(t, saddr)
	for _, c := range []*redistest.Conn{r, s} {
		do(t, c, "SET", "n", "7")
	}
	want, _ := r.Do("OBJECT", "REFCOUNT", "n")
	got, _ := s.Do("OBJECT", "REFCOUNT", "n")
	if want != got {
		t.Errorf("OBJECT REFCOUNT with allkeys-lru: redis %q, sluice %q", want, got)
	}
}

// TestMemoryUsageStrings compares MEMORY USAGE for strings of many sizes
// and key lengths: exact for values written by SET, within 25% for strings
// grown by APPEND (whose spare capacity Sluice sizes differently).
func TestMemoryUsageStrings(t *testing.T) {
	r, s := servers(t)
	for _, klen := range []int{1, 8, 31, 32, 200, 300} {
		for _, vlen := range []int{0, 1, 20, 21, 44, 45, 100, 200, 255, 256, 1000, 5000, 20000, 70000} {
			key := strings.Repeat("k", klen)
			val := strings.Repeat("x", vlen)
			for _, c := range []*redistest.Conn{r, s} {
				do(t, c, "SET", key, val)
			}
			want := do(t, r, "MEMORY", "USAGE", key)
			got := do(t, s, "MEMORY", "USAGE", key)
			if want != got {
				t.Errorf("MEMORY USAGE key %d bytes, value %d bytes: redis %v, sluice %v", klen, vlen, want, got)
			}
		}
	}
	for _, v := range []string{"0", "-1", "9223372036854775807", "12345678901234567890"} {
		for _, c := range []*redistest.Conn{r, s} {
			do(t, c, "SET", "n", v)
		}
		if want, got := do(t, r, "MEMORY", "USAGE", "n"), do(t, s, "MEMORY", "USAGE", "n"); want != got {
			t.Errorf("MEMORY USAGE of %s: redis %v, sluice %v", v, want, got)
		}
	}
	if unsupported(t, s, "APPEND", "ap", "x") {
		t.Log("APPEND not in this build: skipping the grown-string comparison")
		return
	}
	do(t, r, "APPEND", "ap", "x")
	for i := 0; i < 40; i++ {
		chunk := strings.Repeat("y", 1+i*37)
		for _, c := range []*redistest.Conn{r, s} {
			do(t, c, "APPEND", "ap", chunk)
		}
		want := do(t, r, "MEMORY", "USAGE", "ap").(int64)
		got := do(t, s, "MEMORY", "USAGE", "ap").(int64)
		// A grown string's spare room follows the allocator's size classes
		// (jemalloc's in Redis, Go's here), so they step up at different
		// lengths; the estimate must stay within a factor of two.
		if d := float64(got) / float64(want); d > 2 || d < 0.5 {
			t.Errorf("MEMORY USAGE after %d APPENDs: redis %d, sluice %d", i+1, want, got)
		}
	}
}

// TestKeyspaceCollections covers TYPE, RENAME, MOVE, COPY and OBJECT on the
// other families' types, when this build has them.
func TestKeyspaceCollections(t *testing.T) {
	r, s := servers(t)
	setup := map[string][]string{
		"list":   {"RPUSH", "l", "a", "b", "c"},
		"set":    {"SADD", "st", "a", "b", "1"},
		"zset":   {"ZADD", "z", "1", "a", "2", "b"},
		"hash":   {"HSET", "h", "f", "v", "g", "w"},
		"stream": {"XADD", "x", "1-1", "f", "v"},
	}
	key := map[string]string{"list": "l", "set": "st", "zset": "z", "hash": "h", "stream": "x"}
	read := map[string][]string{
		"list": {"LRANGE", "%s", "0", "-1"}, "set": {"SMEMBERS", "%s"}, "zset": {"ZRANGE", "%s", "0", "-1", "WITHSCORES"},
		"hash": {"HGETALL", "%s"}, "stream": {"XRANGE", "%s", "-", "+"},
	}
	ran := 0
	for _, typ := range []string{"list", "set", "zset", "hash", "stream"} {
		if unsupported(t, s, setup[typ]...) {
			continue
		}
		ran++
		do(t, r, setup[typ]...)
		k := key[typ]
		readArgs := func(name string) []string {
			out := slices.Clone(read[typ])
			out[1] = name
			return out
		}
		compare := func(args ...string) {
			t.Helper()
			want, _ := r.Do(args...)
			got, _ := s.Do(args...)
			if typ == "set" && strings.HasPrefix(want, "*") {
				want, got = sortedLines(want), sortedLines(got)
			}
			if want != got {
				t.Errorf("%s: %q\n redis:  %q\n sluice: %q", typ, args, want, got)
			}
		}
		compare("TYPE", k)
		compare("OBJECT", "ENCODING", k)
		compare("SCAN", "0", "TYPE", typ, "COUNT", "1000")
		compare("COPY", k, k+"2")
		compare(readArgs(k + "2")...)
		compare("TYPE", k+"2")
		compare("COPY", k, k+"2")
		compare("COPY", k, k+"2", "DB", "3", "REPLACE")
		compare("RENAME", k+"2", k+"3")
		compare(readArgs(k + "3")...)
		compare("MOVE", k+"3", "1")
		compare("EXISTS", k+"3")
		compare("SELECT", "1")
		compare(readArgs(k + "3")...)
		compare("SELECT", "0")
		compare("EXPIRE", k, "100")
		compare("TTL", k)
		compare("DEL", k)
		compare("TYPE", k)
		if got := do(t, s, "MEMORY", "USAGE", k+"3"); got != nil {
			// Moved away: nil here.
			t.Errorf("MEMORY USAGE of a moved key: %v", got)
		}
	}
	if ran == 0 {
		t.Skip("no collection commands in this build")
	}
}

func sortedLines(raw string) string {
	lines := strings.Split(raw, "\r\n")
	slices.Sort(lines)
	return strings.Join(lines, "|")
}

// TestKeyspaceEvents compares the keyspace notifications of the generic
// commands, when this build has pub/sub and CONFIG SET.
func TestKeyspaceEvents(t *testing.T) {
	r, s := servers(t)
	if unsupported(t, s, "CONFIG", "SET", "notify-keyspace-events", "KEA") {
		t.Skip("CONFIG not in this build")
	}
	raddr, saddr := r.RemoteAddr().String(), s.RemoteAddr().String()
	if unsupported(t, s, "PUBLISH", "x", "y") {
		t.Skip("pub/sub not in this build")
	}
	do(t, r, "CONFIG", "SET", "notify-keyspace-events", "KEA")
	events := func(addr string, c *redistest.Conn) []string {
		sub := redistest.Dial(t, addr)
		if _, err := sub.Do("PSUBSCRIBE", "__key*__:*"); err != nil {
			t.Fatal(err)
		}
		script := [][]string{
			{"SET", "a", "1"}, {"DEL", "a", "nokey"}, {"SET", "a", "1"}, {"UNLINK", "a"},
			{"SET", "a", "1"}, {"RENAME", "a", "b"}, {"SET", "c", "1"}, {"RENAMENX", "b", "c"}, {"RENAME", "b", "c"},
			{"EXPIRE", "c", "100"}, {"PERSIST", "c"}, {"PEXPIRE", "c", "100000"}, {"EXPIRE", "c", "-1"},
			{"SET", "m", "1"}, {"MOVE", "m", "1"}, {"SET", "m", "1"}, {"COPY", "m", "m2"}, {"COPY", "m", "m2", "DB", "2", "REPLACE"},
			{"SET", "e", "1", "PX", "1"},
		}
		for _, cmd := range script {
			if _, err := c.Do(cmd...); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * time.Millisecond)
		c.Do("GET", "e") // lazily expired: "expired", the last event
		var out []string
		sub.SetDeadline(time.Now().Add(5 * time.Second))
		for {
			raw, err := redistest.ReadReply(sub.R)
			if err != nil {
				t.Fatalf("reading events: %v (so far %q)", err, out)
			}
			out = append(out, raw)
			if strings.Contains(raw, ":expired") {
				return out
			}
		}
	}
	want := events(raddr, r)
	got := events(saddr, s)
	if !slices.Equal(want, got) {
		t.Errorf("events differ:\n redis:  %q\n sluice: %q", want, got)
	}
}
