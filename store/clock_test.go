package store

import (
	"testing"
	"time"
)

func TestClockFollowsWallClockUntilMoved(t *testing.T) {
	var c Clock
	before := time.Now().UnixMilli()
	got := c.UnixMilli()
	after := time.Now().UnixMilli()
	if got < before || got > after {
		t.Fatalf("unmoved clock read %d, wall clock was %d..%d", got, before, after)
	}
	c.Advance(time.Hour)
	if d := c.UnixMilli() - time.Now().UnixMilli(); d < 3599_000 || d > 3601_000 {
		t.Fatalf("after Advance(1h) the clock is %d ms ahead", d)
	}
	if c.Frozen() {
		t.Fatal("an advanced clock stands still")
	}
}

func TestClockSetStandsStillUntilAdvanced(t *testing.T) {
	var c Clock
	at := time.Date(2020, 1, 2, 3, 4, 5, 678_901_000, time.UTC)
	c.Set(at)
	time.Sleep(2 * time.Millisecond)
	if got := c.Now(); !got.Equal(at) {
		t.Fatalf("set clock reads %v, want %v", got, at)
	}
	c.Advance(1500 * time.Millisecond)
	if got, want := c.UnixMilli(), at.Add(1500*time.Millisecond).UnixMilli(); got != want {
		t.Fatalf("after Advance: %d, want %d", got, want)
	}
	c.Set(time.Time{})
	if c.Frozen() || time.Since(c.Now()).Abs() > time.Second {
		t.Fatalf("Set(zero) did not give the clock back to the wall clock: %v", c.Now())
	}
}

// A key with 30 s left is live after the clock moves 29 s and gone after
// 2 s more, for lookups, Exists, and the sweep.
func TestExpiryFollowsKeyspaceClock(t *testing.T) {
	ks := New(1, 1)
	db := ks.DB(0)
	ks.Clock().Set(time.Unix(1_000_000, 0))
	db.AddExpire([]byte("k"), NewInt(1), ks.Now()+30_000)
	ks.Clock().Advance(29 * time.Second)
	if db.Lookup([]byte("k")) == nil || !db.Exists([]byte("k")) {
		t.Fatal("key gone after 29 of its 30 s")
	}
	if n := ks.ExpireAll(0); n != 0 {
		t.Fatalf("ExpireAll removed %d live keys", n)
	}
	ks.Clock().Advance(2 * time.Second)
	if db.Exists([]byte("k")) || !db.IsExpired([]byte("k")) {
		t.Fatal("key live after 31 of its 30 s")
	}
	if n := ks.ExpireAll(0); n != 1 || db.Size() != 0 || ks.ExpiredKeys.Load() != 1 {
		t.Fatalf("ExpireAll removed %d, size %d, expired_keys %d", n, db.Size(), ks.ExpiredKeys.Load())
	}
}

// Two keyspaces keep separate clocks.
func TestClocksArePerKeyspace(t *testing.T) {
	a, b := New(1, 1), New(1, 1)
	a.Clock().Advance(24 * time.Hour)
	if d := a.Now() - b.Now(); d < 86_399_000 {
		t.Fatalf("keyspace a is %d ms ahead of b, want a day", d)
	}
	if a.LRUClock()-b.LRUClock() < 86_399 {
		t.Fatalf("LRU clocks %d and %d: a's did not move", a.LRUClock(), b.LRUClock())
	}
}

func BenchmarkClockUnixMilli(b *testing.B) {
	var c Clock
	for b.Loop() {
		c.UnixMilli()
	}
}

func BenchmarkWallUnixMilli(b *testing.B) {
	for b.Loop() {
		_ = time.Now().UnixMilli()
	}
}

func TestClockFreezeAndRun(t *testing.T) {
	var c Clock
	c.Advance(time.Hour)
	c.Freeze()
	at := c.Now()
	time.Sleep(3 * time.Millisecond)
	if !c.Now().Equal(at) || !c.Frozen() {
		t.Fatal("a frozen clock moved")
	}
	c.Run()
	time.Sleep(3 * time.Millisecond)
	if d := c.Now().Sub(at); d < 3*time.Millisecond || d > time.Minute {
		t.Fatalf("running again, the clock moved %v from where it stood", d)
	}
}
