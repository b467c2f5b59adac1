package store

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

// checkCount fails when the running count differs from a walk of every
// key with the collections' sizes recomputed.
func checkCount(t *testing.T, ks *Keyspace, when string) {
	t.Helper()
	got, want := ks.DatasetBytes(), ks.Recount()
	if got != want {
		t.Fatalf("%s: counted %d bytes, a recount finds %d", when, got, want)
	}
}

func TestAllocSize(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{0, 0}, {1, 8}, {8, 8}, {9, 16}, {24, 24}, {25, 32}, {64, 64}, {65, 80},
		{1000, 1024}, {32768, 32768}, {32769, 40960}, {1 << 20, 1 << 20},
	} {
		if got := AllocSize(c.n); got != int64(c.want) {
			t.Errorf("AllocSize(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// Strings: stored, overwritten with longer and shorter values, grown in
// place, turned into integers, given and cleared an expiry, deleted,
// replaced by other types, expired and flushed: the count follows.
func TestCountStrings(t *testing.T) {
	ks := New(2, 1)
	db := ks.DB(0)
	if ks.DatasetBytes() != 0 {
		t.Fatalf("empty keyspace counts %d", ks.DatasetBytes())
	}
	key := func(i int) []byte { return []byte("key:" + strconv.Itoa(i)) }
	for i := 0; i < 500; i++ {
		db.Add(key(i), NewString(make([]byte, i)))
	}
	checkCount(t, ks, "add")
	base := ks.DatasetBytes()
	if base < 500*(entryBytes+mapSlotBytes) {
		t.Fatalf("500 keys count only %d bytes", base)
	}
	for i := 0; i < 500; i++ {
		e := db.Lookup(key(i))
		switch i % 6 {
		case 0:
			e.SetBytes(make([]byte, 3*i+100))
		case 1:
			e.SetInt(int64(i))
		case 2:
			e.MutableRaw(i + 5000)
		case 3:
			db.SetExpire(key(i), e, ks.Now()+100000)
		case 4:
			e.SetRaw([]byte("x"))
		case 5:
			db.Set(key(i), NewString([]byte("replaced")), false)
		}
	}
	checkCount(t, ks, "in-place changes")
	for i := 0; i < 500; i += 3 {
		db.Delete(key(i))
	}
	checkCount(t, ks, "delete")
	// A key that expired is taken out when it is found.
	db.Add([]byte("short"), NewString([]byte("lived")))
	e := db.Lookup([]byte("short"))
	db.SetExpire([]byte("short"), e, ks.Now()-1)
	if db.Lookup([]byte("short")) != nil {
		t.Fatal("expired key still found")
	}
	checkCount(t, ks, "expire")
	// Detached entries report nothing.
	free := NewString([]byte("not stored"))
	before := ks.DatasetBytes()
	free.MutableRaw(100000)
	if ks.DatasetBytes() != before {
		t.Fatal("an entry outside the keyspace changed the count")
	}
	db.Flush()
	ks.DB(1).Add([]byte("other"), NewInt(1))
	checkCount(t, ks, "flush")
	ks.DB(1).Flush()
	if n := ks.DatasetBytes(); n != 0 {
		t.Fatalf("after flushing everything %d bytes are counted", n)
	}
}

// Collections of every type, changed through their methods at random
// while stored, then converted, replaced and deleted.
func TestCountCollections(t *testing.T) {
	ks := New(1, 1)
	db := ks.DB(0)
	r := rand.New(rand.NewPCG(1, 2))
	h, s, z, l, st := NewHash(), NewIntSet(), NewZSet(), NewList(-2), NewStream()
	db.Add([]byte("h"), NewHashEntry(h))
	db.Add([]byte("s"), NewSetEntry(s))
	db.Add([]byte("z"), NewObject(KindZSet, ptrOf(z)))
	db.Add([]byte("l"), NewObject(KindList, ptrOf(l)))
	db.Add([]byte("x"), NewStreamEntry(st))
	checkCount(t, ks, "empty collections")
	val := func() []byte { return make([]byte, r.IntN(100)) }
	id := StreamID{Ms: 1}
	var g *StreamGroup
	for i := 0; i < 5000; i++ {
		m := []byte(strconv.Itoa(r.IntN(300)))
		switch r.IntN(14) {
		case 0:
			h.Set(m, val(), 128, 64)
		case 1:
			h.Delete(m)
		case 2:
			s.Add(m, 512)
		case 3:
			s.Remove(m)
		case 4:
			if s.Len() > 0 {
				s.Pop(nil)
			}
		case 5:
			if sc, ok := z.Score(m); ok {
				z.SetScore(m, sc, float64(r.IntN(1000)))
			} else {
				z.Insert(m, float64(r.IntN(1000)))
			}
		case 6:
			z.Delete(m)
		case 7:
			if z.Len() > 10 {
				z.DeleteRange(2, 2+r.IntN(8), nil)
			}
		case 8:
			l.PushBack(val())
		case 9:
			l.PushFront(val())
		case 10:
			l.PopFront(nil)
			if l.Len() > 3 {
				l.Set(1, val())
			}
		case 11:
			id.Seq++
			st.Append(id, [][]byte{m, val()}, 100, 4096)
		case 12:
			if g == nil {
				g = st.CreateGroup([]byte("g"), StreamID{}, 0)
			}
			c := g.Consumer([]byte("c"))
			if c == nil {
				c = g.CreateConsumer([]byte("c"), 0)
			}
			nk := &StreamNACK{ID: StreamID{Ms: uint64(i)}}
			g.AddPending(nk)
			g.Assign(nk, c)
		case 13:
			st.Trim(TrimArgs{MaxLen: 50})
			if l.Len() > 5 {
				l.Remove(l.Index(2), 1)
			}
		}
		if i%250 == 0 {
			checkCount(t, ks, "step "+strconv.Itoa(i))
		}
	}
	checkCount(t, ks, "random changes")
	z.Convert()
	h.Convert()
	s.Convert()
	checkCount(t, ks, "conversions")
	e := db.Lookup([]byte("s"))
	e.SetObject(KindSet, ptrOf(s.Dup()))
	checkCount(t, ks, "SetObject")
	before := ks.DatasetBytes()
	s.Add([]byte("no longer stored"), 512) // the old set is out of the keyspace
	if ks.DatasetBytes() != before {
		t.Fatal("a collection replaced by SetObject still counts")
	}
	for _, k := range []string{"h", "s", "z", "l", "x"} {
		db.Delete([]byte(k))
	}
	if n := ks.DatasetBytes(); n != 0 {
		t.Fatalf("after deleting everything %d bytes are counted", n)
	}
}

// A big value counts about what it takes.
func TestCountSize(t *testing.T) {
	ks := New(1, 1)
	db := ks.DB(0)
	db.Add([]byte("big"), NewString(make([]byte, 1<<20)))
	if n := ks.DatasetBytes(); n < 1<<20 || n > 1<<20+200 {
		t.Fatalf("a 1 MiB string counts %d bytes", n)
	}
	l := NewList(-2)
	for i := 0; i < 10000; i++ {
		l.PushBack(make([]byte, 100))
	}
	db.Add([]byte("list"), NewObject(KindList, ptrOf(l)))
	if n := ks.DatasetBytes() - (1<<20 + 200); n < 1000000 || n > 1300000 {
		t.Fatalf("a list of 10000 100-byte elements counts %d bytes", n)
	}
}

// FlushAsync takes the keys out of the count in the background.
func TestCountFlushAsync(t *testing.T) {
	ks := New(1, 1)
	db := ks.DB(0)
	for i := 0; i < 1000; i++ {
		db.Add([]byte(strconv.Itoa(i)), NewString([]byte("value")))
	}
	db.FlushAsync()
	for i := 0; ks.DatasetBytes() != 0; i++ {
		if i > 5000 {
			t.Fatalf("%d bytes still counted after an async flush", ks.DatasetBytes())
		}
		sleepMs(1)
	}
}

func ptrOf[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

func sleepMs(n int) { time.Sleep(time.Duration(n) * time.Millisecond) }

// TestSwapDatabasesMovesTheCount: a dataset loaded into a keyspace of its
// own and swapped in (a replica's full sync) is counted by the keyspace
// that now holds it, and later changes to its keys change that count.
func TestSwapDatabasesMovesTheCount(t *testing.T) {
	live, aside := New(2, 2), New(2, 2)
	live.DB(0).Add([]byte("old"), NewString([]byte("value of the old dataset")))
	for i := 0; i < 300; i++ {
		aside.DB(i%2).Add([]byte(fmt.Sprintf("new:%d", i)), NewString(make([]byte, 100+i)))
	}
	oldBytes, newBytes := live.DatasetBytes(), aside.DatasetBytes()
	live.Lock.Lock()
	aside.Lock.Lock()
	live.SwapDatabases(aside)
	aside.Lock.Unlock()
	live.Lock.Unlock()
	if got := live.DatasetBytes(); got != newBytes {
		t.Fatalf("after the swap the live keyspace counts %d bytes, want the loaded %d", got, newBytes)
	}
	if got := aside.DatasetBytes(); got != oldBytes {
		t.Fatalf("after the swap the old dataset counts %d bytes, want %d", got, oldBytes)
	}
	checkCount(t, live, "swap")
	db := live.DB(1)
	for i := 1; i < 300; i += 2 {
		k := []byte(fmt.Sprintf("new:%d", i))
		if i%3 == 0 {
			db.Delete(k)
		} else {
			db.Lookup(k).SetBytes(make([]byte, 5000))
		}
	}
	checkCount(t, live, "changes after the swap")
	if got := aside.DatasetBytes(); got != oldBytes {
		t.Fatalf("changes to the swapped-in keys moved the old dataset's count to %d, want %d", got, oldBytes)
	}
	aside.DB(0).Flush()
	if got := aside.DatasetBytes(); got != 0 {
		t.Fatalf("the old dataset flushed still counts %d bytes", got)
	}
	checkCount(t, live, "old dataset flushed")
}
