package miniredis_test

// Where this package answers as Redis does and miniredis does not, and
// what the real engine adds. (compat_test.go holds what both pass.)

import (
	"crypto/tls"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/sluicetest/miniredis"
)

// One clock: FastForward moves TIME, EXPIRETIME and XADD's IDs with the
// TTLs; SetTime to a later instant expires the keys it passes.
func TestClockIsCoherent(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)
	t0 := time.Unix(1800000000, 0)
	m.SetTime(t0)
	rdb.Set(ctx, "k", "v", time.Minute)
	m.FastForward(10 * time.Second)
	if tm := rdb.Time(ctx).Val(); !tm.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("TIME after FastForward(10s) = %v, want %v", tm, t0.Add(10*time.Second))
	}
	if et := rdb.ExpireTime(ctx, "k").Val(); et != time.Duration(t0.Unix()+60)*time.Second {
		t.Fatalf("EXPIRETIME = %v", et)
	}
	id := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"a", "b"}}).Val()
	if want := strconv.FormatInt(t0.Add(10*time.Second).UnixMilli(), 10) + "-0"; id != want {
		t.Fatalf("XADD * = %s, want %s", id, want)
	}
	m.SetTime(t0.Add(2 * time.Minute))
	if m.Exists("k") || rdb.Exists(ctx, "k").Val() != 0 {
		t.Fatal("SetTime past the expiry kept the key")
	}
	if idle := rdb.ObjectIdleTime(ctx, "s").Val(); idle < 100*time.Second {
		t.Fatalf("OBJECT IDLETIME = %v after the clock moved 110 s", idle)
	}
}

// ClockTTL(true) lets the clock run: a key expires by itself.
func TestClockTTLRuns(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)
	m.ClockTTL(true)
	rdb.Set(ctx, "brief", "v", 50*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Exists(ctx, "brief").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("a key with a running clock never expired")
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.ClockTTL(false)
	rdb.Set(ctx, "frozen", "v", 50*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	if !m.Exists("frozen") {
		t.Fatal("a key expired while the clock stood still")
	}
}

// FastForward fires expired notifications, as real expiry does.
func TestFastForwardNotifies(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)
	rdb.ConfigSet(ctx, "notify-keyspace-events", "Ex")
	ps := rdb.Subscribe(ctx, "__keyevent@0__:expired")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	m.Set("k", "v")
	m.SetTTL("k", time.Second)
	m.FastForward(time.Second)
	msg, err := ps.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "k" {
		t.Fatalf("expired event: %v, %v", msg, err)
	}
}

// Redis's types, encodings and error texts.
func TestRedisAnswers(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)
	m.PfAdd("hll", "a")
	if m.Type("hll") != "string" || rdb.Type(ctx, "hll").Val() != "string" {
		t.Fatalf("TYPE of a HyperLogLog = %q / %q, want string (miniredis says hll)", m.Type("hll"), rdb.Type(ctx, "hll").Val())
	}
	m.Push("l", "a")
	if enc := rdb.ObjectEncoding(ctx, "l").Val(); enc != "listpack" && enc != "quicklist" {
		t.Fatalf("OBJECT ENCODING = %q", enc)
	}
	m.RequireAuth("pw")
	c, err := redigo.Dial("tcp", m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do("AUTH", "nope"); err == nil || err.Error() != "WRONGPASS invalid username-password pair or user is disabled." {
		t.Fatalf("AUTH nope: %v", err)
	}
	before := m.CommandCount()
	c.Do("GET", "x") // refused: NOAUTH
	c.Do("AUTH", "pw")
	if n := m.CommandCount() - before; n != 1 {
		t.Fatalf("CommandCount grew %d for one refused and one run command", n)
	}
	v, err := redigo.String(c.Do("EVAL", "return cjson.encode({a=1})", 0))
	if err != nil || v != `{"a":1}` {
		t.Fatalf("EVAL with cjson = %q, %v", v, err)
	}
}

