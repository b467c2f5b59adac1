package server

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/store"
)

// HyperLogLog (Redis's hyperloglog.c): PFADD, PFCOUNT, PFMERGE, PFDEBUG,
// PFSELFTEST. An HLL is a string value with Redis's exact layout, so that
// GET/SET/DUMP-style round trips through clients give the same bytes:
//
//	"HYLL" | encoding (0 dense, 1 sparse) | 3 unused | 8 byte cached card
//	(little endian, MSB of the last byte set when invalid) | registers
//
// Dense: 16384 registers of 6 bits, least significant bits first. Sparse:
// ZERO (00xxxxxx, 1..64 zero registers), XZERO (01xxxxxx yyyyyyyy, 1..16384)
// and VAL (1vvvvvxx, 1..4 registers of value 1..32) opcodes.

const (
	hllP          = 14
	hllQ          = 64 - hllP
	hllRegisters  = 1 << hllP
	hllPMask      = hllRegisters - 1
	hllBits       = 6
	hllRegMax     = 1<<hllBits - 1
	hllHdrSize    = 16
	hllDenseSize  = hllHdrSize + (hllRegisters*hllBits+7)/8
	hllDense      = 0
	hllSparse     = 1
	hllValMax     = 32
	hllValMaxLen  = 4
	hllZeroMaxLen = 64
	hllXZeroMax   = 16384
	hllAlphaInf   = 0.721347520444481703680

	errHLLInvalid = "INVALIDOBJ Corrupted HLL object detected"
	errHLLType    = "WRONGTYPE Key is not a valid HyperLogLog string value."
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

// hllPatLen returns the register index of ele and the length of the run
// of zeros (plus one) in the rest of its hash.
func hllPatLen(ele []byte) (index int, count uint8) {
	hash := murmurHash64A(ele, 0xadc83b19)
	index = int(hash & hllPMask)
	hash >>= hllP
	hash |= 1 << hllQ
	return index, uint8(bits.TrailingZeros64(hash) + 1)
}

func denseGet(regs []byte, i int) uint8 {
	b := i * hllBits / 8
	fb := uint(i * hllBits & 7)
	v := uint(regs[b]) >> fb
	if b+1 < len(regs) {
		v |= uint(regs[b+1]) << (8 - fb)
	}
	return uint8(v & hllRegMax)
}

func denseSet(regs []byte, i int, val uint8) {
	b := i * hllBits / 8
	fb := uint(i * hllBits & 7)
	v := uint(val)
	regs[b] &^= byte(hllRegMax << fb)
	regs[b] |= byte(v << fb)
	if b+1 < len(regs) {
		regs[b+1] &^= byte(hllRegMax >> (8 - fb))
		regs[b+1] |= byte(v >> (8 - fb))
	}
}

// denseUpdate sets register i to count if larger, reporting a change.
func denseUpdate(regs []byte, i int, count uint8) bool {
	if count > denseGet(regs, i) {
		denseSet(regs, i, count)
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
	if n > hllZeroMaxLen {
		return append(dst, byte((n-1)>>8)|0x40, byte((n-1)&0xff))
	}
	return append(dst, byte(n-1))
}

// newHLL returns an empty sparse HLL.
func newHLL() []byte {
	h := make([]byte, hllHdrSize, hllHdrSize+2*((hllRegisters+hllXZeroMax-1)/hllXZeroMax))
	copy(h, "HYLL")
	h[4] = hllSparse
	for n := hllRegisters; n > 0; {
		x := min(n, hllXZeroMax)
		h = appendZeros(h, x)
		n -= x
	}
	return h
}

func hllInvalidateCache(h []byte) { h[15] |= 0x80 }

// sparseToDense converts a sparse HLL, or returns nil when it is corrupt.
func sparseToDense(h []byte) []byte {
	d := make([]byte, hllDenseSize)
	copy(d, h[:hllHdrSize])
	d[4] = hllDense
	regs := d[hllHdrSize:]
	idx := 0
	for p := hllHdrSize; p < len(h); {
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
			if idx+n > hllRegisters {
				return nil
			}
			for ; n > 0; n-- {
				denseSet(regs, idx, uint8(v))
				idx++
			}
			p++
		}
	}
	if idx != hllRegisters {
		return nil
	}
	return d
}

// sparseSet is hllSparseSet: it sets register index to count if larger
// and returns the (possibly reallocated or promoted) HLL and 1 if changed,
// 0 if not, -1 if the HLL is corrupt.
func sparseSet(h []byte, index int, count uint8, maxBytes int) ([]byte, int) {
	promote := func() ([]byte, int) {
		d := sparseToDense(h)
		if d == nil {
			return h, -1
		}
		denseUpdate(d[hllHdrSize:], index, count)
		return d, 1
	}
	if count > hllValMax {
		return promote()
	}
	// Step 1: find the opcode covering index.
	first, span := 0, 0
	prev := -1
	p := hllHdrSize
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
	q := hllHdrSize
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
				if n := valLen(h[q]) + valLen(h[q+1]); n <= hllValMaxLen {
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
	hllInvalidateCache(h)
	return h, 1
}

// hllAdd adds ele; see sparseSet for the results.
func hllAdd(h []byte, ele []byte, maxBytes int) ([]byte, int) {
	index, count := hllPatLen(ele)
	switch h[4] {
	case hllDense:
		if denseUpdate(h[hllHdrSize:], index, count) {
			return h, 1
		}
		return h, 0
	case hllSparse:
		return sparseSet(h, index, count, maxBytes)
	}
	return h, -1
}

// hllHisto computes the register histogram; invalid reports a sparse HLL
// that does not cover all registers.
func hllHisto(h []byte, histo *[64]int) (invalid bool) {
	if h[4] == hllDense {
		regs := h[hllHdrSize:]
		for i := 0; i < hllRegisters; i++ {
			histo[denseGet(regs, i)]++
		}
		return false
	}
	idx := 0
	for p := hllHdrSize; p < len(h); {
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
	return idx != hllRegisters
}

func hllSigma(x float64) float64 {
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

func hllTau(x float64) float64 {
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

// hllEstimate is hllCount's estimator on a register histogram.
func hllEstimate(histo *[64]int) uint64 {
	m := float64(hllRegisters)
	z := m * hllTau((m-float64(histo[hllQ+1]))/m)
	for j := hllQ; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += m * hllSigma(float64(histo[0])/m)
	return uint64(math.Round(hllAlphaInf * m * m / z))
}

// hllMerge folds h into max (one byte per register).
func hllMerge(max []uint8, h []byte) bool {
	if h[4] == hllDense {
		regs := h[hllHdrSize:]
		for i := 0; i < hllRegisters; i++ {
			if v := denseGet(regs, i); v > max[i] {
				max[i] = v
			}
		}
		return true
	}
	i := 0
	for p := hllHdrSize; p < len(h); {
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
			if i+n > hllRegisters {
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
	return i == hllRegisters
}

// hllValue returns key's HLL bytes (the stored memory: valid under the
// shard lock), replying with Redis's error when the value is not an HLL.
func (c *Client) hllValue(e *store.Entry) ([]byte, bool) {
	if e.Kind() != store.KindString {
		c.wrongType()
		return nil, false
	}
	if e.IsInt() {
		c.w.Error(errHLLType)
		return nil, false
	}
	h := e.Bytes(nil)
	if len(h) < hllHdrSize || string(h[:4]) != "HYLL" || h[4] > hllSparse ||
		(h[4] == hllDense && len(h) != hllDenseSize) {
		c.w.Error(errHLLType)
		return nil, false
	}
	return h, true
}

func (c *Client) hllSparseMax() int {
	n, _ := strconv.Atoi(c.srv.cfg.Get("hll-sparse-max-bytes"))
	return n
}

// storeHLL writes h back into e in place.
func storeHLL(e *store.Entry, h []byte) {
	buf := e.MutableRaw(len(h))
	copy(buf, h)
}

func pfaddCommand(c *Client, args [][]byte) {
	key := args[1]
	db := c.DB()
	e := db.Lookup(key)
	updated := 0
	var h []byte
	created, inPlace := false, false
	if e == nil {
		h = newHLL()
		created = true
		updated++
	} else {
		cur, ok := c.hllValue(e)
		if !ok {
			return
		}
		if cur[4] == hllDense {
			h = e.MutableRaw(len(cur)) // updated in place: the size never changes
			inPlace = true
		} else {
			h = append([]byte(nil), cur...)
		}
	}
	maxBytes := c.hllSparseMax()
	for _, ele := range args[2:] {
		var r int
		h, r = hllAdd(h, ele, maxBytes)
		switch r {
		case 1:
			updated++
		case -1:
			c.w.Error(errHLLInvalid)
			return
		}
	}
	if created {
		e = &store.Entry{}
		e.SetRaw(h)
		db.Add(key, e)
		c.notify(NotifyNew, "new", key)
	}
	if updated > 0 {
		hllInvalidateCache(h)
		if !inPlace {
			storeHLL(e, h)
		}
		skip := 0
		if created {
			skip = 1 // db.Add counted the creation
		}
		c.modifiedN(key, updated, skip)
		c.notify(NotifyString, "pfadd", key)
		c.w.Int(1)
		return
	}
	c.w.Int(0)
}

func pfcountCommand(c *Client, args [][]byte) {
	if len(args) > 2 {
		max := make([]uint8, hllRegisters)
		for _, k := range args[1:] {
			e := c.lookupRead(k)
			if e == nil {
				continue
			}
			h, ok := c.hllValue(e)
			if !ok {
				return
			}
			if !hllMerge(max, h) {
				c.w.Error(errHLLInvalid)
				return
			}
		}
		var histo [64]int
		for _, v := range max {
			histo[v]++
		}
		c.w.Int(int64(hllEstimate(&histo)))
		return
	}
	key := args[1]
	e := c.lookupRead(key)
	if e == nil {
		c.w.Int(0)
		return
	}
	h, ok := c.hllValue(e)
	if !ok {
		return
	}
	if h[15]&0x80 == 0 {
		c.w.Int(int64(binary.LittleEndian.Uint64(h[8:16])))
		return
	}
	var histo [64]int
	if hllHisto(h, &histo) {
		c.w.Error(errHLLInvalid)
		return
	}
	card := hllEstimate(&histo)
	buf := e.MutableRaw(len(h))
	binary.LittleEndian.PutUint64(buf[8:16], card)
	c.DB().Modified(key)
	c.w.Int(int64(card))
}

func pfmergeCommand(c *Client, args [][]byte) {
	max := make([]uint8, hllRegisters)
	useDense := false
	for _, k := range args[1:] {
		e := c.lookupRead(k)
		if e == nil {
			continue
		}
		h, ok := c.hllValue(e)
		if !ok {
			return
		}
		if h[4] == hllDense {
			useDense = true
		}
		if !hllMerge(max, h) {
			c.w.Error(errHLLInvalid)
			return
		}
	}
	key := args[1]
	db := c.DB()
	e := db.Lookup(key)
	var h []byte
	created := false
	if e == nil {
		h = newHLL()
		created = true
	} else {
		h = append([]byte(nil), e.Bytes(nil)...)
	}
	if useDense && h[4] == hllSparse {
		if h = sparseToDense(h); h == nil {
			c.w.Error(errHLLInvalid)
			return
		}
	}
	maxBytes := c.hllSparseMax()
	for i, v := range max {
		if v == 0 {
			continue
		}
		if h[4] == hllDense {
			denseUpdate(h[hllHdrSize:], i, v)
		} else {
			h, _ = sparseSet(h, i, v, maxBytes)
		}
	}
	hllInvalidateCache(h)
	if created {
		e = &store.Entry{}
		e.SetRaw(h)
		db.Add(key, e)
		c.notify(NotifyNew, "new", key)
	} else {
		storeHLL(e, h)
		db.Modified(key)
	}
	c.notify(NotifyString, "pfadd", key)
	c.w.OK()
}

func pfdebugCommand(c *Client, args [][]byte) {
	sub, key := args[1], args[2]
	db := c.DB()
	e := db.Lookup(key)
	if e == nil {
		c.w.Error("ERR The specified key does not exist")
		return
	}
	h, ok := c.hllValue(e)
	if !ok {
		return
	}
	toDense := func() bool {
		d := sparseToDense(h)
		if d == nil {
			c.w.Error(errHLLInvalid)
			return false
		}
		h = d
		storeHLL(e, h)
		db.Modified(key)
		return true
	}
	switch {
	case eq(sub, "getreg"):
		if h[4] == hllSparse && !toDense() {
			return
		}
		c.w.Array(hllRegisters)
		for i := 0; i < hllRegisters; i++ {
			c.w.Int(int64(denseGet(h[hllHdrSize:], i)))
		}
	case eq(sub, "decode"):
		if h[4] != hllSparse {
			c.w.Error("ERR HLL encoding is not sparse")
			return
		}
		var sb strings.Builder
		for p := hllHdrSize; p < len(h); {
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
		c.w.BulkString(strings.TrimRight(sb.String(), " "))
	case eq(sub, "encoding"):
		if h[4] == hllDense {
			c.w.Simple("dense")
		} else {
			c.w.Simple("sparse")
		}
	case eq(sub, "todense"):
		if h[4] == hllSparse {
			if !toDense() {
				return
			}
			c.w.Int(1)
			return
		}
		c.w.Int(0)
	default:
		c.w.Error("ERR Unknown PFDEBUG subcommand '" + string(sub) + "'")
	}
}

// pfselftestCommand checks the register accessors and the estimator's
// error, as Redis's PFSELFTEST does.
func pfselftestCommand(c *Client, args [][]byte) {
	regs := make([]byte, hllDenseSize-hllHdrSize+1)
	var want [hllRegisters]uint8
	seed := uint64(0x9e3779b97f4a7c15)
	for cycle := 0; cycle < 1000; cycle++ {
		for i := range want {
			seed ^= seed << 13
			seed ^= seed >> 7
			seed ^= seed << 17
			want[i] = uint8(seed & hllRegMax)
			denseSet(regs, i, want[i])
		}
		for i := range want {
			if got := denseGet(regs, i); got != want[i] {
				c.w.Error("ERR TESTFAILED Register " + strconv.Itoa(i) + " should be " + strconv.Itoa(int(want[i])) + " but is " + strconv.Itoa(int(got)))
				return
			}
		}
	}
	h := newHLL()
	dense := make([]byte, hllDenseSize)
	copy(dense, "HYLL")
	maxBytes := c.hllSparseMax()
	relErr := 1.04 / math.Sqrt(hllRegisters)
	checkpoint := uint64(1)
	var ele [8]byte
	for j := uint64(1); j <= 10000000; j++ {
		binary.LittleEndian.PutUint64(ele[:], j^seed)
		hllAdd(dense, ele[:], maxBytes)
		h, _ = hllAdd(h, ele[:], maxBytes)
		if j != checkpoint {
			continue
		}
		if j < uint64(maxBytes/2) && h[4] != hllSparse {
			c.w.Error("ERR TESTFAILED sparse encoding not used")
			return
		}
		var hs, hd [64]int
		hllHisto(h, &hs)
		hllHisto(dense, &hd)
		card := hllEstimate(&hd)
		if hllEstimate(&hs) != card {
			c.w.Error("ERR TESTFAILED dense/sparse disagree")
			return
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
			c.w.Error("ERR TESTFAILED Too big error. card:" + strconv.FormatUint(checkpoint, 10) + " abserr:" + strconv.FormatInt(abserr, 10))
			return
		}
		checkpoint *= 10
	}
	c.w.OK()
}
