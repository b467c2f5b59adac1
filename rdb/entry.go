package rdb

import (
	"math"
	"strconv"
	"unsafe"

	"github.com/sluicedb/sluice/store"
)

// Store entries as RDB values and back: a value of package store is
// written in the RDB encoding Redis 7.0 writes for the same encoding
// (listpack for small hashes and sorted sets, intset for integer sets, a
// quicklist of listpacks for lists, listpacks for streams), and a decoded
// value is built into an entry with the encodings Redis 7.0's
// rdbLoadObject picks under the current limits. DUMP and RESTORE, RDB
// files, full syncs and MIGRATE all go through here.

// EntryType returns the RDB object type Redis 7.0 writes for e's encoding.
func EntryType(e *store.Entry) (byte, bool) {
	switch e.Kind() {
	case store.KindString:
		return TypeString, true
	case store.KindList:
		return TypeListQuicklist2, true
	case store.KindSet:
		if e.AsSet().IsIntset() {
			return TypeSetIntset, true
		}
		return TypeSet, true
	case store.KindHash:
		if e.AsHash().IsListpack() {
			return TypeHashListpack, true
		}
		return TypeHash, true
	case store.KindZSet:
		if e.AsZSet().Compact() {
			return TypeZSetListpack, true
		}
		return TypeZSet2, true
	case store.KindStream:
		return TypeStreamLP2, true
	}
	return 0, false
}

// Dump is DUMP's payload of e: its type, value and footer. fill is
// list-max-listpack-size. It returns nil for a type RDB cannot hold.
func Dump(e *store.Entry, fill int) []byte {
	typ, ok := EntryType(e)
	if !ok {
		return nil
	}
	return Finish(Enc{}.Entry([]byte{typ}, e, fill))
}

// Record appends the RDB file record of a key: its expiry (unix ms, 0
// for none), type, name and value. It appends nothing for a type RDB
// cannot hold (none exists in the store).
func (c Enc) Record(dst, key []byte, e *store.Entry, expire int64, fill int) []byte {
	typ, ok := EntryType(e)
	if !ok {
		return dst
	}
	if expire != 0 {
		dst = AppendExpireMs(dst, expire)
	}
	dst = AppendKey(dst, typ, key)
	return c.Entry(dst, e, fill)
}

// Entry appends the body of e's value (what follows the type byte
// EntryType gives, in a DUMP payload or an RDB file). fill is
// list-max-listpack-size, which sizes a list's nodes.
func (c Enc) Entry(dst []byte, e *store.Entry, fill int) []byte {
	switch e.Kind() {
	case store.KindString:
		if e.IsInt() {
			return AppendInt(dst, e.Int())
		}
		return c.String(dst, e.Bytes(nil))
	case store.KindList:
		l := e.AsList()
		return c.List(dst, fill, func(yield func([]byte) bool) {
			l.Each(false, func(_ int, v []byte) bool { return yield(v) })
		})
	case store.KindSet:
		set := e.AsSet()
		if set.IsIntset() {
			return c.Intset(dst, set.Ints())
		}
		return c.Set(dst, set.Len(), set.ForEach)
	case store.KindHash:
		h := e.AsHash()
		if h.IsListpack() {
			return c.HashListpack(dst, h.ForEach)
		}
		return c.Hash(dst, h.Len(), h.ForEach)
	case store.KindZSet:
		z := e.AsZSet()
		items := func(rank int, reverse bool) func(func([]byte, float64) bool) {
			return func(yield func([]byte, float64) bool) {
				z.Iter(rank, reverse, func(it store.ZItem) bool {
					return yield(unsafe.Slice(unsafe.StringData(it.Member), len(it.Member)), it.Score)
				})
			}
		}
		if z.Compact() {
			return c.ZSetListpack(dst, items(0, false))
		}
		return c.ZSet(dst, z.Len(), items(z.Len()-1, true))
	case store.KindStream:
		return appendStream(dst, e.AsStream())
	}
	return dst
}

// appendStream appends a stream as RDB_TYPE_STREAM_LISTPACKS_2: one
// listpack a node, as Redis 7.0 writes it.
func appendStream(dst []byte, s *store.Stream) []byte {
	dst = AppendLen(dst, uint64(s.NumNodes()))
	var enc StreamNodeEncoder
	var mf, kv [][]byte
	s.Nodes(func(v store.StreamNodeView) {
		mf = mf[:0]
		v.MasterFields(func(f []byte) bool {
			mf = append(mf, f)
			return true
		})
		enc.Start(StreamID(v.Master), v.Live, v.Deleted, mf)
		v.Entries(func(id store.StreamID, flags, _ int, fields func(fn func(f, v []byte))) {
			kv = kv[:0]
			fields(func(f, val []byte) { kv = append(kv, f, val) })
			enc.Entry(StreamID(id), flags, kv)
		})
		dst = enc.AppendNode(dst)
	})
	groups := s.Groups()
	dst = AppendStreamMeta(dst, s.Len(), StreamID(s.LastID), StreamID(s.FirstID), StreamID(s.MaxDeletedID), s.EntriesAdded, len(groups))
	for _, g := range groups {
		pel := make([]StreamNACK, len(g.PEL()))
		for i, nk := range g.PEL() {
			pel[i] = StreamNACK{ID: StreamID(nk.ID), DeliveryTime: nk.DeliveryTime, DeliveryCount: nk.DeliveryCount}
		}
		dst = AppendStreamGroup(dst, []byte(g.Name), StreamID(g.LastID), g.EntriesRead, pel)
		dst = AppendLen(dst, uint64(len(g.Consumers())))
		for _, c := range g.Consumers() {
			ids := make([]StreamID, len(c.PEL()))
			for i, nk := range c.PEL() {
				ids[i] = StreamID(nk.ID)
			}
			dst = AppendStreamConsumer(dst, []byte(c.Name), c.SeenTime, ids)
		}
	}
	return dst
}

