package store

import (
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

// ZSet is a sorted set: an order-statistic list of sorted leaves (a
// two-level B-tree with a Fenwick tree of leaf sizes for ranks) plus, once
// the set outgrows the compact form, a member→score map. The member string
// is shared by the map key and the leaf item, so each member is stored once.
//
// Small sets (zset-max-listpack-entries / -value) have one leaf and no map,
// and report "listpack" like Redis; larger ones report "skiplist".
type ZSet struct {
	memHdr
	bytes  int64 // allocation sizes of the leaves and the member strings
	leaves []*zleaf
	fen    []int32 // Fenwick tree over leaf lengths
	m      map[string]float64
	n      int
}

type zleaf struct{ items []ZItem }

// leafSize is the allocation of a leaf and its items.
func leafSize(lf *zleaf) int64 {
	return AllocSize(int(unsafe.Sizeof(zleaf{}))) + AllocSize(int(unsafe.Sizeof(ZItem{}))*cap(lf.items))
}

// account records the set's current size in its header: the struct, the
// leaves, the leaf index, the members and, in the skiplist form, the
// member map (a Go map's slot: a string header, a float64 and a control
// byte, at about 0.6 load on average).
func (z *ZSet) account() {
	n := AllocSize(int(unsafe.Sizeof(ZSet{}))) + z.bytes + AllocSize(8*cap(z.leaves)) + AllocSize(4*cap(z.fen))
	if z.m != nil {
		n += int64(len(z.m)) * (16 + 8 + 1) * 10 / 6
	}
	z.setMem(n)
}

const (
	zleafMax  = 256
	zleafHalf = zleafMax / 2
)

// NewZSet returns an empty sorted set in the compact encoding.
func NewZSet() *ZSet { return &ZSet{} }

// Len returns the number of members.
func (z *ZSet) Len() int { return z.n }

// Compact reports whether the set is in its listpack-like form.
func (z *ZSet) Compact() bool { return z.m == nil }

// Encoding is what OBJECT ENCODING reports.
func (z *ZSet) Encoding() string {
	if z.m == nil {
		return "listpack"
	}
	return "skiplist"
}

// Convert switches a compact set to the skiplist form (with its map).
func (z *ZSet) Convert() {
	if z.m != nil {
		return
	}
	z.m = make(map[string]float64, z.n)
	for _, lf := range z.leaves {
		for _, it := range lf.items {
			z.m[it.Member] = it.Score
		}
	}
	z.account()
}

// Score returns member's score.
func (z *ZSet) Score(member []byte) (float64, bool) {
	if z.m != nil {
		s, ok := z.m[string(member)]
		return s, ok
	}
	for _, lf := range z.leaves {
		for _, it := range lf.items {
			if it.Member == string(member) {
				return it.Score, true
			}
		}
	}
	return 0, false
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
		it := &z.leaves[i].items[len(z.leaves[i].items)-1]
		return !it.less(score, member)
	})
	if i == len(z.leaves) {
		i--
	}
	return i
}

// Insert adds a member known to be absent.
func (z *ZSet) Insert(member []byte, score float64) {
	m := string(member)
	z.bytes += AllocSize(len(m))
	z.insert(m, score)
	z.account()
}

func (z *ZSet) insert(m string, score float64) {
	if z.m != nil {
		z.m[m] = score // the skiplist form keeps -0, as Redis's does
	} else {
		score += 0 // -0 is stored as 0, as Redis's listpack does
	}
	z.n++
	if len(z.leaves) == 0 {
		z.leaves = []*zleaf{{items: make([]ZItem, 0, 4)}}
		z.leaves[0].items = append(z.leaves[0].items, ZItem{m, score})
		z.bytes += leafSize(z.leaves[0])
		z.rebuildFen()
		return
	}
	li := z.leafFor(score, m)
	lf := z.leaves[li]
	pos := sort.Search(len(lf.items), func(i int) bool { return !lf.items[i].less(score, m) })
	z.bytes -= leafSize(lf)
	lf.items = append(lf.items, ZItem{})
	copy(lf.items[pos+1:], lf.items[pos:])
	lf.items[pos] = ZItem{m, score}
	if len(lf.items) <= zleafMax {
		z.bytes += leafSize(lf)
		z.fenAdd(li, 1)
		return
	}
	// Split the full leaf in two.
	right := &zleaf{items: make([]ZItem, len(lf.items)-zleafHalf, zleafMax)}
	copy(right.items, lf.items[zleafHalf:])
	left := make([]ZItem, zleafHalf, zleafMax)
	copy(left, lf.items[:zleafHalf])
	lf.items = left
	z.bytes += leafSize(lf) + leafSize(right)
	z.leaves = append(z.leaves, nil)
	copy(z.leaves[li+2:], z.leaves[li+1:])
	z.leaves[li+1] = right
	z.rebuildFen()
}

// locate finds (score, member) and returns its leaf and offset.
func (z *ZSet) locate(score float64, m string) (int, int, bool) {
	if len(z.leaves) == 0 {
		return 0, 0, false
	}
	li := z.leafFor(score, m)
	lf := z.leaves[li]
	pos := sort.Search(len(lf.items), func(i int) bool { return !lf.items[i].less(score, m) })
	if pos < len(lf.items) && lf.items[pos].Member == m {
		return li, pos, true
	}
	return 0, 0, false
}

