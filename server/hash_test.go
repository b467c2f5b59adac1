package server

// Internal tests (package server) for hashes and sets: they need
// hashSetEncoding and the notification hook, so they cannot use
// internal/redistest (it imports this package); the few helpers below
// start the servers and speak RESP instead.

import (
	"bufio"
	"fmt"
	"math"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hsStart starts an in-process server on a free port with config
// directives as name/value pairs.
func hsStart(t testing.TB, directives ...string) (*Server, string) {
	t.Helper()
	cfg := NewConfig()
	cfg.Set("port", "0")
	for i := 0; i+1 < len(directives); i += 2 {
		if err := cfg.Set(directives[i], directives[i+1]); err != nil {
			t.Fatalf("config %s: %v", directives[i], err)
		}
	}
	srv := New(cfg)
	srv.SetLogger(nil)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv, srv.Addrs()[0].String()
}

// hsRedis starts redis-server with extra arguments, or skips.
func hsRedis(t testing.TB, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	argv := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, args...)
	cmd := exec.Command(path, argv...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
	}
	t.Fatal("redis-server did not start")
	return ""
}

type hsConn struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func hsDial(t testing.TB, addr string) *hsConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &hsConn{t: t, c: c, r: bufio.NewReader(c)}
}

func hsEncode(args []string) []byte {
	var b []byte
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

func (c *hsConn) send(args ...string) {
	c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write(hsEncode(args)); err != nil {
		c.t.Fatal(err)
	}
}

// do sends a command and returns its reply: string (bulk, simple), int64,
// []any, nil, or hsErr.
func (c *hsConn) do(args ...string) any {
	c.t.Helper()
	c.send(args...)
	return c.read()
}

type hsErr string

func (c *hsConn) read() any {
	c.t.Helper()
	v, err := hsRead(c.r)
	if err != nil {
		c.t.Fatal(err)
	}
	return v
}

func hsRead(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, fmt.Errorf("short line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return hsErr(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '_':
		return nil, nil
	case '$':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		for got := 0; got < len(buf); {
			k, err := r.Read(buf[got:])
			if err != nil {
				return nil, err
			}
			got += k
		}
		return string(buf[:n]), nil
	case '*', '~', '%', '>':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil, nil
		}
		if line[0] == '%' {
			n *= 2
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = hsRead(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

func hsInt(t testing.TB, v any) int64 {
	t.Helper()
	n, ok := v.(int64)
	if !ok {
		t.Fatalf("not an integer reply: %#v", v)
	}
	return n
}

func hsStrings(t testing.TB, v any) []string {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("not an array reply: %#v", v)
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			t.Fatalf("element %d not a string: %#v", i, e)
		}
		out[i] = s
	}
	return out
}

// hsEncodingOf returns Sluice's OBJECT ENCODING for key in db 0.
func hsEncodingOf(srv *Server, key string) string {
	srv.ks.Lock.Lock()
	defer srv.ks.Lock.Unlock()
	e := srv.ks.DB(0).Peek([]byte(key))
	if e == nil {
		return "(nil)"
	}
	enc, ok := hashSetEncoding(e)
	if !ok {
		return "(not hash/set)"
	}
	return enc
}

// hsCompareEncodings runs the same commands on redis-server and Sluice
// (both started with the given config) and compares replies and, for the
// keys listed, OBJECT ENCODING from Redis with hashSetEncoding.
func hsCompareEncodings(t *testing.T, config []string, script [][]string, keys []string) {
	t.Helper()
	var redisArgs []string
	for i := 0; i+1 < len(config); i += 2 {
		redisArgs = append(redisArgs, "--"+config[i], config[i+1])
	}
	raddr := hsRedis(t, redisArgs...)
	srv, saddr := hsStart(t, config...)
	r, s := hsDial(t, raddr), hsDial(t, saddr)
	for _, cmd := range script {
		want, got := r.do(cmd...), s.do(cmd...)
		if _, isArr := want.([]any); !isArr && fmt.Sprint(want) != fmt.Sprint(got) {
			t.Errorf("%v: redis %v, sluice %v", cmd, want, got)
		}
	}
	for _, k := range keys {
		want := fmt.Sprint(r.do("OBJECT", "ENCODING", k))
		if want == "<nil>" {
			want = "(nil)"
		}
		if got := hsEncodingOf(srv, k); got != want {
			t.Errorf("OBJECT ENCODING %s: redis %s, sluice %s", k, want, got)
		}
	}
}

func hsFields(prefix string, n, valLen int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, prefix+strconv.Itoa(i), strings.Repeat("v", valLen))
	}
	return out
}

