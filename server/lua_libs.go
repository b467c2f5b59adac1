package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjson and bit for scripts, written to match Redis's bundled lua_cjson
// (default settings) and Lua BitOp.

func newCjsonLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	null := L.NewUserData()
	t.RawSetString("null", null)
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.RaiseError("bad argument #1 to 'encode' (expected 1 argument)")
		}
		var b []byte
		b = cjsonEncode(L, b, L.Get(1), null, 0)
		L.Push(lua.LString(b))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.RaiseError("bad argument #1 to 'decode' (expected 1 argument)")
		}
		s := L.CheckString(1)
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			L.RaiseError("Expected value but found invalid token at character 1")
		}
		if dec.More() {
			L.RaiseError("Expected the end but found invalid token at character %d", dec.InputOffset()+1)
		}
		L.Push(jsonToLua(L, v, null))
		return 1
	}))
	return t
}

func jsonToLua(L *lua.LState, v any, null lua.LValue) lua.LValue {
	switch v := v.(type) {
	case nil:
		return null
	case bool:
		return lua.LBool(v)
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		return lua.LNumber(f)
	case string:
		return lua.LString(v)
	case []any:
		t := L.CreateTable(len(v), 0)
		for i, x := range v {
			t.RawSetInt(i+1, jsonToLua(L, x, null))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(v))
		for k, x := range v {
			t.RawSetString(k, jsonToLua(L, x, null))
		}
		return t
	}
	return lua.LNil
}

// fmtG14 is "%.14g", the number format of cjson and Lua 5.1.
func fmtG14(f float64) string {
	s := strconv.FormatFloat(f, 'g', 14, 64)
	// Go's 'g' keeps trailing zeros in neither form but uses e+XX like C;
	// C pads the exponent to two digits, as Go does.
	if strings.Contains(s, "e") {
		mant, exp, _ := strings.Cut(s, "e")
		if strings.Contains(mant, ".") {
			mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
		}
		return mant + "e" + exp
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func cjsonEncode(L *lua.LState, b []byte, v lua.LValue, null lua.LValue, depth int) []byte {
	switch v := v.(type) {
	case *lua.LNilType:
		return append(b, "null"...)
	case lua.LBool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case lua.LNumber:
		f := float64(v)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			L.RaiseError("Cannot serialise number: must not be NaN or Inf")
		}
		return append(b, fmtG14(f)...)
	case lua.LString:
		return appendJSONString(b, string(v))
	case *lua.LUserData:
		if v == null {
			return append(b, "null"...)
		}
		L.RaiseError("Cannot serialise userdata: type not supported")
	case *lua.LTable:
		depth++
		if depth > 1000 {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		n, isArray := cjsonArrayLen(L, v)
		if isArray {
			b = append(b, '[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b = append(b, ',')
				}
				b = cjsonEncode(L, b, v.RawGetInt(i), null, depth)
			}
			return append(b, ']')
		}
		b = append(b, '{')
		first := true
		v.ForEach(func(k, val lua.LValue) {
			if !first {
				b = append(b, ',')
			}
			first = false
			switch k := k.(type) {
			case lua.LString:
				b = appendJSONString(b, string(k))
			case lua.LNumber:
				b = appendJSONString(b, fmtG14(float64(k)))
			default:
				L.RaiseError("Cannot serialise table: table key must be a number or string")
			}
			b = append(b, ':')
			b = cjsonEncode(L, b, val, null, depth)
		})
		return append(b, '}')
	default:
		L.RaiseError("Cannot serialise %s: type not supported", v.Type().String())
	}
	return b
}

// cjsonArrayLen follows lua_array_length: a table whose keys are all
// positive integers is an array (unless excessively sparse); an empty
// table is an object.
func cjsonArrayLen(L *lua.LState, t *lua.LTable) (int, bool) {
	max, items, ok := 0, 0, true
	t.ForEach(func(k, _ lua.LValue) {
		if !ok {
			return
		}
		n, isNum := k.(lua.LNumber)
		if !isNum || float64(n) < 1 || float64(n) != math.Floor(float64(n)) {
			ok = false
			return
		}
		if int(n) > max {
			max = int(n)
		}
		items++
	})
	if !ok || items == 0 {
		return 0, false
	}
	if max > items*2 && max > 10 {
		L.RaiseError("Cannot serialise table: excessively sparse array")
	}
	return max, true
}

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '/':
			b = append(b, '\\', '/')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 || c == 0x7f {
				b = append(b, fmt.Sprintf("\\u%04x", c)...)
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

// Lua BitOp.
func newBitLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	arg := func(L *lua.LState, i int) int32 {
		f := float64(L.CheckNumber(i))
		return int32(uint32(int64(math.RoundToEven(math.Mod(f, 4294967296)))))
	}
	ret := func(L *lua.LState, v int32) int { L.Push(lua.LNumber(v)); return 1 }
	fold := func(op func(a, b int32) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			v := arg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, arg(L, i))
			}
			return ret(L, v)
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return ret(L, arg(L, 1)) },
		"bnot":  func(L *lua.LState) int { return ret(L, ^arg(L, 1)) },
		"band":  fold(func(a, b int32) int32 { return a & b }),
		"bor":   fold(func(a, b int32) int32 { return a | b }),
		"bxor":  fold(func(a, b int32) int32 { return a ^ b }),
		"lshift": func(L *lua.LState) int {
			return ret(L, int32(uint32(arg(L, 1))<<(uint32(arg(L, 2))&31)))
		},
		"rshift": func(L *lua.LState) int {
			return ret(L, int32(uint32(arg(L, 1))>>(uint32(arg(L, 2))&31)))
		},
		"arshift": func(L *lua.LState) int { return ret(L, arg(L, 1)>>(uint32(arg(L, 2))&31)) },
		"rol": func(L *lua.LState) int {
			x, n := uint32(arg(L, 1)), uint32(arg(L, 2))&31
			return ret(L, int32(x<<n|x>>((32-n)&31)))
		},
		"ror": func(L *lua.LState) int {
			x, n := uint32(arg(L, 1)), uint32(arg(L, 2))&31
			return ret(L, int32(x>>n|x<<((32-n)&31)))
		},
		"bswap": func(L *lua.LState) int {
			x := uint32(arg(L, 1))
			return ret(L, int32(x>>24|(x>>8)&0xff00|(x<<8)&0xff0000|x<<24))
		},
		"tohex": func(L *lua.LState) int {
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
			L.Push(lua.LString(out))
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
	_ = bytes.MinRead
	return t
}
