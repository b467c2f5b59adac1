// Package bitstr is Redis's bitops.c on byte strings: counting and finding
// bits (BITCOUNT, BITPOS, with BITPOS's exact bookkeeping of masked edge
// bytes), AND/OR/XOR of strings (BITOP), and BITFIELD's reads and writes
// of signed and unsigned integers at any bit offset with WRAP, SAT and FAIL
// overflow. The bits of a byte are numbered from the most significant, as
// Redis numbers them. The server's commands keep the keys and the replies.
package bitstr

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Overflow behaviours of BITFIELD's SET and INCRBY.
const (
	Wrap = iota
	Sat
	Fail
)

// Popcount counts the set bits of p.
func Popcount(p []byte) int64 {
	var n int
	for len(p) >= 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(p))
		p = p[8:]
	}
	for _, b := range p {
		n += bits.OnesCount8(b)
	}
	return int64(n)
}

// Pos is redisBitpos: the position of the first bit set to bit in p;
// looking for a clear bit in all ones gives len(p)*8 (the string is seen as
// padded with zeros), looking for a set bit in all zeros gives -1.
func Pos(p []byte, bit int64) int64 {
	for i, b := range p {
		if bit == 1 && b != 0 {
			return int64(i)*8 + int64(bits.LeadingZeros8(b))
		}
		if bit == 0 && b != 0xff {
			return int64(i)*8 + int64(bits.LeadingZeros8(^b))
		}
	}
	if bit == 1 {
		return -1
	}
	return int64(len(p)) * 8
}

// PosRange searches bytes start..end of p, the edge bytes masked, with
// the exact bookkeeping of Redis's bitposCommand.
func PosRange(p []byte, bit, start, end int64, firstMask, lastMask byte, endGiven bool) int64 {
	nbytes := end - start + 1
	var pos int64
	masked := func(b, mask byte) byte {
		if bit == 1 {
			return b &^ mask
		}
		return b | mask
	}
	done := false
	if firstMask != 0 {
		tmp := masked(p[start], firstMask)
		if lastMask != 0 && nbytes == 1 {
			tmp = masked(tmp, lastMask)
		}
		pos = Pos([]byte{tmp}, bit)
		if nbytes == 1 || (pos != -1 && pos != 8) {
			done = true
		} else {
			start++
			nbytes--
		}
	}
	if !done {
		cur := nbytes
		if lastMask != 0 {
			cur--
		}
		if cur > 0 {
			pos = Pos(p[start:start+cur], bit)
			if nbytes == cur || (pos != -1 && pos != cur<<3) {
				done = true
			} else {
				start += cur
				nbytes -= cur
			}
		}
	}
	if !done {
		pos = Pos([]byte{masked(p[end], lastMask)}, bit)
	}
	if endGiven && bit == 0 && pos == nbytes<<3 {
		return -1
	}
	if pos != -1 {
		pos += start << 3
	}
	return pos
}

func And(dst, src []byte) {
	for len(dst) >= 8 {
		binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(dst)&binary.LittleEndian.Uint64(src))
		dst, src = dst[8:], src[8:]
	}
	for i := range dst {
		dst[i] &= src[i]
	}
}

func Or(dst, src []byte) {
	for len(dst) >= 8 {
		binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(dst)|binary.LittleEndian.Uint64(src))
		dst, src = dst[8:], src[8:]
	}
	for i := range dst {
		dst[i] |= src[i]
	}
}

func Xor(dst, src []byte) {
	for len(dst) >= 8 {
		binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(dst)^binary.LittleEndian.Uint64(src))
		dst, src = dst[8:], src[8:]
	}
	for i := range dst {
		dst[i] ^= src[i]
	}
}

func GetUnsigned(p []byte, offset uint64, nbits int) uint64 {
	var v uint64
	for j := 0; j < nbits; j++ {
		b := p[offset>>3]
		v = v<<1 | uint64(b>>(7-(offset&7)))&1
		offset++
	}
	return v
}

func GetSigned(p []byte, offset uint64, nbits int) int64 {
	v := int64(GetUnsigned(p, offset, nbits))
	if nbits < 64 && v&(1<<(nbits-1)) != 0 {
		v |= -1 << nbits
	}
	return v
}

func SetUnsigned(p []byte, offset uint64, nbits int, v uint64) {
	for j := 0; j < nbits; j++ {
		bit := byte(v>>(nbits-1-j)) & 1
		shift := 7 - (offset & 7)
		p[offset>>3] = p[offset>>3]&^(1<<shift) | bit<<shift
		offset++
	}
}

// UnsignedOverflow is checkUnsignedBitfieldOverflow: 1 on overflow, -1 on
// underflow, 0 otherwise, with the value to store for WRAP or SAT.
func UnsignedOverflow(value uint64, incr int64, nbits int, ow int) (int, uint64) {
	maxv := uint64(1)<<nbits - 1
	if nbits == 64 {
		maxv = math.MaxUint64
	}
	maxIncr := int64(maxv - value)
	minIncr := -int64(value)
	wrap := func() uint64 { return (value + uint64(incr)) &^ (uint64(math.MaxUint64) << nbits) }
	if value > maxv || (incr > 0 && incr > maxIncr) {
		switch ow {
		case Wrap:
			return 1, wrap()
		case Sat:
			return 1, maxv
		}
		return 1, 0
	} else if incr < 0 && incr < minIncr {
		switch ow {
		case Wrap:
			return -1, wrap()
		case Sat:
			return -1, 0
		}
		return -1, 0
	}
	return 0, 0
}

// SignedOverflow is checkSignedBitfieldOverflow.
func SignedOverflow(value, incr int64, nbits int, ow int) (int, int64) {
	maxv := int64(math.MaxInt64)
	if nbits != 64 {
		maxv = 1<<(nbits-1) - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := minv - value
	wrap := func() int64 {
		r := uint64(value) + uint64(incr)
		if nbits < 64 {
			mask := uint64(math.MaxUint64) << nbits
			if r&(1<<(nbits-1)) != 0 {
				r |= mask
			} else {
				r &^= mask
			}
		}
		return int64(r)
	}
	if value > maxv || (nbits != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr) {
		switch ow {
		case Wrap:
			return 1, wrap()
		case Sat:
			return 1, maxv
		}
		return 1, 0
	} else if value < minv || (nbits != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr) {
		switch ow {
		case Wrap:
			return -1, wrap()
		case Sat:
			return -1, minv
		}
		return -1, 0
	}
	return 0, 0
}