func TestHashEncodingsVsRedis(t *testing.T) {
	long64 := strings.Repeat("x", 64)
	long65 := strings.Repeat("x", 65)
	script := [][]string{
		append([]string{"HSET", "small"}, hsFields("f", 512, 10)...),
		append([]string{"HSET", "entries"}, hsFields("f", 513, 10)...),
		{"HSET", "val64", "f", long64},
		{"HSET", "val65", "f", long65},
		{"HSET", "field65", long65, "v"},
		{"HSETNX", "nx65", "f", long65},
		{"HINCRBY", "incr65", long65, "1"},
		{"HINCRBYFLOAT", "float65", long65, "1.5"},
		// The long argument converts even though the pair is an update
		// of another field later in the same command.
		{"HSET", "later", "a", "1", "b", long65},
		{"HMSET", "hm", "a", "1"},
		// Shrinking back does not convert back.
		{"HDEL", "entries", "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9"},
		{"HSET", "val65", "f", "short"},
	}
	hsCompareEncodings(t, nil, script,
		[]string{"small", "entries", "val64", "val65", "field65", "nx65", "incr65", "float65", "later", "hm"})

	// Configured thresholds.
	script = [][]string{
		{"HSET", "h4", "a", "1", "b", "2", "c", "3", "d", "4"},
		{"HSET", "h5", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"},
		{"HSET", "v8", "f", "12345678"},
		{"HSET", "v9", "f", "123456789"},
		{"HINCRBY", "i9", "f", "123456789"},
		{"HINCRBY", "i9b", "f", "12345678"},
		{"HINCRBY", "i9b", "f", "100000000"},
		{"HINCRBYFLOAT", "fl", "f", "1234567.5"},
	}
	hsCompareEncodings(t, []string{"hash-max-listpack-entries", "4", "hash-max-listpack-value", "8"}, script,
		[]string{"h4", "h5", "v8", "v9", "i9", "i9b", "fl"})
}

// hsEvents collects keyspace events (event, key) from Sluice's hook.
type hsEvents struct {
	mu  sync.Mutex
	got []string
}

func (e *hsEvents) hook(db int, class int64, event string, key []byte) {
	e.mu.Lock()
	e.got = append(e.got, event+" "+string(key))
	e.mu.Unlock()
}

// hsCompareEvents runs script on both servers with notifications on and
// compares the keyevent sequence Redis publishes with what Sluice emits.
func hsCompareEvents(t *testing.T, script [][]string) {
	t.Helper()
	const classes = "Eghsn$"
	raddr := hsRedis(t, "--notify-keyspace-events", classes)
	srv, saddr := hsStart(t, "notify-keyspace-events", classes)
	var ev hsEvents
	srv.setNotifyHook(ev.hook)

	sub := hsDial(t, raddr)
	sub.do("PSUBSCRIBE", "__keyevent@0__:*")
	r, s := hsDial(t, raddr), hsDial(t, saddr)
	for _, cmd := range script {
		want, got := r.do(cmd...), s.do(cmd...)
		// Random members differ; compare only the reply kinds there.
		if fmt.Sprintf("%T", want) != fmt.Sprintf("%T", got) {
			t.Errorf("%v: redis %#v, sluice %#v", cmd, want, got)
		}
	}
	r.do("SET", "__end__", "1")
	var want []string
	for {
		msg, ok := sub.read().([]any)
		if !ok || len(msg) != 4 {
			t.Fatalf("unexpected pubsub message %#v", msg)
		}
		channel, key := msg[2].(string), msg[3].(string)
		if key == "__end__" {
			break
		}
		want = append(want, strings.TrimPrefix(channel, "__keyevent@0__:")+" "+key)
	}
	ev.mu.Lock()
	got := ev.got
	ev.mu.Unlock()
	// Wrong-type keys are made with SET, whose events are the string
	// code's business: leave them out on both sides.
	drop := func(list []string) []string {
		var out []string
		for _, e := range list {
			if !strings.HasSuffix(e, " str") {
				out = append(out, e)
			}
		}
		return out
	}
	want, got = drop(want), drop(got)
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("events differ\nredis:\n  %s\nsluice:\n  %s", strings.Join(want, "\n  "), strings.Join(got, "\n  "))
	}
}

