package store

import (
	"sort"
	"strconv"
	"unsafe"

	"github.com/sluicedb/sluice/resp"
)

// Streams (Redis's t_stream.c data model).
//
// Entries live in nodes of up to stream-node-max-entries entries (or
// stream-node-max-bytes of Redis listpack), as Redis's radix tree of
// listpacks does, so that approximate trimming ("~"), XINFO's
// radix-tree-keys and the RDB encoding (one listpack a node) come out as
// Redis's. A node keeps its entries' IDs in a sorted slice (binary search)
// and their fields and values packed in one byte buffer: XADD appends to
// both, with no allocation per entry beyond the buffers' growth. A node
// also tracks the byte size of the listpack Redis would hold, which decides
// when a new node starts.

// StreamID is a stream entry ID.
type StreamID struct{ Ms, Seq uint64 }

// MaxStreamID is the greatest ID ("+").
var MaxStreamID = StreamID{^uint64(0), ^uint64(0)}

// Cmp compares two IDs.
func (a StreamID) Cmp(b StreamID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// Less reports a < b.
func (a StreamID) Less(b StreamID) bool { return a.Cmp(b) < 0 }

// IsZero reports whether the ID is 0-0.
func (a StreamID) IsZero() bool { return a.Ms == 0 && a.Seq == 0 }

// Incr returns the next ID; ok is false (and the ID 0-0) on overflow.
func (a StreamID) Incr() (StreamID, bool) {
	if a.Seq == ^uint64(0) {
		if a.Ms == ^uint64(0) {
			return StreamID{}, false
		}
		return StreamID{a.Ms + 1, 0}, true
	}
	return StreamID{a.Ms, a.Seq + 1}, true
}

// Decr returns the previous ID; ok is false (and the ID max) on underflow.
func (a StreamID) Decr() (StreamID, bool) {
	if a.Seq == 0 {
		if a.Ms == 0 {
			return MaxStreamID, false
		}
		return StreamID{a.Ms - 1, ^uint64(0)}, true
	}
	return StreamID{a.Ms, a.Seq - 1}, true
}

// AppendTo appends "ms-seq".
func (a StreamID) AppendTo(dst []byte) []byte {
	dst = strconv.AppendUint(dst, a.Ms, 10)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, a.Seq, 10)
}

// String returns "ms-seq".
func (a StreamID) String() string { return string(a.AppendTo(nil)) }

const (
	streamFlagDeleted    = 1
	streamFlagSameFields = 2
)

// StreamListpackMaxSize is Redis's STREAM_LISTPACK_MAX_SIZE.
const StreamListpackMaxSize = 1 << 30

type streamEnt struct {
	id    StreamID
	off   uint32 // offset in node.data of the entry's record
	flags uint32
}

// streamNode is one Redis listpack's worth of entries. data starts with
// the master record (the first entry's field names); each entry's record
// is uvarint field count, then per field (uvarint length and bytes of the
// field unless the entry has the master's fields) uvarint length and bytes
// of the value.
type streamNode struct {
	master  StreamID
	ents    []streamEnt
	data    []byte
	live    int
	deleted int
	lpRest  int // Redis listpack bytes, less the count and deleted items
}

// size is the allocation of a node, its entry index and its records.
func (n *streamNode) size() int64 {
	return AllocSize(int(unsafe.Sizeof(streamNode{}))) + AllocSize(int(unsafe.Sizeof(streamEnt{}))*cap(n.ents)) + AllocSize(cap(n.data))
}

// size is the allocation of a group: its struct, name, pending entries
// and consumers.
func (g *StreamGroup) size() int64 {
	n := AllocSize(int(unsafe.Sizeof(StreamGroup{}))) + AllocSize(len(g.Name)) +
		AllocSize(8*cap(g.pel)) + AllocSize(8*cap(g.consumers)) +
		int64(len(g.pel))*AllocSize(int(unsafe.Sizeof(StreamNACK{})))
	for _, c := range g.consumers {
		n += AllocSize(int(unsafe.Sizeof(StreamConsumer{}))) + AllocSize(len(c.Name)) + AllocSize(8*cap(c.pel))
	}
	return n
}

