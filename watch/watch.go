// Package watch is WATCH's bookkeeping: which clients watch which keys,
// and when a change to a key (or to a whole database, by FLUSHDB or
// SWAPDB) makes their EXEC fail, with Redis 7's rules for keys that had
// already expired when they were watched. A client takes part through
// its State (its watched keys and its verdict); the Registry maps keys to
// the States watching them. MULTI, EXEC and WATCH themselves stay in the
// server.
package watch

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sluicedb/sluice/store"
)

// Key identifies a watched key by database index and key: as in Redis,
// watches stay with the index across SWAPDB (the data moves).
type Key struct {
	DB   int
	Name string
}

// watched is one key a client watches.
type watched struct {
	Key
	expired bool // already logically expired when watched
}

// EntrySize is the bytes a State keeps per watched key.
const EntrySize = int64(unsafe.Sizeof(watched{}))

// State is one client's watches: the keys it watches and whether one of
// them changed since (its EXEC then fails). The zero State watches
// nothing.
type State struct {
	dirty atomic.Bool
	keys  []watched
}

// Dirty reports whether a watched key changed.
func (s *State) Dirty() bool { return s.dirty.Load() }

// MarkDirty makes the client's EXEC fail.
func (s *State) MarkDirty() { s.dirty.Store(true) }

// Len is the number of keys watched.
func (s *State) Len() int { return len(s.keys) }

// OnlyIn reports whether every watched key is in database dbi.
func (s *State) OnlyIn(dbi int) bool {
	for _, w := range s.keys {
		if w.DB != dbi {
			return false
		}
	}
	return true
}

// AddShards adds the shards of the watched keys to set (EXEC locks them).
func (s *State) AddShards(set *store.ShardSet) {
	for _, w := range s.keys {
		set.Add([]byte(w.Name))
	}
}

// find finds the watch of key in database dbi (registry lock held).
func (s *State) find(dbi int, key []byte) *watched {
	for i := range s.keys {
		if w := &s.keys[i]; w.DB == dbi && w.Name == string(key) {
			return w
		}
	}
	return nil
}

// Registry maps watched keys to the clients watching them. Its zero
// value is ready; count lets the keyspace's modification hook return at
// once when nobody watches.
type Registry struct {
	mu    sync.Mutex
	keys  map[Key]map[*State]struct{}
	count atomic.Int64
}

// Watch adds key of db to s's watches (WATCH), noting whether it has
// already expired.
func (r *Registry) Watch(s *State, db *store.DB, key []byte) {
	wk := Key{db.ID, string(key)}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range s.keys {
		if w.Key == wk {
			return
		}
	}
	if r.keys == nil {
		r.keys = map[Key]map[*State]struct{}{}
	}
	set := r.keys[wk]
	if set == nil {
		set = map[*State]struct{}{}
		r.keys[wk] = set
		r.count.Add(1)
	}
	set[s] = struct{}{}
	s.keys = append(s.keys, watched{wk, db.IsExpired(key)})
}

// UnwatchAll forgets s's watches and their verdict.
func (r *Registry) UnwatchAll(s *State) {
	if len(s.keys) > 0 {
		r.mu.Lock()
		for _, w := range s.keys {
			if set := r.keys[w.Key]; set != nil {
				delete(set, s)
				if len(set) == 0 {
					delete(r.keys, w.Key)
					r.count.Add(-1)
				}
			}
		}
		r.mu.Unlock()
		s.keys = s.keys[:0]
	}
	s.dirty.Store(false)
}

// Touch marks every client watching key dirty, after the key changed. A
// key that had already expired when it was watched and is now gone (its
// expiry deleted it, or DEL did) has not changed logically: that watch
// only loses its expired mark, as in Redis.
func (r *Registry) Touch(db *store.DB, key []byte) {
	if r.count.Load() == 0 {
		return
	}
	r.mu.Lock()
	set := r.keys[Key{db.ID, string(key)}]
	if len(set) > 0 {
		gone := db.PeekRaw(key) == nil
		for s := range set {
			if w := s.find(db.ID, key); w != nil && w.expired && gone {
				w.expired = false
				continue
			}
			s.dirty.Store(true)
		}
	}
	r.mu.Unlock()
}

// TouchDB marks dirty the watchers of keys of database index dbi when
// its data is emptied (FLUSHDB: replaced is nil) or replaced by another
// database's (SWAPDB), following Redis's touchAllWatchedKeysInDb: keys
// present (even if stale) on either side count, except that a stale key
// that stays stale or disappears is no change, and a missing key replaced
// by a stale one only becomes a stale watch.
func (r *Registry) TouchDB(dbi int, emptied, replaced *store.DB) {
	if r.count.Load() == 0 {
		return
	}
	r.mu.Lock()
	for wk, set := range r.keys {
		if wk.DB != dbi {
			continue
		}
		k := []byte(wk.Name)
		inEmptied := emptied.PeekRaw(k) != nil
		inReplaced := replaced != nil && replaced.PeekRaw(k) != nil
		if !inEmptied && !inReplaced {
			continue
		}
		for s := range set {
			w := s.find(dbi, k)
			if w != nil && w.expired {
				if !inReplaced {
					w.expired = false // the stale key is gone: no change
					continue
				}
				if replaced.IsExpired(k) {
					continue // stale, and stale it stays
				}
			} else if w != nil && !inEmptied && replaced.IsExpired(k) {
				w.expired = true // nothing replaced by a stale key
				continue
			}
			s.dirty.Store(true)
		}
	}
	r.mu.Unlock()
}

// Expired reports whether a key s watched while it was live has
// logically expired since in ks (EXEC then fails, as in Redis 7).
func (r *Registry) Expired(s *State, ks *store.Keyspace) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range s.keys {
		if !w.expired && ks.DB(w.DB).IsExpired([]byte(w.Name)) {
			return true
		}
	}
	return false
}
