package store

import (
	"fmt"
	"sort"
	"strconv"
	"testing"
)

func setMembers(s *Set) []string {
	var out []string
	s.ForEach(func(m []byte) bool { out = append(out, string(m)); return true })
	return out
}

func TestIntsetBasics(t *testing.T) {
	s := NewSetFor([]byte("5"))
	if s.Encoding() != "intset" {
		t.Fatal(s.Encoding())
	}
	for _, m := range []string{"5", "-3", "100", "0", "-9223372036854775808", "9223372036854775807", "5"} {
		s.Add([]byte(m), 512)
	}
	if got := fmt.Sprint(setMembers(s)); got != "[-9223372036854775808 -3 0 5 100 9223372036854775807]" {
		t.Fatal(got)
	}
	// Non-canonical spellings are other strings, not these integers.
	for _, m := range []string{"05", "+5", " 5", "5.0", "-0", ""} {
		if s.Has([]byte(m)) || s.Remove([]byte(m)) {
			t.Fatalf("%q matched an integer member", m)
		}
	}
	if !s.Has([]byte("-3")) || !s.HasInt(100) || s.HasInt(7) {
		t.Fatal("membership")
	}
	if s.Encoding() != "intset" {
		t.Fatal("converted by lookups")
	}
	s.Add([]byte("05"), 512)
	if s.Encoding() != "hashtable" || !s.Has([]byte("05")) || !s.Has([]byte("5")) || s.Len() != 7 {
		t.Fatal("conversion by a non-integer member", s.Encoding(), s.Len())
	}
	if !s.HasInt(-9223372036854775808) {
		t.Fatal("HasInt on hashtable")
	}
}

func TestIntsetLimit(t *testing.T) {
	s := NewIntSet()
	for i := 0; i < 512; i++ {
		s.Add([]byte(strconv.Itoa(i)), 512)
	}
	if s.Encoding() != "intset" {
		t.Fatal("converted at 512")
	}
	s.Add([]byte("511"), 512)
	if s.Encoding() != "intset" {
		t.Fatal("converted by an existing member")
	}
	s.Add([]byte("512"), 512)
	if s.Encoding() != "hashtable" || s.Len() != 513 {
		t.Fatal("not converted past 512")
	}
	for i := 0; i < 500; i++ {
		s.Remove([]byte(strconv.Itoa(i)))
	}
	if s.Encoding() != "hashtable" {
		t.Fatal("converted back")
	}
	got := setMembers(s)
	sort.Strings(got)
	if len(got) != 13 || got[0] != "500" || got[12] != "512" {
		t.Fatal(got)
	}
	z := NewIntSet()
	z.Add([]byte("1"), 0)
	if z.Encoding() != "hashtable" {
		t.Fatal("set-max-intset-entries 0 kept an intset")
	}
}

func TestSetPopAll(t *testing.T) {
	for _, enc := range []string{"intset", "hashtable"} {
		s := NewIntSet()
		if enc == "hashtable" {
			s.Convert()
		}
		want := map[string]bool{}
		for i := 0; i < 300; i++ {
			m := strconv.Itoa(i * 3)
			s.Add([]byte(m), 512)
			want[m] = true
		}
		var tmp [24]byte
		for s.Len() > 0 {
			m := string(s.Pop(tmp[:0]))
			if !want[m] {
				t.Fatalf("%s: popped %q twice or never added", enc, m)
			}
			delete(want, m)
		}
		if len(want) != 0 {
			t.Fatalf("%s: %d never popped", enc, len(want))
		}
	}
}

func TestSetDup(t *testing.T) {
	s := NewSetFor([]byte("a"))
	s.Add([]byte("a"), 512)
	s.Add([]byte("b"), 512)
	d := s.Dup()
	d.Remove([]byte("a"))
	if !s.Has([]byte("a")) || d.Has([]byte("a")) || d.Encoding() != "hashtable" {
		t.Fatal("Dup not independent")
	}
	i := NewIntSet()
	i.Add([]byte("1"), 512)
	di := i.Dup()
	di.Add([]byte("2"), 512)
	if i.Len() != 1 || di.Encoding() != "intset" {
		t.Fatal("intset Dup")
	}
}
