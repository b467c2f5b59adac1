package store

import (
	"encoding/binary"
	"unsafe"
)

// List is a Redis list: a deque of nodes, each node a byte buffer of packed
// elements (like a quicklist of listpacks), so a list costs a few bytes per
// element and a handful of allocations per node instead of one per element.
//
// An element is stored as uvarint(len), its bytes, then uvarint(len) again
// with its bytes reversed, so a node can be walked from either end. Nodes
// keep free room at both ends: pushes at either end of the list are O(1)
// amortized.
type List struct {
	memHdr
	bytes int64    // allocation sizes of the nodes and their buffers
	nodes []*lnode // nodes[first:] are in use
	first int
	n     int
	fill  int // list-max-listpack-size: <0 size class, >0 element count
}

// AsList returns the list of a KindList entry.
func (e *Entry) AsList() *List { return (*List)(e.ptr) }

type lnode struct {
	buf    []byte
	lo, hi int // elements occupy buf[lo:hi]
	cnt    int
}

// NewList returns an empty list whose nodes are sized by fill, the
// list-max-listpack-size setting (-1..-5: 4..64 KiB per node; >0: that
// many elements per node).
func NewList(fill int) *List { return &List{fill: fill} }

// Len returns the number of elements.
func (l *List) Len() int { return l.n }

// Encoding is what OBJECT ENCODING reports: Redis 7.0 always uses a quicklist.
func (l *List) Encoding() string { return "quicklist" }

func (l *List) maxBytes() int {
	switch {
	case l.fill >= 0:
		return 8192 // Redis's safety limit for count-based fills
	case l.fill < -5:
		return 65536
	}
	return 4096 << (-l.fill - 1)
}

func (l *List) maxCount() int {
	if l.fill > 0 {
		return l.fill
	}
	return 1 << 30
}

func varintLen(n int) int {
	k := 1
	for n >= 0x80 {
		n >>= 7
		k++
	}
	return k
}

func entrySize(v []byte) int { return 2*varintLen(len(v)) + len(v) }

// putEntry writes v's encoding at b (which has room) and returns its size.
func putEntry(b []byte, v []byte) int {
	k := binary.PutUvarint(b, uint64(len(v)))
	copy(b[k:], v)
	p := k + len(v)
	for i := 0; i < k; i++ {
		b[p+i] = b[k-1-i]
	}
	return p + k
}

// next decodes the element at p and returns it and the next position.
func (nd *lnode) next(p int) ([]byte, int) {
	v, k := binary.Uvarint(nd.buf[p:])
	s := p + k
	e := s + int(v)
	return nd.buf[s:e], e + k
}

// prev decodes the element ending at e and returns it and its start.
func (nd *lnode) prev(e int) ([]byte, int) {
	var v uint64
	shift := uint(0)
	i := e - 1
	for {
		b := nd.buf[i]
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			break
		}
		shift += 7
		i--
	}
	k := e - i
	s := i - int(v)
	return nd.buf[s:i], s - k
}

func (nd *lnode) size() int { return nd.hi - nd.lo }

// nodeBytes is the allocation of a node and its buffer.
func nodeBytes(nd *lnode) int64 {
	return AllocSize(int(unsafe.Sizeof(lnode{}))) + AllocSize(len(nd.buf))
}

// account records the list's current size in its header.
func (l *List) account() {
	l.setMem(AllocSize(int(unsafe.Sizeof(List{}))) + AllocSize(8*cap(l.nodes)) + l.bytes)
}
func (l *List) fits(nd *lnode, sz int) bool {
	return nd.cnt < l.maxCount() && (nd.size()+sz <= l.maxBytes() || nd.cnt == 0)
}

func newNode(sz int, atEnd bool) *lnode {
	c := 64
	for c < sz {
		c *= 2
	}
	nd := &lnode{buf: make([]byte, c)}
	if atEnd {
		nd.lo, nd.hi = c, c
	}
	return nd
}

