package lua

import (
	"encoding/binary"
	"math"

	glua "github.com/yuin/gopher-lua"
)

// cmsgpack as bundled with Redis (lua_cmsgpack.c): smallest integer
// encodings, float32 when exact, "raw" string formats, tables as arrays
// when their keys are exactly 1..n, nesting past 16 encoded as nil.

const cmsgpackMaxNesting = 16

func newCmsgpackLib(L *glua.LState) *glua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(func(L *glua.LState) int {
		n := L.GetTop()
		if n == 0 {
			L.RaiseError("bad argument #0 to 'pack' (MessagePack pack needs input.)")
		}
		var b []byte
		for i := 1; i <= n; i++ {
			b = mpEncode(b, L.Get(i), 0)
		}
		L.Push(glua.LString(b))
		return 1
	}))
	t.RawSetString("unpack", L.NewFunction(func(L *glua.LState) int { return mpUnpack(L, 0, 0) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *glua.LState) int {
		off := L.OptInt(2, 0)
		L.SetTop(1)
		return mpUnpack(L, 1, off)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *glua.LState) int {
		limit := L.CheckInt(2)
		off := L.OptInt(3, 0)
		L.SetTop(1)
		return mpUnpack(L, limit, off)
	}))
	return t
}

func mpEncode(b []byte, v glua.LValue, level int) []byte {
	switch v := v.(type) {
	case glua.LString:
		n := len(v)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
		default:
			b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
		}
		return append(b, v...)
	case glua.LBool:
		if v {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case glua.LNumber:
		f := float64(v)
		if i := int64(f); float64(i) == f && !math.IsInf(f, 0) {
			return mpEncodeInt(b, i)
		}
		if float64(float32(f)) == f || math.IsNaN(f) {
			return binary.BigEndian.AppendUint32(append(b, 0xca), math.Float32bits(float32(f)))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
	case *glua.LTable:
		if level == cmsgpackMaxNesting {
			return append(b, 0xc0)
		}
		count, max, isArray := 0, 0, true
		forEach(v, func(k, _ glua.LValue) {
			n, ok := k.(glua.LNumber)
			if !ok || n <= 0 || float64(n) != math.Floor(float64(n)) {
				isArray = false
				return
			}
			if int(n) > max {
				max = int(n)
			}
			count++
		})
		if isArray && max == count {
			b = mpHeader(b, count, 0x90, 0xdc, 0xdd)
			for i := 1; i <= count; i++ {
				b = mpEncode(b, v.RawGetInt(i), level+1)
			}
			return b
		}
		count = 0
		forEach(v, func(_, _ glua.LValue) { count++ })
		b = mpHeader(b, count, 0x80, 0xde, 0xdf)
		forEach(v, func(k, val glua.LValue) {
			b = mpEncode(b, k, level+1)
			b = mpEncode(b, val, level+1)
		})
		return b
	}
	return append(b, 0xc0)
}

func mpHeader(b []byte, n int, fix, c16, c32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, c16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, c32), uint32(n))
}

func mpEncodeInt(b []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n <= 127:
			return append(b, byte(n))
		case n <= 0xff:
			return append(b, 0xcc, byte(n))
		case n <= 0xffff:
			return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
		case n <= 0xffffffff:
			return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	}
	switch {
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= -128:
		return append(b, 0xd0, byte(int8(n)))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(n)))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

type mpCursor struct {
	b   []byte
	eof bool
	bad bool
}

func (c *mpCursor) take(n int) []byte {
	if len(c.b) < n {
		c.eof = true
		return nil
	}
	p := c.b[:n]
	c.b = c.b[n:]
	return p
}

func (c *mpCursor) decode(L *glua.LState) glua.LValue {
	h := c.take(1)
	if h == nil {
		return glua.LNil
	}
	t := h[0]
	u := func(n int) uint64 {
		p := c.take(n)
		if p == nil {
			return 0
		}
		var x uint64
		for _, v := range p {
			x = x<<8 | uint64(v)
		}
		return x
	}
	str := func(n int) glua.LValue {
		p := c.take(n)
		if p == nil {
			return glua.LNil
		}
		return glua.LString(p)
	}
	switch {
	case t < 0x80:
		return glua.LNumber(t)
	case t >= 0xe0:
		return glua.LNumber(int8(t))
	case t&0xe0 == 0xa0:
		return str(int(t & 0x1f))
	case t&0xf0 == 0x90:
		return c.array(L, int(t&0xf))
	case t&0xf0 == 0x80:
		return c.hash(L, int(t&0xf))
	}
	switch t {
	case 0xcc, 0xcd, 0xce, 0xcf:
		return glua.LNumber(float64(u(1 << (t - 0xcc))))
	case 0xd0:
		return glua.LNumber(int8(u(1)))
	case 0xd1:
		return glua.LNumber(int16(u(2)))
	case 0xd2:
		return glua.LNumber(int32(u(4)))
	case 0xd3:
		return glua.LNumber(float64(int64(u(8))))
	case 0xc0:
		return glua.LNil
	case 0xc3:
		return glua.LTrue
	case 0xc2:
		return glua.LFalse
	case 0xca:
		return glua.LNumber(math.Float32frombits(uint32(u(4))))
	case 0xcb:
		return glua.LNumber(math.Float64frombits(u(8)))
	case 0xd9:
		return str(int(u(1)))
	case 0xda:
		return str(int(u(2)))
	case 0xdb:
		return str(int(u(4)))
	case 0xdc:
		return c.array(L, int(u(2)))
	case 0xdd:
		return c.array(L, int(u(4)))
	case 0xde:
		return c.hash(L, int(u(2)))
	case 0xdf:
		return c.hash(L, int(u(4)))
	}
	c.bad = true
	return glua.LNil
}

func (c *mpCursor) array(L *glua.LState, n int) glua.LValue {
	t := L.NewTable()
	for i := 1; i <= n && !c.eof && !c.bad; i++ {
		t.RawSetInt(i, c.decode(L))
	}
	return t
}

func (c *mpCursor) hash(L *glua.LState, n int) glua.LValue {
	t := L.NewTable()
	for i := 0; i < n && !c.eof && !c.bad; i++ {
		k := c.decode(L)
		v := c.decode(L)
		if k != glua.LNil {
			t.RawSet(k, v)
		}
	}
	return t
}

func mpUnpack(L *glua.LState, limit, off int) int {
	s := L.CheckString(1)
	all := limit == 0 && off == 0
	if off < 0 || limit < 0 {
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", off, len(s))
	} else if off > len(s) {
		L.RaiseError("Start offset %d greater than input length %d.", off, len(s))
	}
	if all {
		limit = math.MaxInt32
	}
	c := mpCursor{b: []byte(s[off:])}
	var out []glua.LValue
	for len(c.b) > 0 && len(out) < limit {
		v := c.decode(L)
		if c.eof {
			L.RaiseError("Missing bytes in input.")
		}
		if c.bad {
			L.RaiseError("Bad data format in input.")
		}
		out = append(out, v)
	}
	if !all {
		next := len(s) - len(c.b)
		if len(c.b) == 0 {
			next = -1
		}
		L.Push(glua.LNumber(next))
	}
	for _, v := range out {
		L.Push(v)
	}
	if !all {
		return len(out) + 1
	}
	return len(out)
}
