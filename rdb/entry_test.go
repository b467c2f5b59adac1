package rdb

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/sluicedb/sluice/store"
)

// defaultLimits are redis.conf's defaults.
var defaultLimits = Limits{ListFill: -2, SetMaxIntset: 512, ZSetMaxEntries: 128, ZSetMaxValue: 64, HashMaxEntries: 512, HashMaxValue: 64}

// entryView is everything an entry holds, in comparable form.
type entryView struct {
	Kind     store.Kind
	Encoding string
	Str      string   // strings
	Elems    []string // lists in order; sets sorted
	Ints     []int64  // intsets
	Pairs    []string // hashes: "field=value", sorted
	Items    []string // sorted sets: "member:score" in rank order
	Stream   *streamView
}

type streamView struct {
	Len                           uint64
	LastID, FirstID, MaxDeletedID store.StreamID
	EntriesAdded                  uint64
	Nodes                         []string // master, counts, entries with flags and fields
	Groups                        []string // name, last ID, entries read, PEL, consumers
}

func viewOf(e *store.Entry) entryView {
	v := entryView{Kind: e.Kind()}
	switch e.Kind() {
	case store.KindString:
		v.Encoding = e.StringEncoding()
		v.Str = string(e.Bytes(nil))
	case store.KindList:
		l := e.AsList()
		v.Encoding = l.Encoding()
		l.Each(false, func(_ int, b []byte) bool { v.Elems = append(v.Elems, string(b)); return true })
	case store.KindSet:
		s := e.AsSet()
		v.Encoding = s.Encoding()
		if s.IsIntset() {
			v.Ints = slices.Clone(s.Ints())
		} else {
			s.ForEach(func(m []byte) bool { v.Elems = append(v.Elems, string(m)); return true })
			slices.Sort(v.Elems)
		}
	case store.KindHash:
		h := e.AsHash()
		v.Encoding = h.Encoding()
		h.ForEach(func(f, val []byte) bool { v.Pairs = append(v.Pairs, string(f)+"="+string(val)); return true })
		slices.Sort(v.Pairs)
	case store.KindZSet:
		z := e.AsZSet()
		v.Encoding = z.Encoding()
		z.Iter(0, false, func(it store.ZItem) bool {
			v.Items = append(v.Items, it.Member+":"+strconv.FormatFloat(it.Score, 'g', -1, 64))
			return true
		})
	case store.KindStream:
		s := e.AsStream()
		sv := &streamView{Len: s.Len(), LastID: s.LastID, FirstID: s.FirstID, MaxDeletedID: s.MaxDeletedID, EntriesAdded: s.EntriesAdded}
		s.Nodes(func(n store.StreamNodeView) {
			var b strings.Builder
			fmt.Fprintf(&b, "%v live=%d deleted=%d master=", n.Master, n.Live, n.Deleted)
			n.MasterFields(func(f []byte) bool { b.WriteString(string(f) + ","); return true })
			n.Entries(func(id store.StreamID, flags, _ int, fields func(fn func(f, v []byte))) {
				fmt.Fprintf(&b, " %v/%d{", id, flags)
				fields(func(f, val []byte) { b.WriteString(string(f) + "=" + string(val) + ",") })
				b.WriteString("}")
			})
			sv.Nodes = append(sv.Nodes, b.String())
		})
		for _, g := range s.Groups() {
			var b strings.Builder
			fmt.Fprintf(&b, "%s last=%v read=%d pel=", g.Name, g.LastID, g.EntriesRead)
			for _, nk := range g.PEL() {
				owner := ""
				if nk.Consumer != nil {
					owner = nk.Consumer.Name
				}
				fmt.Fprintf(&b, "%v/%d/%d/%s,", nk.ID, nk.DeliveryTime, nk.DeliveryCount, owner)
			}
			for _, c := range g.Consumers() {
				fmt.Fprintf(&b, " consumer %s seen=%d pel=", c.Name, c.SeenTime)
				for _, nk := range c.PEL() {
					fmt.Fprintf(&b, "%v,", nk.ID)
				}
			}
			sv.Groups = append(sv.Groups, b.String())
		}
		v.Stream = sv
	}
	return v
}

func newList(fill int, elems ...string) *store.Entry {
	l := store.NewList(fill)
	for _, el := range elems {
		l.PushBack([]byte(el))
	}
	return store.NewObject(store.KindList, unsafe.Pointer(l))
}

func newSet(members ...string) *store.Entry {
	s := store.NewIntSet()
	for _, m := range members {
		s.Add([]byte(m), 512)
	}
	return store.NewSetEntry(s)
}

func newHash(kv ...string) *store.Entry {
	h := store.NewHash()
	for i := 0; i < len(kv); i += 2 {
		h.Set([]byte(kv[i]), []byte(kv[i+1]), 512, 64)
	}
	return store.NewHashEntry(h)
}

