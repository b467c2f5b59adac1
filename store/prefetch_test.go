package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestPrefetcherFinds checks that Run walks each key's chain to its entry:
// it finds the keys that are there, in the database each was queued for,
// and not those that are not.
func TestPrefetcherFinds(t *testing.T) {
	if !prefetchOn {
		t.Skip("Run does nothing under the race detector")
	}
	ks := New(2, 2)
	db0, db1 := ks.DB(0), ks.DB(1)
	for i := range 10_000 {
		db0.Add([]byte(fmt.Sprintf("key:%d", i)), NewString([]byte("v")))
	}
	var p Prefetcher
	for i := range PrefetchMax {
		if !p.Add(db0, []byte(fmt.Sprintf("key:%d", i*97))) {
			t.Fatalf("batch full after %d keys", i)
		}
	}
	if p.Add(db0, []byte("one too many")) {
		t.Fatalf("a batch takes more than %d keys", PrefetchMax)
	}
	// A key is missed only when a probe is longer than Run follows.
	if got := p.Run(ks, 0); got < PrefetchMax*9/10 {
		t.Fatalf("found %d of %d keys that are there", got, PrefetchMax)
	}
	if p.Len() != 0 {
		t.Fatalf("%d keys left queued after Run", p.Len())
	}
	for i := range PrefetchMax {
		p.Add(db1, []byte(fmt.Sprintf("key:%d", i)))
	}
	if got := p.Run(ks, 1); got != 0 {
		t.Fatalf("found %d keys in an empty database", got)
	}
	for i := range PrefetchMax {
		p.Add(db0, []byte(fmt.Sprintf("absent:%d", i)))
	}
	// Only a tag that matches by chance (1 in 254 a slot) finds an entry.
	if got := p.Run(ks, 0); got > 4 {
		t.Fatalf("found %d entries for %d keys that are not there", got, PrefetchMax)
	}
	// With a writer holding the keyspace (FLUSHALL, SWAPDB), Run leaves
	// the shards alone and returns at once.
	ks.Lock.Lock()
	p.Add(db0, []byte("key:1"))
	p.Add(db0, []byte("key:2"))
	if got := p.Run(ks, 0); got != 0 || p.Len() != 0 {
		t.Fatalf("with the keyspace held: found %d, %d left queued", got, p.Len())
	}
	ks.Lock.Unlock()
}

// TestPrefetcherWhileTablesChange runs Prefetchers while other goroutines
// grow and shrink the same shards' tables, as other loops' commands do,
// and then checks the keyspace. Run reads the tables without their locks;
// it must never read outside a table's arrays, whatever it sees.
func TestPrefetcherWhileTablesChange(t *testing.T) {
	if !prefetchOn {
		t.Skip("Run does nothing under the race detector")
	}
	ks := New(1, 3)
	db := ks.DB(0)
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%d", i)) }
	var stop atomic.Bool
	var wg sync.WaitGroup
	var runs atomic.Int64
	for slot := 1; slot <= 2; slot++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p Prefetcher
			for i := 0; !stop.Load(); i++ {
				for j := range PrefetchMax {
					p.Add(db, key((i*PrefetchMax+j)%20_000))
				}
				p.Run(ks, slot)
				runs.Add(1)
			}
		}()
	}
	// Fill and empty the keyspace again and again: every shard's table
	// grows from nothing and shrinks back, many times.
	for round := 0; round < 20 || runs.Load() < 1000; round++ {
		for i := range 20_000 {
			k := key(i)
			s := ShardOf(k)
			db.LockShard(s)
			db.Add(k, NewString(k))
			db.UnlockShard(s)
		}
		for i := range 20_000 {
			k := key(i)
			s := ShardOf(k)
			db.LockShard(s)
			if !db.Delete(k) {
				db.UnlockShard(s)
				t.Fatalf("round %d: %s was lost", round, k)
			}
			db.UnlockShard(s)
		}
		if round > 1000 {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := db.Size(); n != 0 {
		t.Fatalf("%d keys left after deleting them all", n)
	}
}
