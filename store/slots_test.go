package store

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

func slotByFirstByte(key string) int {
	if key == "" {
		return 0
	}
	return int(key[0])
}

func withShard(db *DB, key string, fn func()) {
	i := ShardOf([]byte(key))
	db.LockShard(i)
	fn()
	db.UnlockShard(i)
}

func TestSlotIndex(t *testing.T) {
	ks := New(2, 1)
	ks.EnableSlotIndex(slotByFirstByte)
	db := ks.DB(0)
	for _, k := range []string{"a1", "a2", "a3", "b1"} {
		withShard(db, k, func() { db.Set([]byte(k), NewString([]byte("v")), false) })
	}
	// Overwriting and AddExpire over an existing key do not count twice.
	withShard(db, "a1", func() { db.Set([]byte("a1"), NewString([]byte("w")), false) })
	withShard(db, "c1", func() { db.AddExpire([]byte("c1"), NewString([]byte("v")), ks.Now()+1) })
	if n := db.CountKeysInSlot('a'); n != 3 {
		t.Fatalf("slot a: %d keys", n)
	}
	if n := db.KeyCount(); n != 5 {
		t.Fatalf("total %d", n)
	}
	keys := db.KeysInSlot('a', 10)
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[a1 a2 a3]" {
		t.Fatalf("keys of slot a: %v", keys)
	}
	if got := db.KeysInSlot('a', 2); len(got) != 2 {
		t.Fatalf("at most 2: %v", got)
	}
	withShard(db, "a2", func() { db.Delete([]byte("a2")) })
	withShard(db, "zz", func() { db.Delete([]byte("zz")) }) // absent: no change
	if n := db.CountKeysInSlot('a'); n != 2 {
		t.Fatalf("after delete: %d", n)
	}
	// An expired key leaves the index when it is reclaimed.
	time.Sleep(5 * time.Millisecond)
	withShard(db, "c1", func() {
		if db.Lookup([]byte("c1")) != nil {
			t.Fatal("c1 should have expired")
		}
	})
	if n := db.CountKeysInSlot('c'); n != 0 {
		t.Fatalf("expired key still counted: %d", n)
	}
	// Other databases keep no index.
	db1 := ks.DB(1)
	withShard(db1, "a9", func() { db1.Set([]byte("a9"), NewString([]byte("v")), false) })
	if db1.HasSlotIndex() || db1.CountKeysInSlot('a') != 0 || db.CountKeysInSlot('a') != 2 {
		t.Fatal("db 1 must not be indexed")
	}
	ks.Lock.Lock()
	db.Flush()
	ks.Lock.Unlock()
	if db.KeyCount() != 0 || db.CountKeysInSlot('a') != 0 || len(db.KeysInSlot('a', 10)) != 0 {
		t.Fatal("flush left keys in the index")
	}
}

func TestSlotIndexConcurrent(t *testing.T) {
	ks := New(1, 1)
	ks.EnableSlotIndex(func(string) int { return 7 }) // every key in one slot, many shards
	db := ks.DB(0)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				k := fmt.Sprintf("k%d-%d", g, i)
				withShard(db, k, func() { db.Set([]byte(k), NewString([]byte("v")), false) })
				if i%2 == 0 {
					withShard(db, k, func() { db.Delete([]byte(k)) })
				}
			}
		}(g)
	}
	wg.Wait()
	if n := db.CountKeysInSlot(7); n != 8*250 || len(db.KeysInSlot(7, 1<<20)) != n {
		t.Fatalf("count %d, listed %d", n, len(db.KeysInSlot(7, 1<<20)))
	}
}
