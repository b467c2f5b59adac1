package rdb

import (
	"encoding/binary"
)

// Streams: RDB_TYPE_STREAM_LISTPACKS (15, Redis 5 and 6) and
// RDB_TYPE_STREAM_LISTPACKS_2 (19, Redis 7.0).

// StreamID is a stream entry ID.
type StreamID struct{ Ms, Seq uint64 }

func (a StreamID) less(b StreamID) bool { return a.Ms < b.Ms || a.Ms == b.Ms && a.Seq < b.Seq }

// StreamEntry is a stream entry; KV alternates fields and values.
// NodeStart marks the first entry of a node, Deleted a tombstone.
type StreamEntry struct {
	ID        StreamID
	KV        [][]byte
	NodeStart bool
	Deleted   bool
}

// StreamNACK is a pending entry of a group.
type StreamNACK struct {
	ID            StreamID
	DeliveryTime  int64
	DeliveryCount uint64
}

// StreamConsumer is a consumer and the IDs of its pending entries.
type StreamConsumer struct {
	Name     []byte
	SeenTime int64
	PEL      []StreamID
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name        []byte
	LastID      StreamID
	EntriesRead int64
	PEL         []StreamNACK
	Consumers   []StreamConsumer
}

// Stream is a decoded stream value.
type Stream struct {
	Entries      []StreamEntry
	Length       uint64
	LastID       StreamID
	FirstID      StreamID
	MaxDeletedID StreamID
	EntriesAdded uint64
	Groups       []StreamGroup
}

func (r *reader) len64() (uint64, error) {
	n, enc, ok := r.length()
	if !ok || enc {
		return 0, errFormat
	}
	return n, nil
}

