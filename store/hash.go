package store

import (
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"unsafe"
)

// table is the hash table behind big hashes and sets ("hashtable"
// encoding). It is built for memory: each element is one pointer-free
// allocation (a blob: uvarint length and bytes of the member or field,
// then for hashes uvarint length and bytes of the value), referenced from
// an open-addressing array of pointers beside an array of 32-bit hashes.
// That is 12 bytes of table per slot plus the blob, against Redis's
// 24-byte dictEntry, 8-byte bucket and one or two sds strings.
//
// Collisions are resolved by linear probing and deletion shifts later
// elements back (no tombstones), so an element always lies in the run of
// occupied slots that starts at its home slot (hash & mask). That is what
// makes SCAN's guarantee possible: the cursor walks home slots in Redis's
// reverse-binary order, and visiting a home slot means walking its run and
// emitting the elements whose home it is. Elements that move (deletion
// shifts) keep their home, and growing or shrinking the table by powers of
// two behaves as it does for Redis's dict: nothing present for the whole
// iteration is missed, some elements may be returned twice.
//
// A random element is a random occupied slot (the load factor never falls
// below 1/8 except in the smallest table), so it is uniform and O(1).
type table struct {
	slots  []unsafe.Pointer // blobs; nil is an empty slot
	hashes []uint32         // low 32 bits of each element's hash
	n      int
	bytes  int64 // allocation sizes of the blobs
	pairs  bool  // blobs hold a value after the key (hashes)
	extra  int   // bytes that follow the key in a blob (a sorted set's score)
}

// blobSize returns the allocation of blob p.
func (t *table) blobSize(p unsafe.Pointer) int64 {
	kl, n := uvarintAt(p, 0)
	l := n + kl + t.extra
	if t.pairs {
		vl, m := uvarintAt(p, l)
		l += m + vl
	}
	return AllocSize(l)
}

// size returns the bytes the table takes, its blobs included.
func (t *table) size() int64 {
	return AllocSize(int(unsafe.Sizeof(table{}))) + AllocSize(8*len(t.slots)) + AllocSize(4*len(t.hashes)) + t.bytes
}

const tableMinSize = 8

var tableSeed = maphash.MakeSeed()

func hashBytes(b []byte) uint32 { return uint32(maphash.Bytes(tableSeed, b)) }

func newTable(pairs bool, hint int) *table {
	size := tableMinSize
	for size*3 < hint*4 {
		size *= 2
	}
	return &table{
		slots:  make([]unsafe.Pointer, size),
		hashes: make([]uint32, size),
		pairs:  pairs,
	}
}

// uvarintAt decodes the uvarint at p+off, returning it and its length.
func uvarintAt(p unsafe.Pointer, off int) (v, n int) {
	for shift := 0; ; shift += 7 {
		b := *(*byte)(unsafe.Add(p, off+n))
		n++
		v |= int(b&0x7f) << shift
		if b < 0x80 {
			return v, n
		}
	}
}

func uvarintLen(v int) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func putUvarint(b []byte, v int) int {
	i := 0
	for v >= 0x80 {
		b[i] = byte(v) | 0x80
		v >>= 7
		i++
	}
	b[i] = byte(v)
	return i + 1
}

// blobKey returns the member or field of a blob. The bytes are the blob's
// own: valid while the blob is referenced, never to be modified.
func blobKey(p unsafe.Pointer) []byte {
	l, n := uvarintAt(p, 0)
	return blobBytes(p, n, l)
}

// blobPair returns the field and the value of a hash blob.
func blobPair(p unsafe.Pointer) (k, v []byte) {
	kl, n := uvarintAt(p, 0)
	k = blobBytes(p, n, kl)
	off := n + kl
	vl, m := uvarintAt(p, off)
	return k, blobBytes(p, off+m, vl)
}

// noBytes is the (non-nil) empty string of a blob.
var noBytes = []byte{}

// blobBytes returns the l bytes at p+off. An empty string at the end of
// the blob would start one past its allocation, a pointer Go forbids
// (checkptr): it is noBytes instead.
func blobBytes(p unsafe.Pointer, off, l int) []byte {
	if l == 0 {
		return noBytes
	}
	return unsafe.Slice((*byte)(unsafe.Add(p, off)), l)
}

func newKeyBlob(k []byte) unsafe.Pointer {
	b := make([]byte, uvarintLen(len(k))+len(k))
	n := putUvarint(b, len(k))
	copy(b[n:], k)
	return unsafe.Pointer(unsafe.SliceData(b))
}

