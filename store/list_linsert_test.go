package store

import (
	"bytes"
	"testing"
)

// Regression: LINSERT into a list of one-entry nodes (list-max-listpack-size
// 1) crashed the server (Redis's tests/unit/type/list.tcl, "reg node check
// compression with insert and pop").
func TestListInsertSingleEntryNodes(t *testing.T) {
	l := NewList(1)
	rep := func(c byte) []byte { return bytes.Repeat([]byte{c}, 500) }
	for _, c := range []byte("abcd") {
		l.PushFront(rep(c))
	}
	for _, c := range []byte("efgj") {
		if !l.Insert(rep('d'), rep(c), true) {
			t.Fatalf("insert %c: pivot not found", c)
		}
	}
	var got []byte
	for l.Len() > 0 {
		v, _ := l.PopFront(nil)
		got = append(got, v[0])
	}
	if want := "djgfecba"; string(got) != want {
		t.Fatalf("order %q, want %q", got, want)
	}
}