// Close leaves no goroutines behind.
func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	m, err := miniredis.Run()
	if err != nil {
		t.Fatal(err)
	}
	c, err := redigo.Dial("tcp", m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.Do("SET", "k", "v")
	sub := m.NewSubscriber()
	sub.Subscribe("ch")
	sub.Close()
	m.Close()
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A subscriber keeps its subscriptions over a Restart.
func TestSubscriberSurvivesRestart(t *testing.T) {
	m := miniredis.RunT(t)
	sub := m.NewSubscriber()
	defer sub.Close()
	sub.Subscribe("ch")
	m.Close()
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	go m.Publish("ch", "after")
	select {
	case msg := <-sub.Messages():
		if msg.Message != "after" {
			t.Fatalf("message %+v", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no message after Restart")
	}
	if n := m.CurrentConnectionCount(); n != 0 {
		t.Fatalf("CurrentConnectionCount = %d: a subscriber counted as a client", n)
	}
}

// Hash field TTLs, kept by the package.
func TestHashFieldTTL(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)
	m.HSetEX("h", 10*time.Second, "f", "v")
	m.HSet("h", "g", "w")
	if got := m.HTTL("h", "f"); got != 10*time.Second {
		t.Fatalf("HTTL = %v", got)
	}
	if !m.HExpire("h", "g", 20*time.Second) || m.HExpire("h", "nofield", time.Second) {
		t.Fatal("HExpire reported wrongly")
	}
	m.FastForward(10 * time.Second)
	if rdb.HExists(ctx, "h", "f").Val() || m.HGet("h", "f") != "" {
		t.Fatal("field f outlived its TTL")
	}
	if !m.HPersist("h", "g") || m.HTTL("h", "g") != 0 {
		t.Fatal("HPersist did not clear g's TTL")
	}
	m.FastForward(time.Hour)
	if v := rdb.HGet(ctx, "h", "g").Val(); v != "w" {
		t.Fatalf("persisted field g = %q", v)
	}
}

// Servers in one process keep their own clocks.
func TestClocksPerServer(t *testing.T) {
	a, b := miniredis.RunT(t), miniredis.RunT(t)
	for _, m := range []*miniredis.Miniredis{a, b} {
		m.Set("k", "v")
		m.SetTTL("k", time.Minute)
	}
	a.FastForward(time.Hour)
	if a.Exists("k") || !b.Exists("k") {
		t.Fatal("FastForward on one server moved the other's clock")
	}
}

// Dump prints sorted sets and streams too.
func TestDumpCollections(t *testing.T) {
	m := miniredis.RunT(t)
	m.ZAdd("z", 2, "b")
	m.ZAdd("z", 1, "a")
	m.XAdd("s", "1-1", []string{"f", "v"})
	want := "- s\n   1-1\n      \"f\": \"v\"\n- z\n   1.000000: \"a\"\n   2.000000: \"b\"\n"
	if got := m.Dump(); got != want {
		t.Fatalf("Dump:\n%s\nwant:\n%s", got, want)
	}
	miniredis.DumpMaxLineLen = 10
	defer func() { miniredis.DumpMaxLineLen = 60 }()
	m.FlushAll()
	m.Set("long", strings.Repeat("x", 30))
	if got := m.Dump(); got != "- long\n   \"xxx\"...(30)\n" {
		t.Fatalf("Dump of a long value: %q", got)
	}
}

// A TLS server restarts as a TLS server (miniredis's Restart comes back
// without TLS), and pushes pub/sub messages over TLS.
func TestTLSRestartAndPubSub(t *testing.T) {
	cfg, roots := selfSigned(t)
	m, err := miniredis.RunTLS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), TLSConfig: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}})
	defer rdb.Close()
	rdb.Set(ctx, "k", "v", 0)
	m.Close()
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET over TLS after Restart: %q, %v", v, err)
	}
	ps := rdb.Subscribe(ctx, "ch")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	m.Publish("ch", "hello")
	if msg, err := ps.ReceiveMessage(ctx); err != nil || msg.Payload != "hello" {
		t.Fatalf("message over TLS: %v, %v", msg, err)
	}
}
