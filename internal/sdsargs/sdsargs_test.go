package sdsargs

import (
	"reflect"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		line string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"  set  k\tv ", []string{"set", "k", "v"}, true},
		{`"a b" 'c d'`, []string{"a b", "c d"}, true},
		{`"\x41\n\"" 'it\'s'`, []string{"A\n\"", "it's"}, true},
		{`"" ''`, []string{"", ""}, true},
		{`"unterminated`, nil, false},
		{`'unterminated`, nil, false},
		{`"closed"x`, nil, false},
		{`+get ~k*`, []string{"+get", "~k*"}, true},
	}
	for _, tc := range cases {
		got, ok := Split(tc.line)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Split(%q) = %q, %v; want %q, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// Repr writes what redis-server's sdscatrepr wrote for these strings, and
// Split reads it back unchanged.
func TestRepr(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"plain words", `"plain words"`},
		{"a\x00b\n\"\\\t\r\a\b\x7f\xff~ ", `"a\x00b\n\"\\\t\r\a\b\x7f\xff~ "`},
	} {
		got := Repr(c.in)
		if got != c.want {
			t.Errorf("Repr(%q) = %s, want %s", c.in, got, c.want)
		}
		back, ok := Split(got)
		if !ok || len(back) != 1 || back[0] != c.in {
			t.Errorf("Split(%s) = %q, %v", got, back, ok)
		}
	}
}