func newPairBlob(k, v []byte) unsafe.Pointer {
	b := make([]byte, uvarintLen(len(k))+len(k)+uvarintLen(len(v))+len(v))
	n := putUvarint(b, len(k))
	n += copy(b[n:], k)
	n += putUvarint(b[n:], len(v))
	copy(b[n:], v)
	return unsafe.Pointer(unsafe.SliceData(b))
}

// find returns the slot of key (whose hash is h), or -1.
func (t *table) find(key []byte, h uint32) int {
	mask := len(t.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		p := t.slots[i]
		if p == nil {
			return -1
		}
		if t.hashes[i] == h && string(blobKey(p)) == string(key) {
			return i
		}
	}
}

// insert adds a blob whose key is known to be absent.
func (t *table) insert(p unsafe.Pointer, h uint32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(len(t.slots) * 2)
	}
	t.place(p, h)
	t.n++
	t.bytes += t.blobSize(p)
}

func (t *table) place(p unsafe.Pointer, h uint32) {
	mask := len(t.slots) - 1
	i := int(h) & mask
	for t.slots[i] != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = p
	t.hashes[i] = h
}

func (t *table) resize(size int) {
	old, oldh := t.slots, t.hashes
	t.slots = make([]unsafe.Pointer, size)
	t.hashes = make([]uint32, size)
	for i, p := range old {
		if p != nil {
			t.place(p, oldh[i])
		}
	}
}

// removeAt empties slot i, shifting the rest of its run back so every
// element stays reachable from its home slot, and shrinks a sparse table.
func (t *table) removeAt(i int) {
	mask := len(t.slots) - 1
	t.bytes -= t.blobSize(t.slots[i])
	t.slots[i] = nil
	for j := (i + 1) & mask; t.slots[j] != nil; j = (j + 1) & mask {
		home := int(t.hashes[j]) & mask
		// The element at j may move to the hole at i unless its home lies
		// cyclically in (i, j].
		if (i <= j && (home <= i || home > j)) || (i > j && home <= i && home > j) {
			t.slots[i], t.hashes[i] = t.slots[j], t.hashes[j]
			t.slots[j] = nil
			i = j
		}
	}
	t.n--
	if len(t.slots) > tableMinSize && t.n*8 < len(t.slots) {
		size := tableMinSize
		for size < t.n*2 {
			size *= 2
		}
		t.resize(size)
	}
}

// random returns a uniformly random occupied slot. The table must not be empty.
func (t *table) random() int {
	mask := uint64(len(t.slots) - 1)
	for {
		i := int(rand.Uint64() & mask)
		if t.slots[i] != nil {
			return i
		}
	}
}

// scan visits the home slot the cursor names, calling fn for each element
// whose home it is, and returns the next cursor (0 when done).
func (t *table) scan(cursor uint64, fn func(p unsafe.Pointer)) uint64 {
	if t.n == 0 {
		return 0
	}
	mask := uint64(len(t.slots) - 1)
	home := cursor & mask
	for i := home; t.slots[i] != nil; i = (i + 1) & mask {
		if uint64(t.hashes[i])&mask == home {
			fn(t.slots[i])
		}
	}
	// Increment the reversed cursor, as Redis's dictScan does.
	cursor |= ^mask
	cursor = bits.Reverse64(cursor)
	cursor++
	return bits.Reverse64(cursor)
}

// each calls fn for every element until it returns false. fn must not
// change the table.
func (t *table) each(fn func(p unsafe.Pointer) bool) {
	for _, p := range t.slots {
		if p != nil && !fn(p) {
			return
		}
	}
}

func (t *table) dup() *table {
	c := &table{
		slots:  make([]unsafe.Pointer, len(t.slots)),
		hashes: make([]uint32, len(t.hashes)),
		n:      t.n,
		bytes:  t.bytes,
		pairs:  t.pairs,
		extra:  t.extra,
	}
	for i, p := range t.slots {
		if p == nil {
			continue
		}
		if t.pairs {
			c.slots[i] = newPairBlob(blobPair(p))
		} else {
			c.slots[i] = newKeyBlob(blobKey(p))
		}
	}
	copy(c.hashes, t.hashes)
	return c
}

// memUsage estimates the bytes the table and its blobs use.
func (t *table) memUsage(sample int) int {
	size := len(t.slots) * 12
	if t.n == 0 {
		return size
	}
	seen, total := 0, 0
	for _, p := range t.slots {
		if p == nil {
			continue
		}
		if t.pairs {
			k, v := blobPair(p)
			total += uvarintLen(len(k)) + len(k) + uvarintLen(len(v)) + len(v)
		} else {
			k := blobKey(p)
			total += uvarintLen(len(k)) + len(k)
		}
		seen++
		if sample > 0 && seen >= sample {
			break
		}
	}
	return size + total*t.n/seen
}

