package watch

import (
	"testing"
	"time"

	"github.com/sluicedb/sluice/store"
)

func str(v string) *store.Entry { return store.NewString([]byte(v)) }

// past is an expiry long gone, future one far ahead (unix ms).
const past, future = 1, 1 << 50

// TestTouch: a change to a watched key makes its watchers dirty, and only
// them; the same key in another database is another key; watching a key
// twice keeps one watch; UnwatchAll forgets the watches and the verdict.
func TestTouch(t *testing.T) {
	ks := store.New(16, 0)
	db0, db1 := ks.DB(0), ks.DB(1)
	var r Registry
	var a, b State
	r.Watch(&a, db0, []byte("k"))
	r.Watch(&a, db0, []byte("k"))
	r.Watch(&b, db0, []byte("other"))
	if a.Len() != 1 || r.count.Load() != 2 {
		t.Fatalf("len %d, count %d", a.Len(), r.count.Load())
	}
	r.Touch(db1, []byte("k"))
	if a.Dirty() {
		t.Fatal("k of db 1 touched k of db 0")
	}
	db0.Add([]byte("k"), str("v"))
	r.Touch(db0, []byte("k"))
	if !a.Dirty() || b.Dirty() {
		t.Fatalf("a dirty %v, b dirty %v", a.Dirty(), b.Dirty())
	}
	r.UnwatchAll(&a)
	r.UnwatchAll(&b)
	if a.Dirty() || a.Len() != 0 || r.count.Load() != 0 || len(r.keys) != 0 {
		t.Fatalf("after UnwatchAll: dirty %v, len %d, count %d", a.Dirty(), a.Len(), r.count.Load())
	}
	r.Touch(db0, []byte("k"))
	if a.Dirty() {
		t.Fatal("an unwatched key made its former watcher dirty")
	}
}

// TestTouchStale: a key already expired when watched that then goes
// away has not changed (the watch only loses its mark); created again,
// it has.
func TestTouchStale(t *testing.T) {
	ks := store.New(16, 0)
	db := ks.DB(0)
	db.AddExpire([]byte("k"), str("v"), past)
	var r Registry
	var s State
	r.Watch(&s, db, []byte("k"))
	db.Delete([]byte("k")) // the expiry removes it
	r.Touch(db, []byte("k"))
	if s.Dirty() {
		t.Fatal("a stale key's removal made the watch dirty")
	}
	db.Add([]byte("k"), str("v"))
	r.Touch(db, []byte("k"))
	if !s.Dirty() {
		t.Fatal("the key's creation left the watch clean")
	}
}

// TestExpired: a key live when watched that expires before EXEC fails
// it; one already expired when watched does not.
func TestExpired(t *testing.T) {
	ks := store.New(16, 0)
	now := time.UnixMilli(1_000_000)
	ks.Clock().Set(now)
	db := ks.DB(0)
	db.AddExpire([]byte("live"), str("v"), now.UnixMilli()+100)
	db.AddExpire([]byte("stale"), str("v"), past)
	var r Registry
	var a, b State
	r.Watch(&a, db, []byte("live"))
	r.Watch(&b, db, []byte("stale"))
	if r.Expired(&a, ks) || r.Expired(&b, ks) {
		t.Fatal("expired before the clock moved")
	}
	ks.Clock().Advance(time.Second)
	if !r.Expired(&a, ks) {
		t.Error("a key that expired since WATCH did not count")
	}
	if r.Expired(&b, ks) {
		t.Error("a key stale when watched counted")
	}
}

// TestTouchDB follows Redis's touchAllWatchedKeysInDb for FLUSHDB
// (replaced nil) and SWAPDB, one watched key each.
func TestTouchDB(t *testing.T) {
	type side int
	const (
		none side = iota
		live
		stale
	)
	put := func(db *store.DB, v side) {
		switch v {
		case live:
			db.AddExpire([]byte("k"), str("v"), future)
		case stale:
			db.AddExpire([]byte("k"), str("v"), past)
		}
	}
	for _, c := range []struct {
		name             string
		watched          side // what database 0 held at WATCH, and empties
		replaced         side // what takes its place (SWAPDB)
		flush            bool
		dirty, staleMark bool
	}{
		{"flush live", live, none, true, true, false},
		{"flush stale", stale, none, true, false, false},
		{"flush missing", none, none, true, false, false},
		{"swap live for nothing", live, none, false, true, false},
		{"swap live for live", live, live, false, true, false},
		{"swap live for stale", live, stale, false, true, false},
		{"swap stale for nothing", stale, none, false, false, false},
		{"swap stale for stale", stale, stale, false, false, true},
		{"swap stale for live", stale, live, false, true, true},
		{"swap nothing for live", none, live, false, true, false},
		{"swap nothing for stale", none, stale, false, false, true},
		{"swap nothing for nothing", none, none, false, false, false},
	} {
		ks := store.New(16, 0)
		emptied, other := ks.DB(0), ks.DB(1)
		put(emptied, c.watched)
		put(other, c.replaced)
		var r Registry
		var s State
		r.Watch(&s, emptied, []byte("k"))
		if c.flush {
			r.TouchDB(0, emptied, nil)
		} else {
			r.TouchDB(0, emptied, other)
		}
		if s.Dirty() != c.dirty {
			t.Errorf("%s: dirty %v, want %v", c.name, s.Dirty(), c.dirty)
		}
		if !c.dirty && s.keys[0].expired != c.staleMark {
			t.Errorf("%s: stale mark %v, want %v", c.name, s.keys[0].expired, c.staleMark)
		}
	}
}

// TestShards: what EXEC locks and whether it needs the whole keyspace.
func TestShards(t *testing.T) {
	ks := store.New(16, 0)
	var r Registry
	var s State
	if !s.OnlyIn(3) {
		t.Error("no watches: not only in db 3")
	}
	r.Watch(&s, ks.DB(0), []byte("a"))
	r.Watch(&s, ks.DB(0), []byte("b"))
	var got, want store.ShardSet
	s.AddShards(&got)
	want.Add([]byte("a"))
	want.Add([]byte("b"))
	if got != want {
		t.Error("AddShards added other shards")
	}
	if !s.OnlyIn(0) || s.OnlyIn(1) {
		t.Error("OnlyIn with keys of db 0")
	}
	r.Watch(&s, ks.DB(1), []byte("a"))
	if s.OnlyIn(0) {
		t.Error("OnlyIn(0) with a key of db 1")
	}
}
