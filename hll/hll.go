// Package hll is Redis's HyperLogLog (hyperloglog.c) on the bytes of a
// string value, in Redis's exact layout, so that an HLL moves between
// Sluice and Redis (GET/SET, DUMP/RESTORE, RDB files) unchanged:
//
//	"HYLL" | encoding (0 dense, 1 sparse) | 3 unused | 8 byte cached card
//	(little endian, MSB of the last byte set when invalid) | registers
//
// Dense: 16384 registers of 6 bits, least significant bits first. Sparse:
// ZERO (00xxxxxx, 1..64 zero registers), XZERO (01xxxxxx yyyyyyyy, 1..16384)
// and VAL (1vvvvvxx, 1..4 registers of value 1..32) opcodes. The server's
// PF* commands keep the keys and the replies.
package hll

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

const (
	p          = 14
	q          = 64 - p
	Registers  = 1 << p
	pMask      = Registers - 1
	regBits    = 6
	RegMax     = 1<<regBits - 1
	HdrSize    = 16
	DenseSize  = HdrSize + (Registers*regBits+7)/8
	Dense      = 0
	Sparse     = 1
	valMax     = 32
	valMaxLen  = 4
	zeroMaxLen = 64
	xzeroMax   = 16384
	alphaInf   = 0.721347520444481703680
)