// grow makes room for sz more bytes at the front (front) or back.
func (nd *lnode) grow(sz int, front bool) {
	used := nd.size()
	c := len(nd.buf) * 2
	for c < used+sz {
		c *= 2
	}
	nb := make([]byte, c)
	if front {
		copy(nb[c-used:], nd.buf[nd.lo:nd.hi])
		nd.lo, nd.hi = c-used, c
	} else {
		copy(nb, nd.buf[nd.lo:nd.hi])
		nd.lo, nd.hi = 0, used
	}
	nd.buf = nb
}

func (l *List) live() []*lnode { return l.nodes[l.first:] }

func (l *List) pushNodeFront(nd *lnode) {
	if l.first == 0 {
		n := len(l.nodes)
		room := n + 4
		nn := make([]*lnode, room+n)
		copy(nn[room:], l.nodes)
		l.nodes, l.first = nn, room
	}
	l.first--
	l.nodes[l.first] = nd
}

// PushFront inserts v at the head.
func (l *List) PushFront(v []byte) {
	sz := entrySize(v)
	ns := l.live()
	var nd *lnode
	var before int64
	if len(ns) > 0 && l.fits(ns[0], sz) {
		nd = ns[0]
		before = nodeBytes(nd)
	} else {
		nd = newNode(sz, true)
		l.pushNodeFront(nd)
	}
	if nd.lo < sz {
		nd.grow(sz, true)
	}
	nd.lo -= sz
	putEntry(nd.buf[nd.lo:], v)
	nd.cnt++
	l.n++
	l.bytes += nodeBytes(nd) - before
	l.account()
}

// PushBack appends v at the tail.
func (l *List) PushBack(v []byte) {
	sz := entrySize(v)
	ns := l.live()
	var nd *lnode
	var before int64
	if len(ns) > 0 && l.fits(ns[len(ns)-1], sz) {
		nd = ns[len(ns)-1]
		before = nodeBytes(nd)
	} else {
		nd = newNode(sz, false)
		l.nodes = append(l.nodes, nd)
	}
	if len(nd.buf)-nd.hi < sz {
		nd.grow(sz, false)
	}
	putEntry(nd.buf[nd.hi:], v)
	nd.hi += sz
	nd.cnt++
	l.n++
	l.bytes += nodeBytes(nd) - before
	l.account()
}

func (l *List) dropFrontNode() {
	l.bytes -= nodeBytes(l.nodes[l.first])
	l.nodes[l.first] = nil
	l.first++
	if l.first == len(l.nodes) {
		l.nodes, l.first = l.nodes[:0], 0
	} else if l.first > 32 && l.first > len(l.nodes)/2 {
		n := copy(l.nodes, l.nodes[l.first:])
		clear(l.nodes[n:])
		l.nodes, l.first = l.nodes[:n], 0
	}
}

func (l *List) dropBackNode() {
	l.bytes -= nodeBytes(l.nodes[len(l.nodes)-1])
	l.nodes[len(l.nodes)-1] = nil
	l.nodes = l.nodes[:len(l.nodes)-1]
	if len(l.nodes) == l.first {
		l.nodes, l.first = l.nodes[:0], 0
	}
}

// PopFront removes the head element, appending it to dst.
func (l *List) PopFront(dst []byte) ([]byte, bool) {
	if l.n == 0 {
		return dst, false
	}
	nd := l.nodes[l.first]
	v, p := nd.next(nd.lo)
	dst = append(dst, v...)
	nd.lo = p
	nd.cnt--
	l.n--
	if nd.cnt == 0 {
		l.dropFrontNode()
		l.account()
	}
	return dst, true
}

// PopBack removes the tail element, appending it to dst.
func (l *List) PopBack(dst []byte) ([]byte, bool) {
	if l.n == 0 {
		return dst, false
	}
	nd := l.nodes[len(l.nodes)-1]
	v, s := nd.prev(nd.hi)
	dst = append(dst, v...)
	nd.hi = s
	nd.cnt--
	l.n--
	if nd.cnt == 0 {
		l.dropBackNode()
		l.account()
	}
	return dst, true
}