func newZSet(n int, member func(i int) string, score func(i int) float64) *store.Entry {
	z := store.NewZSet()
	if n > 128 || len(member(0)) > 64 {
		z.Convert()
	}
	for i := range n {
		z.Insert([]byte(member(i)), score(i))
	}
	return store.NewObject(store.KindZSet, unsafe.Pointer(z))
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// sampleStream is a stream with nodes of different field sets, tombstones,
// and a group whose pending entries two consumers own.
func sampleStream() *store.Entry {
	s := store.NewStream()
	for i := range 30 {
		kv := [][]byte{[]byte("f"), []byte(strconv.Itoa(i))}
		if i%3 == 0 {
			kv = append(kv, []byte("extra"), []byte(strings.Repeat("x", i)))
		}
		id := store.StreamID{Ms: 1000 + uint64(i), Seq: uint64(i % 2)}
		s.Append(id, kv, 10, 4096)
		s.LastID = id
	}
	for _, i := range []uint64{3, 7, 8} {
		id := store.StreamID{Ms: 1000 + i, Seq: i % 2}
		if s.Delete(id) && s.MaxDeletedID.Less(id) {
			s.MaxDeletedID = id
		}
	}
	s.UpdateFirstID()
	g := s.CreateGroup([]byte("g1"), store.StreamID{Ms: 1010}, 11)
	alice := g.CreateConsumer([]byte("alice"), 123456)
	bob := g.CreateConsumer([]byte("bob"), 654321)
	for i, id := range []store.StreamID{{Ms: 1001, Seq: 1}, {Ms: 1004}, {Ms: 1005, Seq: 1}} {
		nk := &store.StreamNACK{ID: id, DeliveryTime: 5000 + int64(i), DeliveryCount: uint64(i + 1)}
		g.AddPending(nk)
		if i == 1 {
			g.Assign(nk, bob)
		} else {
			g.Assign(nk, alice)
		}
	}
	s.CreateGroup([]byte("empty"), store.StreamID{}, 0)
	return store.NewStreamEntry(s)
}

// roundTripCases are entries of every type in every encoding.
func roundTripCases() []struct {
	name string
	e    *store.Entry
	typ  byte
} {
	big := numbered("member-", 300)
	ints := make([]string, 600)
	for i := range ints {
		ints[i] = strconv.Itoa(i*7 - 100)
	}
	return []struct {
		name string
		e    *store.Entry
		typ  byte
	}{
		{"string embstr", store.NewString([]byte("hello")), TypeString},
		{"string empty", store.NewString(nil), TypeString},
		{"string raw compressible", store.NewString([]byte(strings.Repeat("abcdefgh", 200))), TypeString},
		{"string binary", store.NewString([]byte{0, 1, 2, 0xff, '\r', '\n'}), TypeString},
		{"int", store.NewInt(12345), TypeString},
		{"int negative", store.NewInt(-1 << 40), TypeString},
		{"int min", store.NewInt(math.MinInt64), TypeString},
		{"list small", newList(-2, "a", "b", "1", "-7", ""), TypeListQuicklist2},
		{"list many nodes", newList(-2, numbered(strings.Repeat("v", 100), 500)...), TypeListQuicklist2},
		{"list big element", newList(-2, "a", strings.Repeat("z", 20000), "b"), TypeListQuicklist2},
		{"set intset", newSet("5", "-3", "1099511627776", "0"), TypeSetIntset},
		{"set strings", newSet("a", "b", "17", "c"), TypeSet},
		{"set intset converted", newSet(ints...), TypeSet},
		{"hash listpack", newHash("f1", "v1", "f2", "2", "", "empty field"), TypeHashListpack},
		{"hash table long value", newHash("f", strings.Repeat("v", 100), "g", "w"), TypeHash},
		{"hash table many fields", newHash(numbered("k", 1200)...), TypeHash},
		{"zset listpack", newZSet(5, func(i int) string { return big[i] }, func(i int) float64 { return float64(i) / 3 }), TypeZSetListpack},
		{"zset listpack infinities", newZSet(3, func(i int) string { return big[i] }, func(i int) float64 { return []float64{math.Inf(-1), 0, math.Inf(1)}[i] }), TypeZSetListpack},
		{"zset skiplist", newZSet(300, func(i int) string { return big[i] }, func(i int) float64 { return float64(i%17) - 0.25 }), TypeZSet2},
		{"zset skiplist long member", newZSet(2, func(i int) string { return strings.Repeat("m", 80) + strconv.Itoa(i) }, func(i int) float64 { return float64(i) }), TypeZSet2},
		{"stream", sampleStream(), TypeStreamLP2},
		{"stream empty", store.NewStreamEntry(store.NewStream()), TypeStreamLP2},
	}
}

// TestEntryRoundTrip writes every type through DUMP's payload and an RDB
// file's record, decodes it, builds the entry back, and compares the two
// field by field.
func TestEntryRoundTrip(t *testing.T) {
	for _, tc := range roundTripCases() {
		t.Run(tc.name, func(t *testing.T) {
			want := viewOf(tc.e)
			typ, ok := EntryType(tc.e)
			if !ok || typ != tc.typ {
				t.Fatalf("EntryType = %d, %v; want %d", typ, ok, tc.typ)
			}

			p := Dump(tc.e, int(defaultLimits.ListFill))
			v, err := Decode(p)
			if err != nil {
				t.Fatalf("Decode(Dump): %v", err)
			}
			if v.Type != tc.typ {
				t.Fatalf("decoded type %d, want %d", v.Type, tc.typ)
			}
			compareViews(t, "dump", want, NewEntry(v, defaultLimits))

			for _, enc := range []Enc{{}, {NoCompress: true}} {
				rec := enc.Record(nil, []byte("key"), tc.e, 1700000000123, int(defaultLimits.ListFill))
				n := 0
				err := ReadRecords(rec, 0, func(r *Record) error {
					n++
					if string(r.Key) != "key" || !r.HasExpire || r.Expire != 1700000000123 {
						t.Errorf("record key %q expire %v %d", r.Key, r.HasExpire, r.Expire)
					}
					compareViews(t, fmt.Sprintf("record %+v", enc), want, NewEntry(r.Value, defaultLimits))
					return nil
				})
				if err != nil || n != 1 {
					t.Fatalf("ReadRecords: %d records, %v", n, err)
				}
			}
		})
	}
}

func compareViews(t *testing.T, how string, want entryView, got *store.Entry) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: NewEntry returned nil", how)
	}
	g := viewOf(got)
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(g)
	for i := range wv.NumField() {
		if w, g := wv.Field(i).Interface(), gv.Field(i).Interface(); !reflect.DeepEqual(w, g) {
			t.Errorf("%s: %s differs:\n got  %#v\n want %#v", how, wv.Type().Field(i).Name, g, w)
		}
	}
}

