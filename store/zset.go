package store

import (
	"encoding/binary"
	"math"
	"sort"
	"unsafe"
)

// ZItem is one member of a sorted set.
type ZItem struct {
	Member string
	Score  float64
}

// Less orders items as Redis does: by score, then by member bytes.
func (a *ZItem) less(score float64, member string) bool {
	return a.Score < score || (a.Score == score && a.Member < member)
}

// ZSet is a sorted set, built for memory. Each member is one pointer-free
// allocation, a blob: the member (uvarint length and bytes, as the hash
// table's blobs) followed by its score. The order is an order-statistic
// list of sorted leaves of blob pointers (a two-level B-tree with a
// Fenwick tree of leaf sizes for ranks); once the set outgrows the compact
// form, a hash table of the same blobs (the table of big hashes and sets)
// finds a member's score. A member costs its blob, 16 bytes in a leaf and
// about 20 in the table, against Redis's skiplist node, dictEntry and sds.
//
// Small sets (zset-max-listpack-entries / -value) have no table, and
// report "listpack" like Redis; larger ones report "skiplist".
type ZSet struct {
	memHdr
	bytes  int64 // allocation sizes of the leaves and the blobs
	leaves []*zleaf
	fen    []int32 // Fenwick tree over leaf lengths
	tab    *table  // member -> blob; nil in the compact form
	n      int
}

// AsZSet returns the sorted set of a KindZSet entry.
func (e *Entry) AsZSet() *ZSet { return (*ZSet)(e.ptr) }

type zleaf struct{ items []zent }

// zent is a member in a leaf: its score (a copy of the blob's, so that
// ordering compares read no blob but on ties) and its blob.
type zent struct {
	score float64
	p     unsafe.Pointer
}

const (
	zleafMax  = 256
	zleafHalf = zleafMax / 2
)

// zscoreBytes is the score's size at the end of a blob.
const zscoreBytes = 8

// newZBlob returns a blob holding member and score.
func newZBlob(member string, score float64) unsafe.Pointer {
	k := uvarintLen(len(member))
	b := make([]byte, k+len(member)+zscoreBytes)
	putUvarint(b, len(member))
	copy(b[k:], member)
	binary.LittleEndian.PutUint64(b[k+len(member):], math.Float64bits(score))
	return unsafe.Pointer(unsafe.SliceData(b))
}

// zblobLen returns the member's length and where its bytes start.
func zblobLen(p unsafe.Pointer) (l, off int) {
	if b := *(*byte)(p); b < 0x80 {
		return int(b), 1
	}
	return uvarintAt(p, 0)
}

// zmember returns a blob's member, its own bytes (never modified).
func zmember(p unsafe.Pointer) string {
	l, off := zblobLen(p)
	if l == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Add(p, off)), l)
}

// zscore returns a blob's score.
func zscore(p unsafe.Pointer) float64 {
	l, off := zblobLen(p)
	return math.Float64frombits(binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(p, off+l)), zscoreBytes)))
}

// setZScore changes a blob's score in place.
func setZScore(p unsafe.Pointer, score float64) {
	l, off := zblobLen(p)
	binary.LittleEndian.PutUint64(unsafe.Slice((*byte)(unsafe.Add(p, off+l)), zscoreBytes), math.Float64bits(score))
}

// zblobSize is a blob's allocation.
func zblobSize(p unsafe.Pointer) int64 {
	l, off := zblobLen(p)
	return AllocSize(off + l + zscoreBytes)
}

// zitem returns the item of a leaf entry.
func zitem(e zent) ZItem { return ZItem{Member: zmember(e.p), Score: e.score} }

// zless orders entry e before (score, member).
func zless(e zent, score float64, member string) bool {
	return e.score < score || e.score == score && zmember(e.p) < member
}

// leafSize is the allocation of a leaf and its entries.
func leafSize(lf *zleaf) int64 {
	return AllocSize(int(unsafe.Sizeof(zleaf{}))) + AllocSize(int(unsafe.Sizeof(zent{}))*cap(lf.items))
}

