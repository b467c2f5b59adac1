package store

import (
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Memory accounting. Redis's used_memory is what its allocator handed out;
// a Go server's heap holds garbage and headroom besides its data, so the
// keyspace counts the bytes its values take instead, the way zmalloc
// counts allocations: every key, entry and value adds its allocation
// sizes (rounded to Go's size classes) when it is stored and takes them
// away when it is removed, and a value that grows or shrinks in place
// reports the difference at once. The total (Keyspace.DatasetBytes) is
// what eviction and INFO's used_memory_dataset work on; it never lags a
// garbage collection and does not move when garbage is made.
//
// The count is exact by construction rather than by care at every call
// site:
//
//   - a string's bytes change only through the Entry methods, which report
//     the change when the entry is stored (its enc byte carries the number
//     of the keyspace's accountant);
//   - a collection keeps its own size in a header (memHdr) that only
//     setMem changes, reporting the difference while the collection is
//     stored; removing the key takes away what the header says, so a
//     collection whose size is stale for a moment is never counted twice
//     or left behind;
//   - an expiry adds the cost of its slot in the expires map.
//
// The counter is striped by P (the scheduler's processor), so writers on
// different cores never share a cache line; reading it sums the stripes.

// Costs of the keyspace's own structures, per key.
const (
	entryBytes = int64(unsafe.Sizeof(Entry{}))
	// mapSlotBytes is a key's share of its shard's table (keymap.go): a
	// 16-byte slot and a tag byte, at its average load (about 0.7).
	mapSlotBytes = (16 + 1) * 10 / 7
	// volSlotBytes is an expiry's share of the expires map[string]int64.
	volSlotBytes = (16 + 8 + 1) * 10 / 6
)

// KeyOverhead is what a key costs in its database's table besides its
// name and value: its Entry and its map slot (Redis's dictEntry, robj and
// bucket: MEMORY STATS overhead.hashtable.main). ExpireOverhead is an
// expiry's slot in the expires map.
const (
	KeyOverhead    = entryBytes + mapSlotBytes
	ExpireOverhead = volSlotBytes
)

// Cost returns what the stored key and its value e take, as counted.
func Cost(key []byte, e *Entry) int64 { return costOf(key, e) }

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

type memStripe struct {
	v atomic.Int64
	_ [56]byte
}

// Acct counts the bytes of one keyspace's values.
type Acct struct {
	id      uint8 // 1..maxAccts-1 while registered, 0 if none was free
	stripes []memStripe
	mask    int
}

const maxAccts = 64 // ids fit the six high bits of Entry.enc

var acctReg struct {
	mu   sync.Mutex
	byID [maxAccts]atomic.Pointer[Acct]
}

func newAcct() *Acct {
	n := 1
	for n < runtime.GOMAXPROCS(0) {
		n *= 2
	}
	a := &Acct{stripes: make([]memStripe, n), mask: n - 1}
	for try := 0; ; try++ {
		acctReg.mu.Lock()
		for i := 1; i < maxAccts; i++ {
			if acctReg.byID[i].Load() == nil {
				a.id = uint8(i)
				acctReg.byID[i].Store(a)
				break
			}
		}
		acctReg.mu.Unlock()
		if a.id != 0 || try == 5 {
			return a
		}
		// Every id is taken: keyspaces no longer used give theirs back
		// once collected (Keyspace's cleanup).
		runtime.GC()
		time.Sleep(time.Duration(try+1) * 5 * time.Millisecond)
	}
}

// acctHolder holds the accountant a keyspace's cleanup releases.
type acctHolder struct{ a *Acct }

// swapAcct exchanges the accountants of ks and other, whose databases
// SwapDatabases exchanged: the counts, and the accountant ids their
// entries carry, go with the data. Both are held exclusively.
func (ks *Keyspace) swapAcct(other *Keyspace) {
	a, b := ks.acct.Load(), other.acct.Load()
	ks.acct.Store(b)
	other.acct.Store(a)
	ks.acctBox.a, other.acctBox.a = b, a
}

// release frees the accountant's id for another keyspace.
func (a *Acct) release() {
	if a.id == 0 {
		return
	}
	acctReg.mu.Lock()
	acctReg.byID[a.id].CompareAndSwap(a, nil)
	acctReg.mu.Unlock()
}

// Add adds d bytes to the count.
func (a *Acct) Add(d int64) {
	p := procPin()
	a.stripes[p&a.mask].v.Add(d)
	procUnpin()
}

// Total returns the bytes counted.
func (a *Acct) Total() int64 {
	var n int64
	for i := range a.stripes {
		n += a.stripes[i].v.Load()
	}
	return n
}

// goSizeClasses are the Go allocator's small object size classes.
var goSizeClasses = [...]uint16{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// AllocSize returns the bytes Go's allocator reserves for an object of n
// bytes: its size class, or whole 8 KiB pages for a large object.
func AllocSize(n int) int64 {
	switch {
	case n <= 0:
		return 0
	case n <= 8:
		return 8
	case n <= 32768:
		i := sort.Search(len(goSizeClasses), func(i int) bool { return int(goSizeClasses[i]) >= n })
		return int64(goSizeClasses[i])
	}
	return int64((n + 8191) &^ 8191)
}

// memHdr starts every collection: the bytes it takes (its own struct
// included) and, while it is stored in a keyspace, that keyspace's
// accountant.
type memHdr struct {
	acct *Acct
	mem  int64
}

// setMem records that the collection now takes n bytes.
func (h *memHdr) setMem(n int64) {
	if d := n - h.mem; d != 0 {
		h.mem = n
		if h.acct != nil {
			h.acct.Add(d)
		}
	}
}

// MemBytes returns the bytes the value takes: its Entry and what it
// points to (a string's buffer or a collection), not its key.
func (e *Entry) MemBytes() int64 {
	if e.kind == KindString {
		return entryBytes + e.strBytes()
	}
	return entryBytes + e.hdr().mem
}

// strBytes is the allocation of a string's buffer.
func (e *Entry) strBytes() int64 {
	if e.encoding() == encInt || e.ptr == nil {
		return 0
	}
	return AllocSize(int(e.c))
}

// hdr returns a collection's header.
func (e *Entry) hdr() *memHdr { return (*memHdr)(e.ptr) }

// refreshHdr recomputes a collection's size into its header.
func (e *Entry) refreshHdr() {
	h := e.hdr()
	if h == nil {
		return
	}
	switch e.kind {
	case KindHash:
		(*Hash)(e.ptr).account()
	case KindSet:
		(*Set)(e.ptr).account()
	case KindZSet:
		(*ZSet)(e.ptr).account()
	case KindList:
		(*List)(e.ptr).account()
	case KindStream:
		(*Stream)(e.ptr).account()
	}
}

// acct returns the accountant of a stored entry, or nil.
func (e *Entry) acct() *Acct {
	if id := e.enc >> encIDShift; id != 0 {
		return acctReg.byID[id].Load()
	}
	return nil
}

// report adds d to the count of the keyspace e is stored in, if any.
func (e *Entry) report(d int64) {
	if d != 0 && e.enc>>encIDShift != 0 {
		if a := e.acct(); a != nil {
			a.Add(d)
		}
	}
}

// keyBytes is what a key costs besides its value: its string and its
// slot in the shard's map.
func keyBytes(key []byte) int64 { return keyBlobSize(len(key)) + mapSlotBytes }

// costOf is everything a stored key costs.
func costOf(key []byte, e *Entry) int64 {
	n := keyBytes(key) + e.MemBytes()
	if e.vol {
		n += volSlotBytes
	}
	return n
}

// attach counts e, just stored under key.
func (db *DB) attach(key []byte, e *Entry) {
	a := db.ks.acct.Load()
	e.enc = e.encoding() | a.id<<encIDShift
	if e.kind != KindString && e.ptr != nil {
		e.refreshHdr()
		e.hdr().acct = a
	}
	a.Add(costOf(key, e))
}

// detach takes e, just removed from key, out of the count.
func (db *DB) detach(key []byte, e *Entry) {
	if e.enc>>encIDShift == 0 {
		return
	}
	e.enc = e.encoding()
	if e.kind != KindString && e.ptr != nil {
		e.hdr().acct = nil
	}
	db.ks.acct.Load().Add(-costOf(key, e))
}

// setVol sets whether a stored entry has an expiry, counting its slot.
func (e *Entry) setVol(on bool) {
	if e.vol == on {
		return
	}
	e.vol = on
	if on {
		e.report(volSlotBytes)
	} else {
		e.report(-volSlotBytes)
	}
}

// DatasetBytes returns the bytes the keyspace's keys and values take, as
// counted (see Acct).
func (ks *Keyspace) DatasetBytes() int64 { return ks.acct.Load().Total() }

// Recount walks every key and returns what the count should be, the
// collections' sizes recomputed. Tests compare it with DatasetBytes.
// Exclusive lock.
func (ks *Keyspace) Recount() int64 {
	var n int64
	for _, db := range *ks.dbs.Load() {
		for i := range db.shards {
			s := &db.shards[i]
			s.m.each(func(k string, e *Entry) bool {
				if e.kind != KindString && e.ptr != nil {
					e.refreshHdr()
				}
				n += costOf([]byte(k), e)
				return true
			})
		}
	}
	return n
}

// dropAll takes the keys of a database's maps, just emptied by a flush,
// out of the count. With detach it marks them unstored too; without, it
// only reads them (a background free, the maps unreachable to anyone else).
func (ks *Keyspace) dropAll(maps []keyMap, detach bool) {
	var n int64
	for _, m := range maps {
		m.each(func(k string, e *Entry) bool {
			n += keyBlobSize(len(k)) + mapSlotBytes + e.MemBytes()
			if e.vol {
				n += volSlotBytes
			}
			if detach {
				e.enc = e.encoding()
				if e.kind != KindString && e.ptr != nil {
					e.hdr().acct = nil
				}
			}
			return true
		})
	}
	ks.acct.Load().Add(-n)
}
