package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// keyspace1M returns a keyspace whose first database holds 1,000,000
// keys, the keys, and 65,536 random indexes into them (a power of two).
func keyspace1M() (ks *Keyspace, keys [][]byte, order []int32) {
	const n = 1_000_000
	ks = New(1, 2)
	db := ks.DB(0)
	keys = make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key:%010d", i))
		db.Add(keys[i], NewString([]byte("value")))
	}
	r := rand.New(rand.NewPCG(1, 2))
	order = make([]int32, 1<<16)
	for i := range order {
		order[i] = int32(r.IntN(n))
	}
	return ks, keys, order
}

// BenchmarkLookup1M looks up random keys of a database of 1,000,000, the
// shard table's cost where its slots are not in the cache; Set1M
// overwrites them.
func BenchmarkLookup1M(b *testing.B) {
	ks, keys, order := keyspace1M()
	db := ks.DB(0)
	b.Run("Lookup", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if db.Lookup(keys[order[i&(len(order)-1)]]) == nil {
				b.Fatal("key not found")
			}
		}
	})
	b.Run("Set", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			k := keys[order[i&(len(order)-1)]]
			db.Lookup(k).SetBytes([]byte("other"))
		}
	})
}

// BenchmarkPrefetch looks up random keys of a database of 1,000,000 in
// batches of 16 and 64, as an event loop serves a pipeline: one after the
// other, or after a Prefetcher fetched the batch's lines together. ns/op
// is per key.
func BenchmarkPrefetch(b *testing.B) {
	ks, keys, order := keyspace1M()
	db := ks.DB(0)
	for _, batch := range []int{16, 64} {
		for _, pf := range []bool{false, true} {
			b.Run(fmt.Sprintf("batch=%d/prefetch=%v", batch, pf), func(b *testing.B) {
				var p Prefetcher
				for i := 0; i < b.N; i += batch {
					if pf {
						for j := 0; j < batch; j++ {
							p.Add(db, keys[order[(i+j)&(len(order)-1)]])
						}
						p.Run(ks, 0)
					}
					for j := 0; j < batch; j++ {
						if db.Lookup(keys[order[(i+j)&(len(order)-1)]]) == nil {
							b.Fatal("key not found")
						}
					}
				}
			})
		}
	}
}