// Limits are the encoding thresholds a decoded value is built under (the
// server's *-max-* directives).
type Limits struct {
	ListFill       int64 // list-max-listpack-size
	SetMaxIntset   int64 // set-max-intset-entries
	ZSetMaxEntries int64 // zset-max-listpack-entries
	ZSetMaxValue   int64 // zset-max-listpack-value
	HashMaxEntries int64 // hash-max-listpack-entries
	HashMaxValue   int64 // hash-max-listpack-value
}

// NewEntry builds the entry of a decoded value with the encodings Redis
// 7.0's rdbLoadObject picks under lim (RESTORE, RDB loading). It returns
// nil for a value Redis refuses (duplicate members or fields, an
// inconsistent stream).
func NewEntry(v *Value, lim Limits) *store.Entry {
	switch v.Kind() {
	case KindString:
		if v.IsInt {
			return store.NewInt(v.Int)
		}
		return store.NewString(v.Str)

	case KindList:
		l := store.NewList(int(lim.ListFill))
		for _, el := range v.Elems {
			l.PushBack(el)
		}
		return store.NewObject(store.KindList, unsafe.Pointer(l))

	case KindSet:
		maxIntset := int(lim.SetMaxIntset)
		set := store.NewIntSet()
		if v.Type == TypeSetIntset {
			var tmp [24]byte
			for _, n := range v.Ints {
				set.Add(strconv.AppendInt(tmp[:0], n, 10), maxIntset)
			}
			return store.NewSetEntry(set)
		}
		if v.Len() > min(maxIntset, 1<<30) {
			set.Convert()
		}
		for _, m := range v.Elems {
			if !set.Add(m, maxIntset) {
				return nil
			}
		}
		return store.NewSetEntry(set)

	case KindZSet:
		n := v.Len()
		compact := int64(n) <= lim.ZSetMaxEntries
		if v.Type == TypeZSet || v.Type == TypeZSet2 {
			compact = compact && int64(v.MaxLen) <= lim.ZSetMaxValue
		}
		z := store.NewZSet()
		if !compact {
			z.Convert()
		}
		for i, m := range v.Elems {
			if _, dup := z.Score(m); dup {
				return nil
			}
			z.Insert(m, v.Scores[i])
		}
		return store.NewObject(store.KindZSet, unsafe.Pointer(z))

	case KindHash:
		maxEnt, maxVal := int(lim.HashMaxEntries), int(lim.HashMaxValue)
		h := store.NewHash()
		if v.Type == TypeHash {
			if v.Len() > maxEnt {
				h.Convert()
			}
		} else {
			// Compact blobs keep their encoding unless there are too many
			// fields (zipmaps also convert for long entries).
			if v.Type == TypeHashZipmap && v.MaxLen > maxVal {
				h.Convert()
			}
			maxVal = math.MaxInt
		}
		for i, f := range v.Fields {
			if !h.Set(f, v.Values[i], maxEnt, maxVal) {
				return nil
			}
		}
		return store.NewHashEntry(h)

	case KindStream:
		return newStream(v.Stream)
	}
	return nil
}

// newStream builds a stream from a decoded value (nil if it is
// inconsistent, as Redis refuses it).
func newStream(v *Stream) *store.Entry {
	if v == nil {
		return nil
	}
	s := store.NewStream()
	for _, e := range v.Entries {
		s.LoadEntry(store.StreamID(e.ID), e.KV, e.Deleted, e.NodeStart)
	}
	s.LastID = store.StreamID(v.LastID)
	s.FirstID = store.StreamID(v.FirstID)
	s.MaxDeletedID = store.StreamID(v.MaxDeletedID)
	s.EntriesAdded = v.EntriesAdded
	for _, rg := range v.Groups {
		er := rg.EntriesRead
		if er == -2 {
			er = s.EstimateDistance(store.StreamID(rg.LastID))
		}
		g := s.CreateGroup(rg.Name, store.StreamID(rg.LastID), er)
		if g == nil {
			return nil
		}
		nacks := make(map[StreamID]*store.StreamNACK, len(rg.PEL))
		for _, n := range rg.PEL {
			if nacks[n.ID] != nil {
				return nil
			}
			nk := &store.StreamNACK{ID: store.StreamID(n.ID), DeliveryTime: n.DeliveryTime, DeliveryCount: n.DeliveryCount}
			nacks[n.ID] = nk
			g.AddPending(nk)
		}
		for _, rc := range rg.Consumers {
			c := g.CreateConsumer(rc.Name, rc.SeenTime)
			if c == nil {
				return nil
			}
			for _, id := range rc.PEL {
				nk := nacks[id]
				if nk == nil || nk.Consumer != nil {
					return nil
				}
				g.Assign(nk, c)
			}
		}
	}
	return store.NewStreamEntry(s)
}
