package store

import (
	"hash/maphash"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// ShardBits sets the number of shards per database (1 << ShardBits).
const ShardBits = 8

// NShards is the number of shards per database.
const NShards = 1 << ShardBits

var seed = maphash.MakeSeed()

// keyHash returns the keyspace hash of key.
func keyHash(key []byte) uint64 { return maphash.Bytes(seed, key) }

// HashString is Hash of a string key.
func HashString(key string) uint64 { return maphash.String(seed, key) }

// ShardOf returns the shard index of key.
func ShardOf(key []byte) int { return int(keyHash(key) >> (64 - ShardBits)) }

type shard struct {
	mu  sync.Mutex
	m   keyMap
	vol map[string]int64 // expiry (unix ms) of the keys that have one, as Redis's expires dict
	// dirty counts the changes to the shard's keys (Redis's server.dirty,
	// INFO rdb_changes_since_last_save); per shard so writers on different
	// shards never share it.
	dirty atomic.Uint64
	// master is set while a replica's master stream holds the shard's
	// lock (SetMasterView): its commands see keys past their expiry.
	master bool
	_      [7]byte
}

// DB is one numbered database.
type DB struct {
	ks      *Keyspace
	ID      int
	snapIdx int32      // index in the running snapshot's databases (-1: none), set at its cut
	slots   *slotIndex // cluster mode: the keys of each hash slot (slots.go)
	// hadVolatile: a key got an expiry since the database was last
	// emptied. Until then the expiry cycle and INFO's avg_ttl, which run
	// every cron tick, skip it rather than look into each shard (as
	// Redis's skip a database whose expires dictionary is empty).
	hadVolatile atomic.Bool
	shards      [NShards]shard
}

// Keyspace holds all databases and the lock that makes a command, a
// transaction or a script atomic.
type Keyspace struct {
	dbs  atomic.Pointer[[]*DB]
	Lock BigLock

	// Hooks called with the shard lock held; nil when unused.
	OnModified func(db *DB, key []byte) // a key's value changed (WATCH)
	// OnModifiedByExpiry, when set, is OnModified for a key removed by
	// expiry (no client changed it: client tracking's NOLOOP).
	OnModifiedByExpiry func(db *DB, key []byte)
	OnExpired          func(db *DB, key []byte)           // a key was removed by expiry
	OnDeleted          func(db *DB, key []byte, e *Entry) // a key was deleted (blocking, notifications)

	OnFlush   func(db *DB)                       // a database was emptied (exclusive lock held)
	OnCreated func(db *DB, key []byte, e *Entry) // a key was added (Redis\'s dbAdd: wakes blocked clients)
	OnSwap    func(a, b *DB)                     // two databases were swapped (exclusive lock held)

	ExpiredKeys atomic.Int64 // stat: expired_keys
	NoTouch     bool
	// ExpiryPaused keeps the dataset static while clients are paused
	// (CLIENT PAUSE): expired keys read as absent but are not removed,
	// and active expiry does nothing, until it is cleared.
	ExpiryPaused atomic.Bool
	// Loading keeps every key live while a dataset is replayed (an AOF
	// can set an expiry in the past and then write the key again, as
	// Redis's keyIsExpired ignores expiries while loading).
	Loading atomic.Bool
	lfu     lfuState // LFU tracking (an LFU maxmemory policy), see evict.go

	savedDirty atomic.Uint64 // Dirty total at the last MarkSaved
	clock      Clock         // see Clock
	heldNow    atomic.Int64  // Now while a script or EXEC runs (HoldNow), 0 otherwise
	holders    atomic.Int64  // HoldNow's holds

	// Point-in-time snapshots (snapshot.go): the running one, the epoch
	// of the last cut (new entries are marked with it) and the oldest
	// epoch an entry may still carry.
	snap        atomic.Pointer[Snapshot]
	epoch       uint8
	oldestEpoch atomic.Uint32

	// The bytes the keys and values take (mem.go): the accountant goes
	// with the databases when SwapDatabases exchanges them, and acctBox
	// is what the keyspace's cleanup releases (the one it holds then).
	acct    atomic.Pointer[Acct]
	acctBox *acctHolder

	masterAll atomic.Bool // SetMasterViewAll
}

// On a replica, keys expire when the master says so (its DEL). Until
// then a key past its expiry reads as absent to clients but is still
// there for the master's stream: an INCR of it from the master changes
// the value the master has, not a new key (Redis's expireIfNeeded for
// server.master). The master's commands run with the master view on
// the shards they lock, or on the whole keyspace under the exclusive lock.

// SetMasterView turns the master view on or off for shard i; the shard's
// lock must be held.
func (db *DB) SetMasterView(i int, on bool) { db.shards[i].master = on }

// SetMasterViewAll turns the master view on or off for every shard; the
// exclusive lock must be held.
func (ks *Keyspace) SetMasterViewAll(on bool) { ks.masterAll.Store(on) }

// SetMasterViewSet turns the master view on or off for the shards of a
// set, whose locks are held.
func (s *ShardSet) SetMasterView(db *DB, on bool) {
	for w, word := range s {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			db.shards[w<<6|b].master = on
			word &= word - 1
		}
	}
}