// account records the set's current size in its header: the struct, the
// leaves, the blobs, the leaf index and, in the skiplist form, the table's
// arrays (its blobs are the leaves').
func (z *ZSet) account() {
	n := AllocSize(int(unsafe.Sizeof(ZSet{}))) + z.bytes + AllocSize(8*cap(z.leaves)) + AllocSize(4*cap(z.fen))
	if t := z.tab; t != nil {
		n += AllocSize(int(unsafe.Sizeof(table{}))) + AllocSize(8*len(t.slots)) + AllocSize(4*len(t.hashes))
	}
	z.setMem(n)
}

// NewZSet returns an empty sorted set in the compact encoding.
func NewZSet() *ZSet { return &ZSet{} }

// Len returns the number of members.
func (z *ZSet) Len() int { return z.n }

// Compact reports whether the set is in its listpack-like form.
func (z *ZSet) Compact() bool { return z.tab == nil }

// Encoding is what OBJECT ENCODING reports.
func (z *ZSet) Encoding() string {
	if z.tab == nil {
		return "listpack"
	}
	return "skiplist"
}

// Convert switches a compact set to the skiplist form (with its table).
func (z *ZSet) Convert() {
	if z.tab != nil {
		return
	}
	z.tab = newTable(false, z.n)
	z.tab.extra = zscoreBytes
	for _, lf := range z.leaves {
		for _, e := range lf.items {
			m := zmember(e.p)
			z.tab.insert(e.p, hashBytes(unsafe.Slice(unsafe.StringData(m), len(m))))
		}
	}
	z.account()
}

// find returns member's blob, or nil.
func (z *ZSet) find(member []byte) unsafe.Pointer {
	if z.tab != nil {
		i := z.tab.find(member, hashBytes(member))
		if i < 0 {
			return nil
		}
		return z.tab.slots[i]
	}
	for _, lf := range z.leaves {
		for _, e := range lf.items {
			if zmember(e.p) == string(member) {
				return e.p
			}
		}
	}
	return nil
}

// Score returns member's score.
func (z *ZSet) Score(member []byte) (float64, bool) {
	p := z.find(member)
	if p == nil {
		return 0, false
	}
	return zscore(p), true
}

// Fenwick tree helpers.
func (z *ZSet) rebuildFen() {
	if cap(z.fen) >= len(z.leaves) {
		z.fen = z.fen[:len(z.leaves)]
	} else {
		z.fen = make([]int32, len(z.leaves), len(z.leaves)+len(z.leaves)/4+1)
	}
	for i, lf := range z.leaves {
		z.fen[i] = int32(len(lf.items))
	}
	for i := range z.fen {
		j := i | (i + 1)
		if j < len(z.fen) {
			z.fen[j] += z.fen[i]
		}
	}
}

func (z *ZSet) fenAdd(i int, d int32) {
	for ; i < len(z.fen); i |= i + 1 {
		z.fen[i] += d
	}
}

// prefix returns the number of items in leaves before leaf i.
func (z *ZSet) prefix(i int) int {
	s := int32(0)
	for i--; i >= 0; i = (i & (i + 1)) - 1 {
		s += z.fen[i]
	}
	return int(s)
}

// findRank returns the leaf holding rank r and the offset within it.
func (z *ZSet) findRank(r int) (int, int) {
	pos := 0
	rem := int32(r)
	step := 1
	for step*2 <= len(z.fen) {
		step *= 2
	}
	for ; step > 0; step >>= 1 {
		if j := pos + step - 1; j < len(z.fen) && z.fen[j] <= rem {
			pos += step
			rem -= z.fen[j]
		}
	}
	return pos, int(rem)
}

