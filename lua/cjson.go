package lua

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	glua "github.com/yuin/gopher-lua"
)

// cjson for scripts, written to match Redis's bundled lua_cjson
// (default settings).

// cjsonConfig is one cjson module's settings (lua_cjson's json_config_t),
// changed by its encode_*/decode_* functions and kept for the life of the
// VM as in Redis.
type cjsonConfig struct {
	null           glua.LValue
	sparseConvert  bool
	sparseRatio    int
	sparseSafe     int
	encodeMaxDepth int
	decodeMaxDepth int
	encodeInvalid  int // 0 off, 1 on, 2 null
	decodeInvalid  bool
	keepBuffer     bool
	precision      int
}

func newCjsonLib(L *glua.LState) *glua.LTable {
	t := L.NewTable()
	null := L.NewUserData()
	cfg := &cjsonConfig{null: null, sparseRatio: 2, sparseSafe: 10, encodeMaxDepth: 1000,
		decodeMaxDepth: 1000, keepBuffer: true, precision: 14}
	t.RawSetString("null", null)
	t.RawSetString("encode", L.NewFunction(func(L *glua.LState) int {
		if L.GetTop() != 1 {
			L.RaiseError("bad argument #1 to 'encode' (expected 1 argument)")
		}
		var b []byte
		b = cfg.encode(L, b, L.Get(1), 0)
		L.Push(glua.LString(b))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *glua.LState) int {
		if L.GetTop() != 1 {
			L.RaiseError("bad argument #1 to 'decode' (expected 1 argument)")
		}
		s := L.CheckString(1)
		if depth, pos := jsonNestingPast(s, cfg.decodeMaxDepth); depth > 0 {
			L.RaiseError("Found too many nested data structures (%d) at character %d", depth, pos)
		}
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
	set := func(name string, nargs int, fn func(L *glua.LState) int) {
		t.RawSetString(name, L.NewFunction(func(L *glua.LState) int {
			if L.GetTop() > nargs {
				L.ArgError(nargs+1, "found too many arguments")
			}
			for L.GetTop() < nargs {
				L.Push(glua.LNil)
			}
			return fn(L)
		}))
	}
	set("encode_sparse_array", 3, func(L *glua.LState) int {
		cjsonBoolOption(L, 1, &cfg.sparseConvert)
		cjsonIntOption(L, 2, &cfg.sparseRatio, 0, math.MaxInt32)
		cjsonIntOption(L, 3, &cfg.sparseSafe, 0, math.MaxInt32)
		return 3
	})
	set("encode_max_depth", 1, func(L *glua.LState) int {
		return cjsonIntOption(L, 1, &cfg.encodeMaxDepth, 1, math.MaxInt32)
	})
	set("decode_max_depth", 1, func(L *glua.LState) int {
		return cjsonIntOption(L, 1, &cfg.decodeMaxDepth, 1, math.MaxInt32)
	})
	set("encode_number_precision", 1, func(L *glua.LState) int {
		return cjsonIntOption(L, 1, &cfg.precision, 1, 14)
	})
	set("encode_keep_buffer", 1, func(L *glua.LState) int {
		return cjsonBoolOption(L, 1, &cfg.keepBuffer)
	})
	set("decode_invalid_numbers", 1, func(L *glua.LState) int {
		return cjsonBoolOption(L, 1, &cfg.decodeInvalid)
	})
	set("encode_invalid_numbers", 1, func(L *glua.LState) int {
		names := []string{"off", "on", "null"}
		if v := L.Get(1); v != glua.LNil {
			if b, ok := v.(glua.LBool); ok {
				cfg.encodeInvalid = 0
				if b {
					cfg.encodeInvalid = 1
				}
			} else {
				cfg.encodeInvalid = cjsonCheckOption(L, 1, names)
			}
		}
		if cfg.encodeInvalid == 2 {
			L.Push(glua.LString(names[2]))
		} else {
			L.Push(glua.LBool(cfg.encodeInvalid == 1))
		}
		return 1
	})
	return t
}

// cjsonIntOption is json_integer_option: set the setting from argument i
// when given (an integer within [min, max]), and push its value.
func cjsonIntOption(L *glua.LState, i int, setting *int, min, max int) int {
	if v := L.Get(i); v != glua.LNil {
		n := L.CheckInt(i)
		if n < min || n > max {
			L.ArgError(1, fmt.Sprintf("expected integer between %d and %d", min, max))
		}
		*setting = n
	}
	L.Push(glua.LNumber(*setting))
	return 1
}

// cjsonBoolOption is json_enum_option with the "off"/"on" choices.
func cjsonBoolOption(L *glua.LState, i int, setting *bool) int {
	if v := L.Get(i); v != glua.LNil {
		if b, ok := v.(glua.LBool); ok {
			*setting = bool(b)
		} else {
			*setting = cjsonCheckOption(L, i, []string{"off", "on"}) == 1
		}
	}
	L.Push(glua.LBool(*setting))
	return 1
}

// cjsonCheckOption is luaL_checkoption without a default.
func cjsonCheckOption(L *glua.LState, i int, names []string) int {
	s := L.CheckString(i)
	for j, n := range names {
		if s == n {
			return j
		}
	}
	L.ArgError(i, fmt.Sprintf("invalid option '%s'", s))
	return 0
}

// jsonNestingPast reports the first array or object of s nested deeper
// than max: its depth and the 1-based character after its opening
// bracket (where lua_cjson's parser stands when it refuses it), or 0, 0.
func jsonNestingPast(s string, max int) (int, int) {
	depth, inStr := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			depth++
			if depth > max {
				return depth, i + 1
			}
		case ']', '}':
			depth--
		}
	}
	return 0, 0
}

func jsonToLua(L *glua.LState, v any, null glua.LValue) glua.LValue {
	switch v := v.(type) {
	case nil:
		return null
	case bool:
		return glua.LBool(v)
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		return glua.LNumber(f)
	case string:
		return glua.LString(v)
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
	return glua.LNil
}

// fmtG14 is "%.14g", the number format of cjson and Lua 5.1.
func fmtG14(f float64) string { return fmtG(f, 14) }

// fmtG is C's "%.<prec>g".
func fmtG(f float64, prec int) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f) && math.Signbit(f):
		return "-nan"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'g', prec, 64)
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