// account records the stream's current size in its header.
func (s *Stream) account() {
	n := AllocSize(int(unsafe.Sizeof(Stream{}))) + AllocSize(8*cap(s.nodes)) + AllocSize(8*cap(s.groups)) + s.nodeBytes
	for _, g := range s.groups {
		n += g.size()
	}
	s.setMem(n)
}

// changed records a change of the group's size.
func (g *StreamGroup) changed() {
	if g.strm != nil {
		g.strm.account()
	}
}

func (n *streamNode) lpBytes() int {
	return n.lpRest + lpIntSize(int64(n.live)) + lpIntSize(int64(n.deleted))
}

func readUvarint(b []byte, off int) (int, int) {
	v, shift := 0, 0
	for {
		c := b[off]
		off++
		v |= int(c&0x7f) << shift
		if c < 0x80 {
			return v, off
		}
		shift += 7
	}
}

func appendUvarint(b []byte, v int) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendLenBytes(b, s []byte) []byte {
	b = appendUvarint(b, len(s))
	return append(b, s...)
}

// masterFields calls fn for each master field.
func (n *streamNode) masterFields(fn func(f []byte) bool) {
	cnt, off := readUvarint(n.data, 0)
	for i := 0; i < cnt; i++ {
		var l int
		l, off = readUvarint(n.data, off)
		if !fn(n.data[off : off+l]) {
			return
		}
		off += l
	}
}

func (n *streamNode) masterCount() int {
	c, _ := readUvarint(n.data, 0)
	return c
}

// fields calls fn for each field/value pair of entry i.
func (n *streamNode) fields(i int, fn func(f, v []byte)) {
	e := &n.ents[i]
	cnt, off := readUvarint(n.data, int(e.off))
	if e.flags&streamFlagSameFields != 0 {
		_, moff := readUvarint(n.data, 0)
		for j := 0; j < cnt; j++ {
			var fl, vl int
			fl, moff = readUvarint(n.data, moff)
			f := n.data[moff : moff+fl]
			moff += fl
			vl, off = readUvarint(n.data, off)
			fn(f, n.data[off:off+vl])
			off += vl
		}
		return
	}
	for j := 0; j < cnt; j++ {
		var fl, vl int
		fl, off = readUvarint(n.data, off)
		f := n.data[off : off+fl]
		off += fl
		vl, off = readUvarint(n.data, off)
		fn(f, n.data[off:off+vl])
		off += vl
	}
}

func (n *streamNode) numFields(i int) int {
	c, _ := readUvarint(n.data, int(n.ents[i].off))
	return c
}

// search returns the index of the first entry with id >= id.
func (n *streamNode) search(id StreamID) int {
	return sort.Search(len(n.ents), func(i int) bool { return !n.ents[i].id.Less(id) })
}

// Stream is a stream value.
type Stream struct {
	memHdr
	nodeBytes    int64 // allocation sizes of the nodes
	nodes        []*streamNode
	length       uint64
	LastID       StreamID
	FirstID      StreamID
	MaxDeletedID StreamID
	EntriesAdded uint64
	groups       []*StreamGroup // sorted by name
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	strm        *Stream // the stream, whose size a change of the group changes
	Name        string
	LastID      StreamID
	EntriesRead int64 // -1: unknown
	pel         []*StreamNACK
	consumers   []*StreamConsumer
}

// StreamConsumer is a consumer of a group.
type StreamConsumer struct {
	Name     string
	SeenTime int64
	pel      []*StreamNACK
}

// StreamNACK is a pending entry.
type StreamNACK struct {
	ID            StreamID
	DeliveryTime  int64
	DeliveryCount uint64
	Consumer      *StreamConsumer
}

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{} }

// NewStreamEntry wraps a stream in an entry.
func NewStreamEntry(s *Stream) *Entry { return NewObject(KindStream, unsafe.Pointer(s)) }

// AsStream returns the stream of a KindStream entry.
func (e *Entry) AsStream() *Stream { return (*Stream)(e.ptr) }