// TestNewEntryLimits: a decoded value takes the encoding the limits pick,
// whatever it was written from, and values Redis refuses are refused.
func TestNewEntryLimits(t *testing.T) {
	small := Limits{ListFill: 4, SetMaxIntset: 2, ZSetMaxEntries: 2, ZSetMaxValue: 3, HashMaxEntries: 2, HashMaxValue: 3}
	cases := []struct {
		name string
		p    []byte
		lim  Limits
		enc  string // "" when the value is refused
	}{
		{"intset within", Finish(append([]byte{TypeSetIntset}, Enc{}.Intset(nil, []int64{1, 2})...)), small, "intset"},
		{"intset over", Finish(append([]byte{TypeSetIntset}, Enc{}.Intset(nil, []int64{1, 2, 3})...)), small, "hashtable"},
		{"set of ints within", EncodeSet(2, slices.Values([][]byte{[]byte("1"), []byte("2")})), small, "intset"},
		{"set duplicate", EncodeSet(2, slices.Values([][]byte{[]byte("a"), []byte("a")})), defaultLimits, ""},
		{"hash listpack kept past value limit", EncodeHashListpack(pairs("f", "long value")), small, "listpack"},
		{"hash listpack over entries", EncodeHashListpack(pairs("a", "1", "b", "2", "c", "3")), small, "hashtable"},
		{"hash plain within", EncodeHash(1, pairs("f", "v")), small, "listpack"},
		{"hash plain long value", EncodeHash(1, pairs("f", "long value")), small, "hashtable"},
		{"hash duplicate", EncodeHash(2, pairs("f", "1", "f", "2")), defaultLimits, ""},
		{"zset listpack over entries", EncodeZSetListpack(scored("a", 1, "b", 2, "c", 3)), small, "skiplist"},
		{"zset plain long member", EncodeZSet(1, scored("long", 1)), small, "skiplist"},
		{"zset plain within", EncodeZSet(2, scored("b", 2, "a", 1)), small, "listpack"},
		{"zset duplicate", EncodeZSetListpack(scored("a", 1, "a", 2)), defaultLimits, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Decode(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			e := NewEntry(v, tc.lim)
			switch {
			case tc.enc == "" && e != nil:
				t.Fatalf("accepted, want refused")
			case tc.enc == "":
			case e == nil:
				t.Fatalf("refused, want %s", tc.enc)
			case viewOf(e).Encoding != tc.enc:
				t.Fatalf("encoding %s, want %s", viewOf(e).Encoding, tc.enc)
			}
		})
	}
}

func pairs(kv ...string) func(func([]byte, []byte) bool) {
	return func(yield func([]byte, []byte) bool) {
		for i := 0; i < len(kv); i += 2 {
			if !yield([]byte(kv[i]), []byte(kv[i+1])) {
				return
			}
		}
	}
}

func scored(ms ...any) func(func([]byte, float64) bool) {
	return func(yield func([]byte, float64) bool) {
		for i := 0; i < len(ms); i += 2 {
			if !yield([]byte(ms[i].(string)), float64(ms[i+1].(int))) {
				return
			}
		}
	}
}
