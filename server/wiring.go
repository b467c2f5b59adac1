package server

import "github.com/sluicedb/sluice/store"

// Where the command families meet: hooks that one family declares and
// another fills, kept in one place so the connections are easy to see.
func init() {
	// OBJECT ENCODING and COPY for lists and sorted sets.
	prevEncoding := objectEncodingOf
	objectEncodingOf = func(e *store.Entry) string {
		if enc := listZsetEncoding(e); enc != "" {
			return enc
		}
		return prevEncoding(e)
	}
	objectDupers[store.KindList] = dupListZset
	objectDupers[store.KindZSet] = dupListZset

	// ZUNION/ZINTER/ZDIFF accept plain sets, every member scored 1.
	zsetSetMembers = func(e *store.Entry, fn func(member []byte)) {
		e.AsSet().ForEach(func(m []byte) bool {
			fn(m)
			return true
		})
	}
}

// wireBlocking connects CLIENT UNBLOCK and key creation (RENAME, MOVE,
// COPY, *STORE... onto a key someone waits for) to the blocking registry.
func (s *Server) wireBlocking() {
	s.unblockHook = func(c *Client, withError bool) bool { return unblockClient(s, c.ID, withError) }
	s.ks.OnCreated = func(db *store.DB, key []byte, e *store.Entry) {
		if k := e.Kind(); k == store.KindList || k == store.KindZSet || k == store.KindStream {
			s.signalKeyAsReady(db, key)
		}
	}
	// A deleted or overwritten stream unblocks its XREADGROUP clients
	// (Redis's dbGenericDelete and dbOverwrite signal it).
	prevDel := s.ks.OnDeleted
	s.ks.OnDeleted = func(db *store.DB, key []byte, e *store.Entry) {
		if prevDel != nil {
			prevDel(db, key, e)
		}
		if e != nil && e.Kind() == store.KindStream {
			s.signalKeyAsReady(db, key)
		}
	}
	prevFlush := s.ks.OnFlush
	s.ks.OnFlush = func(db *store.DB) {
		if prevFlush != nil {
			prevFlush(db)
		}
		s.signalStreamsGone(db)
	}
	prevSwap := s.ks.OnSwap
	s.ks.OnSwap = func(a, b *store.DB) {
		if prevSwap != nil {
			prevSwap(a, b)
		}
		s.signalStreamsSwapped(a, b)
		s.signalStreamsSwapped(b, a)
	}
}

// signalSwapped signals, after SWAPDB, the keys clients wait for that now
// exist in the swapped databases (Redis's scanDatabaseForReadyKeys).
func (s *Server) signalSwapped(dbs ...*store.DB) {
	b := &s.blocking
	if b.count.Load() == 0 {
		return
	}
	b.mu.Lock()
	keys := make([]readyKey, 0, len(b.waiters))
	for rk := range b.waiters {
		keys = append(keys, rk)
	}
	b.mu.Unlock()
	for _, rk := range keys {
		for _, db := range dbs {
			// Present, even expired, as Redis's dictFind: the waiter's
			// retry finds it expired and deletes it (a DEL after SWAPDB
			// in the replication stream).
			if rk.dbi == db.ID && db.PeekRaw([]byte(rk.key)) != nil {
				s.signalKeyAsReady(db, []byte(rk.key))
			}
		}
	}
}

// waitedKeys returns the keys of db that blocked clients wait for.
func (s *Server) waitedKeys(db *store.DB) []string {
	b := &s.blocking
	if b.count.Load() == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for rk := range b.waiters {
		if rk.dbi == db.ID {
			keys = append(keys, rk.key)
		}
	}
	return keys
}

// signalStreamsGone signals, before db is emptied, the stream keys clients
// wait for (Redis's scanDatabaseForDeletedStreams).
func (s *Server) signalStreamsGone(db *store.DB) {
	for _, k := range s.waitedKeys(db) {
		if e := db.Peek([]byte(k)); e != nil && e.Kind() == store.KindStream {
			s.signalKeyAsReady(db, []byte(k))
		}
	}
}

// signalStreamsSwapped signals, after SWAPDB, the keys of db that clients
// wait for which held a stream before the swap (now in old) and no longer
// do.
func (s *Server) signalStreamsSwapped(db, old *store.DB) {
	for _, k := range s.waitedKeys(db) {
		// Raw, as Redis's dictFind: looking up would expire keys here,
		// their DELs reaching the replicas before the SWAPDB.
		was := old.PeekRaw([]byte(k))
		now := db.PeekRaw([]byte(k))
		if was != nil && was.Kind() == store.KindStream && (now == nil || now.Kind() != store.KindStream) {
			s.signalKeyAsReady(db, []byte(k))
		}
	}
}
