package store

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testEnc encodes a string entry as: key length, key, value length,
// value, expiry.
func testEnc(dst, key []byte, e *Entry, exp int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	var tmp [24]byte
	v := e.Bytes(tmp[:0])
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	dst = append(dst, v...)
	return binary.AppendVarint(dst, exp)
}

type kv struct {
	val string
	exp int64
}

// collectSink decodes testEnc records per database.
type collectSink struct {
	t    *testing.T
	db   int
	dbs  map[int]map[string]kv
	keys int
	// during, when set, runs between chunks (no lock held).
	during func()
}

func (k *collectSink) DB(id, keys, expires int) error {
	k.db = id
	if k.dbs[id] != nil {
		k.t.Errorf("database %d started twice", id)
	}
	k.dbs[id] = map[string]kv{}
	return nil
}

func (k *collectSink) Records(b []byte, n int) error {
	for i := 0; i < n; i++ {
		l, m := binary.Uvarint(b)
		b = b[m:]
		key := string(b[:l])
		b = b[l:]
		l, m = binary.Uvarint(b)
		b = b[m:]
		val := string(b[:l])
		b = b[l:]
		exp, m := binary.Varint(b)
		b = b[m:]
		if _, dup := k.dbs[k.db][key]; dup {
			k.t.Errorf("key %q of db %d produced twice", key, k.db)
		}
		k.dbs[k.db][key] = kv{val, exp}
		k.keys++
	}
	if len(b) != 0 {
		k.t.Errorf("%d bytes left in a chunk of %d records", len(b), n)
	}
	if k.during != nil {
		k.during()
	}
	return nil
}

// imageOf is the expected image: every key live at now, read under the
// exclusive lock.
func imageOf(ks *Keyspace, now int64) map[int]map[string]kv {
	out := map[int]map[string]kv{}
	for i, db := range *ks.dbs.Load() {
		m := map[string]kv{}
		for j := range db.shards {
			s := &db.shards[j]
			s.m.each(func(k string, e *Entry) bool {
				var exp int64
				if e.vol {
					if exp = s.vol[k]; exp <= now {
						return true
					}
				}
				m[k] = kv{string(e.Bytes(nil)), exp}
				return true
			})
		}
		if len(m) > 0 {
			out[i] = m
		}
	}
	return out
}

func compareImages(t *testing.T, got, want map[int]map[string]kv) {
	t.Helper()
	bad := 0
	for db, wm := range want {
		gm := got[db]
		for k, w := range wm {
			if g, ok := gm[k]; !ok || g != w {
				if bad++; bad <= 10 {
					t.Errorf("db %d key %q: got %+v (present %v), want %+v", db, k, g, ok, w)
				}
			}
		}
		for k, g := range gm {
			if _, ok := wm[k]; !ok {
				if bad++; bad <= 10 {
					t.Errorf("db %d key %q: %+v not in the image at the cut", db, k, g)
				}
			}
		}
	}
	for db, gm := range got {
		if want[db] == nil && len(gm) > 0 {
			t.Errorf("db %d: %d keys, none at the cut", db, len(gm))
		}
	}
	if bad > 10 {
		t.Errorf("... %d differences in all", bad)
	}
}

// TestSnapshotPointInTime: writers change, replace, delete, expire and
// create keys, and flush and swap databases, while a snapshot is walked
// in small chunks; the walk must produce exactly the keys and values of
// the cut.
func TestSnapshotPointInTime(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) { snapshotRound(t, int64(round)) })
	}
}