func (r *reader) msTime() (int64, error) {
	b, ok := r.take(8)
	if !ok {
		return 0, errFormat
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}

func (r *reader) rawID() (StreamID, error) {
	b, ok := r.take(16)
	if !ok {
		return StreamID{}, errFormat
	}
	return StreamID{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}, nil
}

// streamNode decodes one node's listpack into its entries (live and
// deleted), appended to out. Checked fully, the node must hold exactly the
// entries its header counts, each with its lp-count right, and IDs that
// rise (the first two checked only with sanitize). shallow
// (DecodeOptions.Shallow) keeps the entries that parse, up to the first
// that does not, and drops those whose ID does not rise.
func streamNode(master StreamID, lp []byte, out []StreamEntry, shallow, sanitize bool) ([]StreamEntry, error) {
	els, err := parseListpack(lp, shallow)
	if err != nil {
		return nil, err
	}
	if len(els) == 0 {
		return nil, corrupt("Empty listpack inside stream")
	}
	i := 0
	next := func() (element, bool) {
		if i >= len(els) {
			return element{}, false
		}
		i++
		return els[i-1], true
	}
	nextInt := func() (int64, bool) {
		e, ok := next()
		if !ok || !e.isInt {
			return 0, false
		}
		return e.v, true
	}
	bad := func() ([]StreamEntry, error) {
		if shallow {
			return out, nil
		}
		return nil, errFormat
	}
	count, ok1 := nextInt()
	deleted, ok2 := nextInt()
	nmaster, ok3 := nextInt()
	if !ok1 || !ok2 || !ok3 || nmaster < 0 || int(nmaster) > len(els) {
		return bad()
	}
	masterFields := make([][]byte, nmaster)
	for j := range masterFields {
		e, ok := next()
		if !ok {
			return bad()
		}
		masterFields[j] = e.bytes()
	}
	if z, ok := nextInt(); !ok || z != 0 {
		return bad()
	}
	first := true
	entries := int64(0)
	for i < len(els) {
		flags, ok1 := nextInt()
		msd, ok2 := nextInt()
		seqd, ok3 := nextInt()
		if !ok1 || !ok2 || !ok3 {
			return bad()
		}
		id := StreamID{master.Ms + uint64(msd), master.Seq + uint64(seqd)}
		var kv [][]byte
		fields, extra := nmaster, int64(3)
		if flags&2 != 0 {
			kv = make([][]byte, 0, 2*nmaster)
			for _, f := range masterFields {
				v, ok := next()
				if !ok {
					return bad()
				}
				kv = append(kv, f, v.bytes())
			}
		} else {
			nf, ok := nextInt()
			if !ok || nf < 0 || int(nf) > len(els) {
				return bad()
			}
			fields, extra = nf, extra+nf+1
			kv = make([][]byte, 0, 2*nf)
			for j := int64(0); j < 2*nf; j++ {
				e, ok := next()
				if !ok {
					return bad()
				}
				kv = append(kv, e.bytes())
			}
		}
		lpCount, ok := nextInt()
		if !ok || (sanitize && lpCount != fields+extra) {
			return bad()
		}
		entries++
		if len(out) > 0 && !out[len(out)-1].ID.less(id) {
			if shallow {
				continue
			}
			return nil, errFormat
		}
		out = append(out, StreamEntry{ID: id, KV: kv, NodeStart: first, Deleted: flags&1 != 0})
		first = false
	}
	if sanitize && entries != count+deleted {
		return nil, errFormat
	}
	return out, nil
}

func (r *reader) stream(v *Value, v2 bool) error {
	s := &Stream{}
	nodes, err := r.len64()
	if err != nil {
		return err
	}
	for ; nodes > 0; nodes-- {
		key, err := r.bytes()
		if err != nil {
			return err
		}
		if len(key) != 16 {
			return errFormat
		}
		lp, err := r.bytes()
		if err != nil {
			return err
		}
		master := StreamID{binary.BigEndian.Uint64(key), binary.BigEndian.Uint64(key[8:])}
		if s.Entries, err = streamNode(master, lp, s.Entries, r.shallow, r.sanitize); err != nil {
			if Reason(err) == "" {
				err = corrupt(integrityReason(v.Type))
			}
			return err
		}
	}
	var vals [7]uint64
	n := 2
	if v2 {
		n = 7
	}
	if s.Length, err = r.len64(); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if vals[i], err = r.len64(); err != nil {
			return err
		}
	}
	s.LastID = StreamID{vals[0], vals[1]}
	if v2 {
		s.FirstID = StreamID{vals[2], vals[3]}
		s.MaxDeletedID = StreamID{vals[4], vals[5]}
		s.EntriesAdded = vals[6]
	} else {
		s.EntriesAdded = s.Length
		for _, e := range s.Entries {
			if !e.Deleted {
				s.FirstID = e.ID
				break
			}
		}
	}
	live := uint64(0)
	for _, e := range s.Entries {
		if !e.Deleted {
			live++
		}
	}
	if s.Length != live {
		if !r.shallow {
			return corrupt("Stream length inconsistent with rax entries")
		}
		s.Length = live
	}
	ngroups, err := r.len64()
	if err != nil {
		return err
	}
	for ; ngroups > 0; ngroups-- {
		var g StreamGroup
		if g.Name, err = r.bytes(); err != nil {
			return err
		}
		ms, err1 := r.len64()
		seq, err2 := r.len64()
		if err1 != nil || err2 != nil {
			return errFormat
		}
		g.LastID = StreamID{ms, seq}
		if v2 {
			er, err := r.len64()
			if err != nil {
				return err
			}
			g.EntriesRead = int64(er)
		} else {
			g.EntriesRead = -2 // to be estimated by the caller
		}
		npel, err := r.len64()
		if err != nil {
			return err
		}
		if npel > uint64(r.left()) {
			return errFormat
		}
		for ; npel > 0; npel-- {
			id, err := r.rawID()
			if err != nil {
				return err
			}
			t, err := r.msTime()
			if err != nil {
				return err
			}
			cnt, err := r.len64()
			if err != nil {
				return err
			}
			g.PEL = append(g.PEL, StreamNACK{id, t, cnt})
		}
		ncons, err := r.len64()
		if err != nil {
			return err
		}
		if ncons > uint64(r.left()) {
			return errFormat
		}
		for ; ncons > 0; ncons-- {
			var c StreamConsumer
			if c.Name, err = r.bytes(); err != nil {
				return err
			}
			if c.SeenTime, err = r.msTime(); err != nil {
				return err
			}
			np, err := r.len64()
			if err != nil {
				return err
			}
			if np > uint64(r.left()) {
				return errFormat
			}
			for ; np > 0; np-- {
				id, err := r.rawID()
				if err != nil {
					return err
				}
				c.PEL = append(c.PEL, id)
			}
			g.Consumers = append(g.Consumers, c)
		}
		for _, o := range s.Groups {
			if string(o.Name) == string(g.Name) {
				return corrupt("Duplicated consumer group name " + string(g.Name))
			}
		}
		if err := g.check(r.sanitize); err != nil {
			return err
		}
		s.Groups = append(s.Groups, g)
	}
	v.Stream = s
	return nil
}