// Dirty returns the number of key changes (DB.Modified calls) since the
// last MarkSaved, as Redis's rdb_changes_since_last_save.
func (ks *Keyspace) Dirty() uint64 {
	return ks.dirtyTotal() - ks.savedDirty.Load()
}

// MarkSaved records that the dataset was saved: Dirty restarts from 0.
func (ks *Keyspace) MarkSaved() { ks.savedDirty.Store(ks.dirtyTotal()) }

func (ks *Keyspace) dirtyTotal() uint64 {
	var n uint64
	for _, db := range *ks.dbs.Load() {
		for i := range db.shards {
			n += db.shards[i].dirty.Load()
		}
	}
	return n
}

// New returns a keyspace of n databases. lockSlots is the number of
// independent reader slots of its BigLock (one per event loop plus one).
func New(n, lockSlots int) *Keyspace {
	ks := &Keyspace{acctBox: &acctHolder{newAcct()}}
	ks.acct.Store(ks.acctBox.a)
	ks.Lock.init(lockSlots)
	runtime.AddCleanup(ks, func(h *acctHolder) { h.a.release() }, ks.acctBox)
	dbs := make([]*DB, n)
	for i := range dbs {
		dbs[i] = &DB{ks: ks, ID: i, snapIdx: -1}
	}
	ks.dbs.Store(&dbs)
	return ks
}

// NumDBs returns the number of databases.
func (ks *Keyspace) NumDBs() int { return len(*ks.dbs.Load()) }

// DB returns database i.
func (ks *Keyspace) DB(i int) *DB { return (*ks.dbs.Load())[i] }

// Swap exchanges databases a and b (SWAPDB). Exclusive lock required.
func (ks *Keyspace) Swap(a, b int) {
	old := *ks.dbs.Load()
	dbs := make([]*DB, len(old))
	copy(dbs, old)
	dbs[a], dbs[b] = dbs[b], dbs[a]
	dbs[a].ID, dbs[b].ID = a, b
	ks.dbs.Store(&dbs)
	if ks.OnSwap != nil {
		ks.OnSwap(dbs[a], dbs[b])
	}
}

// SwapDatabases exchanges the databases of ks and other, which has as
// many (a replica's dataset loaded aside replacing the old one). Both
// keyspaces must be held exclusively.
func (ks *Keyspace) SwapDatabases(other *Keyspace) {
	a, b := *ks.dbs.Load(), *other.dbs.Load()
	for i := range a {
		a[i].ks, b[i].ks = other, ks
	}
	ks.dbs.Store(&b)
	other.dbs.Store(&a)
	ks.swapAcct(other)
	if ks.OnFlush != nil {
		for _, db := range b {
			ks.OnFlush(db)
		}
	}
}

// LockShard locks the shard of key. Callers that lock several shards lock
// them in ascending index order (see ShardSet).
func (db *DB) LockShard(i int)   { lockSpin(&db.shards[i].mu) }
func (db *DB) UnlockShard(i int) { db.shards[i].mu.Unlock() }

func (db *DB) shardFor(key []byte) *shard { return &db.shards[ShardOf(key)] }

// locate returns key's shard and hash.
func (db *DB) locate(key []byte) (*shard, uint64) {
	h := keyHash(key)
	return &db.shards[h>>(64-ShardBits)], h
}

