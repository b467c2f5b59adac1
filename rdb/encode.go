// DUMP and RESTORE payloads: one value in RDB object encoding (a type
// byte, then the value), followed by the 2-byte RDB version and the CRC-64
// of everything before it, both little endian.
//
// Payloads are written as Redis 7.0 (RDB version 10) writes them, and every
// object type Redis 7.0 accepts for strings, lists, sets, sorted sets and
// hashes is read, including the older ziplist, zipmap and plain forms, and
// LZF-compressed strings. Decoding checks every length against the payload,
// so malformed input is an error, never a panic or an outsized allocation.

package rdb

import (
	"encoding/binary"
	"iter"
	"math"
	"strconv"
	"sync"

	"github.com/sluicedb/sluice/resp"
)

// Version is the RDB version written in payloads (Redis 7.0's).
const Version = 10

// RDB object types.
const (
	TypeString         = 0
	TypeList           = 1
	TypeSet            = 2
	TypeZSet           = 3
	TypeHash           = 4
	TypeZSet2          = 5
	TypeModule         = 6
	TypeModule2        = 7
	TypeHashZipmap     = 9
	TypeListZiplist    = 10
	TypeSetIntset      = 11
	TypeZSetZiplist    = 12
	TypeHashZiplist    = 13
	TypeListQuicklist  = 14
	TypeStreamLP       = 15
	TypeHashListpack   = 16
	TypeZSetListpack   = 17
	TypeListQuicklist2 = 18
	TypeStreamLP2      = 19
)

