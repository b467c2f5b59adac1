package store

import (
	"sync/atomic"
	"unsafe"
)

// Prefetcher overlaps the cache misses of many key lookups. A lookup
// follows a chain of lines (the shard's tag, its slot, then the key blob
// and the entry that slot points to, then the value), and on a big
// keyspace each is a miss the CPU waits for, one after the other: for a
// pipeline of GETs and SETs, most of what a command costs. An event loop
// that holds the input of many commands Adds their keys and Runs: Run
// walks all the keys a step at a time, asking for each key's next line
// without waiting for it, so that the misses of all the keys overlap and
// the commands then find their lines in the cache.
//
// Run only issues hints, and takes no shard lock: a locked instruction
// per key waits for the loads before it, which undoes part of the
// overlap (measured: docs/benchmarks.md).
// It reads a shard's table through the view the table publishes when its
// arrays are replaced, so the arrays it reads are a consistent pair that
// stays allocated while it reads them, and it holds a reader slot of the
// keyspace's lock, so that no FLUSHALL or SWAPDB replaces the shards
// meanwhile. What it reads in the arrays may be changing under another
// loop's command; at worst it fetches a line nobody needs. (Under the race
// detector Run does nothing: those reads race by design.)
type Prefetcher struct {
	n    int
	keys [PrefetchMax]pfKey
}

// PrefetchMax is how many keys one Run takes.
const PrefetchMax = 64

type pfKey struct {
	db  *DB
	key []byte
	h   uint64
	v   *kmView
	at  int    // the slot Run looks at
	e   *Entry // the entry found
}

// Add queues key of db for Run; it reports false when the batch is full.
func (p *Prefetcher) Add(db *DB, key []byte) bool {
	if p.n == len(p.keys) {
		return false
	}
	p.keys[p.n] = pfKey{db: db, key: key}
	p.n++
	return true
}

// Reset empties the batch.
func (p *Prefetcher) Reset() {
	clear(p.keys[:p.n])
	p.n = 0
}

// Len is the number of keys queued.
func (p *Prefetcher) Len() int { return p.n }

// Run issues the prefetches of the keys queued, empties the batch and
// returns how many of the keys it found an entry for. slot is the
// caller's reader slot of the keyspace's lock (see BigLock); when a writer
// holds it, Run does nothing.
func (p *Prefetcher) Run(ks *Keyspace, slot int) (found int) {
	if !prefetchOn || p.n == 0 || !ks.Lock.TryRLock(slot) {
		p.Reset()
		return 0
	}
	keys := p.keys[:p.n]
	// Step 1: the key's home slot: its tag and its (key, entry) pair.
	for i := range keys {
		k := &keys[i]
		var s *shard
		s, k.h = k.db.locate(k.key)
		v := (*kmView)(atomic.LoadPointer(&s.m.view))
		if v == nil || len(v.tags) == 0 || len(v.tags) != len(v.slots) {
			continue
		}
		k.v = v
		k.at = home(k.h, len(v.tags))
		prefetch(uintptr(unsafe.Pointer(&v.tags[k.at])))
		prefetch(uintptr(unsafe.Pointer(&v.slots[k.at])))
	}
	// Step 2: the key blob and the entry of the first slot of the probe
	// whose tag matches.
	for i := range keys {
		k := &keys[i]
		v := k.v
		if v == nil {
			continue
		}
		tag := keyTag(k.h)
		for j, probe := k.at, 0; probe < 8; probe++ {
			t := v.tags[j]
			if t == tagEmpty {
				break
			}
			if t == tag {
				sl := &v.slots[j]
				prefetch(uintptr(sl.k))
				if k.e = sl.e; k.e != nil {
					prefetch(uintptr(unsafe.Pointer(k.e)))
				}
				break
			}
			if j++; j == len(v.tags) {
				j = 0
			}
		}
	}
	// Step 3: the value the entry points to.
	for i := range keys {
		if e := keys[i].e; e != nil {
			prefetch(uintptr(e.ptr))
			found++
		}
	}
	ks.Lock.RUnlock(slot)
	p.Reset()
	return found
}
