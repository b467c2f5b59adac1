package store

import (
	"cmp"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"sync"
)

// SCAN over Go maps.
//
// A Go map has no resumable cursor, so SCAN orders keys by their keyspace
// hash instead. A key's position is the top 48 bits of its hash; its shard
// is the top ShardBits of that, so walking positions in ascending order
// walks the shards in order. A call takes the count keys with the smallest
// positions at or above the cursor's, and returns the position after the
// last one. The sweep over the position space is monotonic and does not
// depend on the maps' sizes, so:
//
//   - every key present for the whole iteration is returned exactly once
//     (Redis only promises "at least once");
//   - keys added or removed during the iteration may or may not be seen;
//   - cursor 0 starts an iteration and is returned when it is over.
//
// Finding the next keys by position in a Go map means hashing the whole
// shard. For small shards each call just does that. For large ones a call
// sorts the shard's keys by position once into a snapshot, kept in a small
// cache, and later calls of the iteration binary-search it (skipping keys
// deleted since). A snapshot serves an iteration only if it was taken after
// the iteration began, so it holds every key present for the whole
// iteration: each SCAN 0 starts a new iteration epoch, whose low 16 bits
// ride in the cursor's top bits (cursor = epoch<<48 | position).

const (
	posBits      = 48
	posMask      = 1<<posBits - 1
	shardShift   = posBits - ShardBits
	snapSlots    = 8 // snapshots kept (LRU)
	epochBits    = 64 - posBits
	epochMask    = 1<<epochBits - 1
	maxSkipRatio = 10 // deleted snapshot entries skipped per wanted key
)

// snapMinKeys is the shard size from which SCAN uses snapshots; smaller
// shards are hashed on every call. (A variable for tests.)
var snapMinKeys = 256

// keyPos is a key's SCAN position: the top 48 bits of its hash.
func keyPos(k string) uint64 { return maphash.String(seed, k) >> (64 - posBits) }

type scanItem struct {
	h uint64 // position
	k string
}

type scanSnap struct {
	db    *DB
	shard int
	epoch uint64     // iteration epoch when taken
	used  uint64     // LRU tick
	items []scanItem // the shard's keys sorted by position
}

var scanCache struct {
	mu    sync.Mutex
	epoch uint64
	tick  uint64
	snaps [snapSlots]scanSnap
}

// snapshot returns a snapshot of shard si usable by the iteration of
// epoch e, taking one if needed. scanCache.mu must be held.
func (db *DB) snapshot(si int, e uint64) []scanItem {
	sc := &scanCache
	sc.tick++
	victim := 0
	for i := range sc.snaps {
		sn := &sc.snaps[i]
		if sn.db == db && sn.shard == si {
			if sn.epoch >= e {
				sn.used = sc.tick
				return sn.items
			}
			victim = i
			break
		}
		if sn.used < sc.snaps[victim].used {
			victim = i
		}
	}
	m := &db.shards[si].m
	sn := &sc.snaps[victim]
	items := sn.items[:0]
	if cap(items) < m.n || cap(items) > 4*m.n+64 {
		items = make([]scanItem, 0, m.n)
	}
	m.each(func(k string, _ *Entry) bool {
		items = append(items, scanItem{keyPos(k), k})
		return true
	})
	slices.SortFunc(items, func(a, b scanItem) int { return cmp.Compare(a.h, b.h) })
	*sn = scanSnap{db: db, shard: si, epoch: sc.epoch, used: sc.tick, items: items}
	return items
}

// DropScanSnapshots forgets the SCAN snapshots of db (after a flush), so
// they do not keep deleted keys' memory alive.
func (db *DB) DropScanSnapshots() {
	sc := &scanCache
	sc.mu.Lock()
	for i := range sc.snaps {
		if sc.snaps[i].db == db {
			sc.snaps[i] = scanSnap{}
		}
	}
	sc.mu.Unlock()
}