// String encodings after the 0b11 length prefix.
const (
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// Quicklist node containers.
const (
	containerPlain  = 1
	containerPacked = 2
)

// AppendLen appends an RDB length: 6, 14, 32 or 64 bits.
func AppendLen(dst []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(dst, byte(n))
	case n < 1<<14:
		return append(dst, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		dst = append(dst, 0x80)
		return binary.BigEndian.AppendUint32(dst, uint32(n))
	}
	dst = append(dst, 0x81)
	return binary.BigEndian.AppendUint64(dst, n)
}

// appendEncodedInt appends v as an RDB integer string if it fits 32 bits.
func appendEncodedInt(dst []byte, v int64) ([]byte, bool) {
	switch {
	case v >= math.MinInt8 && v <= math.MaxInt8:
		return append(dst, 0xC0|encInt8, byte(v)), true
	case v >= math.MinInt16 && v <= math.MaxInt16:
		return append(dst, 0xC0|encInt16, byte(v), byte(v>>8)), true
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return append(dst, 0xC0|encInt32, byte(v), byte(v>>8), byte(v>>16), byte(v>>24)), true
	}
	return dst, false
}

// Enc writes values as Redis 7.0 does. The package's Append functions use
// the zero Enc; NoCompress leaves strings uncompressed, as Redis does with
// rdbcompression no (and as a snapshot's writers do when they encode a
// key they are about to change, where time matters more than size).
type Enc struct {
	NoCompress bool
}

// AppendString appends s as rdbSaveRawString does: as an integer when it
// is a short canonical integer, LZF-compressed when longer than 20 bytes
// and compression saves at least 4 bytes, else length and bytes.
func AppendString(dst, s []byte) []byte { return Enc{}.String(dst, s) }

// String is AppendString.
func (c Enc) String(dst, s []byte) []byte {
	if len(s) <= 11 {
		if v, ok := parseInt(s); ok {
			if out, ok := appendEncodedInt(dst, v); ok {
				return out
			}
		}
	}
	if len(s) > 20 && !c.NoCompress {
		t := lzfTables.Get().(*lzfTable)
		c := t.compress(s, len(s)-4)
		if c != nil {
			dst = append(dst, 0xC0|encLZF)
			dst = AppendLen(dst, uint64(len(c)))
			dst = AppendLen(dst, uint64(len(s)))
			dst = append(dst, c...)
		}
		lzfTables.Put(t)
		if c != nil {
			return dst
		}
	}
	dst = AppendLen(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendInt appends an integer-encoded string value as
// rdbSaveLongLongAsStringObject does.
func AppendInt(dst []byte, v int64) []byte {
	if out, ok := appendEncodedInt(dst, v); ok {
		return out
	}
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	dst = AppendLen(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendBinaryDouble appends a little-endian IEEE 754 double.
func AppendBinaryDouble(dst []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
}

// Finish appends the footer (RDB version and CRC-64) to a serialized value.
func Finish(dst []byte) []byte {
	dst = append(dst, byte(Version), byte(Version>>8))
	return binary.LittleEndian.AppendUint64(dst, crc64(0, dst))
}

func formatDouble(dst []byte, f float64) []byte { return resp.AppendDouble(dst, f) }

// EncodeString returns the payload of a string value.
func EncodeString(s []byte) []byte {
	return Finish(AppendString(append(make([]byte, 0, len(s)+16), TypeString), s))
}

// EncodeInt returns the payload of an integer-encoded string value.
func EncodeInt(v int64) []byte {
	return Finish(AppendInt([]byte{TypeString}, v))
}

// quicklist limits (Redis's quicklist.c).
const (
	qlSafetyLimit   = 8192
	qlSizeOverhead  = 8
	qlPackedThresh  = 1 << 30
	qlDefaultLPSize = -2
)

var qlOptimization = [...]int{4096, 8192, 16384, 32768, 65536}

// qlAllowInsert is _quicklistNodeAllowInsert for a node of nodeBytes bytes
// and count entries, adding an element of sz bytes with fill.
func qlAllowInsert(nodeBytes, count, sz, fill int) bool {
	newSz := nodeBytes + sz + qlSizeOverhead
	if fill < 0 {
		if off := -fill - 1; off < len(qlOptimization) {
			if newSz <= qlOptimization[off] {
				return true
			}
		}
	}
	if newSz > qlSafetyLimit {
		return false
	}
	return count < fill
}

// EncodeList returns the payload of a list (RDB_TYPE_LIST_QUICKLIST_2),
// split into listpack nodes as a quicklist filled by RPUSH with the given
// list-max-listpack-size would be.
func EncodeList(fill int, elems iter.Seq[[]byte]) []byte {
	return Finish(AppendList([]byte{TypeListQuicklist2}, fill, elems))
}

// encScratch is the reusable working memory of the collection encoders,
// so that encoding a dataset allocates next to nothing.
type encScratch struct {
	lp    Listpack
	nodes []byte // finished quicklist node blobs, back to back
	ends  []int  // end offset of each node in nodes
	plain []bool // whether each node is a plain (huge element) node
}

var encScratches = sync.Pool{New: func() any { return new(encScratch) }}

// scratchKeep is the largest buffer a scratch keeps for reuse.
const scratchKeep = 1 << 20

func getScratch() *encScratch { return encScratches.Get().(*encScratch) }

func putScratch(sc *encScratch) {
	if cap(sc.nodes) > scratchKeep || cap(sc.lp.b) > scratchKeep {
		return
	}
	sc.lp.Reset()
	sc.nodes, sc.ends, sc.plain = sc.nodes[:0], sc.ends[:0], sc.plain[:0]
	encScratches.Put(sc)
}

// AppendList appends the body of a list of type TypeListQuicklist2 (what
// follows the type byte, in a payload or an RDB file).
func AppendList(dst []byte, fill int, elems iter.Seq[[]byte]) []byte {
	return Enc{}.List(dst, fill, elems)
}

// List is AppendList.
func (c Enc) List(dst []byte, fill int, elems iter.Seq[[]byte]) []byte {
	sc := getScratch()
	defer putScratch(sc)
	sc.splitList(fill, elems)
	out := AppendLen(dst, uint64(len(sc.ends)))
	start := 0
	for i, end := range sc.ends {
		if sc.plain[i] {
			out = AppendLen(out, containerPlain)
		} else {
			out = AppendLen(out, containerPacked)
		}
		out = c.String(out, sc.nodes[start:end])
		start = end
	}
	return out
}

// splitList fills sc.nodes, ends and plain with the nodes of a quicklist
// filled with elems by RPUSH with the given list-max-listpack-size.
func (sc *encScratch) splitList(fill int, elems iter.Seq[[]byte]) {
	lp := &sc.lp
	lp.Reset()
	flush := func() {
		if lp.Len() > 0 {
			sc.nodes = append(sc.nodes, lp.Bytes()...)
			sc.ends = append(sc.ends, len(sc.nodes))
			sc.plain = append(sc.plain, false)
			lp.Reset()
		}
	}
	for v := range elems {
		if len(v) >= qlPackedThresh {
			flush()
			sc.nodes = append(sc.nodes, v...)
			sc.ends = append(sc.ends, len(sc.nodes))
			sc.plain = append(sc.plain, true)
			continue
		}
		if lp.Len() > 0 && !qlAllowInsert(lp.Size(), lp.Len(), len(v), fill) {
			flush()
		}
		lp.Append(v)
	}
	flush()
}

// QuicklistShape is the node count and the bytes of the nodes (listpacks,
// and plain nodes' elements) of a quicklist filled with elems by RPUSH
// with the given list-max-listpack-size: DEBUG OBJECT's ql_nodes and
// ql_uncompressed_size.
func QuicklistShape(fill int, elems iter.Seq[[]byte]) (nodes, size int) {
	sc := getScratch()
	defer putScratch(sc)
	sc.splitList(fill, elems)
	return len(sc.ends), len(sc.nodes)
}

// EncodeIntset returns the payload of an intset-encoded set.
func EncodeIntset(vals []int64) []byte {
	return Finish(AppendIntsetValue([]byte{TypeSetIntset}, vals))
}

// AppendIntsetValue appends the body of a TypeSetIntset set.
func AppendIntsetValue(dst []byte, vals []int64) []byte { return Enc{}.Intset(dst, vals) }

// Intset is AppendIntsetValue.
func (c Enc) Intset(dst []byte, vals []int64) []byte {
	return c.String(dst, AppendIntset(nil, vals))
}

// EncodeSet returns the payload of a hashtable-encoded set of n members.
func EncodeSet(n int, members iter.Seq[[]byte]) []byte {
	return Finish(AppendSet([]byte{TypeSet}, n, members))
}

// AppendSet appends the body of a TypeSet set of n members.
func AppendSet(dst []byte, n int, members iter.Seq[[]byte]) []byte {
	return Enc{}.Set(dst, n, members)
}

// Set is AppendSet.
func (c Enc) Set(dst []byte, n int, members iter.Seq[[]byte]) []byte {
	out := AppendLen(dst, uint64(n))
	for m := range members {
		out = c.String(out, m)
	}
	return out
}

// EncodeHashListpack returns the payload of a listpack-encoded hash.
func EncodeHashListpack(pairs iter.Seq2[[]byte, []byte]) []byte {
	return Finish(AppendHashListpack([]byte{TypeHashListpack}, pairs))
}

// AppendHashListpack appends the body of a TypeHashListpack hash.
func AppendHashListpack(dst []byte, pairs iter.Seq2[[]byte, []byte]) []byte {
	return Enc{}.HashListpack(dst, pairs)
}

// HashListpack is AppendHashListpack.
func (c Enc) HashListpack(dst []byte, pairs iter.Seq2[[]byte, []byte]) []byte {
	sc := getScratch()
	defer putScratch(sc)
	lp := &sc.lp
	lp.Reset()
	for f, v := range pairs {
		lp.Append(f)
		lp.Append(v)
	}
	return c.String(dst, lp.Bytes())
}

// EncodeHash returns the payload of a hashtable-encoded hash of n fields.
func EncodeHash(n int, pairs iter.Seq2[[]byte, []byte]) []byte {
	return Finish(AppendHash([]byte{TypeHash}, n, pairs))
}

// AppendHash appends the body of a TypeHash hash of n fields.
func AppendHash(dst []byte, n int, pairs iter.Seq2[[]byte, []byte]) []byte {
	return Enc{}.Hash(dst, n, pairs)
}

// Hash is AppendHash.
func (c Enc) Hash(dst []byte, n int, pairs iter.Seq2[[]byte, []byte]) []byte {
	out := AppendLen(dst, uint64(n))
	for f, v := range pairs {
		out = c.String(out, f)
		out = c.String(out, v)
	}
	return out
}

// EncodeZSetListpack returns the payload of a listpack-encoded sorted set;
// items come in ascending order.
func EncodeZSetListpack(items iter.Seq2[[]byte, float64]) []byte {
	return Finish(AppendZSetListpack([]byte{TypeZSetListpack}, items))
}

// AppendZSetListpack appends the body of a TypeZSetListpack sorted set;
// items come in ascending order.
func AppendZSetListpack(dst []byte, items iter.Seq2[[]byte, float64]) []byte {
	return Enc{}.ZSetListpack(dst, items)
}

// ZSetListpack is AppendZSetListpack.
func (c Enc) ZSetListpack(dst []byte, items iter.Seq2[[]byte, float64]) []byte {
	sc := getScratch()
	defer putScratch(sc)
	lp := &sc.lp
	lp.Reset()
	for m, s := range items {
		lp.Append(m)
		lp.AppendScore(s)
	}
	return c.String(dst, lp.Bytes())
}

// EncodeZSet returns the payload of a skiplist-encoded sorted set of n
// members; items come in descending order, as Redis writes them.
func EncodeZSet(n int, itemsDesc iter.Seq2[[]byte, float64]) []byte {
	return Finish(AppendZSet([]byte{TypeZSet2}, n, itemsDesc))
}

// AppendZSet appends the body of a TypeZSet2 sorted set of n members;
// items come in descending order.
func AppendZSet(dst []byte, n int, itemsDesc iter.Seq2[[]byte, float64]) []byte {
	return Enc{}.ZSet(dst, n, itemsDesc)
}

// ZSet is AppendZSet.
func (c Enc) ZSet(dst []byte, n int, itemsDesc iter.Seq2[[]byte, float64]) []byte {
	out := AppendLen(dst, uint64(n))
	for m, s := range itemsDesc {
		out = c.String(out, m)
		out = AppendBinaryDouble(out, s)
	}
	return out
}