// locate returns the node index (into live()) holding element i and the
// buffer position of that element.
func (l *List) locate(i int) (int, int) {
	ns := l.live()
	if i < l.n/2 {
		for ni, nd := range ns {
			if i < nd.cnt {
				p := nd.lo
				for ; i > 0; i-- {
					_, p = nd.next(p)
				}
				return ni, p
			}
			i -= nd.cnt
		}
	}
	j := l.n - 1 - i // index from the tail
	for ni := len(ns) - 1; ni >= 0; ni-- {
		nd := ns[ni]
		if j < nd.cnt {
			e := nd.hi
			var s int
			for {
				_, s = nd.prev(e)
				if j == 0 {
					return ni, s
				}
				e = s
				j--
			}
		}
		j -= nd.cnt
	}
	return -1, 0
}

// Index returns element i (0-based from the head; the caller checks the
// range). The slice is the list's memory: valid until the next change.
func (l *List) Index(i int) []byte {
	ni, p := l.locate(i)
	v, _ := l.live()[ni].next(p)
	return v
}

// Range calls fn for elements start..stop (inclusive, valid indexes) from
// the head, or from stop down to start when reverse. fn returns false to stop.
func (l *List) Range(start, stop int, reverse bool, fn func(v []byte) bool) {
	if start > stop || l.n == 0 {
		return
	}
	ns := l.live()
	if !reverse {
		ni, p := l.locate(start)
		for k := stop - start + 1; k > 0; {
			nd := ns[ni]
			for p < nd.hi && k > 0 {
				var v []byte
				v, p = nd.next(p)
				k--
				if !fn(v) {
					return
				}
			}
			ni++
			if ni < len(ns) {
				p = ns[ni].lo
			}
		}
		return
	}
	ni, p := l.locate(stop)
	_, e := ns[ni].next(p)
	for k := stop - start + 1; k > 0; {
		nd := ns[ni]
		for e > nd.lo && k > 0 {
			var v []byte
			v, e = nd.prev(e)
			k--
			if !fn(v) {
				return
			}
		}
		ni--
		if ni >= 0 {
			e = ns[ni].hi
		}
	}
}

// Each calls fn with every element and its index, from the head or (fromTail)
// from the tail, until fn returns false.
func (l *List) Each(fromTail bool, fn func(i int, v []byte) bool) {
	if l.n == 0 {
		return
	}
	i := 0
	if fromTail {
		i = l.n - 1
	}
	l.Range(0, l.n-1, fromTail, func(v []byte) bool {
		ok := fn(i, v)
		if fromTail {
			i--
		} else {
			i++
		}
		return ok
	})
}

// entries decodes a node into copies of its elements.
func (nd *lnode) entries() [][]byte {
	out := make([][]byte, 0, nd.cnt)
	for p := nd.lo; p < nd.hi; {
		var v []byte
		v, p = nd.next(p)
		out = append(out, append([]byte(nil), v...))
	}
	return out
}

// replaceNode replaces live node ni with nodes packing vals (none if empty).
func (l *List) replaceNode(ni int, vals [][]byte) {
	var built []*lnode
	var cur *lnode
	for _, v := range vals {
		sz := entrySize(v)
		if cur == nil || !l.fits(cur, sz) {
			cur = newNode(sz, false)
			built = append(built, cur)
		}
		if len(cur.buf)-cur.hi < sz {
			cur.grow(sz, false)
		}
		putEntry(cur.buf[cur.hi:], v)
		cur.hi += sz
		cur.cnt++
	}
	ns := l.live()
	l.n += len(vals) - ns[ni].cnt
	l.bytes -= nodeBytes(ns[ni])
	for _, nd := range built {
		l.bytes += nodeBytes(nd)
	}
	rest := append(built, ns[ni+1:]...)
	out := append(l.nodes[:l.first+ni:l.first+ni], rest...)
	if len(out) < len(l.nodes) {
		// Fewer nodes: drop the stale pointers past the new end.
		clear(l.nodes[len(out):])
	}
	l.nodes = out
	if len(l.nodes) == l.first {
		l.nodes, l.first = l.nodes[:0], 0
	}
	l.account()
}