// Len returns the number of entries.
func (s *Stream) Len() uint64 { return s.length }

// NumNodes returns the number of nodes (XINFO radix-tree-keys).
func (s *Stream) NumNodes() int { return len(s.nodes) }

// --- listpack sizes ---

func lpIntSize(v int64) int {
	var l int
	switch {
	case v >= 0 && v <= 127:
		l = 1
	case v >= -4096 && v <= 4095:
		l = 2
	case v >= -1<<15 && v < 1<<15:
		l = 3
	case v >= -1<<23 && v < 1<<23:
		l = 4
	case v >= -1<<31 && v < 1<<31:
		l = 5
	default:
		l = 9
	}
	return l + ListpackBacklenSize(l)
}

// ListpackBacklenSize is the size of a listpack entry's back-length, the
// entry's length l written for reading right to left, 7 bits a byte.
func ListpackBacklenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// ListpackEntrySize is the bytes Redis's listpack uses for one element:
// an integer encoding when b is a canonical int64, else a string encoding,
// plus the back-length.
func ListpackEntrySize(b []byte) int { return lpStrSize(b) }

func lpStrSize(b []byte) int {
	if len(b) > 0 && len(b) <= 20 {
		if v, ok := resp.ParseInt(b); ok {
			return lpIntSize(v)
		}
	}
	n := len(b)
	var l int
	switch {
	case n < 64:
		l = 1 + n
	case n < 4096:
		l = 2 + n
	default:
		l = 5 + n
	}
	return l + ListpackBacklenSize(l)
}

// --- adding ---

// Append adds an entry with the given ID (which must be greater than
// LastID) and field/value pairs (kv alternates fields and values).
// maxEntries and maxBytes are stream-node-max-entries and -bytes.
func (s *Stream) Append(id StreamID, kv [][]byte, maxEntries, maxBytes int64) {
	totLen := 0
	for _, b := range kv {
		totLen += len(b)
	}
	var n *streamNode
	if len(s.nodes) > 0 {
		n = s.nodes[len(s.nodes)-1]
		nodeMax := maxBytes
		if nodeMax == 0 || nodeMax > StreamListpackMaxSize {
			nodeMax = StreamListpackMaxSize
		}
		if int64(n.lpBytes()+totLen) >= nodeMax {
			n = nil
		} else if maxEntries != 0 && int64(n.live+n.deleted) >= maxEntries {
			n = nil
		}
	}
	s.add(n, id, kv)
	s.account()
}

// LoadEntry adds an entry as an RDB node holds it: newNode starts a node,
// deleted makes it a tombstone. Length, IDs and counters are the caller's
// to set afterwards.
func (s *Stream) LoadEntry(id StreamID, kv [][]byte, deleted, newNode bool) {
	var n *streamNode
	if !newNode && len(s.nodes) > 0 {
		n = s.nodes[len(s.nodes)-1]
	}
	n = s.add(n, id, kv)
	if deleted {
		n.ents[len(n.ents)-1].flags |= streamFlagDeleted
		n.live--
		n.deleted++
		s.length--
	}
	s.account()
}