// str views key as a string (no copy: for lookups only).
func str(key []byte) string { return unsafe.String(unsafe.SliceData(key), len(key)) }

func (db *DB) expireIfNeeded(s *shard, key []byte, e *Entry, now int64) bool {
	if !e.vol || s.vol[string(key)] > now || db.ks.Loading.Load() {
		return false
	}
	if s.master || db.ks.masterAll.Load() {
		return false // the master's stream: present until the master deletes it
	}
	if db.ks.ExpiryPaused.Load() {
		return true // logically expired, removed once the pause ends
	}
	db.removeExpired(s, key)
	return true
}

func (db *DB) removeExpired(s *shard, key []byte) {
	e := s.m.del(str(key), keyHash(key))
	if e != nil {
		db.preChange(s, key, e)
		db.detach(key, e)
	}
	delete(s.vol, string(key))
	if e != nil {
		e.vol = false
		if db.slots != nil {
			db.slots.del(key)
		}
	}
	db.ks.ExpiredKeys.Add(1)
	if db.ks.OnExpired != nil {
		db.ks.OnExpired(db, key)
	}
	if db.ks.OnDeleted != nil {
		db.ks.OnDeleted(db, key, e)
	}
	if db.ks.OnModifiedByExpiry != nil {
		db.ks.OnModifiedByExpiry(db, key)
	} else if db.ks.OnModified != nil {
		db.ks.OnModified(db, key)
	}
}

// Lookup returns the live entry of key, or nil. An expired key is removed.
// It updates the key's LRU clock. The key's shard must be locked.
func (db *DB) Lookup(key []byte) *Entry {
	s, h := db.locate(key)
	e := s.m.get(str(key), h)
	if e == nil {
		return nil
	}
	if e.vol && db.expireIfNeeded(s, key, e, db.ks.Now()) {
		return nil
	}
	if !db.ks.NoTouch {
		db.ks.touch(e)
	}
	return e
}

// Peek is Lookup without touching the LRU clock.
func (db *DB) Peek(key []byte) *Entry {
	s, h := db.locate(key)
	e := s.m.get(str(key), h)
	if e == nil {
		return nil
	}
	if e.vol && db.expireIfNeeded(s, key, e, db.ks.Now()) {
		return nil
	}
	return e
}

// Set stores e under key, replacing any value and clearing its expiry
// unless keepTTL. The key's shard must be locked.
func (db *DB) Set(key []byte, e *Entry, keepTTL bool) {
	s, h := db.locate(key)
	old := s.m.put(key, h, e)
	if old != nil {
		db.preChange(s, key, old)
		db.detach(key, old)
		if keepTTL && old.vol && (db.ks.Now() < s.vol[string(key)] || s.master || db.ks.masterAll.Load()) {
			e.vol = true
		} else {
			if old.vol {
				delete(s.vol, string(key))
				old.vol = false
			}
			e.vol = false
		}
		if old != e && db.ks.OnDeleted != nil && old.kind != KindString {
			db.ks.OnDeleted(db, key, old)
		}
	} else {
		e.vol = false
	}
	e.lru = db.ks.newLRU(old)
	e.snap = db.ks.epoch // created after any running snapshot's cut
	if old == nil && db.slots != nil {
		db.slots.add(s.m.storedKey(str(key), h))
	}
	db.attach(key, e)
	db.Modified(key)
	if old == nil && db.ks.OnCreated != nil {
		db.ks.OnCreated(db, key, e)
	}
}

// Add stores a new key without expiry (the caller knows it does not
// exist). The key's shard must be locked.
func (db *DB) Add(key []byte, e *Entry) { db.AddExpire(key, e, 0) }

// AddExpire stores a new key with the expiry ms (unix milliseconds, 0 for
// none): RENAME and MOVE carry a key's expiry over this way. The key's
// shard must be locked.
func (db *DB) AddExpire(key []byte, e *Entry, ms int64) {
	s, h := db.locate(key)
	e.lru = db.ks.newLRU(nil)
	e.snap = db.ks.epoch
	e.vol = ms != 0
	if old := s.m.put(key, h, e); old != nil {
		// The key is new, unless it is an expired one that was kept
		// (expiry paused, or a dataset loading): that is replaced, its
		// expiry with it.
		db.preChange(s, key, old)
		db.detach(key, old)
		if !e.vol {
			delete(s.vol, string(key))
		}
	} else if db.slots != nil {
		db.slots.add(s.m.storedKey(str(key), h))
	}
	if e.vol {
		if s.vol == nil {
			s.vol = make(map[string]int64)
			db.hadVolatile.Store(true)
		}
		s.vol[string(key)] = ms
	}
	db.attach(key, e)
	db.Modified(key)
	if db.ks.OnCreated != nil {
		db.ks.OnCreated(db, key, e)
	}
}

