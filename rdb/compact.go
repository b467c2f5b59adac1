package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Decoders for the older compact blobs a Redis 7.0 server still accepts
// in RESTORE (ziplist, zipmap) and the intset.

// parseZiplist validates a ziplist blob and returns its entries. Layout:
// zlbytes uint32, zltail uint32, zllen uint16 (little endian), entries of
// <prevlen><encoding><data>, and a 0xFF terminator.
func parseZiplist(b []byte) ([]element, error) {
	const hdr = 10
	if len(b) < hdr+1 || int(binary.LittleEndian.Uint32(b)) != len(b) || b[len(b)-1] != 0xFF {
		return nil, errFormat
	}
	zllen := int(binary.LittleEndian.Uint16(b[8:]))
	tail := int(binary.LittleEndian.Uint32(b[4:]))
	end := len(b) - 1
	var out []element
	p, prev, last := hdr, 0, hdr
	for p < end {
		// prevlen
		var plen, pl int
		if b[p] < 254 {
			plen, pl = int(b[p]), 1
		} else {
			if p+5 > end {
				return nil, errFormat
			}
			plen, pl = int(binary.LittleEndian.Uint32(b[p+1:])), 5
		}
		if plen != prev {
			return nil, errFormat
		}
		q := p + pl
		if q >= end {
			return nil, errFormat
		}
		c := b[q]
		var e element
		var eh, dlen int
		switch {
		case c>>6 == 0:
			eh, dlen = 1, int(c&0x3F)
		case c>>6 == 1:
			if q+2 > end {
				return nil, errFormat
			}
			eh, dlen = 2, int(c&0x3F)<<8|int(b[q+1])
		case c>>6 == 2:
			if q+5 > end {
				return nil, errFormat
			}
			eh, dlen = 5, int(binary.BigEndian.Uint32(b[q+1:]))
		default:
			size := 0
			switch c {
			case 0xC0:
				size = 2
			case 0xD0:
				size = 4
			case 0xE0:
				size = 8
			case 0xF0:
				size = 3
			case 0xFE:
				size = 1
			default:
				if c < 0xF1 || c > 0xFD {
					return nil, errFormat
				}
				e = element{v: int64(c&0x0F) - 1, isInt: true}
			}
			if q+1+size > end {
				return nil, errFormat
			}
			if size > 0 {
				var u uint64
				for i := size - 1; i >= 0; i-- {
					u = u<<8 | uint64(b[q+1+i])
				}
				e = element{v: signExtend(u, uint(size*8)), isInt: true}
			}
			eh = 1 + size
		}
		if dlen > end-q-eh {
			return nil, errFormat
		}
		if !e.isInt {
			e.s = b[q+eh : q+eh+dlen]
		}
		last = p
		prev = pl + eh + dlen
		p = q + eh + dlen
		out = append(out, e)
	}
	if p != end || (zllen != 0xFFFF && zllen != len(out)) || (len(out) > 0 && tail != last) {
		return nil, errFormat
	}
	return out, nil
}

// parseZipmap validates a zipmap blob (Redis 2.x hashes) and returns its
// fields and values interleaved.
func parseZipmap(b []byte) ([][]byte, error) {
	if len(b) < 2 || b[len(b)-1] != 0xFF {
		return nil, errFormat
	}
	end := len(b) - 1
	readLen := func(p int) (int, int, bool) {
		if p >= end {
			return 0, 0, false
		}
		if b[p] < 254 {
			return int(b[p]), p + 1, true
		}
		if b[p] != 254 || p+5 > end {
			return 0, 0, false
		}
		return int(binary.LittleEndian.Uint32(b[p+1:])), p + 5, true
	}
	var out [][]byte
	p := 1
	for p < end {
		l, q, ok := readLen(p)
		if !ok || l > end-q {
			return nil, errFormat
		}
		field := b[q : q+l]
		l, q, ok = readLen(q + l)
		if !ok || q >= end {
			return nil, errFormat
		}
		free := int(b[q])
		q++
		if l > end-q || free > end-q-l {
			return nil, errFormat
		}
		out = append(out, field, b[q:q+l])
		p = q + l + free
	}
	n := len(out) / 2
	if p != end || n == 0 || (b[0] != 254 && int(b[0]) != n) {
		return nil, errFormat
	}
	return out, nil
}

// parseIntset validates an intset blob (encoding uint32 of 2, 4 or 8,
// count uint32, then the values ascending, little endian) and returns
// its values.
func parseIntset(b []byte) ([]int64, error) {
	if len(b) < 8 {
		return nil, errFormat
	}
	enc := binary.LittleEndian.Uint32(b)
	n := uint64(binary.LittleEndian.Uint32(b[4:]))
	if enc != 2 && enc != 4 && enc != 8 {
		return nil, errFormat
	}
	if n == 0 || 8+n*uint64(enc) != uint64(len(b)) {
		return nil, errFormat
	}
	out := make([]int64, n)
	for i := range out {
		p := b[8+i*int(enc):]
		var v int64
		switch enc {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(p)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(p)))
		default:
			v = int64(binary.LittleEndian.Uint64(p))
		}
		if i > 0 && v <= out[i-1] {
			return nil, errFormat
		}
		out[i] = v
	}
	return out, nil
}

// AppendIntset appends the intset blob of vals (ascending, distinct) in
// the narrowest encoding that holds them all.
func AppendIntset(dst []byte, vals []int64) []byte {
	enc := 2
	for _, v := range vals {
		if v < math.MinInt32 || v > math.MaxInt32 {
			enc = 8
			break
		}
		if v < math.MinInt16 || v > math.MaxInt16 {
			enc = 4
		}
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(enc))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(vals)))
	for _, v := range vals {
		switch enc {
		case 2:
			dst = binary.LittleEndian.AppendUint16(dst, uint16(v))
		case 4:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
		default:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
		}
	}
	return dst
}

// parseInt parses a canonical decimal int64 (Redis's string2ll rules:
// no sign on zero, no leading zeros, no spaces, at most 20 bytes).
func parseInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	if len(s) == 1 && s[0] == '0' {
		return 0, true
	}
	i := 0
	if s[0] == '-' {
		i = 1
		if len(s) == 1 {
			return 0, false
		}
	}
	if s[i] < '1' || s[i] > '9' {
		return 0, false
	}
	for _, c := range s[i:] {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	return v, err == nil
}

// double2ll reports whether f is an integer Redis prints as one (its
// double2ll: within ±(2^63-1)/2 and integral).
func double2ll(f float64) (int64, bool) {
	if f < float64(-math.MaxInt64/2) || f > float64(math.MaxInt64/2) {
		return 0, false
	}
	v := int64(f)
	if float64(v) == f {
		return v, true
	}
	return 0, false
}
