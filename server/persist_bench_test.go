package server

import (
	"strconv"
	"testing"

	"github.com/sluicedb/sluice/store"
)

// BenchmarkSnapshot1M measures the BGSAVE pause: encoding 1,000,000 small
// string keys under the exclusive lock.
func BenchmarkSnapshot1M(b *testing.B) {
	cfg := NewConfig()
	s := New(cfg)
	db := s.ks.DB(0)
	s.ks.Lock.Lock()
	for i := range 1_000_000 {
		k := "key:" + strconv.Itoa(i)
		db.Add([]byte(k), store.NewString([]byte("value:"+strconv.Itoa(i))))
	}
	s.ks.Lock.Unlock()
	benchSnapshot(b, s, 1_000_000)
}

// BenchmarkSnapshotCollections: 30,000 hashes, lists and sorted sets of
// 100 elements each.
func BenchmarkSnapshotCollections(b *testing.B) {
	cfg := NewConfig()
	s := New(cfg)
	c := s.newClient(s.goSlot, "", "", false, nil)
	for i := range 10000 {
		is := strconv.Itoa(i)
		for j := range 100 {
			js := strconv.Itoa(j)
			c.call(lookupCommand([]byte("hset")), [][]byte{[]byte("hset"), []byte("h:" + is), []byte("f" + js), []byte("v" + js)})
			c.call(lookupCommand([]byte("rpush")), [][]byte{[]byte("rpush"), []byte("l:" + is), []byte("element" + js)})
			c.call(lookupCommand([]byte("zadd")), [][]byte{[]byte("zadd"), []byte("z:" + is), []byte(js), []byte("m" + js)})
		}
	}
	benchSnapshot(b, s, 30000)
}

// benchSnapshot times BGSAVE's pause: taking the snapshot of s (keys keys)
// under the exclusive lock.
func benchSnapshot(b *testing.B, s *Server, keys int64) {
	b.ResetTimer()
	for range b.N {
		s.ks.Lock.Lock()
		snap := s.takeSnapshot()
		s.ks.Lock.Unlock()
		if snap.meta.Keys != keys {
			b.Fatal(snap.meta.Keys)
		}
	}
}