// add appends an entry to node n (nil: a new node), returning the node.
func (s *Stream) add(n *streamNode, id StreamID, kv [][]byte) *streamNode {
	numFields := len(kv) / 2
	var flags uint32
	var before int64
	if n != nil {
		before = n.size()
	}
	if n == nil {
		n = &streamNode{master: id}
		n.data = appendUvarint(n.data, numFields)
		n.lpRest = 6 + 1 + lpIntSize(int64(numFields)) + lpIntSize(0)
		for i := 0; i < numFields; i++ {
			n.data = appendLenBytes(n.data, kv[2*i])
			n.lpRest += lpStrSize(kv[2*i])
		}
		s.nodes = append(s.nodes, n)
		flags = streamFlagSameFields
	} else if n.masterCount() == numFields {
		i := 0
		n.masterFields(func(f []byte) bool {
			if string(f) != string(kv[2*i]) {
				return false
			}
			i++
			return true
		})
		if i == numFields {
			flags = streamFlagSameFields
		}
	}
	off := len(n.data)
	n.data = appendUvarint(n.data, numFields)
	lp := lpIntSize(int64(flags)) + lpIntSize(int64(id.Ms-n.master.Ms)) + lpIntSize(int64(id.Seq-n.master.Seq))
	lpCount := numFields + 3
	if flags&streamFlagSameFields == 0 {
		lp += lpIntSize(int64(numFields))
		lpCount += numFields + 1
	}
	for i := 0; i < numFields; i++ {
		if flags&streamFlagSameFields == 0 {
			n.data = appendLenBytes(n.data, kv[2*i])
			lp += lpStrSize(kv[2*i])
		}
		n.data = appendLenBytes(n.data, kv[2*i+1])
		lp += lpStrSize(kv[2*i+1])
	}
	lp += lpIntSize(int64(lpCount))
	n.lpRest += lp
	n.ents = append(n.ents, streamEnt{id: id, off: uint32(off), flags: flags})
	s.nodeBytes += n.size() - before
	n.live++
	s.length++
	s.EntriesAdded++
	s.LastID = id
	if s.length == 1 {
		s.FirstID = id
	}
	return n
}

// --- lookup and iteration ---

// nodeFor returns the index of the last node whose master ID is <= id,
// or 0.
func (s *Stream) nodeFor(id StreamID) int {
	i := sort.Search(len(s.nodes), func(i int) bool { return id.Less(s.nodes[i].master) })
	if i > 0 {
		i--
	}
	return i
}

// StreamEntry refers to one entry while the stream is unchanged.
type StreamEntry struct {
	n *streamNode
	i int
}

// ID returns the entry's ID.
func (e StreamEntry) ID() StreamID { return e.n.ents[e.i].id }

// NumFields returns the number of field/value pairs.
func (e StreamEntry) NumFields() int { return e.n.numFields(e.i) }

// Fields calls fn for each field and value (the stream's own bytes).
func (e StreamEntry) Fields(fn func(f, v []byte)) { e.n.fields(e.i, fn) }

// Range calls fn for the live entries with start <= id <= end, in order
// (reverse order if rev), until fn returns false.
func (s *Stream) Range(start, end StreamID, rev bool, fn func(e StreamEntry) bool) {
	if len(s.nodes) == 0 || end.Less(start) {
		return
	}
	if !rev {
		for ni := s.nodeFor(start); ni < len(s.nodes); ni++ {
			n := s.nodes[ni]
			for i := n.search(start); i < len(n.ents); i++ {
				e := &n.ents[i]
				if end.Less(e.id) {
					return
				}
				if e.flags&streamFlagDeleted != 0 {
					continue
				}
				if !fn(StreamEntry{n, i}) {
					return
				}
			}
		}
		return
	}
	for ni := s.nodeFor(end); ni >= 0; ni-- {
		n := s.nodes[ni]
		i := n.search(end)
		if i < len(n.ents) && n.ents[i].id == end {
			i++
		}
		for i--; i >= 0; i-- {
			e := &n.ents[i]
			if e.id.Less(start) {
				return
			}
			if e.flags&streamFlagDeleted != 0 {
				continue
			}
			if !fn(StreamEntry{n, i}) {
				return
			}
		}
	}
}

// Get returns the live entry with the given ID.
func (s *Stream) Get(id StreamID) (StreamEntry, bool) {
	if len(s.nodes) == 0 {
		return StreamEntry{}, false
	}
	n := s.nodes[s.nodeFor(id)]
	i := n.search(id)
	if i < len(n.ents) && n.ents[i].id == id && n.ents[i].flags&streamFlagDeleted == 0 {
		return StreamEntry{n, i}, true
	}
	return StreamEntry{}, false
}

// Exists reports whether a live entry has the ID.
func (s *Stream) Exists(id StreamID) bool {
	_, ok := s.Get(id)
	return ok
}