func TestHashNotificationsVsRedis(t *testing.T) {
	hsCompareEvents(t, [][]string{
		{"HSET", "h", "a", "1", "b", "2"},
		{"HSET", "h", "a", "1"},
		{"HMSET", "h", "c", "3"},
		{"HSETNX", "h", "a", "1"},
		{"HSETNX", "h", "d", "4"},
		{"HSETNX", "h2", "d", "4"},
		{"HDEL", "h", "zz"},
		{"HDEL", "h", "a", "zz"},
		{"HINCRBY", "h", "n", "5"},
		{"HINCRBY", "h", "a", "x"},
		{"HINCRBY", "h", "c", "1"},
		{"HINCRBYFLOAT", "h", "n", "1.5"},
		{"HINCRBYFLOAT", "h3", "n", "1.5"},
		{"HGET", "h", "n"},
		{"HGETALL", "h"},
		{"HDEL", "h", "b", "c", "d", "n", "zz"},
		{"HDEL", "h", "b"},
		{"SET", "str", "x"},
		{"HSET", "str", "a", "1"},
		{"HDEL", "h2", "d"},
		{"HINCRBY", "h4", "f", "notanumber"},
	})
}

// TestHscanGuaranteeThroughServer: a full HSCAN with a small COUNT
// returns every field that exists throughout, while another client adds
// and removes other fields between calls (forcing rehashes).
func TestHscanGuaranteeThroughServer(t *testing.T) {
	_, addr := hsStart(t)
	c, other := hsDial(t, addr), hsDial(t, addr)
	c.do(append([]string{"HSET", "h"}, hsFields("stable", 1000, 3)...)...)
	seen := map[string]bool{}
	cursor := "0"
	next := 0
	for calls := 0; ; calls++ {
		reply, ok := c.do("HSCAN", "h", cursor, "COUNT", "7").([]any)
		if !ok || len(reply) != 2 {
			t.Fatalf("bad HSCAN reply %#v", reply)
		}
		cursor = reply[0].(string)
		items := hsStrings(t, reply[1])
		if len(items)%2 != 0 {
			t.Fatalf("odd HSCAN items %v", items)
		}
		for i := 0; i < len(items); i += 2 {
			if strings.HasPrefix(items[i], "stable") && items[i+1] != "vvv" {
				t.Fatalf("field %s has value %q", items[i], items[i+1])
			}
			seen[items[i]] = true
		}
		if calls < 60 {
			other.do(append([]string{"HSET", "h"}, hsFields("churn"+strconv.Itoa(next)+"-", 50, 1)...)...)
			next++
		} else if next > 0 {
			next--
			args := []string{"HDEL", "h"}
			for i := 0; i < 50; i++ {
				args = append(args, "churn"+strconv.Itoa(next)+"-"+strconv.Itoa(i))
			}
			other.do(args...)
		}
		if cursor == "0" {
			break
		}
		if calls > 100000 {
			t.Fatal("HSCAN does not terminate")
		}
	}
	for i := 0; i < 1000; i++ {
		if !seen["stable"+strconv.Itoa(i)] {
			t.Fatalf("stable%d never returned", i)
		}
	}
	// A huge COUNT overflows Redis's arithmetic into "no limit".
	reply0 := c.do("HSCAN", "h", "0", "COUNT", "9223372036854775807").([]any)
	if n := len(hsStrings(t, reply0[1])); reply0[0] != "0" || n != 2*1000 {
		t.Fatalf("HSCAN COUNT max: cursor %v, %d items", reply0[0], n)
	}
	// MATCH filters on fields only.
	reply := c.do("HSCAN", "h", "0", "MATCH", "stable99*", "COUNT", "100000").([]any)
	items := hsStrings(t, reply[1])
	if reply[0] != "0" || len(items) != 2*11 {
		t.Fatalf("HSCAN MATCH: cursor %v, %d items", reply[0], len(items))
	}
}

// hsChiSquareOK reports whether counts over n categories (draws total)
// pass a loose uniformity check.
func hsChiSquareOK(counts map[string]int, n, draws int) (float64, bool) {
	exp := float64(draws) / float64(n)
	chi := 0.0
	for _, c := range counts {
		d := float64(c) - exp
		chi += d * d / exp
	}
	chi += float64(n-len(counts)) * exp // missing categories
	return chi, chi <= float64(n-1)+6*math.Sqrt(2*float64(n-1))
}