// Set replaces element i (a valid index) with v.
func (l *List) Set(i int, v []byte) {
	ni, p := l.locate(i)
	nd := l.live()[ni]
	old, e := nd.next(p)
	if entrySize(old) == entrySize(v) {
		putEntry(nd.buf[p:e], v)
		return
	}
	vals := nd.entries()
	k := 0
	for q := nd.lo; q < p; k++ {
		_, q = nd.next(q)
	}
	vals[k] = v
	l.replaceNode(ni, vals)
}

// Insert puts v before (or after) the first element equal to pivot and
// reports whether the pivot was found.
func (l *List) Insert(pivot, v []byte, after bool) bool {
	for ni, nd := range l.live() {
		k := 0
		for p := nd.lo; p < nd.hi; k++ {
			var e []byte
			e, p = nd.next(p)
			if string(e) == string(pivot) {
				vals := nd.entries()
				if after {
					k++
				}
				vals = append(vals, nil)
				copy(vals[k+1:], vals[k:])
				vals[k] = v
				l.replaceNode(ni, vals)
				return true
			}
		}
	}
	return false
}

// Remove deletes elements equal to v: up to count from the head (count > 0),
// from the tail (count < 0), or all (0). It returns how many it removed.
func (l *List) Remove(v []byte, count int) int {
	removed := 0
	limit := count
	if limit < 0 {
		limit = -limit
	}
	ns := l.live()
	order := make([]int, len(ns))
	for i := range order {
		order[i] = i
		if count < 0 {
			order[i] = len(ns) - 1 - i
		}
	}
	// Process nodes from the far end first so indexes stay valid when a
	// node is replaced by a different number of nodes.
	type edit struct {
		ni   int
		vals [][]byte
	}
	var edits []edit
	for _, ni := range order {
		if limit > 0 && removed == limit {
			break
		}
		nd := ns[ni]
		hit := false
		for p := nd.lo; p < nd.hi; {
			var e []byte
			e, p = nd.next(p)
			if string(e) == string(v) {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		vals := nd.entries()
		keep := vals[:0:0]
		if count >= 0 {
			for _, e := range vals {
				if string(e) == string(v) && (limit == 0 || removed < limit) {
					removed++
					continue
				}
				keep = append(keep, e)
			}
		} else {
			drop := make([]bool, len(vals))
			for j := len(vals) - 1; j >= 0; j-- {
				if string(vals[j]) == string(v) && removed < limit {
					drop[j] = true
					removed++
				}
			}
			for j, e := range vals {
				if !drop[j] {
					keep = append(keep, e)
				}
			}
		}
		edits = append(edits, edit{ni, keep})
	}
	// Apply from the highest node index down.
	for i := range edits {
		for j := i + 1; j < len(edits); j++ {
			if edits[j].ni > edits[i].ni {
				edits[i], edits[j] = edits[j], edits[i]
			}
		}
	}
	for _, ed := range edits {
		l.replaceNode(ed.ni, ed.vals)
	}
	return removed
}

// DropFront removes n elements from the head.
func (l *List) DropFront(n int) {
	for n > 0 && l.n > 0 {
		nd := l.nodes[l.first]
		if n >= nd.cnt {
			n -= nd.cnt
			l.n -= nd.cnt
			l.dropFrontNode()
			continue
		}
		_, p := nd.next(nd.lo)
		nd.lo = p
		nd.cnt--
		l.n--
		n--
	}
	l.account()
}

// DropBack removes n elements from the tail.
func (l *List) DropBack(n int) {
	for n > 0 && l.n > 0 {
		nd := l.nodes[len(l.nodes)-1]
		if n >= nd.cnt {
			n -= nd.cnt
			l.n -= nd.cnt
			l.dropBackNode()
			continue
		}
		_, st := nd.prev(nd.hi)
		nd.hi = st
		nd.cnt--
		l.n--
		n--
	}
	l.account()
}

// Clone returns a deep copy of the list.
func (l *List) Clone() *List {
	c := &List{fill: l.fill, n: l.n}
	for _, nd := range l.live() {
		b := make([]byte, nd.size())
		copy(b, nd.buf[nd.lo:nd.hi])
		nn := &lnode{buf: b, lo: 0, hi: len(b), cnt: nd.cnt}
		c.nodes = append(c.nodes, nn)
		c.bytes += nodeBytes(nn)
	}
	c.account()
	return c
}