// LastValidID returns the ID of the last live entry (0-0 if none).
func (s *Stream) LastValidID() StreamID {
	var id StreamID
	s.Range(StreamID{}, MaxStreamID, true, func(e StreamEntry) bool {
		id = e.ID()
		return false
	})
	return id
}

// firstValidID returns the ID of the first live entry (0-0 if none).
func (s *Stream) firstValidID() StreamID {
	var id StreamID
	s.Range(StreamID{}, MaxStreamID, false, func(e StreamEntry) bool {
		id = e.ID()
		return false
	})
	return id
}

// FirstEntryID returns the first ID of the first node, tombstones
// included (what XADD/XTRIM rewrite MINID with).
func (s *Stream) FirstEntryID() StreamID {
	if len(s.nodes) == 0 {
		return StreamID{}
	}
	return s.nodes[0].ents[0].id
}

// --- deleting ---

// Delete removes the live entry with the given ID, reporting whether there
// was one. It does not update FirstID or MaxDeletedID (XDEL does).
func (s *Stream) Delete(id StreamID) bool {
	if len(s.nodes) == 0 {
		return false
	}
	ni := s.nodeFor(id)
	n := s.nodes[ni]
	i := n.search(id)
	if i >= len(n.ents) || n.ents[i].id != id || n.ents[i].flags&streamFlagDeleted != 0 {
		return false
	}
	n.ents[i].flags |= streamFlagDeleted
	if n.live == 1 {
		s.removeNode(ni)
		s.account()
	} else {
		n.live--
		n.deleted++
	}
	s.length--
	return true
}

func (s *Stream) removeNode(i int) {
	s.nodeBytes -= s.nodes[i].size()
	copy(s.nodes[i:], s.nodes[i+1:])
	s.nodes[len(s.nodes)-1] = nil
	s.nodes = s.nodes[:len(s.nodes)-1]
}

// UpdateFirstID recomputes FirstID after deletions.
func (s *Stream) UpdateFirstID() {
	if s.length == 0 {
		s.FirstID = StreamID{}
	} else {
		s.FirstID = s.firstValidID()
	}
}

// TrimArgs are XADD/XTRIM's trimming options.
type TrimArgs struct {
	ByID   bool // MINID (else MAXLEN)
	MaxLen int64
	MinID  StreamID
	Approx bool
	Limit  int64 // 0: none
}

// Trim trims the stream as streamTrim does, returning the number of
// entries removed.
func (s *Stream) Trim(a TrimArgs) int64 {
	var deleted int64
	removed := 0
	for removed < len(s.nodes) {
		if !a.ByID && s.length <= uint64(a.MaxLen) {
			break
		}
		n := s.nodes[removed]
		entries := int64(n.live)
		if a.Limit != 0 && deleted+entries > a.Limit {
			break
		}
		var remove bool
		if !a.ByID {
			remove = int64(s.length)-entries >= a.MaxLen
		} else {
			remove = n.ents[len(n.ents)-1].id.Less(a.MinID)
		}
		if remove {
			s.length -= uint64(entries)
			deleted += entries
			removed++
			continue
		}
		if a.Approx {
			break
		}
		var fromNode int
		for i := range n.ents {
			e := &n.ents[i]
			var stop bool
			if !a.ByID {
				stop = s.length <= uint64(a.MaxLen)
			} else {
				stop = !e.id.Less(a.MinID)
			}
			if stop {
				break
			}
			if e.flags&streamFlagDeleted == 0 {
				e.flags |= streamFlagDeleted
				fromNode++
				s.length--
			}
		}
		n.live -= fromNode
		n.deleted += fromNode
		deleted += int64(fromNode)
		break
	}
	if removed > 0 {
		for _, n := range s.nodes[:removed] {
			s.nodeBytes -= n.size()
		}
		clear(s.nodes[:removed])
		s.nodes = append(s.nodes[:0], s.nodes[removed:]...)
		s.account()
	}
	if s.length == 0 {
		s.FirstID = StreamID{}
	} else if deleted > 0 {
		s.FirstID = s.firstValidID()
	}
	return deleted
}

// --- consumer groups ---