// leafFor returns the index of the leaf where (score, member) belongs.
func (z *ZSet) leafFor(score float64, member string) int {
	i := sort.Search(len(z.leaves), func(i int) bool {
		items := z.leaves[i].items
		return !zless(items[len(items)-1], score, member)
	})
	if i == len(z.leaves) {
		i--
	}
	return i
}

// posIn returns where (score, member) goes in leaf lf.
func posIn(lf *zleaf, score float64, member string) int {
	return sort.Search(len(lf.items), func(i int) bool { return !zless(lf.items[i], score, member) })
}

// Insert adds a member known to be absent.
func (z *ZSet) Insert(member []byte, score float64) {
	z.add(newZBlob(unsafe.String(unsafe.SliceData(member), len(member)), score), score)
}

// InsertString adds a member known to be absent.
func (z *ZSet) InsertString(member string, score float64) {
	z.add(newZBlob(member, score), score)
}

// add adds a new member's blob.
func (z *ZSet) add(p unsafe.Pointer, score float64) {
	if z.tab != nil {
		m := zmember(p)
		z.tab.insert(p, hashBytes(unsafe.Slice(unsafe.StringData(m), len(m))))
	} else if score == 0 {
		// -0 is stored as 0, as Redis's listpack does (the skiplist
		// form keeps -0, as Redis's does).
		setZScore(p, 0)
	}
	z.bytes += zblobSize(p)
	z.place(p)
	z.account()
}

// place puts blob p in order in the leaves.
func (z *ZSet) place(p unsafe.Pointer) {
	score, m := zscore(p), zmember(p)
	ent := zent{score, p}
	z.n++
	if len(z.leaves) == 0 {
		lf := &zleaf{items: make([]zent, 0, 4)}
		lf.items = append(lf.items, ent)
		z.leaves = append(z.leaves, lf)
		z.bytes += leafSize(lf)
		z.rebuildFen()
		return
	}
	li := z.leafFor(score, m)
	lf := z.leaves[li]
	pos := posIn(lf, score, m)
	if len(lf.items) < zleafMax {
		z.bytes -= leafSize(lf)
		lf.items = append(lf.items, zent{})
		copy(lf.items[pos+1:], lf.items[pos:])
		lf.items[pos] = ent
		z.bytes += leafSize(lf)
		z.fenAdd(li, 1)
		return
	}
	// The leaf is full. Appending past the last leaf's end (members
	// added in order, the common case) starts a new leaf and leaves the
	// full one full; so does prepending before the first leaf. Anywhere
	// else the leaf splits in two halves.
	var nl *zleaf
	at := li + 1 // where the new leaf goes
	switch {
	case pos == len(lf.items) && li == len(z.leaves)-1, pos == 0 && li == 0:
		nl = &zleaf{items: make([]zent, 1, zleafMax)}
		nl.items[0] = ent
		if pos == 0 {
			at = 0
		}
	default:
		z.bytes -= leafSize(lf)
		all := make([]zent, 0, zleafMax+1)
		all = append(all, lf.items[:pos]...)
		all = append(all, ent)
		all = append(all, lf.items[pos:]...)
		left := make([]zent, zleafHalf, zleafMax)
		copy(left, all[:zleafHalf])
		nl = &zleaf{items: make([]zent, len(all)-zleafHalf, zleafMax)}
		copy(nl.items, all[zleafHalf:])
		lf.items = left
		z.bytes += leafSize(lf)
	}
	z.bytes += leafSize(nl)
	z.leaves = append(z.leaves, nil)
	copy(z.leaves[at+1:], z.leaves[at:])
	z.leaves[at] = nl
	z.rebuildFen()
}

// locate finds (score, member) and returns its leaf and offset.
func (z *ZSet) locate(score float64, m string) (int, int, bool) {
	if len(z.leaves) == 0 {
		return 0, 0, false
	}
	li := z.leafFor(score, m)
	lf := z.leaves[li]
	pos := posIn(lf, score, m)
	if pos < len(lf.items) && zmember(lf.items[pos].p) == m {
		return li, pos, true
	}
	return 0, 0, false
}