// Changes returns the number of changes counted in db so far (no lock
// needed): eviction uses it to tell that a database it found empty may
// have gained keys since.
func (db *DB) Changes() uint64 {
	var n uint64
	for i := range db.shards {
		n += db.shards[i].dirty.Load()
	}
	return n
}

// Modified signals that key's value changed (for WATCH and friends) and
// counts the change (Dirty).
func (db *DB) Modified(key []byte) {
	db.shardFor(key).dirty.Add(1)
	if db.ks.OnModified != nil {
		db.ks.OnModified(db, key)
	}
}

// Delete removes key, reporting whether it existed (expired keys count as
// absent). The key's shard must be locked.
func (db *DB) Delete(key []byte) bool {
	s, h := db.locate(key)
	e := s.m.get(str(key), h)
	if e == nil {
		return false
	}
	if e.vol && db.expireIfNeeded(s, key, e, db.ks.Now()) {
		return false
	}
	db.remove(s, key, h, e)
	return true
}

// DeleteKept is Delete for DEL and UNLINK: a key whose time is up but
// that expiry keeps in place (on a replica, which waits for its master's
// DEL, or while expiry is paused) is deleted too, as a deletion, not an
// expiry, as Redis's delGenericCommand deletes what expireIfNeeded left.
// It reports whether it deleted. The key's shard must be locked.
func (db *DB) DeleteKept(key []byte) bool {
	s, h := db.locate(key)
	e := s.m.get(str(key), h)
	if e == nil {
		return false
	}
	if e.vol && db.expireIfNeeded(s, key, e, db.ks.Now()) && s.m.get(str(key), h) != e {
		return false // expired, and removed as such
	}
	db.remove(s, key, h, e)
	return true
}

// remove takes key, whose entry is e, out of shard s.
func (db *DB) remove(s *shard, key []byte, h uint64, e *Entry) {
	db.preChange(s, key, e)
	db.detach(key, e)
	s.m.del(str(key), h)
	if db.slots != nil {
		db.slots.del(key)
	}
	if e.vol {
		delete(s.vol, string(key))
		e.vol = false
	}
	if db.ks.OnDeleted != nil {
		db.ks.OnDeleted(db, key, e)
	}
	db.Modified(key)
}

// SetExpire sets (ms > 0) or clears (ms == 0) the expiry of a live entry.
// The key's shard must be locked.
func (db *DB) SetExpire(key []byte, e *Entry, ms int64) {
	s := db.shardFor(key)
	db.preChange(s, key, e)
	if ms == 0 {
		if e.vol {
			delete(s.vol, string(key))
			e.setVol(false)
		}
		return
	}
	if s.vol == nil {
		s.vol = make(map[string]int64)
		db.hadVolatile.Store(true)
	}
	s.vol[string(key)] = ms
	e.setVol(true)
}

// ExpireOf returns the expiry of key, whose entry is e, in unix
// milliseconds: 0 if it has none. The key's shard must be locked.
func (db *DB) ExpireOf(key []byte, e *Entry) int64 {
	if !e.vol {
		return 0
	}
	return db.shardFor(key).vol[string(key)]
}

// Size returns the number of keys (including not yet reclaimed expired
// ones, as Redis's DBSIZE does). Requires the exclusive lock.
func (db *DB) Size() int {
	n := 0
	for i := range db.shards {
		n += db.shards[i].m.n
	}
	return n
}

// Volatile returns the number of keys with an expiry. Exclusive lock.
func (db *DB) Volatile() int {
	n := 0
	for i := range db.shards {
		n += len(db.shards[i].vol)
	}
	return n
}