// Groups returns the groups, sorted by name (not to be modified).
func (s *Stream) Groups() []*StreamGroup { return s.groups }

// Group returns the named group, or nil.
func (s *Stream) Group(name []byte) *StreamGroup {
	i := sort.Search(len(s.groups), func(i int) bool { return s.groups[i].Name >= string(name) })
	if i < len(s.groups) && s.groups[i].Name == string(name) {
		return s.groups[i]
	}
	return nil
}

// CreateGroup adds a group, returning nil if the name exists.
func (s *Stream) CreateGroup(name []byte, last StreamID, entriesRead int64) *StreamGroup {
	i := sort.Search(len(s.groups), func(i int) bool { return s.groups[i].Name >= string(name) })
	if i < len(s.groups) && s.groups[i].Name == string(name) {
		return nil
	}
	g := &StreamGroup{strm: s, Name: string(name), LastID: last, EntriesRead: entriesRead}
	s.groups = append(s.groups, nil)
	copy(s.groups[i+1:], s.groups[i:])
	s.groups[i] = g
	s.account()
	return g
}

// DestroyGroup removes the named group, reporting whether it existed.
func (s *Stream) DestroyGroup(name []byte) bool {
	i := sort.Search(len(s.groups), func(i int) bool { return s.groups[i].Name >= string(name) })
	if i < len(s.groups) && s.groups[i].Name == string(name) {
		s.groups[i].strm = nil
		s.groups = append(s.groups[:i], s.groups[i+1:]...)
		s.account()
		return true
	}
	return false
}

func pelSearch(pel []*StreamNACK, id StreamID) int {
	if n := len(pel); n > 0 && pel[n-1].ID.Less(id) {
		return n
	}
	return sort.Search(len(pel), func(i int) bool { return !pel[i].ID.Less(id) })
}

func pelInsert(pel []*StreamNACK, nk *StreamNACK) []*StreamNACK {
	i := pelSearch(pel, nk.ID)
	if i == len(pel) {
		return append(pel, nk)
	}
	pel = append(pel, nil)
	copy(pel[i+1:], pel[i:])
	pel[i] = nk
	return pel
}

func pelRemove(pel []*StreamNACK, id StreamID) []*StreamNACK {
	i := pelSearch(pel, id)
	if i < len(pel) && pel[i].ID == id {
		copy(pel[i:], pel[i+1:])
		pel[len(pel)-1] = nil
		return pel[:len(pel)-1]
	}
	return pel
}

// PEL returns the group's pending entries sorted by ID (not to be
// modified).
func (g *StreamGroup) PEL() []*StreamNACK { return g.pel }

// PELFrom returns the index of the first pending entry with ID >= id.
func (g *StreamGroup) PELFrom(id StreamID) int { return pelSearch(g.pel, id) }

// Pending returns the pending entry with the ID, or nil.
func (g *StreamGroup) Pending(id StreamID) *StreamNACK {
	i := pelSearch(g.pel, id)
	if i < len(g.pel) && g.pel[i].ID == id {
		return g.pel[i]
	}
	return nil
}

// AddPending inserts a new pending entry (Consumer may be nil, for
// XCLAIM FORCE until claimed).
func (g *StreamGroup) AddPending(nk *StreamNACK) {
	g.pel = pelInsert(g.pel, nk)
	if nk.Consumer != nil {
		nk.Consumer.pel = pelInsert(nk.Consumer.pel, nk)
	}
	g.changed()
}

// Ack removes a pending entry, reporting whether there was one.
func (g *StreamGroup) Ack(id StreamID) bool {
	nk := g.Pending(id)
	if nk == nil {
		return false
	}
	g.pel = pelRemove(g.pel, id)
	if nk.Consumer != nil {
		nk.Consumer.pel = pelRemove(nk.Consumer.pel, id)
	}
	g.changed()
	return true
}

// Assign moves a pending entry to consumer c.
func (g *StreamGroup) Assign(nk *StreamNACK, c *StreamConsumer) {
	if nk.Consumer == c {
		return
	}
	if nk.Consumer != nil {
		nk.Consumer.pel = pelRemove(nk.Consumer.pel, nk.ID)
	}
	nk.Consumer = c
	c.pel = pelInsert(c.pel, nk)
	g.changed()
}