// check refuses a group whose pending entries Redis's loader refuses: one
// twice in the group's list, a consumer twice, a consumer's entry missing
// from the group's list or claimed twice, and, with deep, an entry of the
// group's list that no consumer holds.
func (g *StreamGroup) check(deep bool) error {
	owned := make(map[StreamID]bool, len(g.PEL))
	for _, n := range g.PEL {
		if _, dup := owned[n.ID]; dup {
			return corrupt("Duplicated global PEL entry loading stream consumer group")
		}
		owned[n.ID] = false
	}
	names := make(map[string]bool, len(g.Consumers))
	for _, c := range g.Consumers {
		if names[string(c.Name)] {
			return corrupt("Duplicate stream consumer detected.")
		}
		names[string(c.Name)] = true
		for _, id := range c.PEL {
			taken, ok := owned[id]
			if !ok {
				return corrupt("Consumer entry not found in group global PEL")
			}
			if taken {
				return corrupt("Duplicated consumer PEL entry loading a stream consumer group")
			}
			owned[id] = true
		}
	}
	if deep {
		for _, taken := range owned {
			if !taken {
				return corrupt("Stream CG PEL entry without consumer")
			}
		}
	}
	return nil
}

// StreamNodeEncoder builds one node's listpack as Redis 7.0 holds it.
type StreamNodeEncoder struct {
	lp     Listpack
	master StreamID
}

// Start begins a node: its master ID, live and deleted counts, and master
// fields.
func (e *StreamNodeEncoder) Start(master StreamID, live, deleted int, masterFields [][]byte) {
	e.lp.Reset()
	e.master = master
	e.lp.AppendInt(int64(live))
	e.lp.AppendInt(int64(deleted))
	e.lp.AppendInt(int64(len(masterFields)))
	for _, f := range masterFields {
		e.lp.Append(f)
	}
	e.lp.AppendInt(0)
}

// Entry adds an entry: flags (1 deleted, 2 same fields as the master) and
// kv alternating fields and values.
func (e *StreamNodeEncoder) Entry(id StreamID, flags int, kv [][]byte) {
	e.lp.AppendInt(int64(flags))
	e.lp.AppendInt(int64(id.Ms - e.master.Ms))
	e.lp.AppendInt(int64(id.Seq - e.master.Seq))
	nf := len(kv) / 2
	count := nf + 3
	if flags&2 == 0 {
		e.lp.AppendInt(int64(nf))
		count += nf + 1
	}
	for i := 0; i < nf; i++ {
		if flags&2 == 0 {
			e.lp.Append(kv[2*i])
		}
		e.lp.Append(kv[2*i+1])
	}
	e.lp.AppendInt(int64(count))
}

// AppendNode appends the node's key and listpack to dst.
func (e *StreamNodeEncoder) AppendNode(dst []byte) []byte {
	var key [16]byte
	binary.BigEndian.PutUint64(key[:], e.master.Ms)
	binary.BigEndian.PutUint64(key[8:], e.master.Seq)
	dst = AppendString(dst, key[:])
	return AppendString(dst, e.lp.Bytes())
}

// AppendStreamMeta appends what follows the nodes of a
// RDB_TYPE_STREAM_LISTPACKS_2 value, but the groups.
func AppendStreamMeta(dst []byte, length uint64, last, first, maxDel StreamID, entriesAdded uint64, ngroups int) []byte {
	for _, v := range []uint64{length, last.Ms, last.Seq, first.Ms, first.Seq, maxDel.Ms, maxDel.Seq, entriesAdded, uint64(ngroups)} {
		dst = AppendLen(dst, v)
	}
	return dst
}

// AppendStreamGroup appends a group's header and PEL.
func AppendStreamGroup(dst []byte, name []byte, last StreamID, entriesRead int64, pel []StreamNACK) []byte {
	dst = AppendString(dst, name)
	dst = AppendLen(dst, last.Ms)
	dst = AppendLen(dst, last.Seq)
	dst = AppendLen(dst, uint64(entriesRead))
	dst = AppendLen(dst, uint64(len(pel)))
	for _, n := range pel {
		dst = appendRawID(dst, n.ID)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(n.DeliveryTime))
		dst = AppendLen(dst, n.DeliveryCount)
	}
	return dst
}

// AppendStreamConsumer appends a consumer (after its group's consumer
// count, AppendLen).
func AppendStreamConsumer(dst []byte, name []byte, seen int64, pel []StreamID) []byte {
	dst = AppendString(dst, name)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(seen))
	dst = AppendLen(dst, uint64(len(pel)))
	for _, id := range pel {
		dst = appendRawID(dst, id)
	}
	return dst
}

func appendRawID(dst []byte, id StreamID) []byte {
	dst = binary.BigEndian.AppendUint64(dst, id.Ms)
	return binary.BigEndian.AppendUint64(dst, id.Seq)
}