// Scan appends to dst the keys of one SCAN step starting at cursor and
// returns them with the cursor of the next step (0 when the iteration is
// complete). It returns about count keys (more when several share the last
// position, fewer when many keys were deleted during the iteration).
// Expired keys are included: the caller filters and reclaims them.
// Requires the exclusive lock.
func (db *DB) Scan(cursor uint64, count int, dst []string) ([]string, uint64) {
	if count < 1 {
		count = 1
	}
	sc := &scanCache
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var epoch uint64
	if cursor == 0 {
		sc.epoch++
		epoch = sc.epoch
	} else {
		// The newest epoch with these low bits: never older than the
		// iteration's real one, so a snapshot good for it is good.
		low := cursor >> posBits
		epoch = sc.epoch - (sc.epoch-low)&epochMask
	}
	tag := (epoch & epochMask) << posBits
	pos := cursor & posMask
	var items []scanItem
	for {
		si := int(pos >> shardShift)
		m := &db.shards[si].m
		need := count
		if m.n > snapMinKeys && m.n > need {
			snap := db.snapshot(si, epoch)
			i, _ := slices.BinarySearchFunc(snap, pos, func(it scanItem, p uint64) int { return cmp.Compare(it.h, p) })
			got, skipped := 0, 0
			for ; i < len(snap) && got < need && skipped < need*maxSkipRatio; i++ {
				if m.lookup(snap[i].k) != nil {
					dst = append(dst, snap[i].k)
					got++
				} else {
					skipped++
				}
			}
			if i < len(snap) {
				last := snap[i-1].h
				for ; i < len(snap) && snap[i].h == last; i++ {
					if m.lookup(snap[i].k) != nil {
						dst = append(dst, snap[i].k)
					}
				}
				if i < len(snap) {
					return dst, tag | (last + 1)
				}
			}
			count -= got
		} else {
			items = items[:0]
			m.each(func(k string, _ *Entry) bool {
				if h := keyPos(k); h >= pos {
					items = append(items, scanItem{h, k})
				}
				return true
			})
			if len(items) > need {
				selectSmallest(items, need)
				// Keys sharing the last position go with it, or the
				// cursor would skip them.
				last := items[0].h
				for _, it := range items[:need] {
					last = max(last, it.h)
				}
				for i := need; i < len(items); i++ {
					if items[i].h == last {
						items[need], items[i] = items[i], items[need]
						need++
					}
				}
				for _, it := range items[:need] {
					dst = append(dst, it.k)
				}
				// last+1 stays in this shard: a larger position remained.
				return dst, tag | (last + 1)
			}
			for _, it := range items {
				dst = append(dst, it.k)
			}
			count -= len(items)
		}
		if si == NShards-1 {
			return dst, 0
		}
		pos = uint64(si+1) << shardShift
		if count <= 0 {
			return dst, tag | pos
		}
	}
}

// selectSmallest reorders items so that items[:n] hold the n smallest
// hashes (in any order). 0 < n < len(items).
func selectSmallest(items []scanItem, n int) {
	lo, hi := 0, len(items)-1
	for lo < hi {
		// Median of three as the pivot, then Hoare partition.
		mid := lo + (hi-lo)/2
		a, b, c := items[lo].h, items[mid].h, items[hi].h
		var pivot uint64
		if (a <= b) == (b <= c) {
			pivot = b
		} else if (b <= a) == (a <= c) {
			pivot = a
		} else {
			pivot = c
		}
		i, j := lo, hi
		for i <= j {
			for items[i].h < pivot {
				i++
			}
			for items[j].h > pivot {
				j--
			}
			if i <= j {
				items[i], items[j] = items[j], items[i]
				i++
				j--
			}
		}
		// Now items[lo..j] <= pivot <= items[i..hi].
		switch {
		case n-1 <= j:
			hi = j
		case n-1 >= i:
			lo = i
		default:
			return
		}
	}
}

// RandomKey returns a key chosen uniformly at random (it may be expired:
// the caller checks), or ok=false when the database is empty. Requires the
// exclusive lock.
func (db *DB) RandomKey() (key string, e *Entry, ok bool) {
	total := db.Size()
	if total == 0 {
		return "", nil, false
	}
	i := rand.IntN(total)
	for si := range db.shards {
		m := &db.shards[si].m
		if i >= m.n {
			i -= m.n
			continue
		}
		m.each(func(k string, v *Entry) bool {
			if i == 0 {
				key, e, ok = k, v, true
				return false
			}
			i--
			return true
		})
		return key, e, ok
	}
	return "", nil, false
}

// PeekRaw returns the entry of key even when it has expired but was not
// reclaimed yet, without touching it (MEMORY USAGE). The key's shard must
// be locked.
func (db *DB) PeekRaw(key []byte) *Entry {
	s, h := db.locate(key)
	return s.m.get(str(key), h)
}

// CloneString returns a copy of a string entry with the same encoding and
// no expiry (COPY).
func (e *Entry) CloneString() *Entry {
	n := &Entry{kind: KindString, enc: e.encoding(), lru: e.lru}
	if e.encoding() == encInt {
		n.n, n.c = e.n, e.c
		return n
	}
	n.setBytes(e.raw())
	return n
}

// StringAlloc returns the bytes reserved for a non-integer string value
// (its capacity), for MEMORY USAGE.
func (e *Entry) StringAlloc() int {
	if e.encoding() == encInt {
		return 0
	}
	return int(e.c)
}