// Consumers returns the consumers sorted by name (not to be modified).
func (g *StreamGroup) Consumers() []*StreamConsumer { return g.consumers }

func (g *StreamGroup) consumerIndex(name []byte) int {
	return sort.Search(len(g.consumers), func(i int) bool { return g.consumers[i].Name >= string(name) })
}

// Consumer returns the named consumer, or nil.
func (g *StreamGroup) Consumer(name []byte) *StreamConsumer {
	i := g.consumerIndex(name)
	if i < len(g.consumers) && g.consumers[i].Name == string(name) {
		return g.consumers[i]
	}
	return nil
}

// CreateConsumer adds a consumer, returning nil if it exists.
func (g *StreamGroup) CreateConsumer(name []byte, now int64) *StreamConsumer {
	i := g.consumerIndex(name)
	if i < len(g.consumers) && g.consumers[i].Name == string(name) {
		return nil
	}
	c := &StreamConsumer{Name: string(name), SeenTime: now}
	g.consumers = append(g.consumers, nil)
	copy(g.consumers[i+1:], g.consumers[i:])
	g.consumers[i] = c
	g.changed()
	return c
}

// DeleteConsumer removes a consumer and its pending entries, returning how
// many it had pending.
func (g *StreamGroup) DeleteConsumer(c *StreamConsumer) int {
	n := len(c.pel)
	for _, nk := range c.pel {
		g.pel = pelRemove(g.pel, nk.ID)
	}
	c.pel = nil
	i := g.consumerIndex([]byte(c.Name))
	if i < len(g.consumers) && g.consumers[i] == c {
		g.consumers = append(g.consumers[:i], g.consumers[i+1:]...)
	}
	g.changed()
	return n
}

// PEL returns the consumer's pending entries sorted by ID.
func (c *StreamConsumer) PEL() []*StreamNACK { return c.pel }

// PELFrom returns the index of the first pending entry with ID >= id.
func (c *StreamConsumer) PELFrom(id StreamID) int { return pelSearch(c.pel, id) }

// --- lag bookkeeping (7.0) ---

// RangeHasTombstones is streamRangeHasTombstones (end nil: +).
func (s *Stream) RangeHasTombstones(start StreamID, end *StreamID) bool {
	if s.length == 0 || s.MaxDeletedID.IsZero() {
		return false
	}
	if s.MaxDeletedID.Less(s.FirstID) {
		return false
	}
	e := MaxStreamID
	if end != nil {
		e = *end
	}
	return !s.MaxDeletedID.Less(start) && !e.Less(s.MaxDeletedID)
}

// EstimateDistance is streamEstimateDistanceFromFirstEverEntry (-1:
// unknown).
func (s *Stream) EstimateDistance(id StreamID) int64 {
	if s.EntriesAdded == 0 {
		return 0
	}
	if s.length == 0 && id.Cmp(s.LastID) < 1 {
		return int64(s.EntriesAdded)
	}
	cmpLast := id.Cmp(s.LastID)
	if cmpLast == 0 {
		return int64(s.EntriesAdded)
	} else if cmpLast > 0 {
		return -1
	}
	cmpFirst := id.Cmp(s.FirstID)
	if s.MaxDeletedID.IsZero() || s.MaxDeletedID.Less(s.FirstID) {
		if cmpFirst < 0 {
			return int64(s.EntriesAdded - s.length)
		} else if cmpFirst == 0 {
			return int64(s.EntriesAdded - s.length + 1)
		}
	}
	return -1
}

// Lag is streamReplyWithCGLag: the group's lag, ok=false when unknown.
func (s *Stream) Lag(g *StreamGroup) (int64, bool) {
	if s.EntriesAdded == 0 {
		return 0, true
	}
	if g.EntriesRead != -1 && !s.RangeHasTombstones(g.LastID, nil) {
		return int64(s.EntriesAdded) - g.EntriesRead, true
	}
	if er := s.EstimateDistance(g.LastID); er != -1 {
		return int64(s.EntriesAdded) - er, true
	}
	return 0, false
}