// murmurHash64A is MurmurHash2 64 bit, endian neutral, as Redis uses it.
func murmurHash64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ (uint64(len(key)) * m)
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		key = key[8:]
	}
	if len(key) > 0 {
		for i := len(key) - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// patLen returns the register index of ele and the length of the run
// of zeros (plus one) in the rest of its hash.
func patLen(ele []byte) (index int, count uint8) {
	hash := murmurHash64A(ele, 0xadc83b19)
	index = int(hash & pMask)
	hash >>= p
	hash |= 1 << q
	return index, uint8(bits.TrailingZeros64(hash) + 1)
}

func DenseGet(regs []byte, i int) uint8 {
	b := i * regBits / 8
	fb := uint(i * regBits & 7)
	v := uint(regs[b]) >> fb
	if b+1 < len(regs) {
		v |= uint(regs[b+1]) << (8 - fb)
	}
	return uint8(v & RegMax)
}

func DenseSet(regs []byte, i int, val uint8) {
	b := i * regBits / 8
	fb := uint(i * regBits & 7)
	v := uint(val)
	regs[b] &^= byte(RegMax << fb)
	regs[b] |= byte(v << fb)
	if b+1 < len(regs) {
		regs[b+1] &^= byte(RegMax >> (8 - fb))
		regs[b+1] |= byte(v >> (8 - fb))
	}
}

// DenseUpdate sets register i to count if larger, reporting a change.
func DenseUpdate(regs []byte, i int, count uint8) bool {
	if count > DenseGet(regs, i) {
		DenseSet(regs, i, count)
		return true
	}
	return false
}

func isZero(b byte) bool  { return b&0xc0 == 0 }
func isXZero(b byte) bool { return b&0xc0 == 0x40 }
func isVal(b byte) bool   { return b&0x80 != 0 }
func zeroLen(b byte) int  { return int(b&0x3f) + 1 }
func xzeroLen(p []byte) int {
	return (int(p[0]&0x3f)<<8 | int(p[1])) + 1
}
func valValue(b byte) int { return int(b>>2&0x1f) + 1 }
func valLen(b byte) int   { return int(b&3) + 1 }
func valOp(val, n int) byte {
	return byte((val-1)<<2|(n-1)) | 0x80
}
func appendZeros(dst []byte, n int) []byte {
	if n > zeroMaxLen {
		return append(dst, byte((n-1)>>8)|0x40, byte((n-1)&0xff))
	}
	return append(dst, byte(n-1))
}

// New returns an empty sparse HLL.
func New() []byte {
	h := make([]byte, HdrSize, HdrSize+2*((Registers+xzeroMax-1)/xzeroMax))
	copy(h, "HYLL")
	h[4] = Sparse
	for n := Registers; n > 0; {
		x := min(n, xzeroMax)
		h = appendZeros(h, x)
		n -= x
	}
	return h
}

func InvalidateCache(h []byte) { h[15] |= 0x80 }

// ToDense converts a sparse HLL, or returns nil when it is corrupt.
func ToDense(h []byte) []byte {
	d := make([]byte, DenseSize)
	copy(d, h[:HdrSize])
	d[4] = Dense
	regs := d[HdrSize:]
	idx := 0
	for p := HdrSize; p < len(h); {
		switch b := h[p]; {
		case isZero(b):
			idx += zeroLen(b)
			p++
		case isXZero(b):
			if p+1 >= len(h) {
				return nil
			}
			idx += xzeroLen(h[p:])
			p += 2
		default:
			n, v := valLen(b), valValue(b)
			if idx+n > Registers {
				return nil
			}
			for ; n > 0; n-- {
				DenseSet(regs, idx, uint8(v))
				idx++
			}
			p++
		}
	}
	if idx != Registers {
		return nil
	}
	return d
}

// SparseSet is hllSparseSet: it sets register index to count if larger
// and returns the (possibly reallocated or promoted) HLL and 1 if changed,
// 0 if not, -1 if the HLL is corrupt.
func SparseSet(h []byte, index int, count uint8, maxBytes int) ([]byte, int) {
	promote := func() ([]byte, int) {
		d := ToDense(h)
		if d == nil {
			return h, -1
		}
		DenseUpdate(d[HdrSize:], index, count)
		return d, 1
	}
	if count > valMax {
		return promote()
	}
	// Step 1: find the opcode covering index.
	first, span := 0, 0
	prev := -1
	p := HdrSize
	end := len(h)
	for p < end {
		oplen := 1
		switch b := h[p]; {
		case isZero(b):
			span = zeroLen(b)
		case isVal(b):
			span = valLen(b)
		default:
			if p+1 >= end {
				return h, -1
			}
			span = xzeroLen(h[p:])
			oplen = 2
		}
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return h, -1
	}
	b := h[p]
	var runlen int
	zero, xzero, val := false, false, false
	switch {
	case isZero(b):
		zero, runlen = true, zeroLen(b)
	case isXZero(b):
		xzero, runlen = true, xzeroLen(h[p:])
	default:
		val, runlen = true, valLen(b)
	}
	// Step 2: the easy cases.
	updated := false
	if val {
		if valValue(b) >= int(count) {
			return h, 0
		}
		if runlen == 1 {
			h[p] = valOp(int(count), 1)
			updated = true
		}
	}
	if !updated && zero && runlen == 1 {
		h[p] = valOp(int(count), 1)
		updated = true
	}
	if !updated {
		// General case: split the opcode in up to three.
		var seqBuf [5]byte
		seq := seqBuf[:0]
		last := first + span - 1
		if zero || xzero {
			if index != first {
				seq = appendZeros(seq, index-first)
			}
			seq = append(seq, valOp(int(count), 1))
			if index != last {
				seq = appendZeros(seq, last-index)
			}
		} else {
			cur := valValue(b)
			if index != first {
				seq = append(seq, valOp(cur, index-first))
			}
			seq = append(seq, valOp(int(count), 1))
			if index != last {
				seq = append(seq, valOp(cur, last-index))
			}
		}
		oldlen := 1
		if xzero {
			oldlen = 2
		}
		delta := len(seq) - oldlen
		if delta > 0 && len(h)+delta > maxBytes {
			return promote()
		}
		nh := make([]byte, 0, len(h)+delta)
		nh = append(nh, h[:p]...)
		nh = append(nh, seq...)
		nh = append(nh, h[p+oldlen:]...)
		h = nh
		end = len(h)
	}
	// Step 4: merge adjacent VAL opcodes of the same value.
	q := HdrSize
	if prev >= 0 {
		q = prev
	}
	for scan := 5; q < end && scan > 0; scan-- {
		if isXZero(h[q]) {
			q += 2
			continue
		}
		if isZero(h[q]) {
			q++
			continue
		}
		if q+1 < end && isVal(h[q+1]) {
			v1, v2 := valValue(h[q]), valValue(h[q+1])
			if v1 == v2 {
				if n := valLen(h[q]) + valLen(h[q+1]); n <= valMaxLen {
					h[q+1] = valOp(v1, n)
					copy(h[q:], h[q+1:end])
					h = h[:end-1]
					end--
					continue
				}
			}
		}
		q++
	}
	InvalidateCache(h)
	return h, 1
}

// Add adds ele; see SparseSet for the results.
func Add(h []byte, ele []byte, maxBytes int) ([]byte, int) {
	index, count := patLen(ele)
	switch h[4] {
	case Dense:
		if DenseUpdate(h[HdrSize:], index, count) {
			return h, 1
		}
		return h, 0
	case Sparse:
		return SparseSet(h, index, count, maxBytes)
	}
	return h, -1
}

// Histogram computes the register histogram; invalid reports a sparse HLL
// that does not cover all registers.
func Histogram(h []byte, histo *[64]int) (invalid bool) {
	if h[4] == Dense {
		regs := h[HdrSize:]
		for i := 0; i < Registers; i++ {
			histo[DenseGet(regs, i)]++
		}
		return false
	}
	idx := 0
	for p := HdrSize; p < len(h); {
		switch b := h[p]; {
		case isZero(b):
			n := zeroLen(b)
			idx += n
			histo[0] += n
			p++
		case isXZero(b):
			if p+1 >= len(h) {
				return true
			}
			n := xzeroLen(h[p:])
			idx += n
			histo[0] += n
			p += 2
		default:
			n := valLen(b)
			idx += n
			histo[valValue(b)] += n
			p++
		}
	}
	return idx != Registers
}

func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zp := z
		z += x * y
		y += y
		if zp == z {
			return z
		}
	}
}

