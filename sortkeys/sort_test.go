package sortkeys

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/sluicedb/sluice/store"
)

// TestStrtod: which weights SORT accepts, as redis-server 7.0.15 answers
// SORT of a one-element list (ERR One or more scores can't be converted
// into double for the rejected ones).
func TestStrtod(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1.5", 1.5, true},
		{" 2", 2, true},
		{"0x1p3", 8, true},
		{"0x10", 16, true},
		{"0x.8", 0.5, true},
		{"+.5", 0.5, true},
		{"5.", 5, true},
		{"1e+5", 1e5, true},
		{"-0", 0, true},
		{"", 0, true},
		{"2.2250738585072014e-308", 2.2250738585072014e-308, true},
		{"7\x00junk", 7, true},
		{"nan", 0, false},
		{"1e400", 0, false},
		{"4.9e-324", 0, false},
		{"1e-320", 0, false},
		{"abc", 0, false},
		{"1 ", 0, false},
		{".", 0, false},
		{"1e", 0, false},
		{"0x", 0, false},
	} {
		got, ok := strtod([]byte(c.in))
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%q: got %v %v, want %v %v", c.in, got, ok, c.want, c.ok)
		}
	}
	for _, in := range []string{"inf", "-Infinity", "INF"} {
		if f, ok := strtod([]byte(in)); !ok || f == 0 || f*0 == f*0 {
			t.Errorf("%q: got %v %v", in, f, ok)
		}
	}
}

// sortData holds what these commands leave in db 0: RPUSH l 3 1 2 10;
// MSET w_1 30 w_2 20 w_3 10; HSET h_1 f b; HSET h_2 f a; HSET h_3 f c;
// ZADD z 1 c 2 b 3 a; SADD s b a c; RPUSH nul "b\x00z" "b\x00a".
func sortData(t *testing.T) *store.DB {
	t.Helper()
	db := store.New(16, 0).DB(0)
	list := func(key string, vs ...string) {
		l := store.NewList(-2)
		for _, v := range vs {
			l.PushBack([]byte(v))
		}
		db.Add([]byte(key), store.NewObject(store.KindList, unsafe.Pointer(l)))
	}
	list("l", "3", "1", "2", "10")
	list("nul", "b\x00z", "b\x00a")
	for k, v := range map[string]string{"w_1": "30", "w_2": "20", "w_3": "10"} {
		db.Add([]byte(k), store.NewString([]byte(v)))
	}
	for k, v := range map[string]string{"h_1": "b", "h_2": "a", "h_3": "c"} {
		h := store.NewHash()
		h.Set([]byte("f"), []byte(v), 128, 64)
		db.Add([]byte(k), store.NewHashEntry(h))
	}
	z := store.NewZSet()
	z.Insert([]byte("c"), 1)
	z.Insert([]byte("b"), 2)
	z.Insert([]byte("a"), 3)
	db.Add([]byte("z"), store.NewObject(store.KindZSet, unsafe.Pointer(z)))
	s := store.NewSetFor([]byte("b"))
	for _, m := range []string{"b", "a", "c"} {
		s.Add([]byte(m), 512)
	}
	db.Add([]byte("s"), store.NewSetEntry(s))
	return db
}

// TestSort: SORT's order, LIMIT window and BY weights, as
// redis-server 7.0.15 replies for the data of sortData (the NUL cases
// read from its raw replies).
func TestSort(t *testing.T) {
	db := sortData(t)
	for _, c := range []struct {
		name string
		key  string
		o    Options
		want string // space-separated; "ERR" for the conversion error
	}{
		{"sort l", "l", Options{}, "1 2 3 10"},
		{"sort l alpha", "l", Options{Alpha: true}, "1 10 2 3"},
		{"sort l desc limit 1 2", "l", Options{Desc: true, LimitStart: 1, LimitCount: 2}, "3 2"},
		{"sort l by w_*", "l", Options{By: []byte("w_*")}, "10 3 2 1"},
		{"sort l by h_*->f alpha", "l", Options{By: []byte("h_*->f"), Alpha: true}, "10 2 1 3"},
		{"sort l by nosort limit 1 2", "l", Options{By: []byte("nosort"), DontSort: true, LimitStart: 1, LimitCount: 2}, "1 2"},
		{"sort l by nosort desc limit 1 2", "l", Options{By: []byte("nosort"), DontSort: true, Desc: true, LimitStart: 1, LimitCount: 2}, "2 1"},
		{"sort l limit -3 -1", "l", Options{LimitStart: -3, LimitCount: -1}, "1 2 3 10"},
		{"sort l limit 9 2", "l", Options{LimitStart: 9, LimitCount: 2}, ""},
		{"sort z by nosort", "z", Options{By: []byte("nosort"), DontSort: true}, "c b a"},
		{"sort z alpha", "z", Options{Alpha: true}, "a b c"},
		{"sort z by nosort desc limit 0 2", "z", Options{By: []byte("nosort"), DontSort: true, Desc: true, LimitCount: 2}, "a b"},
		{"sort z limit 5 2", "z", Options{LimitStart: 5, LimitCount: 2}, "ERR"},
		{"sort s by nosort store d", "s", Options{By: []byte("nosort"), DontSort: true, Store: true}, "a b c"},
		{"sort s by nosort (from a script)", "s", Options{By: []byte("nosort"), DontSort: true, Script: true}, "a b c"},
		{"sort missing", "missing", Options{}, ""},
		// ALPHA compares C strings (up to a NUL), stably, except with STORE.
		{"sort nul alpha", "nul", Options{Alpha: true}, "b\x00z b\x00a"},
		{"sort nul alpha store d", "nul", Options{Alpha: true, Store: true}, "b\x00a b\x00z"},
	} {
		if c.o.LimitCount == 0 && c.o.LimitStart == 0 {
			c.o.LimitCount = -1 // no LIMIT (none of the cases has LIMIT 0 0)
		}
		items, ok := Sort(db, db.Lookup([]byte(c.key)), &c.o)
		got := "ERR"
		if ok {
			var els []string
			for _, it := range items {
				els = append(els, string(it.Elem))
			}
			got = strings.Join(els, " ")
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// TestLookup: SORT l BY w_* GET # GET w_* GET h_*->f, as redis-server
// 7.0.15 answers it ("10 nil nil 3 10 c 2 20 a 1 30 b"), and patterns
// that find nothing.
func TestLookup(t *testing.T) {
	db := sortData(t)
	var scratch []byte
	var got []string
	for _, el := range []string{"10", "3", "2", "1"} {
		for _, p := range []string{"#", "w_*", "h_*->f"} {
			if v, ok := Lookup(db, []byte(p), []byte(el), &scratch); ok {
				got = append(got, string(v))
			} else {
				got = append(got, "nil")
			}
		}
	}
	if want := "10 nil nil 3 10 c 2 20 a 1 30 b"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
	for _, p := range []string{"nostar", "h_*->", "w_*->f", "h_*", "#x"} {
		if v, ok := Lookup(db, []byte(p), []byte("1"), &scratch); ok {
			t.Errorf("%s: found %q", p, v)
		}
	}
	if !Constant([]byte("nosort")) || !Constant([]byte("a\x00*")) || Constant([]byte("w_*")) {
		t.Error("Constant")
	}
}
