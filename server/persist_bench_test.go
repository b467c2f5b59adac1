package server

import (
	"io"

	"github.com/sluicedb/sluice/persist"
	"strconv"
	"testing"
	"time"

	"github.com/sluicedb/sluice/store"
)

func load1M(b *testing.B) *Server {
	cfg := NewConfig()
	s := New(cfg)
	db := s.ks.DB(0)
	s.ks.Lock.Lock()
	for i := range 1_000_000 {
		k := "key:" + strconv.Itoa(i)
		db.Add([]byte(k), store.NewString([]byte("value:"+strconv.Itoa(i))))
	}
	s.ks.Lock.Unlock()
	return s
}

func loadCollections(b *testing.B) *Server {
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
	return s
}

// BenchmarkSnapshotCut1M measures BGSAVE's pause: the cut of a snapshot of
// 1,000,000 small string keys, taken under the exclusive lock.
func BenchmarkSnapshotCut1M(b *testing.B) {
	s := load1M(b)
	b.ResetTimer()
	for range b.N {
		s.ks.Lock.Lock()
		img, err := s.cutImage(persist.ImageMeta{})
		s.ks.Lock.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		img.Snapshot().Abort()
		b.StartTimer()
	}
}

// BenchmarkSnapshot1M measures writing the image of 1,000,000 small
// string keys (the background work of a BGSAVE, without the disk).
func BenchmarkSnapshot1M(b *testing.B) { benchSnapshot(b, load1M(b), 1_000_000) }

// BenchmarkSnapshotCollections: 30,000 hashes, lists and sorted sets of
// 100 elements each.
func BenchmarkSnapshotCollections(b *testing.B) { benchSnapshot(b, loadCollections(b), 30000) }

// benchSnapshot times a whole image of s (keys keys) written to nowhere,
// and reports the cut's pause.
func benchSnapshot(b *testing.B, s *Server, keys int64) {
	b.ResetTimer()
	var pause time.Duration
	for range b.N {
		t := time.Now()
		s.ks.Lock.Lock()
		img, err := s.cutImage(persist.ImageMeta{})
		s.ks.Lock.Unlock()
		pause += time.Since(t)
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		var progress = new(countWriter)
		if err := persist.WriteRDB(progress, img, persist.RDBOptions{Version: Version, Checksum: true}); err != nil {
			b.Fatal(err)
		}
		n = img.Meta().Keys
		if n != keys {
			b.Fatal(n)
		}
	}
	b.ReportMetric(float64(pause.Microseconds())/float64(b.N), "pause-µs/op")
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