// keyHash is a hash value. Small hashes use a flat "listpack": entries of
// uvarint length and bytes, field then value, in insertion order, searched
// linearly; past hash-max-listpack-entries entries or with a field or value
// longer than hash-max-listpack-value the hash converts, for good, to a
// table (as Redis's listpack to hashtable conversion).
type Hash struct {
	memHdr
	lp  []byte
	n   int
	tab *table
}

// NewHash returns an empty hash in the small encoding.
func NewHash() *Hash { return &Hash{} }

// NewHashEntry returns an entry holding h.
func NewHashEntry(h *Hash) *Entry { return NewObject(KindHash, unsafe.Pointer(h)) }

// AsHash returns the hash of a KindHash entry.
func (e *Entry) AsHash() *Hash { return (*Hash)(e.ptr) }

// Len returns the number of fields.
func (h *Hash) Len() int {
	if h.tab != nil {
		return h.tab.n
	}
	return h.n
}

// Encoding returns what OBJECT ENCODING reports: listpack or hashtable.
func (h *Hash) Encoding() string {
	if h.tab != nil {
		return "hashtable"
	}
	return "listpack"
}

// IsListpack reports whether the hash uses the small encoding.
func (h *Hash) IsListpack() bool { return h.tab == nil }

// lpItem decodes the item at off in a listpack-like buffer.
func lpItem(lp []byte, off int) (b []byte, next int) {
	l, n := 0, 0
	for shift := 0; ; shift += 7 {
		c := lp[off+n]
		n++
		l |= int(c&0x7f) << shift
		if c < 0x80 {
			break
		}
	}
	start := off + n
	return lp[start : start+l], start + l
}

func lpAppendItem(lp, b []byte) []byte {
	var tmp [10]byte
	n := putUvarint(tmp[:], len(b))
	lp = append(lp, tmp[:n]...)
	return append(lp, b...)
}

// lpLen decodes the uvarint length at off: the value and the offset after it.
func lpLen(lp []byte, off int) (int, int) {
	c := lp[off]
	if c < 0x80 {
		return int(c), off + 1
	}
	l := 0
	for shift := 0; ; shift += 7 {
		c := lp[off]
		off++
		l |= int(c&0x7f) << shift
		if c < 0x80 {
			return l, off
		}
	}
}

// lpFind returns the offset of field's entry, of its value item and of the
// end of the entry, or off = -1. It is the hot loop of small hashes, so
// it compares lengths before bytes and decodes one-byte lengths inline.
func (h *Hash) lpFind(field []byte) (off, voff, end int) {
	lp := h.lp
	for off < len(lp) {
		fl, fs := lpLen(lp, off)
		fe := fs + fl
		vl, vs := lpLen(lp, fe)
		e := vs + vl
		if fl == len(field) && string(lp[fs:fe]) == string(field) {
			return off, fe, e
		}
		off = e
	}
	return -1, 0, 0
}

// Get returns the value of field. The bytes are the hash's own: valid
// until the hash changes.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	if h.tab != nil {
		i := h.tab.find(field, hashBytes(field))
		if i < 0 {
			return nil, false
		}
		_, v := blobPair(h.tab.slots[i])
		return v, true
	}
	off, vo, _ := h.lpFind(field)
	if off < 0 {
		return nil, false
	}
	v, _ := lpItem(h.lp, vo)
	return v, true
}

// Has reports whether field exists.
func (h *Hash) Has(field []byte) bool {
	_, ok := h.Get(field)
	return ok
}

// Set sets field to value and reports whether the field is new. maxEnt and
// maxVal are hash-max-listpack-entries and hash-max-listpack-value: a field
// or value longer than maxVal converts the hash before the write, more than
// maxEnt fields after it.
func (h *Hash) Set(field, value []byte, maxEnt, maxVal int) bool {
	defer h.account()
	if h.tab == nil && (len(field) > maxVal || len(value) > maxVal) {
		h.Convert()
	}
	if h.tab != nil {
		return h.tabSet(field, value)
	}
	off, vo, end := h.lpFind(field)
	if off >= 0 {
		old, _ := lpItem(h.lp, vo)
		if len(old) == len(value) {
			copy(old, value)
			return false
		}
		nb := make([]byte, 0, vo+uvarintLen(len(value))+len(value)+len(h.lp)-end)
		nb = append(nb, h.lp[:vo]...)
		nb = lpAppendItem(nb, value)
		nb = append(nb, h.lp[end:]...)
		h.lp = nb
		return false
	}
	h.lp = lpAppendItem(h.lp, field)
	h.lp = lpAppendItem(h.lp, value)
	h.n++
	if h.n > maxEnt {
		h.Convert()
	}
	return true
}

