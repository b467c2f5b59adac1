package repl

import "sync"

// WrittenKeys are the keys clients wrote, with an expiry, on a writable
// replica (Redis 7.0's slaveKeysWithExpire): the master never sends a DEL
// for them, so the replica expires them itself (expireSlaveKeys).
type WrittenKeys struct {
	mu   sync.Mutex
	keys map[writtenKey]struct{}
}

type writtenKey struct {
	db  int
	key string
}

// Add remembers key of database db.
func (w *WrittenKeys) Add(db int, key []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keys == nil {
		w.keys = map[writtenKey]struct{}{}
	}
	w.keys[writtenKey{db, string(key)}] = struct{}{}
}

// Len counts the keys remembered.
func (w *WrittenKeys) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.keys)
}

// Sweep calls keep for each key remembered and forgets those it does not
// keep (gone, persistent, or expired and removed by keep). Keys added
// meanwhile stay.
func (w *WrittenKeys) Sweep(keep func(db int, key []byte) bool) {
	w.mu.Lock()
	keys := w.keys
	w.keys = nil
	w.mu.Unlock()
	kept := map[writtenKey]struct{}{}
	for k := range keys {
		if keep(k.db, []byte(k.key)) {
			kept[k] = struct{}{}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keys == nil {
		w.keys = kept
	} else {
		for k := range kept {
			w.keys[k] = struct{}{}
		}
	}
}
