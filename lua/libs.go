package lua

import glua "github.com/yuin/gopher-lua"

// Libraries returns the cjson, bit, cmsgpack and struct library tables
// for L, by their global names.
func Libraries(L *glua.LState) map[string]*glua.LTable {
	return map[string]*glua.LTable{"cjson": newCjsonLib(L), "bit": newBitLib(L),
		"cmsgpack": newCmsgpackLib(L), "struct": newStructLib(L)}
}

// FormatNumber is Lua 5.1's number format, "%.14g".
func FormatNumber(f float64) string { return fmtG14(f) }