// removeAt takes the blob at leaf li, offset pos out of the order.
func (z *ZSet) removeAt(li, pos int) {
	lf := z.leaves[li]
	z.bytes -= leafSize(lf)
	if pos < len(lf.items)/2 {
		// Move the shorter side: the items before pos shift up by one and
		// the leaf starts one further on, so popping the lowest member
		// (ZPOPMIN) moves nothing.
		copy(lf.items[1:pos+1], lf.items[:pos])
		lf.items[0] = zent{}
		lf.items = lf.items[1:]
	} else {
		copy(lf.items[pos:], lf.items[pos+1:])
		lf.items[len(lf.items)-1] = zent{}
		lf.items = lf.items[:len(lf.items)-1]
	}
	z.n--
	if len(lf.items) == 0 {
		copy(z.leaves[li:], z.leaves[li+1:])
		z.leaves[len(z.leaves)-1] = nil
		z.leaves = z.leaves[:len(z.leaves)-1]
		z.rebuildFen()
		return
	}
	// Merge small neighbours so leaves stay reasonably full.
	if len(lf.items) < zleafHalf/4 && li+1 < len(z.leaves) && len(lf.items)+len(z.leaves[li+1].items) <= zleafHalf {
		z.bytes -= leafSize(z.leaves[li+1])
		lf.items = append(lf.items, z.leaves[li+1].items...)
		z.bytes += leafSize(lf)
		copy(z.leaves[li+1:], z.leaves[li+2:])
		z.leaves[len(z.leaves)-1] = nil
		z.leaves = z.leaves[:len(z.leaves)-1]
		z.rebuildFen()
		return
	}
	z.bytes += leafSize(lf)
	z.fenAdd(li, -1)
}

// drop forgets a removed member's blob.
func (z *ZSet) drop(p unsafe.Pointer) {
	if z.tab != nil {
		m := zmember(p)
		if i := z.tab.find(unsafe.Slice(unsafe.StringData(m), len(m)), hashBytes(unsafe.Slice(unsafe.StringData(m), len(m)))); i >= 0 {
			z.tab.removeAt(i)
		}
	}
	z.bytes -= zblobSize(p)
}

// Delete removes member and reports whether it was present.
func (z *ZSet) Delete(member []byte) bool {
	p := z.find(member)
	if p == nil {
		return false
	}
	li, pos, _ := z.locate(zscore(p), zmember(p))
	z.removeAt(li, pos)
	z.drop(p)
	z.account()
	return true
}

// SetScore changes the score of a present member.
func (z *ZSet) SetScore(member []byte, old, score float64) {
	if old == score {
		return
	}
	li, pos, _ := z.locate(old, string(member))
	p := z.leaves[li].items[pos].p
	z.removeAt(li, pos)
	if z.tab == nil && score == 0 {
		score = 0 // -0 is stored as 0 in the compact form
	}
	setZScore(p, score)
	z.place(p)
	z.account()
}

// Rank returns the 0-based rank of member (ascending).
func (z *ZSet) Rank(member []byte) (int, bool) {
	p := z.find(member)
	if p == nil {
		return 0, false
	}
	li, pos, _ := z.locate(zscore(p), zmember(p))
	return z.prefix(li) + pos, true
}

// At returns the item at rank r (valid).
func (z *ZSet) At(r int) ZItem {
	li, off := z.findRank(r)
	return zitem(z.leaves[li].items[off])
}

// Iter calls fn for items from rank r upward (or downward when reverse)
// until fn returns false or the set ends. An item's Member is the set's
// own bytes: valid while the member is in the set or referenced.
func (z *ZSet) Iter(r int, reverse bool, fn func(it ZItem) bool) {
	if r < 0 || r >= z.n {
		return
	}
	li, off := z.findRank(r)
	if !reverse {
		for ; li < len(z.leaves); li, off = li+1, 0 {
			items := z.leaves[li].items
			for ; off < len(items); off++ {
				if !fn(zitem(items[off])) {
					return
				}
			}
		}
		return
	}
	for {
		items := z.leaves[li].items
		for ; off >= 0; off-- {
			if !fn(zitem(items[off])) {
				return
			}
		}
		li--
		if li < 0 {
			return
		}
		off = len(z.leaves[li].items) - 1
	}
}