// Flush empties the database. Exclusive lock. OnFlush runs first, while
// the keys are still there, so it can see which watched keys existed.
func (db *DB) Flush() { db.flush(false) }

// FlushAsync is Flush with the keys' memory taken out of the count in the
// background (FLUSHDB ASYNC), as Redis's lazyfree thread frees them.
func (db *DB) FlushAsync() { db.flush(true) }

func (db *DB) flush(async bool) {
	if db.ks.OnFlush != nil {
		db.ks.OnFlush(db)
	}
	snap := db.ks.snap.Load() != nil
	var maps []keyMap
	for i := range db.shards {
		s := &db.shards[i]
		if s.m.n > 0 {
			if snap {
				db.flushForSnapshot(s)
			}
			maps = append(maps, s.m)
		}
		s.m, s.vol = keyMap{}, nil
	}
	db.hadVolatile.Store(false) // every map is gone: the next expiry makes one
	if db.slots != nil {
		db.slots.flush()
	}
	if len(maps) == 0 {
		return
	}
	if async {
		go db.ks.dropAll(maps, false)
	} else {
		db.ks.dropAll(maps, true)
	}
}

// Exists reports whether key is present and live, without side effects.
// The key's shard (or the exclusive lock) must be held.
func (db *DB) Exists(key []byte) bool {
	s, h := db.locate(key)
	e := s.m.get(str(key), h)
	return e != nil && (!e.vol || s.vol[string(key)] > db.ks.Now())
}

// IsExpired reports whether key is present but logically expired (not
// yet reclaimed). The key's shard (or the exclusive lock) must be held.
func (db *DB) IsExpired(key []byte) bool {
	s, h := db.locate(key)
	e := s.m.get(str(key), h)
	return e != nil && e.vol && s.vol[string(key)] <= db.ks.Now()
}

// ForEach calls fn for every live key until it returns false. Expired keys
// are skipped (not removed). Exclusive lock.
func (db *DB) ForEach(fn func(key string, e *Entry) bool) {
	now := db.ks.Now()
	for i := range db.shards {
		s := &db.shards[i]
		stop := false
		s.m.each(func(k string, e *Entry) bool {
			if e.vol && s.vol[k] <= now {
				return true
			}
			stop = !fn(k, e)
			return !stop
		})
		if stop {
			return
		}
	}
}

// ShardSet is a set of shard indexes, locked in ascending order.
type ShardSet [NShards / 64]uint64

// Add adds the shard of key.
func (s *ShardSet) Add(key []byte) {
	i := ShardOf(key)
	s[i>>6] |= 1 << (i & 63)
}

// Lock locks every shard in the set in ascending order.
func (s *ShardSet) Lock(db *DB) {
	for w, word := range s {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			lockSpin(&db.shards[w<<6|b].mu)
			word &= word - 1
		}
	}
}

// Unlock unlocks every shard in the set.
func (s *ShardSet) Unlock(db *DB) {
	for w, word := range s {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			db.shards[w<<6|b].mu.Unlock()
			word &= word - 1
		}
	}
}

// BigLock is a reader-writer lock with one reader slot per event loop, so
// ordinary commands on different cores never share a cache line, while a
// transaction, a script or a keyspace-wide command takes every slot.
type BigLock struct {
	slots []paddedRW
}

type paddedRW struct {
	sync.RWMutex
	_ [40]byte
}

func (l *BigLock) init(n int) {
	if n < 1 {
		n = 1
	}
	l.slots = make([]paddedRW, n)
}

// Slots returns the number of reader slots.
func (l *BigLock) Slots() int { return len(l.slots) }

// TryRLock takes reader slot i if it is free of a writer now.
func (l *BigLock) TryRLock(i int) bool { return l.slots[i].TryRLock() }

// RLock takes reader slot i (shared with other commands).
func (l *BigLock) RLock(i int)   { l.slots[i].RLock() }
func (l *BigLock) RUnlock(i int) { l.slots[i].RUnlock() }

// Lock takes the lock exclusively.
func (l *BigLock) Lock() {
	for i := range l.slots {
		l.slots[i].Lock()
	}
}

// Unlock releases the exclusive lock.
func (l *BigLock) Unlock() {
	for i := len(l.slots) - 1; i >= 0; i-- {
		l.slots[i].Unlock()
	}
}
