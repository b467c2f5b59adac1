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
