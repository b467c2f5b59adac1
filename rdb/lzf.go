package rdb

import (
	"errors"
	"sync"
)

// LZF is the compression RDB uses for strings longer than 20 bytes. The
// stream is a sequence of runs:
//
//	000LLLLL + L+1 bytes          literal run of 1..32 bytes
//	LLLooooo oooooooo             back reference, length L+2 (L 1..6), offset o+1
//	111ooooo LLLLLLLL oooooooo    back reference, length L+9, offset o+1
//
// lzfCompress reproduces the choices of liblzf 3.6 as Redis builds it
// (HLOG 16, VERY_FAST, a 3-byte rolling hash, last position per hash
// slot), so that Sluice's DUMP output matches redis-server's byte for
// byte; any valid stream decompresses the same way.

const (
	lzfHLog   = 16
	lzfHSize  = 1 << lzfHLog
	lzfMaxLit = 1 << 5
	lzfMaxOff = 1 << 13
	lzfMaxRef = 1<<8 + 1<<3
)

// lzfMaxRatio bounds how many output bytes one input byte can produce
// (a 3-byte back reference yields at most 264 bytes).
const lzfMaxRatio = 88

var errLZF = errors.New("rdb: invalid LZF data")

// lzfTable is a reusable compression hash table: slots hold a generation
// (high 32 bits) and a position+1 (low 32 bits).
type lzfTable struct {
	slots [lzfHSize]uint64
	gen   uint32
	out   []byte // output buffer reused by compress
}

var lzfTables = sync.Pool{New: func() any { return new(lzfTable) }}

func lzfIdx(h uint32) int { return int((h>>(3*8-lzfHLog) - h*5) & (lzfHSize - 1)) }

// lzfCompress compresses in into at most outLen bytes. It returns nil when
// the result would not fit (the caller then stores the data verbatim).
func lzfCompress(in []byte, outLen int) []byte {
	t := lzfTables.Get().(*lzfTable)
	defer lzfTables.Put(t)
	if c := t.compress(in, outLen); c != nil {
		return append([]byte(nil), c...)
	}
	return nil
}

// lzfOutKeep is the largest output buffer a table keeps for reuse.
const lzfOutKeep = 1 << 20

// compress is lzfCompress into the table's own output buffer: the result
// is valid until the table's next use.
func (t *lzfTable) compress(in []byte, outLen int) []byte {
	inLen := len(in)
	if inLen == 0 || outLen == 0 {
		return nil
	}
	// The hash table holds position+1 of the last occurrence of each hash
	// (0: none). Tables are reused: an entry counts only if it carries
	// this call's generation, so no call clears 64K slots (which cost more
	// than compressing a small value).
	t.gen++
	if t.gen == 0 {
		clear(t.slots[:])
		t.gen = 1
	}
	gen := uint64(t.gen) << 32
	get := func(slot int) int32 {
		if v := t.slots[slot]; v&^(1<<32-1) == gen {
			return int32(uint32(v))
		}
		return 0
	}
	set := func(slot int, pos int32) { t.slots[slot] = gen | uint64(uint32(pos)) }
	var out []byte
	switch {
	case outLen > lzfOutKeep:
		out = make([]byte, outLen)
	case cap(t.out) >= outLen:
		out = t.out[:outLen]
	default:
		t.out = make([]byte, max(outLen, 256))
		out = t.out[:outLen]
	}
	op := 1 // out[0] is the header of the first literal run
	lit := 0
	ip := 0
	// in[p+2] is read below only while p < inLen-2.
	at := func(p int) uint32 { return uint32(in[p]) }
	hval := uint32(0)
	if inLen >= 2 {
		hval = at(0)<<8 | at(1)
	}
	for ip < inLen-2 {
		hval = hval<<8 | at(ip+2)
		slot := lzfIdx(hval)
		ref := int(get(slot)) - 1
		set(slot, int32(ip+1))
		if ref > 0 && ref < ip && ip-ref-1 < lzfMaxOff &&
			in[ref+2] == in[ip+2] && in[ref] == in[ip] && in[ref+1] == in[ip+1] {
			off := ip - ref - 1
			length := 2
			maxlen := inLen - ip - length
			if maxlen > lzfMaxRef {
				maxlen = lzfMaxRef
			}
			if op+3+1 >= outLen {
				notLit := 0
				if lit == 0 {
					notLit = 1
				}
				if op-notLit+3+1 >= outLen {
					return nil
				}
			}
			out[op-lit-1] = byte(lit - 1) // close the literal run
			if lit == 0 {
				op-- // no literal run after all
			}
			// Match length: mirrors liblzf's loop, including its unrolled
			// 16-byte step, so lengths come out identical.
			done := false
			if maxlen > 16 {
				for range 16 {
					length++
					if in[ref+length] != in[ip+length] {
						done = true
						break
					}
				}
			}
			if !done {
				for {
					length++
					if length >= maxlen || in[ref+length] != in[ip+length] {
						break
					}
				}
			}
			length -= 2 // encoded length
			ip++
			if length < 7 {
				out[op] = byte(off>>8 + length<<5)
				op++
			} else {
				out[op] = byte(off>>8 + 7<<5)
				out[op+1] = byte(length - 7)
				op += 2
			}
			out[op] = byte(off)
			op++
			lit = 0
			op++ // start a new literal run
			ip += length + 1
			if ip >= inLen-2 {
				break
			}
			ip -= 2
			hval = at(ip)<<8 | at(ip+1)
			hval = hval<<8 | at(ip+2)
			set(lzfIdx(hval), int32(ip+1))
			ip++
			hval = hval<<8 | at(ip+2)
			set(lzfIdx(hval), int32(ip+1))
			ip++
			continue
		}
		if op >= outLen {
			return nil
		}
		lit++
		out[op] = in[ip]
		op++
		ip++
		if lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1)
			lit = 0
			op++
		}
	}
	if op+3 > outLen {
		return nil
	}
	for ip < inLen {
		lit++
		out[op] = in[ip]
		op++
		ip++
		if lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1)
			lit = 0
			op++
		}
	}
	out[op-lit-1] = byte(lit - 1)
	if lit == 0 {
		op--
	}
	return out[:op]
}

// lzfDecompress decompresses in, which must expand to exactly n bytes.
func lzfDecompress(in []byte, n int) ([]byte, error) {
	if n == 0 {
		// liblzf reports errors as a 0 length, which Redis then compares
		// with the expected length: an empty result is always accepted.
		return []byte{}, nil
	}
	if n < 0 || n > len(in)*lzfMaxRatio {
		return nil, errLZF
	}
	out := make([]byte, 0, n)
	for ip := 0; ip < len(in); {
		ctrl := int(in[ip])
		ip++
		if ctrl < 1<<5 {
			l := ctrl + 1
			if len(out)+l > n || ip+l > len(in) {
				return nil, errLZF
			}
			out = append(out, in[ip:ip+l]...)
			ip += l
			continue
		}
		l := ctrl >> 5
		if ip >= len(in) {
			return nil, errLZF
		}
		if l == 7 {
			l += int(in[ip])
			ip++
			if ip >= len(in) {
				return nil, errLZF
			}
		}
		l += 2
		ref := len(out) - (ctrl&0x1f)<<8 - int(in[ip]) - 1
		ip++
		if len(out)+l > n || ref < 0 {
			return nil, errLZF
		}
		for i := range l { // may overlap: byte by byte
			out = append(out, out[ref+i])
		}
	}
	if len(out) != n {
		return nil, errLZF
	}
	return out, nil
}
