package server

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// Snapshots: the dataset at one instant, as RDB records, for everything
// that writes it out (BGSAVE, SAVE, BGREWRITEAOF's base, a replica's full
// sync, SHUTDOWN's save). snapshotImage is the one way they take it.
//
// There is no fork. A snapshot is taken with the keyspace's exclusive
// lock held (every command, transaction and script is excluded for that
// time): each shard's live keys are encoded, in parallel, into memory
// buffers, exactly as they are at that instant, and the lock is released.
// Writing it out happens after, without the lock. The cost is the
// encoding time under the lock (the pause) and memory for the encoded
// dataset until it is written.

// snapshotImage takes a point-in-time image of the dataset. atCut, when
// not nil, runs at the cut, when no command runs. Every snapshot goes
// through here.
func (s *Server) snapshotImage(atCut func()) persist.Image {
	s.ks.Lock.Lock()
	defer s.ks.Lock.Unlock()
	return s.snapshotImageLocked(atCut)
}

// snapshotImageLocked is snapshotImage for a caller that holds the
// exclusive lock.
func (s *Server) snapshotImageLocked(atCut func()) persist.Image {
	if atCut != nil {
		atCut()
	}
	return s.takeSnapshot()
}

// snapshot is the encoded dataset at one instant.
type snapshot struct {
	meta     persist.ImageMeta
	dbs      []dbSnapshot
	released atomic.Bool
}

type dbSnapshot struct {
	id            int
	size, expires uint64
	chunks        []snapChunk
}

type snapChunk struct {
	buf           []byte
	keys, expires int
}

func (sn *snapshot) Meta() persist.ImageMeta { return sn.meta }

func (sn *snapshot) Each(fn func(db int, size, expires uint64, chunk []byte, keys int) error) error {
	for _, ds := range sn.dbs {
		for _, ch := range ds.chunks {
			if sn.released.Load() {
				return persist.ErrAborted
			}
			if err := fn(ds.id, ds.size, ds.expires, ch.buf, ch.keys); err != nil {
				return err
			}
		}
	}
	return nil
}

// Release gives the image up, from any goroutine: a walk under way stops
// at its next chunk.
func (sn *snapshot) Release() { sn.released.Store(true) }

// takeSnapshot encodes the whole dataset. The exclusive lock must be held.
func (s *Server) takeSnapshot() *snapshot {
	snap := &snapshot{meta: persist.ImageMeta{Dirty: s.ks.DirtyTotal(), CTime: time.Now().Unix(), UsedMem: readMemory().used}}
	for _, l := range s.lua.eng.Libraries() {
		snap.meta.Functions = append(snap.meta.Functions, []byte(l.Code))
	}
	// Keys past their expiry that were not reclaimed yet are written with
	// it, as Redis's save does; loading skips them and counts them
	// (rdb_last_load_keys_expired).
	now := int64(math.MinInt64)
	ndb := s.ks.NumDBs()
	chunks := make([]snapChunk, ndb*store.NShards)
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := max(1, min(runtime.GOMAXPROCS(0), 16))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= len(chunks) {
					return
				}
				chunks[j] = s.encodeShard(s.ks.DB(j/store.NShards), j%store.NShards, now)
			}
		}()
	}
	wg.Wait()
	for d := range ndb {
		ds := dbSnapshot{id: d}
		for _, ch := range chunks[d*store.NShards : (d+1)*store.NShards] {
			if ch.keys == 0 {
				continue
			}
			ds.size += uint64(ch.keys)
			ds.expires += uint64(ch.expires)
			ds.chunks = append(ds.chunks, ch)
		}
		if ds.size > 0 {
			snap.meta.Keys += int64(ds.size)
			snap.dbs = append(snap.dbs, ds)
		}
	}
	return snap
}

// encodeShard encodes the live keys of one shard as RDB key-value records.
func (s *Server) encodeShard(db *store.DB, shard int, now int64) snapChunk {
	var ch snapChunk
	if n := db.ShardLen(shard); n > 0 {
		// Room for small keys; bigger values grow the buffer.
		ch.buf = make([]byte, 0, n*32)
	}
	db.EachInShard(shard, now, func(key string, e *store.Entry, expire int64) bool {
		typ, ok := rdbType(e)
		if !ok {
			return true // no other types exist in the store
		}
		if expire != 0 {
			ch.buf = rdb.AppendExpireMs(ch.buf, expire)
			ch.expires++
		}
		ch.buf = rdb.AppendKey(ch.buf, typ, strBytes(key))
		ch.buf = s.appendRDBValue(ch.buf, e)
		ch.keys++
		return true
	})
	return ch
}