// Delivered updates the group's last ID and entries-read counter for an
// entry read past its last ID (streamReplyWithRange).
func (s *Stream) Delivered(g *StreamGroup, id StreamID) {
	if g.EntriesRead != -1 && !s.RangeHasTombstones(id, nil) {
		g.EntriesRead++
	} else if s.EntriesAdded != 0 {
		g.EntriesRead = s.EstimateDistance(id)
	}
	g.LastID = id
}

// --- copying, sizing, encoding ---

// Dup returns a deep copy.
func (s *Stream) Dup() *Stream {
	d := &Stream{length: s.length, LastID: s.LastID, FirstID: s.FirstID, MaxDeletedID: s.MaxDeletedID, EntriesAdded: s.EntriesAdded}
	d.nodes = make([]*streamNode, len(s.nodes))
	for i, n := range s.nodes {
		m := *n
		m.ents = append([]streamEnt(nil), n.ents...)
		m.data = append([]byte(nil), n.data...)
		d.nodes[i] = &m
		d.nodeBytes += m.size()
	}
	for _, g := range s.groups {
		ng := &StreamGroup{strm: d, Name: g.Name, LastID: g.LastID, EntriesRead: g.EntriesRead}
		nacks := make(map[StreamID]*StreamNACK, len(g.pel))
		for _, nk := range g.pel {
			c := *nk
			c.Consumer = nil
			nacks[nk.ID] = &c
			ng.pel = append(ng.pel, &c)
		}
		for _, c := range g.consumers {
			nc := &StreamConsumer{Name: c.Name, SeenTime: c.SeenTime}
			for _, nk := range c.pel {
				x := nacks[nk.ID]
				x.Consumer = nc
				nc.pel = append(nc.pel, x)
			}
			ng.consumers = append(ng.consumers, nc)
		}
		d.groups = append(d.groups, ng)
	}
	d.account()
	return d
}

// MemUsage estimates the bytes the stream uses.
func (s *Stream) MemUsage() int64 {
	n := int64(64)
	for _, nd := range s.nodes {
		n += 64 + int64(cap(nd.data)) + int64(cap(nd.ents))*24
	}
	for _, g := range s.groups {
		n += 64 + int64(len(g.Name)) + int64(len(g.pel))*(48+16)
		for _, c := range g.consumers {
			n += 64 + int64(len(c.Name)) + int64(len(c.pel))*8
		}
	}
	return n
}

// StreamNodeView describes a node for serialization: its master ID, its
// master fields, counts and its entries (tombstones included).
type StreamNodeView struct {
	Master       StreamID
	Live         int
	Deleted      int
	masterFields func(fn func(f []byte) bool)
	n            *streamNode
}

// MasterFields calls fn for each master field.
func (v StreamNodeView) MasterFields(fn func(f []byte) bool) { v.masterFields(fn) }

// MasterFieldCount returns the number of master fields.
func (v StreamNodeView) MasterFieldCount() int { return v.n.masterCount() }

// Entries calls fn for each entry of the node, tombstones included:
// its ID, flags (1 deleted, 2 same fields as the master) and fields.
func (v StreamNodeView) Entries(fn func(id StreamID, flags int, numFields int, fields func(fn func(f, v []byte)))) {
	for i := range v.n.ents {
		e := &v.n.ents[i]
		fn(e.id, int(e.flags), v.n.numFields(i), func(f func(f, v []byte)) { v.n.fields(i, f) })
	}
}

// Nodes calls fn for each node in order.
func (s *Stream) Nodes(fn func(v StreamNodeView)) {
	for _, n := range s.nodes {
		fn(StreamNodeView{Master: n.master, Live: n.live, Deleted: n.deleted, masterFields: n.masterFields, n: n})
	}
}

// SetLength sets the entry count (loading a stream whose node contents
// were appended with Append, then corrected from the RDB's fields).
func (s *Stream) SetLength(n uint64) { s.length = n }
