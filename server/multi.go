package server

import (
	"sync"
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/store"
)

func multiCommand(c *Client, args [][]byte) {
	if c.tx != nil {
		c.w.Error("ERR MULTI calls can not be nested")
		return
	}
	if c.tx = c.txSpare; c.tx == nil {
		c.tx = &txState{}
	}
	c.txSpare = nil
	c.w.OK()
}

func discardCommand(c *Client, args [][]byte) {
	if c.tx == nil {
		c.w.Error("ERR DISCARD without MULTI")
		return
	}
	c.discardTx()
	c.w.OK()
}

// discardTx leaves MULTI and forgets watched keys (and their verdict).
func (c *Client) discardTx() {
	if c.tx != nil {
		c.tx.reset()
		c.txSpare = c.tx
		c.tx = nil
	}
	c.srv.watches.unwatchAll(c)
	c.dirtyCAS.Store(false)
}

// execCommand runs the queued commands with no other client's command
// interleaved. It locks the shards of every key the transaction reads,
// writes or watches, so clients on other keys go on meanwhile; a
// transaction holding a command that needs the whole keyspace (KEYS,
// FLUSHALL, SORT, EVAL...) or that changes database takes the keyspace
// exclusively instead.
func execCommand(c *Client, args [][]byte) {
	tx := c.tx
	if tx == nil {
		c.w.Error("ERR EXEC without MULTI")
		return
	}
	ks := c.srv.ks
	if c.txNeedsAll() {
		ks.Lock.Lock()
		c.execLocked(tx)
		ks.Lock.Unlock()
		return
	}
	var set store.ShardSet
	for i, cmd := range tx.names {
		c.keys = cmd.Keys(tx.cmds[i], c.keys[:0], cmdspec.Access)
		for _, k := range c.keys {
			set.Add(tx.cmds[i][k.Pos])
		}
	}
	for _, w := range c.watched {
		set.Add([]byte(w.key))
	}
	ks.Lock.RLock(c.slot)
	db := c.DB()
	set.Lock(db)
	c.execLocked(tx)
	set.Unlock(db)
	ks.Lock.RUnlock(c.slot)
}

// txQueued reports whether a command queued in c's transaction has flag
// f (Redis's mstate.cmd_flags): EXEC is refused for what it would run.
func (c *Client) txQueued(f cmdspec.Flags) bool {
	if c.tx == nil {
		return false
	}
	for _, q := range c.tx.names {
		if q.Flags&f != 0 {
			return true
		}
	}
	return false
}

// txQueuedWithout reports whether a queued command lacks flag f.
func (c *Client) txQueuedWithout(f cmdspec.Flags) bool {
	if c.tx == nil {
		return false
	}
	for _, q := range c.tx.names {
		if q.Flags&f == 0 {
			return true
		}
	}
	return false
}

// txNeedsAll reports whether the queued transaction must run with the
// keyspace exclusively locked.
func (c *Client) txNeedsAll() bool {
	for _, cmd := range c.tx.names {
		// DEBUG (SLEEP, RELOAD...) holds the whole server, as in Redis.
		if cmd.Flags&cmdspec.LockAll != 0 || cmd.Name == "select" || cmd.Name == "debug" {
			return true
		}
	}
	for _, w := range c.watched {
		if w.db != c.dbi {
			return true
		}
	}
	return false
}

// execLocked is EXEC once the transaction's locks are held.
func (c *Client) execLocked(tx *txState) {
	if c.srv.watches.expiredWatched(c) {
		c.dirtyCAS.Store(true)
	}
	if tx.dirty {
		c.w.Error("EXECABORT Transaction discarded because of previous errors.")
		c.discardTx()
		return
	}
	if c.dirtyCAS.Load() {
		c.w.NullArray()
		c.discardTx()
		return
	}
	c.tx = nil
	c.srv.watches.unwatchAll(c)
	c.dirtyCAS.Store(false)
	c.inExec = true
	c.srv.execDepth.Add(1)
	c.w.Array(len(tx.cmds))
	for i, cmd := range tx.names {
		c.call(cmd, tx.cmds[i])
	}
	c.srv.execDepth.Add(-1)
	c.inExec = false
	if c.rpend != nil && len(c.rpend.ops) > 0 {
		c.srv.replFlush(c) // still under the transaction's locks
	}
	tx.reset()
	c.txSpare = tx
}