func (cfg *cjsonConfig) encode(L *glua.LState, b []byte, v glua.LValue, depth int) []byte {
	switch v := v.(type) {
	case *glua.LNilType:
		return append(b, "null"...)
	case glua.LBool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case glua.LNumber:
		return cfg.appendNumber(L, b, float64(v))
	case glua.LString:
		return appendJSONString(b, string(v))
	case *glua.LUserData:
		if v == cfg.null {
			return append(b, "null"...)
		}
		L.RaiseError("Cannot serialise userdata: type not supported")
	case *glua.LTable:
		depth++
		if depth > cfg.encodeMaxDepth {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		n, isArray := cfg.arrayLen(L, v)
		if isArray {
			b = append(b, '[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b = append(b, ',')
				}
				b = cfg.encode(L, b, v.RawGetInt(i), depth)
			}
			return append(b, ']')
		}
		b = append(b, '{')
		first := true
		forEach(v, func(k, val glua.LValue) {
			if !first {
				b = append(b, ',')
			}
			first = false
			switch k := k.(type) {
			case glua.LString:
				b = appendJSONString(b, string(k))
			case glua.LNumber:
				b = append(cfg.appendNumber(L, append(b, '"'), float64(k)), '"')
			default:
				L.RaiseError("Cannot serialise table: table key must be a number or string")
			}
			b = append(b, ':')
			b = cfg.encode(L, b, val, depth)
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
func (cfg *cjsonConfig) arrayLen(L *glua.LState, t *glua.LTable) (int, bool) {
	max, items, ok := 0, 0, true
	forEach(t, func(k, _ glua.LValue) {
		if !ok {
			return
		}
		n, isNum := k.(glua.LNumber)
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
	if cfg.sparseRatio > 0 && max > items*cfg.sparseRatio && max > cfg.sparseSafe {
		if !cfg.sparseConvert {
			L.RaiseError("Cannot serialise table: excessively sparse array")
		}
		return 0, false
	}
	return max, true
}

// appendNumber is json_append_number.
func (cfg *cjsonConfig) appendNumber(L *glua.LState, b []byte, f float64) []byte {
	switch {
	case cfg.encodeInvalid == 0 && (math.IsInf(f, 0) || math.IsNaN(f)):
		L.RaiseError("Cannot serialise number: must not be NaN or Inf")
	case cfg.encodeInvalid == 1 && math.IsNaN(f):
		return append(b, "nan"...)
	case cfg.encodeInvalid == 1 && math.IsInf(f, 1):
		return append(b, "inf"...)
	case cfg.encodeInvalid == 1 && math.IsInf(f, -1):
		return append(b, "-inf"...)
	case cfg.encodeInvalid == 2 && (math.IsInf(f, 0) || math.IsNaN(f)):
		return append(b, "null"...)
	}
	return append(b, fmtG(f, cfg.precision)...)
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
