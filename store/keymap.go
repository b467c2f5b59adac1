package store

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// keyMap is a shard's table of keys, built for memory: open addressing
// with linear probing over an array of (key, entry) pointer pairs and a
// parallel array of one-byte tags. It grows by half (a key's home slot is
// its hash scaled to the table's size, which need not be a power of
// two), so the load stays between about 0.57 and 0.85. A key is one pointer-free allocation
// (uvarint length, then the bytes), like the members of big hashes and
// sets. A key costs its blob and 17 bytes a slot: about 28 bytes at the
// table's average load, against 25 bytes a slot and a much lower load in
// a Go map (measured: 56 bytes a key for a map[string]*Entry of a few
// thousand keys), plus the string.
//
// A probe reads only tags until one matches: 0 marks an empty slot, 1 a
// deleted one (a tombstone, reused by inserts and cleared when the table
// is rebuilt), and 2..255 eight bits of the key's hash. The hash is the
// keyspace's (Hash), whose top bits chose the shard, so a lookup hashes
// its key once.
type keyMap struct {
	tags  []uint8
	slots []kslot
	n     int // keys
	used  int // keys and tombstones
	// view is a *kmView of the arrays, replaced with them, for readers
	// that take no lock and only need a consistent pair (Prefetcher):
	// the slices themselves are three words each, written one by one.
	view unsafe.Pointer
}

type kmView struct {
	tags  []uint8
	slots []kslot
}

// publish makes the table's current arrays its view.
func (m *keyMap) publish() {
	atomic.StorePointer(&m.view, unsafe.Pointer(&kmView{m.tags, m.slots}))
}

type kslot struct {
	k unsafe.Pointer // key blob
	e *Entry
}

const (
	tagEmpty = 0
	tagDead  = 1
)

// kmMinSize is the smallest table.
const kmMinSize = 8

func keyTag(h uint64) uint8 {
	t := uint8(h >> 40)
	if t < 2 {
		t += 2
	}
	return t
}

// kmKey returns the key of a blob (its own bytes, never modified).
func kmKey(p unsafe.Pointer) string {
	l, off := zblobLen(p)
	if l == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Add(p, off)), l)
}

// keyBlobSize is the allocation of a key of n bytes.
func keyBlobSize(n int) int64 { return AllocSize(uvarintLen(n) + n) }

// home returns the slot where a key of hash h starts its probe.
func home(h uint64, size int) int {
	hi, _ := bits.Mul64(h&0xffffffff, uint64(size)<<32)
	return int(hi)
}

// find returns the slot of key, or -1.
func (m *keyMap) find(key string, h uint64) int {
	if m.n == 0 {
		return -1
	}
	tags := m.tags
	tag := keyTag(h)
	for i := home(h, len(tags)); ; {
		switch t := tags[i]; t {
		case tagEmpty:
			return -1
		case tag:
			if kmKey(m.slots[i].k) == key {
				return i
			}
		}
		if i++; i == len(tags) {
			i = 0
		}
	}
}

// get returns the entry of key, or nil.
func (m *keyMap) get(key string, h uint64) *Entry {
	if i := m.find(key, h); i >= 0 {
		return m.slots[i].e
	}
	return nil
}

// storedKey returns the table's own copy of key, which must be present
// (for an index that keeps the key too: it shares the bytes).
func (m *keyMap) storedKey(key string, h uint64) string {
	return kmKey(m.slots[m.find(key, h)].k)
}

// lookup is get, hashing the key.
func (m *keyMap) lookup(key string) *Entry {
	if m.n == 0 {
		return nil
	}
	return m.get(key, HashString(key))
}

// put stores e under key and returns the entry it replaced (nil if key
// was absent: its blob is made then).
func (m *keyMap) put(key []byte, h uint64, e *Entry) *Entry {
	if i := m.find(unsafe.String(unsafe.SliceData(key), len(key)), h); i >= 0 {
		old := m.slots[i].e
		m.slots[i].e = e
		return old
	}
	if (m.used+1)*20 > len(m.tags)*17 {
		m.grow()
	}
	i := home(h, len(m.tags))
	for m.tags[i] > tagDead {
		if i++; i == len(m.tags) {
			i = 0
		}
	}
	if m.tags[i] == tagEmpty {
		m.used++
	}
	m.tags[i] = keyTag(h)
	m.slots[i] = kslot{k: newKeyBlob(key), e: e}
	m.n++
	return nil
}

// del removes key and returns its entry (nil if absent).
func (m *keyMap) del(key string, h uint64) *Entry {
	i := m.find(key, h)
	if i < 0 {
		return nil
	}
	e := m.slots[i].e
	m.slots[i] = kslot{}
	m.n--
	next := i + 1
	if next == len(m.tags) {
		next = 0
	}
	if m.tags[next] == tagEmpty {
		// Nothing probes past the end of a run: the slot is empty.
		m.tags[i] = tagEmpty
		m.used--
	} else {
		m.tags[i] = tagDead
	}
	if len(m.tags) > kmMinSize && m.n*8 < len(m.tags) {
		m.rebuild(m.n * 2)
	}
	return e
}

// grow makes room for one more key: a table half as big again, or the
// same size without its tombstones when they are most of the load.
func (m *keyMap) grow() {
	if m.tags == nil {
		m.tags = make([]uint8, kmMinSize)
		m.slots = make([]kslot, kmMinSize)
		m.publish()
		return
	}
	if m.n*2 < m.used {
		m.rebuild(len(m.tags))
		return
	}
	m.rebuild(len(m.tags) + len(m.tags)/2)
}

// rebuild moves the keys to a table of size slots.
func (m *keyMap) rebuild(size int) {
	size = max(size, kmMinSize)
	oldTags, oldSlots := m.tags, m.slots
	m.tags = make([]uint8, size)
	m.slots = make([]kslot, size)
	m.used = m.n
	for j, t := range oldTags {
		if t <= tagDead {
			continue
		}
		s := oldSlots[j]
		k := kmKey(s.k)
		i := home(keyHash(unsafe.Slice(unsafe.StringData(k), len(k))), size)
		for m.tags[i] != tagEmpty {
			if i++; i == size {
				i = 0
			}
		}
		m.tags[i] = t
		m.slots[i] = s
	}
	m.publish()
}

// size is the allocation of the table's arrays.
func (m *keyMap) size() int64 {
	return AllocSize(len(m.tags)) + AllocSize(int(unsafe.Sizeof(kslot{}))*len(m.slots))
}

// each calls fn for every key until it returns false. fn must not change
// the map.
func (m *keyMap) each(fn func(k string, e *Entry) bool) {
	m.eachFrom(0, fn)
}

// eachFrom is each starting at slot start (any number: it is reduced
// modulo the table's size) and wrapping around.
func (m *keyMap) eachFrom(start int, fn func(k string, e *Entry) bool) {
	tags, slots := m.tags, m.slots
	if len(tags) == 0 {
		return
	}
	start = int(uint(start) % uint(len(tags)))
	for j := range tags {
		i := start + j
		if i >= len(tags) {
			i -= len(tags)
		}
		if tags[i] > tagDead {
			if s := slots[i]; s.e != nil && !fn(kmKey(s.k), s.e) {
				return
			}
		}
	}
}
