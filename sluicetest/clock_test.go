package sluicetest_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/sluicetest"
)

// FastForward: a key with 30 s left is there after 29 s and gone after 2
// s more, for direct reads and for clients over TCP and in memory.
func TestFastForwardExpiresKeys(t *testing.T) {
	s := sluicetest.Start(t)
	ctx := context.Background()
	for _, rdb := range []*redis.Client{s.TCPClient(), s.Client()} {
		if err := rdb.Set(ctx, "session", "abc", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		s.FastForward(29 * time.Second)
		if ttl := rdb.TTL(ctx, "session").Val(); ttl <= 0 || ttl > time.Second {
			t.Fatalf("TTL after 29 s: %v, want 1s", ttl)
		}
		if !s.Exists("session") || rdb.Get(ctx, "session").Val() != "abc" {
			t.Fatal("key gone after 29 of its 30 s")
		}
		s.FastForward(2 * time.Second)
		if s.Exists("session") {
			t.Fatal("direct: key still there after 31 s")
		}
		if err := rdb.Get(ctx, "session").Err(); err != redis.Nil {
			t.Fatalf("GET after 31 s: %v, want redis.Nil", err)
		}
		if n := s.DBSize(); n != 0 {
			t.Fatalf("DBSIZE %d after expiry (FastForward removes expired keys at once)", n)
		}
	}
}

// Expired events fire when FastForward passes a key's time.
func TestFastForwardNotifies(t *testing.T) {
	s := sluicetest.Start(t, sluicetest.WithConfig("notify-keyspace-events", "Ex"))
	ctx := context.Background()
	rdb := s.TCPClient()
	sub := rdb.Subscribe(ctx, "__keyevent@0__:expired")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.Set(ctx, "k", "v", time.Minute)
	s.FastForward(time.Hour)
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "k" {
		t.Fatalf("expired event: %v %v", msg, err)
	}
}

// SetTime: TIME returns it, EXPIREAT is measured against it, and the
// clock stands still until moved.
func TestSetTime(t *testing.T) {
	s := sluicetest.Start(t)
	ctx := context.Background()
	rdb := s.TCPClient()
	at := time.Date(2031, 5, 6, 7, 8, 9, 123456000, time.UTC)
	s.SetTime(at)
	for i := 0; i < 2; i++ {
		got, err := rdb.Do(ctx, "TIME").StringSlice()
		if err != nil || len(got) != 2 || got[0] != strconv.FormatInt(at.Unix(), 10) || got[1] != "123456" {
			t.Fatalf("TIME = %q, %v; want [%d 123456]", got, err, at.Unix())
		}
		time.Sleep(5 * time.Millisecond)
	}
	rdb.Set(ctx, "k", "v", 0)
	rdb.ExpireAt(ctx, "k", at.Add(10*time.Second))
	if ttl := rdb.TTL(ctx, "k").Val(); ttl != 10*time.Second {
		t.Fatalf("TTL = %v, want 10s on the set clock", ttl)
	}
	if et := rdb.ExpireTime(ctx, "k").Val(); et != time.Duration(at.Unix()+10)*time.Second {
		t.Fatalf("EXPIRETIME = %v", et)
	}
	id := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "st", Values: []string{"f", "v"}}).Val()
	if want := strconv.FormatInt(at.UnixMilli(), 10) + "-0"; id != want {
		t.Fatalf("XADD * = %s, want %s (the set clock)", id, want)
	}
	s.SetTime(at.Add(11 * time.Second))
	if rdb.Exists(ctx, "k").Val() != 0 {
		t.Fatal("key live after SetTime passed its expiry")
	}
	// Back to the wall clock.
	s.SetTime(time.Time{})
	got, _ := rdb.Do(ctx, "TIME").StringSlice()
	if sec, _ := strconv.ParseInt(got[0], 10, 64); time.Since(time.Unix(sec, 0)).Abs() > time.Minute {
		t.Fatalf("TIME after SetTime(zero) = %v", got)
	}
}

// Servers in one process keep separate clocks.
func TestClocksPerServer(t *testing.T) {
	a, b := sluicetest.Start(t), sluicetest.Start(t)
	a.Set("k", "v")
	b.Set("k", "v")
	a.SetTTL("k", time.Minute)
	b.SetTTL("k", time.Minute)
	a.FastForward(2 * time.Minute)
	if a.Exists("k") || !b.Exists("k") {
		t.Fatalf("after moving a's clock: a has k %v, b has k %v", a.Exists("k"), b.Exists("k"))
	}
}

// OBJECT IDLETIME follows the clock.
func TestFastForwardIdleTime(t *testing.T) {
	s := sluicetest.Start(t)
	s.Set("k", "v")
	s.FastForward(100 * time.Second)
	idle, err := s.Do("OBJECT", "IDLETIME", "k")
	if err != nil || idle.(int64) < 100 {
		t.Fatalf("OBJECT IDLETIME = %v, %v; want >= 100", idle, err)
	}
}

// Restart keeps the data and the clock; Close keeps the data readable.
func TestRestart(t *testing.T) {
	s := sluicetest.Start(t)
	ctx := context.Background()
	rdb := s.TCPClient()
	rdb.Set(ctx, "a", "1", 0)
	rdb.Set(ctx, "b", "2", time.Hour)
	rdb.HSet(ctx, "h", "f", "v")
	s.FastForward(30 * time.Minute)
	port := s.Port()
	s.Close()
	if v, ok := s.Get("a"); !ok || v != "1" {
		t.Fatalf("direct read after Close: %q %v", v, ok)
	}
	if err := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1}).Ping(ctx).Err(); err == nil {
		t.Fatal("a closed server answered")
	}
	s.Set("c", "3") // written while closed
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Port() != port {
		t.Fatalf("restarted on port %d, was %d", s.Port(), port)
	}
	if got := rdb.MGet(ctx, "a", "b", "c").Val(); len(got) != 3 || got[0] != "1" || got[1] != "2" || got[2] != "3" {
		t.Fatalf("after Restart: %v", got)
	}
	if ttl := rdb.TTL(ctx, "b").Val(); ttl > 30*time.Minute || ttl < 29*time.Minute {
		t.Fatalf("TTL after Restart %v, want the moved clock's 30m", ttl)
	}
	if v := rdb.HGet(ctx, "h", "f").Val(); v != "v" {
		t.Fatalf("hash after Restart: %q", v)
	}
}

// New builds a server that does not listen; Listen opens it.
func TestNewThenListen(t *testing.T) {
	s, err := sluicetest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Set("early", "yes")
	if s.Addr() != "" {
		t.Fatalf("Addr before Listen: %q", s.Addr())
	}
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	if v := rdb.Get(context.Background(), "early").Val(); v != "yes" {
		t.Fatalf("GET early = %q", v)
	}
}

// LASTSAVE reads the server's clock at the save.
func TestLastSaveFollowsClock(t *testing.T) {
	s := sluicetest.Start(t, sluicetest.WithConfig("dir", t.TempDir()))
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetTime(at)
	if _, err := s.Do("SAVE"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Do("LASTSAVE"); err != nil || got.(int64) != at.Unix() {
		t.Fatalf("LASTSAVE = %v, %v; want %d", got, err, at.Unix())
	}
}