func (z *ZSet) removeAt(li, pos int) {
	lf := z.leaves[li]
	z.bytes -= leafSize(lf)
	if pos < len(lf.items)/2 {
		// Move the shorter side: the items before pos shift up by one and
		// the leaf starts one further on, so popping the lowest member
		// (ZPOPMIN) moves nothing.
		copy(lf.items[1:pos+1], lf.items[:pos])
		lf.items[0] = ZItem{}
		lf.items = lf.items[1:]
	} else {
		copy(lf.items[pos:], lf.items[pos+1:])
		lf.items[len(lf.items)-1] = ZItem{}
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

// Delete removes member and reports whether it was present.
func (z *ZSet) Delete(member []byte) bool {
	score, ok := z.Score(member)
	if !ok {
		return false
	}
	li, pos, _ := z.locate(score, string(member))
	m := z.leaves[li].items[pos].Member
	z.removeAt(li, pos)
	if z.m != nil {
		delete(z.m, m)
	}
	z.bytes -= AllocSize(len(m))
	z.account()
	return true
}

// SetScore changes the score of a present member.
func (z *ZSet) SetScore(member []byte, old, score float64) {
	if old == score {
		return
	}
	li, pos, _ := z.locate(old, string(member))
	m := z.leaves[li].items[pos].Member
	z.removeAt(li, pos)
	z.insert(m, score)
	z.account()
}

// Rank returns the 0-based rank of member (ascending).
func (z *ZSet) Rank(member []byte) (int, bool) {
	score, ok := z.Score(member)
	if !ok {
		return 0, false
	}
	li, pos, _ := z.locate(score, string(member))
	return z.prefix(li) + pos, true
}

// At returns the item at rank r (valid).
func (z *ZSet) At(r int) ZItem {
	li, off := z.findRank(r)
	return z.leaves[li].items[off]
}

// Iter calls fn for items from rank r upward (or downward when reverse)
// until fn returns false or the set ends.
func (z *ZSet) Iter(r int, reverse bool, fn func(it ZItem) bool) {
	if r < 0 || r >= z.n {
		return
	}
	li, off := z.findRank(r)
	if !reverse {
		for ; li < len(z.leaves); li, off = li+1, 0 {
			items := z.leaves[li].items
			for ; off < len(items); off++ {
				if !fn(items[off]) {
					return
				}
			}
		}
		return
	}
	for {
		items := z.leaves[li].items
		for ; off >= 0; off-- {
			if !fn(items[off]) {
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
	li := sort.Search(len(z.leaves), func(i int) bool {
		lf := z.leaves[i]
		return pred(&lf.items[len(lf.items)-1])
	})
	if li == len(z.leaves) {
		return z.n
	}
	lf := z.leaves[li]
	pos := sort.Search(len(lf.items), func(i int) bool { return pred(&lf.items[i]) })
	return z.prefix(li) + pos
}

// DeleteRange removes ranks start..stop (inclusive, valid) and returns the
// removed members through fn (may be nil). A range is cut out of each leaf
// it covers at once, and the leaf index is rebuilt once.
func (z *ZSet) DeleteRange(start, stop int, fn func(it ZItem)) {
	li, off := z.findRank(start)
	if start == stop {
		it := z.leaves[li].items[off]
		if fn != nil {
			fn(it)
		}
		z.removeAt(li, off)
		if z.m != nil {
			delete(z.m, it.Member)
		}
		z.bytes -= AllocSize(len(it.Member))
		z.account()
		return
	}
	first := li
	for k := stop - start + 1; k > 0; li, off = li+1, 0 {
		lf := z.leaves[li]
		end := min(len(lf.items), off+k)
		for _, it := range lf.items[off:end] {
			if fn != nil {
				fn(it)
			}
			if z.m != nil {
				delete(z.m, it.Member)
			}
			z.bytes -= AllocSize(len(it.Member))
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

// Clone returns a deep copy (members are immutable strings and are shared).
func (z *ZSet) Clone() *ZSet {
	c := &ZSet{n: z.n, bytes: z.bytes}
	for _, lf := range z.leaves {
		items := make([]ZItem, len(lf.items), cap(lf.items))
		copy(items, lf.items)
		c.leaves = append(c.leaves, &zleaf{items: items})
	}
	c.rebuildFen()
	if z.m != nil {
		c.m = make(map[string]float64, len(z.m))
		for k, v := range z.m {
			c.m[k] = v
		}
	}
	c.account()
	return c
}

// MaxMemberLen returns the longest member's length (for encoding choices).
func (z *ZSet) MaxMemberLen() int {
	n := 0
	z.Iter(0, false, func(it ZItem) bool {
		if len(it.Member) > n {
			n = len(it.Member)
		}
		return true
	})
	return n
}

// IsNaN reports whether f is NaN (helper for score arithmetic).
func IsNaN(f float64) bool { return math.IsNaN(f) }

// InsertString adds a member known to be absent, keeping the string.
func (z *ZSet) InsertString(member string, score float64) {
	z.bytes += AllocSize(len(member))
	z.insert(member, score)
	z.account()
}
