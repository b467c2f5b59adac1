package lua

import glua "github.com/yuin/gopher-lua"

// forEach visits t's pairs in the order of next() (the array part,
// then the hash part in insertion order), unlike LTable.ForEach, which
// ranges over Go maps: encodings and replies built from a table must
// not change from one run to the next.
func forEach(t *glua.LTable, cb func(k, v glua.LValue)) {
	for k, v := t.Next(glua.LNil); k != glua.LNil; k, v = t.Next(k) {
		cb(k, v)
	}
}