func snapshotRound(t *testing.T, seed int64) {
	const writers = 3
	ks := New(4, writers+2)
	walkSlot := writers + 1
	now := ks.Now()
	for d := range 3 {
		db := ks.DB(d)
		for i := range 20000 {
			k := []byte(fmt.Sprintf("k%d", i))
			var exp int64
			switch i % 10 {
			case 0:
				exp = now + 1 + int64(i%200) // expiring during the walk
			case 1:
				exp = now + 3600_000
			}
			db.AddExpire(k, NewString([]byte(fmt.Sprintf("v%d-%d", d, i))), exp)
		}
	}
	ks.Lock.Lock()
	sn, err := ks.BeginSnapshot(testEnc, testEnc, walkSlot)
	if err != nil {
		t.Fatal(err)
	}
	want := imageOf(ks, sn.Time())
	if _, err := ks.BeginSnapshot(testEnc, testEnc, walkSlot); err != ErrSnapshotBusy {
		t.Errorf("second snapshot: %v", err)
	}
	ks.Lock.Unlock()

	var stop atomic.Bool
	var ops atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
			for n := 0; !stop.Load(); n++ {
				db := ks.DB(r.IntN(4))
				k := []byte(fmt.Sprintf("k%d", r.IntN(25000)))
				op := r.IntN(100)
				if op == 0 && n%50 == 0 {
					// Keyspace-wide changes, under the exclusive lock.
					ks.Lock.Lock()
					if r.IntN(2) == 0 {
						db.Flush()
					} else {
						ks.Swap(r.IntN(4), r.IntN(4))
					}
					ks.Lock.Unlock()
					continue
				}
				ks.Lock.RLock(w)
				i := ShardOf(k)
				db.LockShard(i)
				switch {
				case op < 40: // change in place, as a command does after Capture
					db.Capture(k)
					if e := db.Lookup(k); e != nil {
						e.SetBytes([]byte(fmt.Sprintf("inplace%d-%d", w, n)))
					}
				case op < 60:
					db.Set(k, NewString([]byte(fmt.Sprintf("set%d-%d", w, n))), r.IntN(2) == 0)
				case op < 75:
					db.Delete(k)
				case op < 85:
					if e := db.Lookup(k); e != nil {
						db.SetExpire(k, e, ks.Now()+int64(r.IntN(50)))
					}
				case op < 95:
					if !db.Exists(k) {
						db.Delete(k)
						db.AddExpire(k, NewString([]byte("new")), 0)
					}
				default:
					db.IsExpired(k)
				}
				db.UnlockShard(i)
				ks.Lock.RUnlock(w)
				ops.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			ks.ExpireCycle(writers, time.Millisecond)
			time.Sleep(time.Millisecond)
		}
	}()
	sink := &collectSink{t: t, dbs: map[int]map[string]kv{}}
	chunks := 0
	sink.during = func() {
		if chunks++; chunks%64 == 0 {
			time.Sleep(100 * time.Microsecond) // let the writers get ahead
		}
	}
	sn.ChunkKeys = 16
	err = sn.Walk(sink, nil)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if ks.Snapshotting() {
		t.Error("snapshot still running after its walk")
	}
	t.Logf("%d keys at the cut, %d writes during the walk, %d keys captured by writers, COW peak %d bytes", sn.Keys(), ops.Load(), sn.Captured(), sn.COWPeak())
	if ops.Load() < 1000 || sn.Captured() == 0 {
		t.Errorf("the writers did too little to test anything: %d writes, %d captures", ops.Load(), sn.Captured())
	}
	compareImages(t, sink.dbs, want)

	// The next snapshot sees the dataset as it is now.
	ks.Lock.Lock()
	sn, err = ks.BeginSnapshot(testEnc, testEnc, walkSlot)
	if err != nil {
		t.Fatal(err)
	}
	want = imageOf(ks, sn.Time())
	ks.Lock.Unlock()
	sink = &collectSink{t: t, dbs: map[int]map[string]kv{}}
	if err := sn.Walk(sink, nil); err != nil {
		t.Fatal(err)
	}
	compareImages(t, sink.dbs, want)
}

// TestSnapshotAbortAndEpochs: aborted snapshots leave entries with older
// epochs behind; after more than 255 of them the next snapshot must still
// produce every key.
func TestSnapshotAbortAndEpochs(t *testing.T) {
	ks := New(1, 1)
	db := ks.DB(0)
	for i := range 1000 {
		db.Add([]byte(fmt.Sprint(i)), NewString([]byte("v")))
	}
	stopErr := fmt.Errorf("stop")
	for round := range 600 {
		ks.Lock.Lock()
		sn, err := ks.BeginSnapshot(testEnc, testEnc, 0)
		ks.Lock.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		sink := &collectSink{t: t, dbs: map[int]map[string]kv{}}
		if round%7 == 3 {
			// A complete walk now and then.
			if err := sn.Walk(sink, nil); err != nil {
				t.Fatal(err)
			}
			if sink.keys != 1000 {
				t.Fatalf("round %d: %d keys", round, sink.keys)
			}
			continue
		}
		// Abort after a few keys (a different number each time).
		sn.ChunkKeys = 1
		left := round % 50
		sink.during = func() {}
		err = sn.Walk(abortSink{sink, &left, stopErr}, nil)
		if err != stopErr {
			t.Fatalf("round %d: %v", round, err)
		}
		if ks.Snapshotting() {
			t.Fatal("aborted snapshot still running")
		}
	}
	// 255 aborts in a row, then a complete one.
	for range 300 {
		ks.Lock.Lock()
		sn, _ := ks.BeginSnapshot(testEnc, testEnc, 0)
		ks.Lock.Unlock()
		sn.Abort()
		if err := sn.Walk(&collectSink{t: t, dbs: map[int]map[string]kv{}}, nil); err != ErrSnapshotAborted {
			t.Fatalf("walk of an aborted snapshot: %v", err)
		}
	}
	ks.Lock.Lock()
	sn, _ := ks.BeginSnapshot(testEnc, testEnc, 0)
	ks.Lock.Unlock()
	sink := &collectSink{t: t, dbs: map[int]map[string]kv{}}
	if err := sn.Walk(sink, nil); err != nil || sink.keys != 1000 {
		t.Fatalf("after many aborts: %d keys, %v", sink.keys, err)
	}
}