func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zp := z
		y *= 0.5
		z -= math.Pow(1-x, 2) * y
		if zp == z {
			return z / 3
		}
	}
}

// Estimate is hllCount's estimator on a register histogram.
func Estimate(histo *[64]int) uint64 {
	m := float64(Registers)
	z := m * tau((m-float64(histo[q+1]))/m)
	for j := q; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += m * sigma(float64(histo[0])/m)
	return uint64(math.Round(alphaInf * m * m / z))
}

// Merge folds h into max (one byte per register).
func Merge(max []uint8, h []byte) bool {
	if h[4] == Dense {
		regs := h[HdrSize:]
		for i := 0; i < Registers; i++ {
			if v := DenseGet(regs, i); v > max[i] {
				max[i] = v
			}
		}
		return true
	}
	i := 0
	for p := HdrSize; p < len(h); {
		switch b := h[p]; {
		case isZero(b):
			i += zeroLen(b)
			p++
		case isXZero(b):
			if p+1 >= len(h) {
				return false
			}
			i += xzeroLen(h[p:])
			p += 2
		default:
			n, v := valLen(b), uint8(valValue(b))
			if i+n > Registers {
				return false
			}
			for ; n > 0; n-- {
				if v > max[i] {
					max[i] = v
				}
				i++
			}
			p++
		}
	}
	return i == Registers
}

// Valid reports whether h has an HLL's header and, when dense, its size.
func Valid(h []byte) bool {
	return len(h) >= HdrSize && string(h[:4]) == "HYLL" && h[4] <= Sparse &&
		(h[4] != Dense || len(h) == DenseSize)
}

// DecodeSparse describes a sparse HLL's opcodes as PFDEBUG DECODE shows
// them ("z:3 Z:16000 v:2,1").
func DecodeSparse(h []byte) string {
	var sb strings.Builder
	for p := HdrSize; p < len(h); {
		switch b := h[p]; {
		case isZero(b):
			sb.WriteString("z:" + strconv.Itoa(zeroLen(b)) + " ")
			p++
		case isXZero(b):
			if p+1 >= len(h) { // Redis reads past the end here
				p = len(h)
				continue
			}
			sb.WriteString("Z:" + strconv.Itoa(xzeroLen(h[p:])) + " ")
			p += 2
		default:
			sb.WriteString("v:" + strconv.Itoa(valValue(b)) + "," + strconv.Itoa(valLen(b)) + " ")
			p++
		}
	}
	return strings.TrimRight(sb.String(), " ")
}

// SelfTest checks the register accessors and the estimator's error, as
// Redis's PFSELFTEST does; the error is PFSELFTEST's text after "ERR ".
func SelfTest(maxBytes int) error {
	regs := make([]byte, DenseSize-HdrSize+1)
	var want [Registers]uint8
	seed := uint64(0x9e3779b97f4a7c15)
	for cycle := 0; cycle < 1000; cycle++ {
		for i := range want {
			seed ^= seed << 13
			seed ^= seed >> 7
			seed ^= seed << 17
			want[i] = uint8(seed & RegMax)
			DenseSet(regs, i, want[i])
		}
		for i := range want {
			if got := DenseGet(regs, i); got != want[i] {
				return errors.New("TESTFAILED Register " + strconv.Itoa(i) + " should be " + strconv.Itoa(int(want[i])) + " but is " + strconv.Itoa(int(got)))
			}
		}
	}
	h := New()
	dense := make([]byte, DenseSize)
	copy(dense, "HYLL")
	relErr := 1.04 / math.Sqrt(Registers)
	checkpoint := uint64(1)
	var ele [8]byte
	for j := uint64(1); j <= 10000000; j++ {
		binary.LittleEndian.PutUint64(ele[:], j^seed)
		Add(dense, ele[:], maxBytes)
		h, _ = Add(h, ele[:], maxBytes)
		if j != checkpoint {
			continue
		}
		if j < uint64(maxBytes/2) && h[4] != Sparse {
			return errors.New("TESTFAILED sparse encoding not used")
		}
		var hs, hd [64]int
		Histogram(h, &hs)
		Histogram(dense, &hd)
		card := Estimate(&hd)
		if Estimate(&hs) != card {
			return errors.New("TESTFAILED dense/sparse disagree")
		}
		abserr := int64(checkpoint) - int64(card)
		if abserr < 0 {
			abserr = -abserr
		}
		maxErr := int64(math.Ceil(relErr * 6 * float64(checkpoint)))
		if j == 10 {
			maxErr = 1
		}
		if abserr > maxErr {
			return errors.New("TESTFAILED Too big error. card:" + strconv.FormatUint(checkpoint, 10) + " abserr:" + strconv.FormatInt(abserr, 10))
		}
		checkpoint *= 10
	}
	return nil
}
