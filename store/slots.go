package store

import (
	"sync"
	"sync/atomic"
)

// The slot index: with cluster mode on, database 0 knows the keys of each
// of the 16,384 hash slots, so that counting, listing and deleting the
// keys of a slot (CLUSTER COUNTKEYSINSLOT, GETKEYSINSLOT, a slot taken
// away) never scans the keyspace. Keys of one slot live in many shards, so
// each slot has a small lock of its own, taken inside the shard lock.
// Without cluster mode a database has no index and pays one nil check per
// added or removed key.

// SlotCount is the number of hash slots.
const SlotCount = 16384

type slotIndex struct {
	slotOf func(key string) int
	total  atomic.Int64
	slots  [SlotCount]slotKeys
}

type slotKeys struct {
	mu   sync.Mutex
	n    atomic.Int64
	keys map[string]struct{}
}

// EnableSlotIndex makes database 0 keep the slot index, slotOf giving a
// key's slot. Call it before any key is added.
func (ks *Keyspace) EnableSlotIndex(slotOf func(key string) int) {
	ks.DB(0).slots = &slotIndex{slotOf: slotOf}
}

func (x *slotIndex) add(key string) {
	sk := &x.slots[x.slotOf(key)]
	sk.mu.Lock()
	if sk.keys == nil {
		sk.keys = make(map[string]struct{})
	}
	sk.keys[key] = struct{}{}
	sk.mu.Unlock()
	sk.n.Add(1)
	x.total.Add(1)
}

func (x *slotIndex) del(key []byte) {
	sk := &x.slots[x.slotOf(string(key))]
	sk.mu.Lock()
	delete(sk.keys, string(key))
	if len(sk.keys) == 0 {
		sk.keys = nil
	}
	sk.mu.Unlock()
	sk.n.Add(-1)
	x.total.Add(-1)
}

func (x *slotIndex) flush() {
	for i := range x.slots {
		sk := &x.slots[i]
		sk.mu.Lock()
		sk.keys = nil
		sk.n.Store(0)
		sk.mu.Unlock()
	}
	x.total.Store(0)
}

// HasSlotIndex reports whether the database keeps the slot index.
func (db *DB) HasSlotIndex() bool { return db.slots != nil }

// CountKeysInSlot returns the number of keys of slot (expired keys not
// yet reclaimed included, as Redis counts them). No lock needed.
func (db *DB) CountKeysInSlot(slot int) int {
	if db.slots == nil || slot < 0 || slot >= SlotCount {
		return 0
	}
	return int(db.slots.slots[slot].n.Load())
}

// KeyCount returns the number of keys of the database, read from the
// slot index without a lock (0 without the index).
func (db *DB) KeyCount() int {
	if db.slots == nil {
		return 0
	}
	return int(db.slots.total.Load())
}

// KeysInSlot returns up to max keys of slot. No lock needed.
func (db *DB) KeysInSlot(slot, max int) []string {
	if db.slots == nil || slot < 0 || slot >= SlotCount || max <= 0 {
		return nil
	}
	sk := &db.slots.slots[slot]
	sk.mu.Lock()
	defer sk.mu.Unlock()
	out := make([]string, 0, min(max, len(sk.keys)))
	for k := range sk.keys {
		if len(out) == max {
			break
		}
		out = append(out, k)
	}
	return out
}
