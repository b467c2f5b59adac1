package store

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

func newTestDB(n int, prefix string) *DB {
	ks := New(1, 1)
	db := ks.DB(0)
	for i := 0; i < n; i++ {
		db.Add([]byte(prefix+strconv.Itoa(i)), NewInt(int64(i)))
	}
	return db
}

// The cursor relies on the string hash agreeing with the shard choice.
func TestKeyHashAgreesWithShard(t *testing.T) {
	for i := 0; i < 1000; i++ {
		k := "key:" + strconv.Itoa(i)
		if keyPos(k) != keyHash([]byte(k))>>16 {
			t.Fatalf("keyPos(%q) is not keyHash>>16", k)
		}
		if int(keyPos(k)>>(posBits-ShardBits)) != ShardOf([]byte(k)) {
			t.Fatalf("shard of %q disagrees", k)
		}
	}
}

// forBothScanPaths runs f with shards hashed on every call, then with
// every shard going through snapshots.
func forBothScanPaths(t *testing.T, f func(t *testing.T)) {
	t.Run("direct", f)
	t.Run("snapshots", func(t *testing.T) {
		old := snapMinKeys
		snapMinKeys = 0
		defer func() { snapMinKeys = old }()
		f(t)
	})
}

func TestScanCoversEveryKeyOnce(t *testing.T) { forBothScanPaths(t, testScanCoversEveryKeyOnce) }
func TestScanUnderChurn(t *testing.T)         { forBothScanPaths(t, testScanUnderChurn) }

func testScanCoversEveryKeyOnce(t *testing.T) {
	const n = 5000
	db := newTestDB(n, "k")
	for _, count := range []int{1, 7, 10, 100, 4999, 1 << 30} {
		seen := map[string]int{}
		cursor := uint64(0)
		calls := 0
		for {
			var keys []string
			keys, cursor = db.Scan(cursor, count, nil)
			calls++
			for _, k := range keys {
				seen[k]++
			}
			if cursor == 0 {
				break
			}
			if len(keys) < count {
				t.Fatalf("count %d: a call before the last returned %d keys", count, len(keys))
			}
			if calls > n+1 {
				t.Fatalf("count %d: iteration does not end", count)
			}
		}
		if len(seen) != n {
			t.Fatalf("count %d: saw %d distinct keys, want %d", count, len(seen), n)
		}
		for k, c := range seen {
			if c != 1 {
				t.Fatalf("count %d: key %s returned %d times", count, k, c)
			}
		}
		if count >= n && calls != 1 {
			t.Fatalf("count %d: %d calls for %d keys, want 1", count, calls, n)
		}
	}
}

func TestScanEmpty(t *testing.T) {
	db := New(1, 1).DB(0)
	keys, cursor := db.Scan(0, 10, nil)
	if len(keys) != 0 || cursor != 0 {
		t.Fatalf("empty db: %v %d", keys, cursor)
	}
}

// Keys present for the whole iteration are returned while others come and
// go between calls.
func testScanUnderChurn(t *testing.T) {
	db := newTestDB(3000, "stable:")
	for i := 0; i < 2000; i++ {
		db.Add([]byte("tmp:"+strconv.Itoa(i)), NewInt(1))
	}
	r := rand.New(rand.NewPCG(3, 4))
	seen := map[string]int{}
	cursor := uint64(0)
	added := 0
	for step := 0; ; step++ {
		var keys []string
		keys, cursor = db.Scan(cursor, 1+r.IntN(6), nil)
		for _, k := range keys {
			seen[k]++
		}
		if cursor == 0 {
			break
		}
		for j := 0; j < 2; j++ {
			db.Delete([]byte("tmp:" + strconv.Itoa(r.IntN(2000))))
			db.Add([]byte("new:"+strconv.Itoa(added)), NewInt(1))
			added++
		}
	}
	for i := 0; i < 3000; i++ {
		k := "stable:" + strconv.Itoa(i)
		if seen[k] != 1 {
			t.Fatalf("%s returned %d times", k, seen[k])
		}
	}
}

// A snapshot taken by an older iteration must not serve a newer one: a key
// added in between is present for the newer iteration's whole life.
func TestScanSnapshotEpochs(t *testing.T) {
	old := snapMinKeys
	snapMinKeys = 0
	defer func() { snapMinKeys = old }()
	db := newTestDB(2000, "k")
	// Iteration A takes snapshots of the first shards.
	_, curA := db.Scan(0, 3, nil)
	// Keys added now, in every shard.
	for i := 0; i < 2000; i++ {
		db.Add([]byte("late"+strconv.Itoa(i)), NewInt(1))
	}
	// Iteration B, interleaved with A, must see all 4000 keys.
	seenB := map[string]bool{}
	curB := uint64(0)
	for first := true; first || curB != 0; first = false {
		var keys []string
		keys, curB = db.Scan(curB, 3, nil)
		for _, k := range keys {
			seenB[k] = true
		}
		if curA != 0 {
			_, curA = db.Scan(curA, 2, nil)
		}
	}
	if len(seenB) != 4000 {
		t.Fatalf("iteration B saw %d keys, want 4000", len(seenB))
	}
	// Many iterations started since B (wrapping the cursor's epoch bits)
	// must not make B's cursor trust an older snapshot.
	for i := 0; i < 70000; i++ {
		db.Scan(0, 1, nil)
	}
	// A forged cursor is just a position: the iteration still ends.
	calls := 0
	for cur := uint64(0x7fff_1234_5678_9abc); cur != 0; calls++ {
		_, cur = db.Scan(cur, 100, nil)
		if calls > 100 {
			t.Fatal("forged cursor does not end")
		}
	}
}

func TestSelectSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for iter := 0; iter < 2000; iter++ {
		size := 2 + r.IntN(60)
		items := make([]scanItem, size)
		for i := range items {
			items[i].h = uint64(r.IntN(1 + r.IntN(20))) // many duplicates
		}
		hs := make([]uint64, size)
		for i, it := range items {
			hs[i] = it.h
		}
		slices.Sort(hs)
		n := 1 + r.IntN(size-1)
		selectSmallest(items, n)
		got := make([]uint64, n)
		for i := range got {
			got[i] = items[i].h
		}
		slices.Sort(got)
		if !slices.Equal(got, hs[:n]) {
			t.Fatalf("selectSmallest(n=%d): got %v, want %v", n, got, hs[:n])
		}
	}
}

func TestRandomKey(t *testing.T) {
	db := New(1, 1).DB(0)
	if _, _, ok := db.RandomKey(); ok {
		t.Fatal("RandomKey on an empty db")
	}
	db = newTestDB(5, "k")
	seen := map[string]bool{}
	for i := 0; i < 500; i++ {
		k, e, ok := db.RandomKey()
		if !ok || e == nil || db.Peek([]byte(k)) != e {
			t.Fatalf("RandomKey returned %q %v %v", k, e, ok)
		}
		seen[k] = true
	}
	if len(seen) != 5 {
		t.Fatalf("500 draws saw only %v", seen)
	}
}

func TestCloneString(t *testing.T) {
	for _, e := range []*Entry{NewInt(42), NewString([]byte("hello")), NewString([]byte("a value longer than forty-four bytes, so raw!!"))} {
		c := e.CloneString()
		if c == e || string(c.AppendTo(nil)) != string(e.AppendTo(nil)) || c.StringEncoding() != e.StringEncoding() {
			t.Fatalf("clone of %q: %q %s", e.AppendTo(nil), c.AppendTo(nil), c.StringEncoding())
		}
	}
	e := &Entry{}
	e.SetRaw([]byte("raw"))
	if c := e.CloneString(); c.StringEncoding() != "raw" || string(c.AppendTo(nil)) != "raw" {
		t.Fatal("raw clone")
	}
}

// BenchmarkScan1M measures one SCAN step (COUNT 10) on a 1M-key database.
// Run it by hand: go test ./store -run - -bench Scan1M
func BenchmarkScan1M(b *testing.B) {
	db := newTestDB(1_000_000, "key:")
	b.ResetTimer()
	cursor := uint64(0)
	var buf []string
	took := make([]time.Duration, b.N)
	for i := 0; i < b.N; i++ {
		start := time.Now()
		buf, cursor = db.Scan(cursor, 10, buf[:0])
		took[i] = time.Since(start)
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(took[len(took)*999/1000].Microseconds()), "p99.9-µs")
}

// While expiry is paused (CLIENT PAUSE) an expired key reads as absent but
// stays, active expiry removes nothing, and a key added in its place does
// not inherit its expiry.
func TestExpiryPaused(t *testing.T) {
	ks := New(1, 1)
	db := ks.DB(0)
	past := ks.Now() - 10
	db.AddExpire([]byte("a"), NewInt(1), past)
	db.AddExpire([]byte("b"), NewInt(2), past)
	ks.ExpiryPaused.Store(true)
	if db.Lookup([]byte("a")) != nil || db.Delete([]byte("a")) {
		t.Fatal("an expired key is live during the pause")
	}
	if n := ks.ExpireCycle(0, time.Second); n != 0 || db.Size() != 2 || ks.ExpiredKeys.Load() != 0 {
		t.Fatalf("removed %d, size %d, expired_keys %d during the pause", n, db.Size(), ks.ExpiredKeys.Load())
	}
	db.Add([]byte("b"), NewInt(3))
	ks.ExpiryPaused.Store(false)
	if db.Lookup([]byte("a")) != nil || ks.ExpiredKeys.Load() != 1 || db.Size() != 1 {
		t.Fatalf("after the pause: size %d, expired_keys %d", db.Size(), ks.ExpiredKeys.Load())
	}
	ks.ExpireCycle(0, time.Second)
	if e := db.Lookup([]byte("b")); e == nil || db.ExpireOf([]byte("b"), e) != 0 {
		t.Fatal("the key added during the pause lost its value or got the old expiry")
	}
}

// Active expiry and the volatile sample find keys given an expiry in any
// database, by either path (a key added with one, an expiry set on a
// key), also after the database was emptied, and skip one with none.
func TestExpireCycleAfterFlush(t *testing.T) {
	ks := New(4, 1)
	past := ks.Now() - 10
	for round := 0; round < 2; round++ {
		db := ks.DB(3)
		db.Add([]byte("plain"), NewInt(1))
		if n := db.Sample(true, 20, func(string, *Entry, int64) {}); n != 0 {
			t.Fatalf("round %d: sampled %d volatile keys in a database without any", round, n)
		}
		db.AddExpire([]byte("a"), NewInt(1), past)
		db.Add([]byte("b"), NewInt(2))
		db.SetExpire([]byte("b"), db.EntryOf("b"), past)
		if n := db.Sample(true, 20, func(string, *Entry, int64) {}); n != 2 {
			t.Fatalf("round %d: sampled %d volatile keys, want 2", round, n)
		}
		if n := ks.ExpireCycle(0, time.Second); n != 2 || db.Size() != 1 {
			t.Fatalf("round %d: expired %d, size %d", round, n, db.Size())
		}
		db.Flush()
	}
}