func (h *Hash) tabSet(field, value []byte) bool {
	t := h.tab
	hv := hashBytes(field)
	i := t.find(field, hv)
	if i < 0 {
		t.insert(newPairBlob(field, value), hv)
		return true
	}
	k, v := blobPair(t.slots[i])
	if len(v) == len(value) {
		copy(v, value)
	} else {
		t.bytes -= t.blobSize(t.slots[i])
		t.slots[i] = newPairBlob(k, value)
		t.bytes += t.blobSize(t.slots[i])
	}
	return false
}

// Convert switches a small hash to the table encoding (a no-op on a table).
func (h *Hash) Convert() {
	if h.tab != nil {
		return
	}
	t := newTable(true, h.n)
	for off := 0; off < len(h.lp); {
		f, vo := lpItem(h.lp, off)
		v, e := lpItem(h.lp, vo)
		t.insert(newPairBlob(f, v), hashBytes(f))
		off = e
	}
	h.tab, h.lp, h.n = t, nil, 0
	h.account()
}

// Delete removes field, reporting whether it existed.
func (h *Hash) Delete(field []byte) bool {
	defer h.account()
	if h.tab != nil {
		i := h.tab.find(field, hashBytes(field))
		if i < 0 {
			return false
		}
		h.tab.removeAt(i)
		return true
	}
	off, _, end := h.lpFind(field)
	if off < 0 {
		return false
	}
	h.lp = append(h.lp[:off], h.lp[end:]...)
	h.n--
	if h.n == 0 {
		h.lp = nil
	}
	return true
}

// ForEach calls fn for every field and value (listpack: insertion order)
// until it returns false. fn must not change the hash.
func (h *Hash) ForEach(fn func(field, value []byte) bool) {
	if h.tab != nil {
		h.tab.each(func(p unsafe.Pointer) bool { return fn(blobPair(p)) })
		return
	}
	for off := 0; off < len(h.lp); {
		f, vo := lpItem(h.lp, off)
		v, e := lpItem(h.lp, vo)
		if !fn(f, v) {
			return
		}
		off = e
	}
}

// Pairs appends every field and value to fs and vs (in ForEach order).
func (h *Hash) Pairs(fs, vs [][]byte) ([][]byte, [][]byte) {
	h.ForEach(func(f, v []byte) bool {
		fs = append(fs, f)
		vs = append(vs, v)
		return true
	})
	return fs, vs
}

// Random returns a uniformly random field and its value. The hash must
// not be empty. For a table it is O(1); a listpack is walked.
func (h *Hash) Random() (field, value []byte) {
	if h.tab != nil {
		return blobPair(h.tab.slots[h.tab.random()])
	}
	k := rand.IntN(h.n)
	for off := 0; ; k-- {
		f, vo := lpItem(h.lp, off)
		v, e := lpItem(h.lp, vo)
		if k == 0 {
			return f, v
		}
		off = e
	}
}

// Scan visits the elements a SCAN cursor step covers and returns the next
// cursor. A listpack is visited whole and the cursor is 0, as in Redis.
func (h *Hash) Scan(cursor uint64, fn func(field, value []byte)) uint64 {
	if h.tab == nil {
		h.ForEach(func(f, v []byte) bool { fn(f, v); return true })
		return 0
	}
	return h.tab.scan(cursor, func(p unsafe.Pointer) { fn(blobPair(p)) })
}

// Dup returns a deep copy with the same encoding.
func (h *Hash) Dup() *Hash {
	c := &Hash{n: h.n}
	if h.tab != nil {
		c.tab = h.tab.dup()
	} else if h.lp != nil {
		c.lp = append([]byte(nil), h.lp...)
	}
	c.account()
	return c
}

// account records the hash's current size in its header.
func (h *Hash) account() {
	n := AllocSize(int(unsafe.Sizeof(Hash{})))
	if h.tab != nil {
		n += h.tab.size()
	} else {
		n += AllocSize(cap(h.lp))
	}
	h.setMem(n)
}

// MemUsage estimates the bytes the hash uses (sample: elements to
// measure, 0 for all).
func (h *Hash) MemUsage(sample int) int {
	if h.tab != nil {
		return 48 + h.tab.memUsage(sample)
	}
	return 48 + cap(h.lp)
}