// hsDispatchResp3 runs one command on an internal RESP3 client and
// returns its parsed reply (no HELLO needed).
func hsDispatchResp3(t testing.TB, srv *Server, args ...string) any {
	t.Helper()
	c := srv.newClient(srv.goSlot, "test", "", false, nil)
	defer srv.removeClient(c)
	c.w.Proto = 3
	var bargs [][]byte
	for _, a := range args {
		bargs = append(bargs, []byte(a))
	}
	c.dispatch(bargs)
	v, err := hsRead(bufio.NewReader(strings.NewReader(string(c.w.Buf))))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestHrandfieldThroughServer(t *testing.T) {
	srv, addr := hsStart(t)
	c := hsDial(t, addr)
	// Small (listpack) and big (hashtable) hashes.
	for _, tc := range []struct {
		key string
		n   int
	}{{"small", 20}, {"big", 300}} {
		c.do(append([]string{"HSET", tc.key}, hsFields("f", tc.n, 2)...)...)
		counts := map[string]int{}
		draws := tc.n * 100
		items := hsStrings(t, c.do("HRANDFIELD", tc.key, strconv.Itoa(-draws), "WITHVALUES"))
		if len(items) != 2*draws {
			t.Fatalf("%s: %d items", tc.key, len(items))
		}
		for i := 0; i < len(items); i += 2 {
			if items[i+1] != "vv" {
				t.Fatalf("value of %s: %q", items[i], items[i+1])
			}
			counts[items[i]]++
		}
		if chi, ok := hsChiSquareOK(counts, tc.n, draws); !ok {
			t.Errorf("%s: HRANDFIELD negative count not uniform (chi-square %.1f)", tc.key, chi)
		}
		// Positive counts: distinct fields, every case of the algorithm.
		for _, k := range []int{1, 2, tc.n / 10, tc.n/3 + 1, tc.n - 1, tc.n, tc.n + 5} {
			fs := hsStrings(t, c.do("HRANDFIELD", tc.key, strconv.Itoa(k)))
			want := k
			if want > tc.n {
				want = tc.n
			}
			uniq := map[string]bool{}
			for _, f := range fs {
				uniq[f] = true
			}
			if len(fs) != want || len(uniq) != want {
				t.Fatalf("%s HRANDFIELD %d: %d fields, %d distinct", tc.key, k, len(fs), len(uniq))
			}
		}
	}
	// RESP3: pairs nest.
	reply, ok := hsDispatchResp3(t, srv, "HRANDFIELD", "big", "-3", "WITHVALUES").([]any)
	if !ok || len(reply) != 3 {
		t.Fatalf("RESP3 HRANDFIELD: %#v", reply)
	}
	for _, p := range reply {
		if pair := hsStrings(t, p); len(pair) != 2 || pair[1] != "vv" {
			t.Fatalf("RESP3 pair %#v", p)
		}
	}
}

// Benchmarks of the write paths through the dispatcher (locks, stats).
func benchDispatch(b *testing.B, mk func(i int) [][]byte) {
	srv := New(nil)
	srv.SetLogger(nil)
	c := srv.newClient(srv.goSlot, "bench", "", false, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.dispatch(mk(i))
		c.w.Buf = c.w.Buf[:0]
	}
}

func hsBenchArgs(cmd string, n int) func(i int) [][]byte {
	args := [][]byte{[]byte(cmd), []byte("key"), nil, []byte("value-xyz")}
	fields := make([][]byte, n)
	for i := range fields {
		fields[i] = []byte("member:" + strconv.Itoa(i))
	}
	return func(i int) [][]byte {
		args[2] = fields[i%n]
		if cmd == "SADD" {
			return args[:3]
		}
		return args
	}
}

func BenchmarkHSetSmall(b *testing.B) { benchDispatch(b, hsBenchArgs("HSET", 100)) }
func BenchmarkHSetBig(b *testing.B)   { benchDispatch(b, hsBenchArgs("HSET", 100000)) }
func BenchmarkSAddBig(b *testing.B)   { benchDispatch(b, hsBenchArgs("SADD", 100000)) }
func BenchmarkHIncrBy(b *testing.B) {
	args := [][]byte{[]byte("HINCRBY"), []byte("key"), []byte("counter"), []byte("3")}
	benchDispatch(b, func(int) [][]byte { return args })
}
