package store

import (
	"math"
	"strconv"
	"testing"
	"time"
)

func TestParsePolicy(t *testing.T) {
	for v, want := range map[string]int64{
		"volatile-lru":    PolicyLRU,
		"volatile-lfu":    PolicyLFU,
		"volatile-ttl":    PolicyTTL,
		"volatile-random": PolicyRandom,
		"allkeys-lru":     PolicyAllKeys | PolicyLRU,
		"allkeys-lfu":     PolicyAllKeys | PolicyLFU,
		"allkeys-random":  PolicyAllKeys | PolicyRandom,
		"noeviction":      PolicyNoEviction,
		"allkeys-ttl":     PolicyNoEviction,
	} {
		if got := ParsePolicy(v); got != want {
			t.Errorf("ParsePolicy(%q) = %b, want %b", v, got, want)
		}
	}
}

func TestEvictionTimeLimit(t *testing.T) {
	for _, c := range []struct {
		tenacity int64
		want     time.Duration
	}{
		{0, 0},
		{1, 50 * time.Microsecond},
		{10, 500 * time.Microsecond},
		{11, 575 * time.Microsecond},
		{99, time.Duration(500*math.Pow(1.15, 89)) * time.Microsecond},
		{100, math.MaxInt64},
	} {
		if got := EvictionTimeLimit(c.tenacity); got != c.want {
			t.Errorf("EvictionTimeLimit(%d) = %v, want %v", c.tenacity, got, c.want)
		}
	}
}

// The pool stays sorted by ascending score (the best candidate last); a
// full pool drops its worst for a better key and ignores worse ones; a
// key already in it is not added twice.
func TestPoolInsert(t *testing.T) {
	var ev Evictor
	type in struct {
		dbi   int
		key   string
		score uint64
	}
	check := func(step string, want ...string) {
		t.Helper()
		var got []string
		for _, p := range ev.pool {
			if p.key != "" {
				got = append(got, strconv.Itoa(p.dbi)+p.key+"="+strconv.FormatUint(p.score, 10))
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s: pool %v, want %v", step, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: pool %v, want %v", step, got, want)
			}
		}
	}
	for _, p := range []in{{0, "b", 20}, {0, "a", 10}, {0, "c", 30}, {1, "a", 15}, {0, "a", 99}} {
		ev.insert(p.dbi, p.key, p.score)
	}
	check("partial", "0a=10", "1a=15", "0b=20", "0c=30")
	for i := 0; i < PoolSize-4; i++ {
		ev.insert(2, "k"+strconv.Itoa(i), uint64(100+i))
	}
	if ev.pool[PoolSize-1].key == "" {
		t.Fatal("pool not full")
	}
	ev.insert(3, "worst", 1)
	if ev.pool[0].key != "a" || ev.pool[0].score != 10 {
		t.Errorf("a worse key entered a full pool: %v", ev.pool[0])
	}
	ev.insert(3, "mid", 25)
	// The worst (0a=10) drops out; mid goes between 0b=20 and 0c=30.
	check("full", append([]string{"1a=15", "0b=20", "3mid=25", "0c=30"}, func() []string {
		var rest []string
		for i := 0; i < PoolSize-4; i++ {
			rest = append(rest, "2k"+strconv.Itoa(i)+"="+strconv.Itoa(100+i))
		}
		return rest
	}()...)...)
	ev.insert(3, "best", 1000)
	if p := ev.pool[PoolSize-1]; p.key != "best" || ev.pool[0].key != "b" {
		t.Errorf("best %v, worst %v", p, ev.pool[0])
	}
}

func TestEvictScore(t *testing.T) {
	ks := New(1, 1)
	e := NewInt(1)
	e.SetLRU(ks.LRUClock() - 100)
	if got := ks.evictScore(PolicyLRU, e, 0); got != 100 {
		t.Errorf("LRU idle 100 s: score %d", got)
	}
	e.SetLRU(ks.LRUClock() + 5) // a clock ahead of the key's: not idle
	if got := ks.evictScore(PolicyAllKeys|PolicyLRU, e, 0); got != 0 {
		t.Errorf("LRU ahead: score %d", got)
	}
	e.SetLRU(ks.LFUValue(10))
	if got := ks.evictScore(PolicyLFU, e, 0); got != 245 {
		t.Errorf("LFU counter 10: score %d", got)
	}
	soon, late := ks.evictScore(PolicyTTL, e, 1000), ks.evictScore(PolicyTTL, e, 2000)
	if soon <= late || soon != math.MaxUint64-1000 {
		t.Errorf("TTL scores %d (sooner) %d (later)", soon, late)
	}
}

// Next evicts across databases in the policy's order: for volatile-ttl
// the keys that expire soonest, never a key without an expiry.
func TestEvictorNext(t *testing.T) {
	ks := New(2, 1)
	now := ks.Now()
	ks.DB(0).AddExpire([]byte("late"), NewInt(1), now+300_000)
	ks.DB(1).AddExpire([]byte("soon"), NewInt(1), now+100_000)
	ks.DB(0).AddExpire([]byte("mid"), NewInt(1), now+200_000)
	ks.DB(1).Set([]byte("persistent"), NewInt(1), false)
	var ev Evictor
	var deleted []string
	del := func(dbi int, key string, volatile bool) string {
		if !volatile {
			t.Error("volatile-ttl deletes as allkeys")
		}
		if !ks.DB(dbi).Delete([]byte(key)) {
			return ""
		}
		deleted = append(deleted, strconv.Itoa(dbi)+key)
		return key
	}
	for range 3 {
		if _, _, ok := ev.Next(ks, PolicyTTL, 5, del); !ok {
			t.Fatal("nothing to evict")
		}
	}
	if want := []string{"1soon", "0mid", "0late"}; len(deleted) != 3 || deleted[0] != want[0] || deleted[1] != want[1] || deleted[2] != want[2] {
		t.Errorf("evicted %v, want %v", deleted, want)
	}
	if _, _, ok := ev.Next(ks, PolicyTTL, 5, del); ok {
		t.Error("evicted a key without an expiry")
	}
	if !ev.nothingLeft || !ev.emptyDB[0] || !ev.emptyDB[1] {
		t.Errorf("nothing left %v, empty %v", ev.nothingLeft, ev.emptyDB)
	}
	// A database written to since it was found empty is looked at again.
	ks.DB(0).AddExpire([]byte("new"), NewInt(1), now+1000)
	if dbi, key, ok := ev.Next(ks, PolicyTTL, 5, del); !ok || dbi != 0 || key != "new" {
		t.Errorf("after a write: %d %q %v", dbi, key, ok)
	}
	// allkeys-random goes round the databases. (A fresh Evictor: this one
	// takes both databases for empty for emptyDBRecent.)
	ev = Evictor{}
	deleted = nil
	ks.DB(0).Set([]byte("x"), NewInt(1), false)
	for range 2 {
		if _, _, ok := ev.Next(ks, PolicyAllKeys|PolicyRandom, 5, func(dbi int, key string, volatile bool) string {
			if volatile {
				t.Error("allkeys-random deletes as volatile")
			}
			return del(dbi, key, true)
		}); !ok {
			t.Fatal("allkeys-random found nothing")
		}
	}
	if len(deleted) != 2 || deleted[0][0] == deleted[1][0] {
		t.Errorf("allkeys-random evicted %v (one per database)", deleted)
	}
}
