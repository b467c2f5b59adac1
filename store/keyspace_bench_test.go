package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkLookup1M looks up random keys of a database of 1,000,000, the
// shard table's cost where its slots are not in the cache; Set1M
// overwrites them.
func BenchmarkLookup1M(b *testing.B) {
	const n = 1_000_000
	ks := New(1, 2)
	db := ks.DB(0)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key:%010d", i))
		db.Add(keys[i], NewString([]byte("value")))
	}
	r := rand.New(rand.NewPCG(1, 2))
	order := make([]int32, 1<<16)
	for i := range order {
		order[i] = int32(r.IntN(n))
	}
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
