package lua

import (
	"math"
	"sort"

	glua "github.com/yuin/gopher-lua"
)

// newBitLib is Lua BitOp (the bit library bundled with Redis): 32-bit
// operations on numbers taken modulo 2^32.
func newBitLib(L *glua.LState) *glua.LTable {
	t := L.NewTable()
	arg := func(L *glua.LState, i int) int32 {
		f := float64(L.CheckNumber(i))
		return int32(uint32(int64(math.RoundToEven(math.Mod(f, 4294967296)))))
	}
	ret := func(L *glua.LState, v int32) int { L.Push(glua.LNumber(v)); return 1 }
	fold := func(op func(a, b int32) int32) glua.LGFunction {
		return func(L *glua.LState) int {
			v := arg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, arg(L, i))
			}
			return ret(L, v)
		}
	}
	fns := map[string]glua.LGFunction{
		"tobit": func(L *glua.LState) int { return ret(L, arg(L, 1)) },
		"bnot":  func(L *glua.LState) int { return ret(L, ^arg(L, 1)) },
		"band":  fold(func(a, b int32) int32 { return a & b }),
		"bor":   fold(func(a, b int32) int32 { return a | b }),
		"bxor":  fold(func(a, b int32) int32 { return a ^ b }),
		"lshift": func(L *glua.LState) int {
			return ret(L, int32(uint32(arg(L, 1))<<(uint32(arg(L, 2))&31)))
		},
		"rshift": func(L *glua.LState) int {
			return ret(L, int32(uint32(arg(L, 1))>>(uint32(arg(L, 2))&31)))
		},
		"arshift": func(L *glua.LState) int { return ret(L, arg(L, 1)>>(uint32(arg(L, 2))&31)) },
		"rol": func(L *glua.LState) int {
			x, n := uint32(arg(L, 1)), uint32(arg(L, 2))&31
			return ret(L, int32(x<<n|x>>((32-n)&31)))
		},
		"ror": func(L *glua.LState) int {
			x, n := uint32(arg(L, 1)), uint32(arg(L, 2))&31
			return ret(L, int32(x>>n|x<<((32-n)&31)))
		},
		"bswap": func(L *glua.LState) int {
			x := uint32(arg(L, 1))
			return ret(L, int32(x>>24|(x>>8)&0xff00|(x<<8)&0xff0000|x<<24))
		},
		"tohex": func(L *glua.LState) int {
			x := uint32(arg(L, 1))
			n := int32(8)
			if L.GetTop() >= 2 {
				n = arg(L, 2)
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n = -n
				digits = "0123456789ABCDEF"
			}
			if n > 8 {
				n = 8
			}
			out := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				out[i] = digits[x&15]
				x >>= 4
			}
			L.Push(glua.LString(out))
			return 1
		},
	}
	names := make([]string, 0, len(fns))
	for k := range fns {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t.RawSetString(k, L.NewFunction(fns[k]))
	}
	return t
}
