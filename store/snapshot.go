package store

import (
	"errors"
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// Point-in-time snapshots that do not stop the world (BGSAVE, a replica's
// full sync, an AOF rewrite's base).
//
// The cut (BeginSnapshot, under the exclusive lock) does O(databases ×
// shards) work: it starts a new snapshot epoch and notes each database's
// size. Then Walk visits every key as of the cut, shard by shard, holding
// a shard's lock (and a reader slot of the BigLock) only for a bounded
// chunk of keys at a time, while clients go on reading and writing.
//
// Each Entry carries the epoch of the last snapshot that saw it. The walk
// encodes the entries whose epoch is older than its own and marks them.
// Anything that is about to change or remove an entry the running
// snapshot has not seen yet captures it first: the entry is encoded as it
// is (so as it was at the cut) into its shard's capture buffer, which the
// walk drains, and marked. Entries created after the cut are marked at
// creation, so the walk skips them. So every key present at the cut is
// encoded exactly once, with its value at the cut, whatever clients do
// meanwhile. Capture happens
//
//   - in the store's own paths: Set replacing an entry, Delete, expiry
//     (lazy and active), SetExpire, eviction (which deletes), and a flush,
//     which hands the old tables to the snapshot instead of encoding them;
//   - for changes made in place by a command, through Capture, which the
//     server calls for a write command's keys before it runs (and for a
//     blocked client's keys before it is served).
//
// A shard's walk goes through the slots of its key table (keymap.go) in
// order, releasing the shard's lock between chunks. Keys never move within
// a table's arrays: a table that grows, shrinks or drops its tombstones
// builds new arrays and leaves the old ones as they were, and the walk
// goes on through the arrays it started with. So every key present at the
// cut is met once, in the arrays the walk reads or, if it was removed or
// replaced since, in a capture; keys added meanwhile may or may not be
// met, and are skipped by their mark anyway.
//
// After a complete walk every entry carries the snapshot's epoch, so the
// next snapshot's (one more) differs from all of them. An aborted walk
// leaves older epochs behind; the keyspace tracks the oldest one still
// possible, and in the rare case that a new epoch would wrap around onto
// it (255 aborted snapshots in a row), the cut re-marks every entry first.
//
// With no snapshot running the cost on the write path is one atomic load
// and a predictable branch (Keyspace.Snapshotting), plus storing the
// current epoch in a new entry.
//
// One snapshot runs at a time (ErrSnapshotBusy). WalkLocked is the
// synchronous variant for a caller that holds the exclusive lock for the
// whole save (SAVE, SHUTDOWN, DEBUG RELOAD): it reads the live tables and
// leaves the marks alone, so it may run while a snapshot is walking.

// Encoder appends the record of one key, its value e and its expiry
// (unix ms, 0 for none) to dst. It runs with the key's shard locked (or
// the keyspace held exclusively): on the walking goroutine, or on the
// goroutine of a client about to change the key. key is only valid during
// the call.
type Encoder func(dst []byte, key []byte, e *Entry, expireMs int64) []byte

// SnapshotSink receives a snapshot's records. Its methods run on the
// walking goroutine with no lock held; an error ends the walk.
type SnapshotSink interface {
	// DB starts the records of database id; keys and expires are its
	// sizes at the cut (keys already expired included), as hints.
	DB(id int, keys, expires int) error
	// Records receives encoded records of n keys. b is only valid during
	// the call.
	Records(b []byte, n int) error
}

var (
	// ErrSnapshotBusy: another snapshot is running.
	ErrSnapshotBusy = errors.New("store: a snapshot is already running")
	// ErrSnapshotAborted: the walk was stopped by Abort or its cancel
	// channel.
	ErrSnapshotAborted = errors.New("store: snapshot aborted")
)

// A walk's chunk: the keys encoded under one hold of a shard's lock.
const (
	snapChunkKeys  = 128
	snapChunkBytes = 64 << 10
)

// Snapshot is a point-in-time image of the keyspace being walked.
type Snapshot struct {
	ks    *Keyspace
	epoch uint8
	now   int64 // the cut's time: keys expired by then are left out
	// keepExpired: they are kept (KeepExpired).
	keepExpired bool
	enc         Encoder // the walk's
	cap         Encoder // writers' (capture)
	slot        int
	dbs         []snapDB
	keys        int64

	// ChunkKeys bounds the keys encoded under one hold of a shard's lock
	// (0: the default). Set it before Walk.
	ChunkKeys int

	stop     atomic.Bool
	cow      atomic.Int64 // bytes captured and not yet handed to the sink
	cowPeak  atomic.Int64
	captured atomic.Int64 // keys captured by writers
	walked   atomic.Int64 // keys handed to the sink
}

// snapDB is one database that had keys at the cut.
type snapDB struct {
	db            *DB
	id            int // index at the cut (SWAPDB may move the DB later)
	keys, expires int
	shards        []snapShard
}

// snapShard is a shard's part of the snapshot, guarded by the shard's
// lock (or the exclusive lock).
type snapShard struct {
	// m and vol are the shard's tables at the cut when a flush replaced
	// them before the walk finished the shard (flushed is then set): the
	// walk reads the keys and expiries from them.
	flushed bool
	m       keyMap
	vol     map[string]int64
	buf     []byte // records captured by writers, not yet drained
	nbuf    int
}

// Snapshotting reports whether a snapshot is running (the branch the
// write path takes).
func (ks *Keyspace) Snapshotting() bool { return ks.snap.Load() != nil }

// RunningSnapshot returns the running snapshot, or nil.
func (ks *Keyspace) RunningSnapshot() *Snapshot { return ks.snap.Load() }

// BeginSnapshot takes the cut of a snapshot whose records enc encodes
// (and capture, where a writer encodes a key it is about to change: the
// same format, perhaps made faster than smaller); slot is the BigLock
// reader slot its walk will use. The exclusive lock must be held. The
// caller must then call Walk (or Abort).
func (ks *Keyspace) BeginSnapshot(enc, capture Encoder, slot int) (*Snapshot, error) {
	if ks.snap.Load() != nil {
		return nil, ErrSnapshotBusy
	}
	next := ks.epoch + 1
	if next == uint8(ks.oldestEpoch.Load()) {
		ks.remark()
	}
	ks.epoch = next
	sn := &Snapshot{ks: ks, epoch: next, now: ks.Now(), enc: enc, cap: capture, slot: slot}
	for i, db := range *ks.dbs.Load() {
		db.snapIdx = -1
		keys, expires := 0, 0
		for j := range db.shards {
			keys += db.shards[j].m.n
			expires += len(db.shards[j].vol)
		}
		if keys == 0 {
			continue
		}
		db.snapIdx = int32(len(sn.dbs))
		sn.dbs = append(sn.dbs, snapDB{db: db, id: i, keys: keys, expires: expires, shards: make([]snapShard, NShards)})
		sn.keys += int64(keys)
	}
	ks.snap.Store(sn)
	return sn, nil
}

// remark sets every entry's epoch to the current one (exclusive lock):
// afterwards no entry carries an epoch a new snapshot could take.
func (ks *Keyspace) remark() {
	for _, db := range *ks.dbs.Load() {
		for j := range db.shards {
			db.shards[j].m.each(func(_ string, e *Entry) bool {
				e.snap = ks.epoch
				return true
			})
		}
	}
	ks.oldestEpoch.Store(uint32(ks.epoch))
}

// Keys returns the number of keys at the cut (keys already expired then
// included).
func (sn *Snapshot) Keys() int64 { return sn.keys }

// Walked returns the number of keys handed to the sink so far.
func (sn *Snapshot) Walked() int64 { return sn.walked.Load() }

// Captured returns the number of keys writers captured before changing
// them.
func (sn *Snapshot) Captured() int64 { return sn.captured.Load() }

// COW returns the bytes of captured records not yet handed to the sink:
// the memory the snapshot holds beyond the dataset (Redis's
// current_cow_size).
func (sn *Snapshot) COW() int64 { return sn.cow.Load() }

// COWPeak returns the most COW has been.
func (sn *Snapshot) COWPeak() int64 { return sn.cowPeak.Load() }

// KeepExpired makes the image hold the keys already expired at the cut
// but not reclaimed yet, with their expiry, as Redis's saves do (a loader
// skips them). Call it right after BeginSnapshot, with the exclusive lock
// still held.
func (sn *Snapshot) KeepExpired() { sn.keepExpired = true }

// Time returns the cut's time in unix milliseconds.
func (sn *Snapshot) Time() int64 { return sn.now }

// Abort stops the snapshot: writers stop capturing at once and Walk
// returns ErrSnapshotAborted at its next step. Any goroutine, any locks.
func (sn *Snapshot) Abort() {
	sn.stop.Store(true)
	sn.ks.snap.CompareAndSwap(sn, nil)
}

func (sn *Snapshot) stopped(cancel <-chan struct{}) bool {
	if sn.stop.Load() {
		return true
	}
	select {
	case <-cancel:
		return true
	default:
		return false
	}
}

// acquire takes the walk's reader slot and s's lock. The slot is polled,
// not waited for, so a canceller holding the keyspace exclusively (which
// then waits for the walk to end) is never deadlocked.
func (sn *Snapshot) acquire(s *shard, cancel <-chan struct{}) bool {
	for !sn.ks.Lock.TryRLock(sn.slot) {
		if sn.stopped(cancel) {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
	if sn.stopped(cancel) {
		sn.ks.Lock.RUnlock(sn.slot)
		return false
	}
	lockSpin(&s.mu)
	return true
}

func (sn *Snapshot) release(s *shard) {
	s.mu.Unlock()
	sn.ks.Lock.RUnlock(sn.slot)
}

// Walk hands every key of the image to sink, database by database, and
// ends the snapshot. It returns sink's error, or ErrSnapshotAborted when
// Abort was called or cancel closed. Call it once, from one goroutine.
func (sn *Snapshot) Walk(sink SnapshotSink, cancel <-chan struct{}) error {
	err := sn.walk(sink, cancel)
	if err == nil {
		sn.ks.oldestEpoch.Store(uint32(sn.epoch))
	}
	sn.stop.Store(true)
	sn.ks.snap.CompareAndSwap(sn, nil)
	return err
}

func (sn *Snapshot) walk(sink SnapshotSink, cancel <-chan struct{}) error {
	chunk := sn.ChunkKeys
	if chunk <= 0 {
		chunk = snapChunkKeys
	}
	var out []byte
	for di := range sn.dbs {
		d := &sn.dbs[di]
		if sn.stopped(cancel) {
			return ErrSnapshotAborted
		}
		if err := sink.DB(d.id, d.keys, d.expires); err != nil {
			return err
		}
		for si := range d.shards {
			var err error
			if out, err = sn.walkShard(d, si, chunk, out, sink, cancel); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkShard walks shard si of d in chunks.
func (sn *Snapshot) walkShard(d *snapDB, si, chunk int, out []byte, sink SnapshotSink, cancel <-chan struct{}) ([]byte, error) {
	s := &d.db.shards[si]
	ss := &d.shards[si]
	if !sn.acquire(s, cancel) {
		return out, ErrSnapshotAborted
	}
	m := s.m
	if ss.flushed {
		m = ss.m
	}
	out, nkeys := out[:0], 0
	// flush hands the chunk (and what writers captured) to the sink
	// without the locks, and takes them again.
	flush := func() error {
		out, nkeys = sn.drain(ss, out, nkeys)
		sn.release(s)
		// Let whatever waits for a processor run (an event loop back from
		// epoll_wait may need the one this walk holds).
		runtime.Gosched()
		if nkeys > 0 {
			if err := sink.Records(out, nkeys); err != nil {
				return err
			}
			sn.walked.Add(int64(nkeys))
		}
		out, nkeys = out[:0], 0
		if !sn.acquire(s, cancel) {
			return ErrSnapshotAborted
		}
		return nil
	}
	n := 0
	// The arrays as they are now: if the table is rebuilt meanwhile, the
	// walk goes on through these (see above).
	tags, slots := m.tags, m.slots
	for i := range tags {
		if tags[i] <= tagDead {
			continue
		}
		k, e := kmKey(slots[i].k), slots[i].e
		if e == nil {
			continue
		}
		if e.snap != sn.epoch {
			e.snap = sn.epoch
			var exp int64
			if e.vol {
				if ss.flushed {
					exp = ss.vol[k]
				} else {
					exp = s.vol[k]
				}
			}
			if exp == 0 || exp > sn.now || sn.keepExpired {
				out = sn.enc(out, unsafe.Slice(unsafe.StringData(k), len(k)), e, exp)
				nkeys++
			}
		}
		if n++; n%chunk == 0 || len(out) >= snapChunkBytes {
			if err := flush(); err != nil {
				return out, err
			}
		}
	}
	// Every entry of the shard is marked now: nothing more is captured.
	out, nkeys = sn.drain(ss, out, nkeys)
	ss.m, ss.vol, ss.buf = keyMap{}, nil, nil
	sn.release(s)
	if nkeys > 0 {
		if err := sink.Records(out, nkeys); err != nil {
			return out, err
		}
		sn.walked.Add(int64(nkeys))
	}
	return out[:0], nil
}

// drain moves the captured records of ss to out (shard lock held).
func (sn *Snapshot) drain(ss *snapShard, out []byte, nkeys int) ([]byte, int) {
	if ss.nbuf == 0 {
		return out, nkeys
	}
	out = append(out, ss.buf...)
	nkeys += ss.nbuf
	sn.cow.Add(-int64(len(ss.buf)))
	if cap(ss.buf) > 4*snapChunkBytes {
		ss.buf = nil
	} else {
		ss.buf = ss.buf[:0]
	}
	ss.nbuf = 0
	return out, nkeys
}

// capture records e, the entry of key in shard s of db, as it is now,
// for the running snapshot sn, unless sn has it already. The shard's lock
// (or the exclusive lock) is held.
func (db *DB) capture(sn *Snapshot, s *shard, key []byte, e *Entry) {
	if e.snap == sn.epoch {
		return
	}
	e.snap = sn.epoch
	if db.snapIdx < 0 || int(db.snapIdx) >= len(sn.dbs) || sn.dbs[db.snapIdx].db != db {
		return // the database was empty at the cut
	}
	ss := &sn.dbs[db.snapIdx].shards[db.shardIndex(s)]
	var exp int64
	if e.vol {
		exp = s.vol[string(key)]
		if exp <= sn.now && !sn.keepExpired {
			return // expired at the cut: not in the image
		}
	}
	n := len(ss.buf)
	ss.buf = sn.cap(ss.buf, key, e, exp)
	ss.nbuf++
	sn.captured.Add(1)
	if c := sn.cow.Add(int64(len(ss.buf) - n)); c > sn.cowPeak.Load() {
		for {
			p := sn.cowPeak.Load()
			if c <= p || sn.cowPeak.CompareAndSwap(p, c) {
				break
			}
		}
	}
}

// preChange captures the entry e of key for the running snapshot, if any,
// before the store changes or removes it. The shard's lock is held.
func (db *DB) preChange(s *shard, key []byte, e *Entry) {
	if sn := db.ks.snap.Load(); sn != nil {
		db.capture(sn, s, key, e)
	}
}

// Capture records the value key has now for the running snapshot, if one
// is running and has not got it yet: the server calls it for a command's
// keys before the command changes them in place. The key's shard (or the
// exclusive lock) must be held.
func (db *DB) Capture(key []byte) {
	sn := db.ks.snap.Load()
	if sn == nil {
		return
	}
	s, h := db.locate(key)
	if e := s.m.get(str(key), h); e != nil {
		db.capture(sn, s, key, e)
	}
}

// flushForSnapshot hands shard s's tables to the running snapshot, if it
// has not walked the shard yet, before a flush replaces them (exclusive
// lock): they are unreachable afterwards, so the walk reads them as they
// are instead of anything being encoded now.
func (db *DB) flushForSnapshot(s *shard) {
	sn := db.ks.snap.Load()
	if sn == nil || db.snapIdx < 0 || int(db.snapIdx) >= len(sn.dbs) || sn.dbs[db.snapIdx].db != db {
		return
	}
	ss := &sn.dbs[db.snapIdx].shards[db.shardIndex(s)]
	if ss.flushed {
		return // the tables since hold only keys created after the cut
	}
	ss.flushed, ss.m, ss.vol = true, s.m, s.vol
}

// shardIndex returns the index of s, a shard of db.
func (db *DB) shardIndex(s *shard) int {
	return int((uintptr(unsafe.Pointer(s)) - uintptr(unsafe.Pointer(&db.shards[0]))) / unsafe.Sizeof(db.shards[0]))
}

// WalkLocked hands every live key to sink, as Walk does, for a caller that
// holds the exclusive lock for the whole time (a synchronous save). It
// reads the live tables and leaves the snapshot marks alone, so it may run
// while a snapshot is walking. keepExpired: keys expired but not reclaimed
// yet are handed over too (see KeepExpired).
func (ks *Keyspace) WalkLocked(enc Encoder, sink SnapshotSink, keepExpired bool) error {
	now := ks.Now()
	if keepExpired {
		now = math.MinInt64
	}
	var out []byte
	for i, db := range *ks.dbs.Load() {
		keys, expires := 0, 0
		for j := range db.shards {
			keys += db.shards[j].m.n
			expires += len(db.shards[j].vol)
		}
		if keys == 0 {
			continue
		}
		if err := sink.DB(i, keys, expires); err != nil {
			return err
		}
		for j := range db.shards {
			s := &db.shards[j]
			nkeys := 0
			var err error
			s.m.each(func(k string, e *Entry) bool {
				var exp int64
				if e.vol {
					if exp = s.vol[k]; exp <= now {
						return true
					}
				}
				out = enc(out, unsafe.Slice(unsafe.StringData(k), len(k)), e, exp)
				if nkeys++; len(out) >= snapChunkBytes {
					if err = sink.Records(out, nkeys); err != nil {
						return false
					}
					out, nkeys = out[:0], 0
				}
				return true
			})
			if err != nil {
				return err
			}
			if nkeys > 0 {
				if err := sink.Records(out, nkeys); err != nil {
					return err
				}
				out = out[:0]
			}
		}
	}
	return nil
}

// EachInShard calls fn for every key of shard i that has not expired by
// now, with its expiry (unix ms, 0 for none), until fn returns false.
// Exclusive lock (several goroutines may read shards at once under it):
// an image encoded whole while another snapshot is being walked.
func (db *DB) EachInShard(i int, now int64, fn func(key string, e *Entry, expire int64) bool) {
	s := &db.shards[i]
	s.m.each(func(k string, e *Entry) bool {
		var exp int64
		if e.vol {
			exp = s.vol[k]
			if exp <= now {
				return true
			}
		}
		return fn(k, e, exp)
	})
}

// ShardLen returns the number of keys in shard i, expired ones included.
// Exclusive lock.
func (db *DB) ShardLen(i int) int { return db.shards[i].m.n }

// EachLive calls fn for every key of db live at now (unix ms), with its
// expiry (0 for none), until fn returns false. Exclusive lock.
func (db *DB) EachLive(now int64, fn func(key string, e *Entry, expire int64) bool) {
	for j := range db.shards {
		s := &db.shards[j]
		stop := false
		s.m.each(func(k string, e *Entry) bool {
			var exp int64
			if e.vol {
				if exp = s.vol[k]; exp <= now {
					return true
				}
			}
			stop = !fn(k, e, exp)
			return !stop
		})
		if stop {
			return
		}
	}
}

// DirtyTotal returns the changes counted since the keyspace was created;
// MarkSavedAt(DirtyTotal()) taken at a snapshot's point in time makes
// Dirty count only the changes made after it (Redis's dirty_before_bgsave).
func (ks *Keyspace) DirtyTotal() uint64 { return ks.dirtyTotal() }

// MarkSavedAt records a save of the dataset as it was when DirtyTotal
// returned total.
func (ks *Keyspace) MarkSavedAt(total uint64) { ks.savedDirty.Store(total) }