type abortSink struct {
	*collectSink
	left *int
	err  error
}

func (a abortSink) Records(b []byte, n int) error {
	if *a.left <= 0 {
		return a.err
	}
	*a.left -= n
	return a.collectSink.Records(b, n)
}

// TestSnapshotCancelWhileLocked: a canceller that holds the keyspace
// exclusively and waits for the walk to end is not deadlocked.
func TestSnapshotCancelWhileLocked(t *testing.T) {
	ks := New(1, 2)
	db := ks.DB(0)
	for i := range 10000 {
		db.Add([]byte(fmt.Sprint(i)), NewString([]byte("v")))
	}
	ks.Lock.Lock()
	sn, _ := ks.BeginSnapshot(testEnc, testEnc, 1)
	ks.Lock.Unlock()
	cancel := make(chan struct{})
	done := make(chan error)
	started := make(chan struct{})
	sn.ChunkKeys = 1
	go func() {
		once := false
		sink := &collectSink{t: t, dbs: map[int]map[string]kv{}, during: func() {
			if !once {
				once = true
				close(started)
			}
		}}
		done <- sn.Walk(sink, cancel)
	}()
	<-started
	ks.Lock.Lock()
	close(cancel)
	select {
	case err := <-done:
		if err != ErrSnapshotAborted {
			t.Errorf("walk: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the walk did not end while the canceller held the keyspace")
	}
	ks.Lock.Unlock()
}

// TestWalkLocked: the synchronous walk reads the live dataset, also while
// a snapshot runs, without disturbing it.
func TestWalkLocked(t *testing.T) {
	ks := New(2, 2)
	for i := range 500 {
		ks.DB(1).Add([]byte(fmt.Sprint(i)), NewString([]byte("old")))
	}
	ks.Lock.Lock()
	sn, _ := ks.BeginSnapshot(testEnc, testEnc, 1)
	want := imageOf(ks, sn.Time())
	db := ks.DB(1)
	db.Capture([]byte("7"))
	db.Lookup([]byte("7")).SetBytes([]byte("new"))
	db.Set([]byte("8"), NewString([]byte("new")), false)
	live := imageOf(ks, ks.Now())
	sink := &collectSink{t: t, dbs: map[int]map[string]kv{}}
	if err := ks.WalkLocked(testEnc, sink, false); err != nil {
		t.Fatal(err)
	}
	compareImages(t, sink.dbs, live)
	ks.Lock.Unlock()
	sink = &collectSink{t: t, dbs: map[int]map[string]kv{}}
	if err := sn.Walk(sink, nil); err != nil {
		t.Fatal(err)
	}
	compareImages(t, sink.dbs, want)
}

// TestMapIterationWithChanges checks what the walk relies on in Go's
// maps: a range loop whose body lets other goroutines change the map
// (synchronized by a lock) produces every key present for the whole loop
// exactly once, whatever is added or removed meanwhile, growth included.
func TestMapIterationWithChanges(t *testing.T) {
	for round := range 5 {
		var mu sync.Mutex
		m := map[string]int{}
		const stable = 5000
		for i := range stable {
			m[fmt.Sprint("s", i)] = i
		}
		for i := range 1000 {
			m[fmt.Sprint("t", i)] = i
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(round), 1))
			for n := 0; !stop.Load(); n++ {
				mu.Lock()
				for range 8 {
					if r.IntN(3) == 0 {
						delete(m, fmt.Sprint("t", r.IntN(1000+n)))
					} else {
						m[fmt.Sprint("t", 1000+n)] = n // grows the map
					}
				}
				mu.Unlock()
			}
		}()
		seen := map[string]int{}
		mu.Lock()
		i := 0
		for k := range m {
			seen[k]++
			if i++; i%7 == 0 {
				mu.Unlock()
				runtime.Gosched()
				mu.Lock()
			}
		}
		mu.Unlock()
		stop.Store(true)
		wg.Wait()
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("key %s produced %d times", k, n)
			}
		}
		for i := range stable {
			if seen[fmt.Sprint("s", i)] != 1 {
				t.Fatalf("stable key s%d not produced", i)
			}
		}
	}
}