// Search returns the lowest rank whose item satisfies pred (pred must be
// false then true along the order), or Len() if none does.
func (z *ZSet) Search(pred func(it *ZItem) bool) int {
	test := func(e zent) bool {
		it := zitem(e)
		return pred(&it)
	}
	li := sort.Search(len(z.leaves), func(i int) bool {
		lf := z.leaves[i]
		return test(lf.items[len(lf.items)-1])
	})
	if li == len(z.leaves) {
		return z.n
	}
	lf := z.leaves[li]
	pos := sort.Search(len(lf.items), func(i int) bool { return test(lf.items[i]) })
	return z.prefix(li) + pos
}

// DeleteRange removes ranks start..stop (inclusive, valid) and returns the
// removed members through fn (may be nil). A range is cut out of each leaf
// it covers at once, and the leaf index is rebuilt once.
func (z *ZSet) DeleteRange(start, stop int, fn func(it ZItem)) {
	li, off := z.findRank(start)
	if start == stop {
		e := z.leaves[li].items[off]
		if fn != nil {
			fn(zitem(e))
		}
		z.removeAt(li, off)
		z.drop(e.p)
		z.account()
		return
	}
	first := li
	for k := stop - start + 1; k > 0; li, off = li+1, 0 {
		lf := z.leaves[li]
		end := min(len(lf.items), off+k)
		for _, e := range lf.items[off:end] {
			if fn != nil {
				fn(zitem(e))
			}
			z.drop(e.p)
		}
		n := copy(lf.items[off:], lf.items[end:])
		clear(lf.items[off+n:])
		lf.items = lf.items[:off+n]
		k -= end - off
		z.n -= end - off
	}
	// Drop the leaves the range emptied.
	j := first
	for i := first; i < li; i++ {
		if len(z.leaves[i].items) > 0 {
			z.leaves[j] = z.leaves[i]
			j++
		} else {
			z.bytes -= leafSize(z.leaves[i])
		}
	}
	n := copy(z.leaves[j:], z.leaves[li:])
	clear(z.leaves[j+n:])
	z.leaves = z.leaves[:j+n]
	z.rebuildFen()
	z.account()
}

// Clone returns a deep copy.
func (z *ZSet) Clone() *ZSet {
	c := &ZSet{n: z.n}
	if z.tab != nil {
		c.tab = newTable(false, z.n)
		c.tab.extra = zscoreBytes
	}
	for _, lf := range z.leaves {
		items := make([]zent, len(lf.items), cap(lf.items))
		for i, e := range lf.items {
			q := newZBlob(zmember(e.p), e.score)
			items[i] = zent{e.score, q}
			c.bytes += zblobSize(q)
			if c.tab != nil {
				m := zmember(q)
				c.tab.insert(q, hashBytes(unsafe.Slice(unsafe.StringData(m), len(m))))
			}
		}
		nl := &zleaf{items: items}
		c.leaves = append(c.leaves, nl)
		c.bytes += leafSize(nl)
	}
	c.rebuildFen()
	c.account()
	return c
}

// MaxMemberLen returns the longest member's length (for encoding choices).
func (z *ZSet) MaxMemberLen() int {
	n := 0
	for _, lf := range z.leaves {
		for _, e := range lf.items {
			if l, _ := zblobLen(e.p); l > n {
				n = l
			}
		}
	}
	return n
}

// IsNaN reports whether f is NaN (helper for score arithmetic).
func IsNaN(f float64) bool { return math.IsNaN(f) }