func watchCommand(c *Client, args [][]byte) {
	if c.tx != nil {
		c.w.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	if c.dirtyCAS.Load() {
		c.w.OK()
		return
	}
	db := c.DB()
	for _, k := range args[1:] {
		c.srv.watches.watch(c, db, k)
	}
	c.w.OK()
}

func unwatchCommand(c *Client, args [][]byte) {
	c.srv.watches.unwatchAll(c)
	c.dirtyCAS.Store(false)
	c.w.OK()
}

// watchKey identifies a watched key by database index and key: as in
// Redis, watches stay with the index across SWAPDB (the data moves).
type watchKey struct {
	db  int
	key string
}

// watchedKey is one key a client watches.
type watchedKey struct {
	watchKey
	expired bool // already logically expired when watched
}

// watchRegistry maps watched keys to the clients watching them. count lets
// the store's modification hook return at once when nobody watches.
type watchRegistry struct {
	mu    sync.Mutex
	keys  map[watchKey]map[*Client]struct{}
	count atomic.Int64
}

func (r *watchRegistry) watch(c *Client, db *store.DB, key []byte) {
	wk := watchKey{db.ID, string(key)}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range c.watched {
		if w.watchKey == wk {
			return
		}
	}
	if r.keys == nil {
		r.keys = map[watchKey]map[*Client]struct{}{}
	}
	set := r.keys[wk]
	if set == nil {
		set = map[*Client]struct{}{}
		r.keys[wk] = set
		r.count.Add(1)
	}
	set[c] = struct{}{}
	c.watched = append(c.watched, watchedKey{wk, db.IsExpired(key)})
}

func (r *watchRegistry) unwatchAll(c *Client) {
	if len(c.watched) == 0 {
		return
	}
	r.mu.Lock()
	for _, w := range c.watched {
		if set := r.keys[w.watchKey]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(r.keys, w.watchKey)
				r.count.Add(-1)
			}
		}
	}
	r.mu.Unlock()
	c.watched = c.watched[:0]
}

// touch marks every client watching key dirty, after the key changed. A
// key that had already expired when it was watched and is now gone (its
// expiry deleted it, or DEL did) has not changed logically: that watch
// only loses its expired mark, as in Redis.
func (r *watchRegistry) touch(db *store.DB, key []byte) {
	if r.count.Load() == 0 {
		return
	}
	r.mu.Lock()
	set := r.keys[watchKey{db.ID, string(key)}]
	if len(set) > 0 {
		gone := db.PeekRaw(key) == nil
		for c := range set {
			if w := c.watchedEntry(db.ID, key); w != nil && w.expired && gone {
				w.expired = false
				continue
			}
			c.dirtyCAS.Store(true)
		}
	}
	r.mu.Unlock()
}

// watchedEntry finds c's watch of key in database dbi (registry lock held).
func (c *Client) watchedEntry(dbi int, key []byte) *watchedKey {
	for i := range c.watched {
		if w := &c.watched[i]; w.db == dbi && w.key == string(key) {
			return w
		}
	}
	return nil
}

// touchDB marks dirty the watchers of keys of database index dbi when
// its data is emptied (FLUSHDB: replaced is nil) or replaced by another
// database's (SWAPDB), following Redis's touchAllWatchedKeysInDb: keys
// present (even if stale) on either side count, except that a stale key
// that stays stale or disappears is no change, and a missing key replaced
// by a stale one only becomes a stale watch.
func (r *watchRegistry) touchDB(dbi int, emptied, replaced *store.DB) {
	if r.count.Load() == 0 {
		return
	}
	r.mu.Lock()
	for wk, set := range r.keys {
		if wk.db != dbi {
			continue
		}
		k := []byte(wk.key)
		inEmptied := emptied.PeekRaw(k) != nil
		inReplaced := replaced != nil && replaced.PeekRaw(k) != nil
		if !inEmptied && !inReplaced {
			continue
		}
		for c := range set {
			w := c.watchedEntry(dbi, k)
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
			c.dirtyCAS.Store(true)
		}
	}
	r.mu.Unlock()
}

// expiredWatched reports whether a key that was live when watched has
// logically expired since (EXEC then fails, as in Redis 7).
func (r *watchRegistry) expiredWatched(c *Client) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range c.watched {
		if !w.expired && c.srv.ks.DB(w.db).IsExpired([]byte(w.key)) {
			return true
		}
	}
	return false
}

// wireWatches connects the keyspace's hooks to the registry.
func (s *Server) wireWatches() {
	s.OnReset(func(c *Client) { c.discardTx() })
	s.ks.OnModified = func(db *store.DB, key []byte) {
		s.watches.touch(db, key)
		s.trackingInvalidate(db, key)
	}
	s.OnReset(func(c *Client) { s.tracking.Disable(c, c.trk.Load()) })
	s.ks.OnFlush = func(db *store.DB) { s.watches.touchDB(db.ID, db, nil) }
	s.ks.OnSwap = func(a, b *store.DB) {
		// After the swap a and b hold each other's data: the watchers of
		// a's index had their data (now b) replaced by a's, and the other
		// way round; clients blocked on a key that now exists may be
		// served.
		s.watches.touchDB(a.ID, b, a)
		s.watches.touchDB(b.ID, a, b)
		s.signalSwapped(a, b)
	}
}
