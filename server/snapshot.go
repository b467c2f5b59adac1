package server

import (
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// Snapshots: the dataset at one instant, as RDB records (persist.Image),
// for everything that writes it out: BGSAVE, SAVE, BGREWRITEAOF's base, a
// replica's full sync, SHUTDOWN's save. There is no fork.
//
// snapshotImage cuts a point-in-time snapshot of the store
// (store.Snapshot): the exclusive lock is held for O(databases × shards)
// work, then the image's Each walks the keys shard by shard in small
// chunks while every client keeps being served. A key is encoded as it
// was at the cut, by the walk or, when a client is about to change it
// first, by that client (captureKeys; the store captures what it
// replaces or removes itself). The encoded dataset is never held whole:
// the writer (persist.WriteRDB, persist.WriteAOFForm) streams it out.
//
// One store snapshot is walked at a time. An image asked for while
// another is being walked (a BGSAVE during a replica's full sync) is
// encoded whole under the exclusive lock instead (encodedImage), as every
// image used to be. A caller that holds the exclusive lock until its image
// is written (FLUSHALL's save, DEBUG RELOAD) takes a lockedImage, which
// reads the live tables.

// snapshotImage takes a point-in-time image of the dataset
// (persist.Host.Snapshot). atCut, when not nil, runs at the cut, when no
// command runs.
func (s *Server) snapshotImage(atCut func()) persist.Image {
	meta := s.imageMetaUnlocked()
	s.ks.Lock.Lock()
	defer s.ks.Lock.Unlock()
	if atCut != nil {
		atCut()
	}
	if img, err := s.cutImage(meta); err == nil {
		return img
	}
	return s.encodedImage(meta)
}

// rdbImage is a point-in-time image of the store being walked (sn), or,
// with sn nil, the live dataset for a caller holding the exclusive lock
// until it is written.
type rdbImage struct {
	s        *Server
	sn       *store.Snapshot
	meta     persist.ImageMeta
	released atomic.Bool
	walked   atomic.Bool // Each has returned
}

func (img *rdbImage) Meta() persist.ImageMeta { return img.meta }

// Each calls fn with the image's key records, database by database, in
// chunks of whole records (persist.Image). fn runs with no lock held. A
// snapshot's walk takes each shard's lock for a chunk of keys at a time;
// a locked image needs the exclusive lock held throughout.
func (img *rdbImage) Each(fn func(db int, size, expires uint64, chunk []byte, keys int) error) error {
	k := &eachSink{fn: fn}
	var err error
	if img.sn != nil {
		err = img.sn.Walk(k, nil)
		img.walked.Store(true)
		img.walkDone()
	} else {
		if img.released.Load() {
			return persist.ErrAborted
		}
		err = img.s.ks.WalkLocked(img.s.recordEncoder(img.s.rdbEnc()), k, true)
	}
	if err == store.ErrSnapshotAborted {
		err = persist.ErrAborted
	}
	return err
}

// Release gives the image up, from any goroutine: a walk not started
// never will, one under way stops at its next chunk (Each returns
// persist.ErrAborted); a no-op once Each has returned.
func (img *rdbImage) Release() {
	if img.released.Swap(true) || img.sn == nil || img.walked.Load() {
		return
	}
	img.sn.Abort()
	img.walkDone()
}

// walkDone records the end of a snapshot's walk: its copy-on-write peak
// for INFO, and replicas waiting for a full sync may start theirs.
func (img *rdbImage) walkDone() {
	s := img.s
	s.snapStats.lastCOW.Store(img.sn.COWPeak())
	go s.startPendingSync()
}

// eachSink adapts Each's callback to the store's snapshot sink.
type eachSink struct {
	fn            func(db int, size, expires uint64, chunk []byte, keys int) error
	db            int
	size, expires uint64
}

func (k *eachSink) DB(id, keys, expires int) error {
	k.db, k.size, k.expires = id, uint64(keys), uint64(expires)
	return nil
}

func (k *eachSink) Records(b []byte, n int) error { return k.fn(k.db, k.size, k.expires, b, n) }

// snapStats are INFO's figures for snapshots.
type snapStats struct {
	lastCOW atomic.Int64 // the last walk's peak copy-on-write (rdb_last_cow_size)
}

// imageMetaUnlocked is what an image records besides its keys and the
// change counter: taken just before the cut, without the lock.
func (s *Server) imageMetaUnlocked() persist.ImageMeta {
	meta := persist.ImageMeta{CTime: time.Now().Unix(), UsedMem: uint64(s.usedMemory())}
	return meta
}

// cutImage takes the cut of a point-in-time image, to be walked in the
// background (Each) or given up (Release). It does O(databases × shards)
// work; the exclusive lock must be held. It fails with
// store.ErrSnapshotBusy while another image is being walked.
func (s *Server) cutImage(meta persist.ImageMeta) (*rdbImage, error) {
	// A client about to change a key the walk has not reached encodes it
	// without compression: its command waits for that.
	sn, err := s.ks.BeginSnapshot(s.recordEncoder(s.rdbEnc()), s.recordEncoder(rdb.Enc{NoCompress: true}), s.goSlot)
	if err != nil {
		return nil, err
	}
	// Keys past their expiry that were not reclaimed yet are written with
	// it, as Redis's save does; loading skips them and counts them
	// (rdb_last_load_keys_expired).
	sn.KeepExpired()
	if us, _ := strconv.ParseInt(s.cfg.Get("rdb-key-save-delay"), 10, 64); us > 0 {
		sn.ChunkKeys = 1 // rdb-key-save-delay is per key: the walk goes key by key
	}
	img := &rdbImage{s: s, sn: sn, meta: s.metaAtCut(meta)}
	img.meta.Keys = sn.Keys()
	return img, nil
}

// metaAtCut completes meta with what is read at the cut (exclusive lock).
func (s *Server) metaAtCut(meta persist.ImageMeta) persist.ImageMeta {
	meta.Dirty = s.ks.DirtyTotal()
	meta.Repl = s.replSaveInfo()
	for _, l := range s.lua.eng.Libraries() {
		meta.Functions = append(meta.Functions, []byte(l.Code))
	}
	return meta
}

// lockedImage is an image of the live dataset for a caller that holds the
// exclusive lock until it is written (nothing changes meanwhile).
func (s *Server) lockedImage() *rdbImage {
	img := &rdbImage{s: s, meta: s.metaAtCut(s.imageMetaUnlocked())}
	for i := 0; i < s.ks.NumDBs(); i++ {
		img.meta.Keys += int64(s.ks.DB(i).Size())
	}
	return img
}

// rdbEnc is how RDB files encode values (rdbcompression).
func (s *Server) rdbEnc() rdb.Enc {
	return rdb.Enc{NoCompress: s.cfg.Get("rdbcompression") == "no"}
}

// recordEncoder is the store.Encoder of RDB files: a key's expiry, type,
// name and value.
func (s *Server) recordEncoder(enc rdb.Enc) store.Encoder {
	return func(dst, key []byte, e *store.Entry, expire int64) []byte {
		return enc.Record(dst, key, e, expire, int(s.cfg.listPackSize.Load()))
	}
}

// captureKeys gives the running snapshot the values cmd's keys in db
// have now, before cmd runs and changes them in place (the store captures
// what it replaces or removes itself). The keys' locks, or the exclusive
// lock, are held.
func (c *Client) captureKeys(db *store.DB, cmd *Command, args [][]byte) {
	c.snapKeys = cmd.Keys(args, c.snapKeys[:0], cmdspec.Access)
	for _, k := range c.snapKeys {
		db.Capture(args[k.Pos])
	}
}

// snapshotInfo is INFO persistence's copy-on-write figures: the extra
// memory of the running snapshot (whoever writes it), the records clients
// captured before changing keys the walk had not reached yet, until the
// walk hands them to the writer.
func (s *Server) snapshotInfo() (cow, cowPeak, lastCOW int64) {
	if sn := s.ks.RunningSnapshot(); sn != nil {
		cow, cowPeak = sn.COW(), sn.COWPeak()
	}
	return cow, cowPeak, s.snapStats.lastCOW.Load()
}

// encodedImage is the whole dataset encoded now, under the exclusive lock
// (held by the caller), into memory buffers: the image taken while
// another is being walked. Its cost is the encoding time under the lock
// and memory for the encoded dataset until it is written.
func (s *Server) encodedImage(meta persist.ImageMeta) *snapshot {
	snap := &snapshot{meta: s.metaAtCut(meta)}
	now := int64(math.MinInt64) // expired keys not reclaimed are kept, as above
	ndb := s.ks.NumDBs()
	chunks := make([]snapChunk, ndb*store.NShards)
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := max(1, min(runtime.GOMAXPROCS(0), 16))
	enc := s.recordEncoder(s.rdbEnc())
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= len(chunks) {
					return
				}
				chunks[j] = encodeShard(s.ks.DB(j/store.NShards), j%store.NShards, now, enc)
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

// snapshot is an encodedImage.
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

func (sn *snapshot) Release() { sn.released.Store(true) }

// encodeShard encodes the keys of one shard as RDB key-value records.
func encodeShard(db *store.DB, shard int, now int64, enc store.Encoder) snapChunk {
	var ch snapChunk
	if n := db.ShardLen(shard); n > 0 {
		// Room for small keys; bigger values grow the buffer.
		ch.buf = make([]byte, 0, n*32)
	}
	db.EachInShard(shard, now, func(key string, e *store.Entry, expire int64) bool {
		n := len(ch.buf)
		if ch.buf = enc(ch.buf, strBytes(key), e, expire); len(ch.buf) > n {
			ch.keys++
			if expire != 0 {
				ch.expires++
			}
		}
		return true
	})
	return ch
}
