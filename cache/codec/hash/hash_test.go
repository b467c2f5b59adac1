package hash

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/cache/internal/fixtures"
)

func pairs(t *testing.T, fields []string) map[string]string {
	t.Helper()
	if len(fields)%2 != 0 {
		t.Fatalf("odd field list %q", fields)
	}
	m := map[string]string{}
	for i := 0; i < len(fields); i += 2 {
		if _, dup := m[fields[i]]; dup {
			t.Fatalf("field %s twice", fields[i])
		}
		m[fields[i]] = fields[i+1]
	}
	return m
}

func TestFieldNamesFlattened(t *testing.T) {
	c, err := New[fixtures.LargeNested]()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"id",
		"owner.name", "owner.email", "owner.age",
		"owner.address.street", "owner.address.city", "owner.address.country", "owner.address.zip",
		"owner.address.geo.lat", "owner.address.geo.lng",
		"billing.street", "billing.city", "billing.country", "billing.zip", "billing.geo.lat", "billing.geo.lng",
		"items", "labels", "parent.id", "parent.name", "parent.active", "created", "note"}
	if got := c.Fields(); !slices.Equal(got, want) {
		t.Errorf("Fields() =\n%q\nwant\n%q", got, want)
	}
	c2, err := New[*fixtures.LargeNested](WithSeparator("__"), WithTag("json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c2.Fields(); got[4] != "owner__address__street" {
		t.Errorf("with separator __: %q", got)
	}
}

type Inner struct {
	A int `redis:"a"`
	B string
}

type embedded struct {
	E1 string `redis:"e1"`
}

type kinds struct {
	embedded
	Inner     `redis:"in"`
	Str       string            `redis:"str"`
	Bytes     []byte            `redis:"bytes"`
	Bool      bool              `redis:"bool"`
	I8        int8              `redis:"i8"`
	U16       uint16            `redis:"u16"`
	F32       float32           `redis:"f32"`
	F64       float64           `redis:"f64"`
	PInt      *int              `redis:"pint"`
	PStr      *string           `redis:"pstr,omitempty"`
	PTime     *time.Time        `redis:"ptime"`
	Time      time.Time         `redis:"time"`
	Dur       time.Duration     `redis:"dur"`
	Arr       [3]int            `redis:"arr"`
	Any       any               `redis:"any"`
	Map       map[string][]int  `redis:"map"`
	Omit      string            `redis:"omit,omitempty"`
	Skip      string            `redis:"-"`
	NoTag     int               //
	Ptr       *Inner            `redis:"ptr"`
	Self      *kinds            `redis:"self"` // recursive: stored as JSON
	Labels    map[string]string `redis:"labels"`
	unexposed int
}

func TestAllKindsRoundTrip(t *testing.T) {
	c, err := New[kinds]()
	if err != nil {
		t.Fatal(err)
	}
	seven := 7
	ts := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	v := kinds{
		embedded: embedded{E1: "e"},
		Inner:    Inner{A: 1, B: "b"},
		Str:      "s\x00ü", Bytes: []byte{0, 255}, Bool: true, I8: -128, U16: 65535,
		F32: math.SmallestNonzeroFloat32, F64: math.NaN(),
		PInt: &seven, PTime: &ts, Time: ts, Dur: -time.Hour,
		Arr: [3]int{1, 2, 3}, Any: "x", Map: map[string][]int{"k": {1}},
		Skip: "skipped", NoTag: 9, Ptr: &Inner{A: 5},
		Self: &kinds{Str: "child"},
	}
	fields, err := c.AppendFields(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	m := pairs(t, fields)
	want := map[string]string{
		"e1": "e", "in.a": "1", "in.B": "b", "str": "s\x00ü", "bytes": "\x00\xff", "bool": "1",
		"i8": "-128", "u16": "65535", "f32": "1e-45", "f64": "NaN", "pint": "7",
		"ptime": "2001-02-03T04:05:06.000000007Z", "time": "2001-02-03T04:05:06.000000007Z",
		"dur": "-3600000000000", "arr": "[1,2,3]", "any": `"x"`, "map": `{"k":[1]}`, "NoTag": "9",
		"ptr.a": "5", "ptr.B": "",
	}
	for k, w := range want {
		if m[k] != w {
			t.Errorf("field %s = %q, want %q", k, m[k], w)
		}
	}
	for _, absent := range []string{"pstr", "omit", "Skip", "skip", "labels", "unexposed"} {
		if _, ok := m[absent]; ok {
			t.Errorf("field %s present", absent)
		}
	}
	if !strings.Contains(m["self"], `"Str":"child"`) {
		t.Errorf("recursive field stored as %q", m["self"])
	}

	var got kinds
	if err := c.DecodeFields(m, &got); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(got.F64) {
		t.Errorf("F64 = %v", got.F64)
	}
	got.F64, v.F64 = 0, 0
	v.Skip = ""
	if got.Self == nil || got.Self.Str != "child" {
		t.Errorf("Self = %+v", got.Self)
	}
	got.Self, v.Self = nil, nil
	if !got.Time.Equal(v.Time) || !got.PTime.Equal(*v.PTime) {
		t.Errorf("times %v %v", got.Time, got.PTime)
	}
	got.Time, v.Time, got.PTime, v.PTime = time.Time{}, time.Time{}, nil, nil
	if !reflect.DeepEqual(got, v) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", got, v)
	}
}

func TestNilPointerStruct(t *testing.T) {
	c, _ := New[fixtures.LargeNested]()
	v := fixtures.NewLargeNested()
	v.Billing, v.Parent = nil, nil
	fields, err := c.AppendFields(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(fields); i += 2 {
		if strings.HasPrefix(fields[i], "billing.") || strings.HasPrefix(fields[i], "parent.") {
			t.Errorf("nil pointer wrote field %s", fields[i])
		}
	}
	var got fixtures.LargeNested
	if err := c.DecodeFields(pairs(t, fields), &got); err != nil {
		t.Fatal(err)
	}
	if got.Billing != nil || got.Parent != nil {
		t.Errorf("nil pointers came back as %+v %+v", got.Billing, got.Parent)
	}
	// Fields the type does not have are ignored; missing ones stay zero.
	if err := c.DecodeFields(map[string]string{"zzz": "1", "billing.city": "X"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Billing == nil || got.Billing.City != "X" {
		t.Errorf("billing = %+v", got.Billing)
	}
}

func TestErrors(t *testing.T) {
	if _, err := New[int](); err == nil {
		t.Error("New[int] succeeded")
	}
	if _, err := New[struct{ C chan int }](); err == nil {
		t.Error("a chan field was accepted")
	}
	if _, err := New[struct {
		A int `redis:"x"`
		B int `redis:"x"`
	}](); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("duplicate names: %v", err)
	}
	pc, _ := New[*fixtures.Small]()
	if _, err := pc.AppendFields(nil, nil); err == nil {
		t.Error("nil *T encoded")
	}
	var got *fixtures.Small
	if err := pc.DecodeFields(map[string]string{"id": "3"}, &got); err != nil || got == nil || got.ID != 3 {
		t.Errorf("decode into *T: %+v, %v", got, err)
	}
	c, _ := New[kinds]()
	for field, val := range map[string]string{"i8": "128", "u16": "-1", "bool": "yes", "f32": "x", "time": "yesterday", "arr": "[1", "pint": "p"} {
		var v kinds
		err := c.DecodeFields(map[string]string{field: val}, &v)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s=%q: error %v", field, val, err)
		}
	}
}
