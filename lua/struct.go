package lua

import (
	"encoding/binary"
	"math"

	glua "github.com/yuin/gopher-lua"
)

// The struct library bundled with Redis (lua_struct.c), for a 64-bit
// little-endian host: b/B 1, h/H 2, i/I 4 (or iN), l/L and T 8, f 4,
// d 8, cN, s, x; '<' '>' endianness and '!N' alignment.

type structHeader struct {
	big   bool
	align int
}

const structMaxIntSize = 32

func structNum(L *glua.LState, f string, i *int, def int) int {
	if *i >= len(f) || f[*i] < '0' || f[*i] > '9' {
		return def
	}
	a := 0
	for *i < len(f) && f[*i] >= '0' && f[*i] <= '9' {
		if a > (math.MaxInt32-int(f[*i]-'0'))/10 {
			L.RaiseError("integral size overflow")
		}
		a = a*10 + int(f[*i]-'0')
		*i++
	}
	return a
}

func structOptSize(L *glua.LState, opt byte, f string, i *int) int {
	switch opt {
	case 'B', 'b', 'x':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'c':
		return structNum(L, f, i, 1)
	case 'i', 'I':
		sz := structNum(L, f, i, 4)
		if sz > structMaxIntSize {
			L.RaiseError("integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return sz
	}
	return 0
}

func structToAlign(n int, h *structHeader, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > h.align {
		size = h.align
	}
	return (size - (n & (size - 1))) & (size - 1)
}

func structControl(L *glua.LState, fn string, opt byte, f string, i *int, h *structHeader) {
	switch opt {
	case ' ':
	case '>':
		h.big = true
	case '<':
		h.big = false
	case '!':
		a := structNum(L, f, i, 8)
		if a <= 0 || a&(a-1) != 0 {
			L.RaiseError("alignment %d is not a power of 2", a)
		}
		h.align = a
	default:
		L.RaiseError("bad argument #1 to '%s' (invalid format option '%c')", fn, opt)
	}
}

func newStructLib(L *glua.LState) *glua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

func putUint(b []byte, v uint64, size int, big bool) []byte {
	buf := make([]byte, size)
	for k := 0; k < size; k++ {
		idx := k
		if big {
			idx = size - 1 - k
		}
		buf[idx] = byte(v)
		v >>= 8
	}
	return append(b, buf...)
}

func structPack(L *glua.LState) int {
	f := L.CheckString(1)
	h := structHeader{align: 1}
	arg := 2
	var b []byte
	total := 0
	for i := 0; i < len(f); {
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		pad := structToAlign(total, &h, opt, size)
		total += pad
		for ; pad > 0; pad-- {
			b = append(b, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if n < 0 {
				v = uint64(int64(n))
			} else {
				v = uint64(n)
			}
			b = putUint(b, v, size, h.big)
		case 'x':
			b = append(b, 0)
		case 'f':
			v := math.Float32bits(float32(L.CheckNumber(arg)))
			arg++
			if h.big {
				b = binary.BigEndian.AppendUint32(b, v)
			} else {
				b = binary.LittleEndian.AppendUint32(b, v)
			}
		case 'd':
			v := math.Float64bits(float64(L.CheckNumber(arg)))
			arg++
			if h.big {
				b = binary.BigEndian.AppendUint64(b, v)
			} else {
				b = binary.LittleEndian.AppendUint64(b, v)
			}
		case 'c', 's':
			s := L.CheckString(arg)
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				L.RaiseError("bad argument #%d to 'pack' (string too short)", arg)
			}
			b = append(b, s[:size]...)
			if opt == 's' {
				b = append(b, 0)
				size++
			}
		default:
			structControl(L, "pack", opt, f, &i, &h)
		}
		total += size
	}
	L.Push(glua.LString(b))
	return 1
}

func structUnpack(L *glua.LState) int {
	f := L.CheckString(1)
	data := L.CheckString(2)
	pos := L.OptInt(3, 1)
	if pos <= 0 {
		L.RaiseError("bad argument #3 to 'unpack' (offset must be 1 or greater)")
	}
	pos--
	h := structHeader{align: 1}
	ld := len(data)
	n := 0
	for i := 0; i < len(f); {
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		pos += structToAlign(pos, &h, opt, size)
		if !(size <= ld && pos <= ld-size) {
			L.RaiseError("bad argument #2 to 'unpack' (data string too short)")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			var l uint64
			for k := 0; k < size; k++ {
				idx := size - 1 - k
				if h.big {
					idx = k
				}
				l = l<<8 | uint64(data[pos+idx])
			}
			if opt >= 'a' {
				if size < 8 {
					mask := ^uint64(0) << (uint(size)*8 - 1)
					if l&mask != 0 {
						l |= mask
					}
				}
				L.Push(glua.LNumber(float64(int64(l))))
			} else {
				L.Push(glua.LNumber(float64(l)))
			}
			n++
		case 'x':
		case 'f':
			p := []byte(data[pos : pos+4])
			var v uint32
			if h.big {
				v = binary.BigEndian.Uint32(p)
			} else {
				v = binary.LittleEndian.Uint32(p)
			}
			L.Push(glua.LNumber(math.Float32frombits(v)))
			n++
		case 'd':
			p := []byte(data[pos : pos+8])
			var v uint64
			if h.big {
				v = binary.BigEndian.Uint64(p)
			} else {
				v = binary.LittleEndian.Uint64(p)
			}
			L.Push(glua.LNumber(math.Float64frombits(v)))
			n++
		case 'c':
			if size == 0 {
				prev, ok := L.Get(-1).(glua.LNumber)
				if n == 0 || !ok {
					L.RaiseError("format 'c0' needs a previous size")
				}
				size = int(prev)
				L.Pop(1)
				n--
				if !(size <= ld && pos <= ld-size) {
					L.RaiseError("bad argument #2 to 'unpack' (data string too short)")
				}
			}
			L.Push(glua.LString(data[pos : pos+size]))
			n++
		case 's':
			e := -1
			for k := pos; k < ld; k++ {
				if data[k] == 0 {
					e = k
					break
				}
			}
			if e < 0 {
				L.RaiseError("unfinished string in data")
			}
			size = e - pos + 1
			L.Push(glua.LString(data[pos:e]))
			n++
		default:
			structControl(L, "unpack", opt, f, &i, &h)
		}
		pos += size
	}
	L.Push(glua.LNumber(pos + 1))
	return n + 1
}

func structSize(L *glua.LState) int {
	f := L.CheckString(1)
	h := structHeader{align: 1}
	pos := 0
	for i := 0; i < len(f); {
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		pos += structToAlign(pos, &h, opt, size)
		if opt == 's' {
			L.RaiseError("bad argument #1 to 'size' (option 's' has no fixed size)")
		} else if opt == 'c' && size == 0 {
			L.RaiseError("bad argument #1 to 'size' (option 'c0' has no fixed size)")
		}
		if !(opt >= 'a' && opt <= 'z' || opt >= 'A' && opt <= 'Z' || opt >= '0' && opt <= '9') {
			structControl(L, "size", opt, f, &i, &h)
		}
		pos += size
	}
	L.Push(glua.LNumber(pos))
	return 1
}
