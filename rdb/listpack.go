package rdb

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/sluicedb/sluice/store"
)

// Listpack is a Redis listpack being built: a 6-byte header (total bytes,
// element count), the entries, and a 0xFF terminator. Each entry is an
// encoding byte (and length), the data, and the entry's length written
// backwards. Strings that are canonical 64-bit integers are stored as
// integers, as lpAppend does.
type Listpack struct {
	b []byte
	n int
}

const (
	lpHeaderSize   = 6
	lpEOF          = 0xFF
	lpNumeleUnknow = 0xFFFF
)

// Reset empties the listpack for reuse.
func (lp *Listpack) Reset() { lp.b, lp.n = lp.b[:0], 0 }

// Len returns the number of entries.
func (lp *Listpack) Len() int { return lp.n }

// Size returns the listpack's size in bytes (lpBytes), header and
// terminator included.
func (lp *Listpack) Size() int {
	if len(lp.b) == 0 {
		return lpHeaderSize + 1
	}
	return len(lp.b) + 1
}

func (lp *Listpack) start() {
	if len(lp.b) == 0 {
		lp.b = append(lp.b, 0, 0, 0, 0, 0, 0)
	}
}

// Append adds a string entry (an integer entry if s is a canonical integer).
func (lp *Listpack) Append(s []byte) {
	if v, ok := parseInt(s); ok {
		lp.AppendInt(v)
		return
	}
	lp.start()
	start := len(lp.b)
	n := len(s)
	switch {
	case n < 64:
		lp.b = append(lp.b, 0x80|byte(n))
	case n < 4096:
		lp.b = append(lp.b, 0xE0|byte(n>>8), byte(n))
	default:
		lp.b = append(lp.b, 0xF0)
		lp.b = binary.LittleEndian.AppendUint32(lp.b, uint32(n))
	}
	lp.b = append(lp.b, s...)
	lp.b = appendBacklen(lp.b, uint64(len(lp.b)-start))
	lp.n++
}

// AppendInt adds an integer entry in the smallest encoding.
func (lp *Listpack) AppendInt(v int64) {
	lp.start()
	start := len(lp.b)
	switch {
	case v >= 0 && v <= 127:
		lp.b = append(lp.b, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint64(v) & (1<<13 - 1)
		lp.b = append(lp.b, 0xC0|byte(u>>8), byte(u))
	case v >= math.MinInt16 && v <= math.MaxInt16:
		lp.b = append(lp.b, 0xF1, byte(v), byte(v>>8))
	case v >= -1<<23 && v < 1<<23:
		lp.b = append(lp.b, 0xF2, byte(v), byte(v>>8), byte(v>>16))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		lp.b = append(lp.b, 0xF3)
		lp.b = binary.LittleEndian.AppendUint32(lp.b, uint32(v))
	default:
		lp.b = append(lp.b, 0xF4)
		lp.b = binary.LittleEndian.AppendUint64(lp.b, uint64(v))
	}
	lp.b = appendBacklen(lp.b, uint64(len(lp.b)-start))
	lp.n++
}

// AppendScore adds a sorted-set score as zzlInsertAt does: an integer
// entry when the double is integral (and within ±2^62), else its %.17g
// text ("inf", "-inf").
func (lp *Listpack) AppendScore(f float64) {
	if v, ok := double2ll(f); ok {
		lp.AppendInt(v)
		return
	}
	var tmp [32]byte
	lp.Append(formatDouble(tmp[:0], f))
}

// Bytes returns the finished listpack; it stays valid until the next
// change.
func (lp *Listpack) Bytes() []byte {
	lp.start()
	out := append(lp.b, lpEOF)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	n := lp.n
	if n > lpNumeleUnknow {
		n = lpNumeleUnknow
	}
	binary.LittleEndian.PutUint16(out[4:], uint16(n))
	return out
}

// appendBacklen appends l written for reading right to left: 7 bits per
// byte, the high bit set on every byte but the leftmost.
func appendBacklen(b []byte, l uint64) []byte {
	switch {
	case l <= 127:
		return append(b, byte(l))
	case l < 16383:
		return append(b, byte(l>>7), byte(l&127)|128)
	case l < 2097151:
		return append(b, byte(l>>14), byte(l>>7&127)|128, byte(l&127)|128)
	case l < 268435455:
		return append(b, byte(l>>21), byte(l>>14&127)|128, byte(l>>7&127)|128, byte(l&127)|128)
	}
	return append(b, byte(l>>28), byte(l>>21&127)|128, byte(l>>14&127)|128, byte(l>>7&127)|128, byte(l&127)|128)
}

// element is one decoded listpack or ziplist entry: a string, or an
// integer when s is nil.
type element struct {
	s     []byte
	v     int64
	isInt bool
}

// bytes returns the element as a string (integers formatted).
func (e element) bytes() []byte {
	if e.isInt {
		return strconv.AppendInt(nil, e.v, 10)
	}
	return e.s
}

// parseListpack validates a listpack blob fully (header, every entry and
// its back length, terminator, count) and returns its entries. shallow
// checks the header and terminator only, as Redis does without deep
// sanitization, and returns the entries up to the first that does not
// parse.
func parseListpack(b []byte, shallow bool) ([]element, error) {
	if len(b) < lpHeaderSize+1 || int(binary.LittleEndian.Uint32(b)) != len(b) || b[len(b)-1] != lpEOF {
		return nil, errFormat
	}
	numele := int(binary.LittleEndian.Uint16(b[4:]))
	end := len(b) - 1
	var out []element
	if numele != lpNumeleUnknow {
		out = make([]element, 0, min(numele, end-lpHeaderSize))
	}
	p := lpHeaderSize
	for p < end {
		e, n, ok := listpackEntry(b[:end], p, !shallow)
		if !ok {
			if shallow {
				return out, nil
			}
			return nil, errFormat
		}
		out = append(out, e)
		p += n
	}
	if !shallow && (p != end || (numele != lpNumeleUnknow && numele != len(out))) {
		return nil, errFormat
	}
	return out, nil
}

// listpackEntry parses the entry at b[p:] (b ends before the terminator):
// the element and the entry's length with its back length; backlen checks
// that the back length is right.
func listpackEntry(b []byte, p int, backlen bool) (element, int, bool) {
	end := len(b)
	c := b[p]
	var e element
	var hdr, dlen int
	switch {
	case c&0x80 == 0:
		e = element{v: int64(c & 0x7F), isInt: true}
		hdr = 1
	case c&0xC0 == 0x80:
		hdr, dlen = 1, int(c&0x3F)
	case c&0xE0 == 0xC0:
		if p+2 > end {
			return e, 0, false
		}
		u := uint64(c&0x1F)<<8 | uint64(b[p+1])
		e = element{v: signExtend(u, 13), isInt: true}
		hdr = 2
	case c&0xF0 == 0xE0:
		if p+2 > end {
			return e, 0, false
		}
		hdr, dlen = 2, int(c&0x0F)<<8|int(b[p+1])
	case c == 0xF0:
		if p+5 > end {
			return e, 0, false
		}
		hdr, dlen = 5, int(binary.LittleEndian.Uint32(b[p+1:]))
	case c >= 0xF1 && c <= 0xF4:
		size := [...]int{2, 3, 4, 8}[c-0xF1]
		if p+1+size > end {
			return e, 0, false
		}
		var u uint64
		for i := size - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[p+1+i])
		}
		e = element{v: signExtend(u, uint(size*8)), isInt: true}
		hdr = 1 + size
	default:
		return e, 0, false
	}
	if dlen > end-p-hdr {
		return e, 0, false
	}
	if !e.isInt {
		e.s = b[p+hdr : p+hdr+dlen]
	}
	entryLen := hdr + dlen
	bl := store.ListpackBacklenSize(entryLen)
	if entryLen+bl > end-p {
		return e, 0, false
	}
	if backlen && decodeBacklen(b[p+entryLen:p+entryLen+bl]) != uint64(entryLen) {
		return e, 0, false
	}
	return e, entryLen + bl, true
}

// decodeBacklen reads a back length stored in b (read from its last byte).
func decodeBacklen(b []byte) uint64 {
	var v uint64
	shift := uint(0)
	for i := len(b) - 1; i >= 0; i-- {
		v |= uint64(b[i]&127) << shift
		if b[i]&128 == 0 {
			if i != 0 {
				return math.MaxUint64
			}
			return v
		}
		shift += 7
	}
	return math.MaxUint64
}

func signExtend(u uint64, bits uint) int64 {
	shift := 64 - bits
	return int64(u<<shift) >> shift
}
