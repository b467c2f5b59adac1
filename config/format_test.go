package config

import (
	"math"
	"testing"

	"github.com/sluicedb/sluice/internal/sdsargs"
)

// rewriteConfigFormatMemory's units, and the quoting of sdscatrepr,
// which sdssplitargs reads back.
func TestRewriteFormats(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{0, "0"}, {1, "1"}, {1000, "1000"}, {1023, "1023"}, {1024, "1kb"}, {1536, "1536"}, {3072, "3kb"},
		{1 << 20, "1mb"}, {1536 << 10, "1536kb"}, {100 << 20, "100mb"}, {1 << 30, "1gb"}, {3 << 30, "3gb"},
		{1 << 40, "1024gb"}, {1<<30 + 1<<20, "1025mb"}, {1000000000, "1000000000"},
		{math.MaxInt64, "9223372036854775807"},
		// Past LLONG_MAX Redis writes negative numbers it cannot read
		// back; Sluice writes the bytes.
		{1 << 63, "9223372036854775808"}, {math.MaxUint64, "18446744073709551615"},
	} {
		if got := formatMemory(tc.n); got != tc.want {
			t.Errorf("formatMemory(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"a b", `"a b"`},
		{`q"\`, `"q\"\\"`},
		{"\n\r\t\a\b", `"\n\r\t\a\b"`},
		{"\x00\x01\x1f\x7f\x80\xff", `"\x00\x01\x1f\x7f\x80\xff"`},
		{"{title} ~", `"{title} ~"`},
	} {
		got := sdsargs.Repr(tc.in)
		if got != tc.want {
			t.Errorf("Repr(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if back, ok := sdsargs.Split(got); !ok || len(back) != 1 || back[0] != tc.in {
			t.Errorf("%s reads back as %q", got, back)
		}
	}
	p := paramByName["maxmemory-clients"]
	for in, want := range map[string]string{"0": "0", "10%": "10%", "2097152": "2mb", "1000": "1000"} {
		if got := p.rewriteNumber(in); got != want {
			t.Errorf("maxmemory-clients %s written as %q, want %q", in, got, want)
		}
	}
	if got := paramByName["unixsocketperm"].rewriteNumber("700"); got != "700" {
		t.Errorf("unixsocketperm 700 written as %q", got)
	}
}

// strtoll and strtod as Redis's setters read numbers.
func TestCNumbers(t *testing.T) {
	for _, tc := range []struct {
		in        string
		n         int64
		ok, erang bool
	}{
		{"", 0, true, false}, {" ", 0, false, false}, {"12", 12, true, false}, {" +12", 12, true, false}, {"-3", -3, true, false},
		{"12x", 0, false, false}, {"99999999999999999999", math.MaxInt64, true, true}, {"-99999999999999999999", math.MinInt64, true, true},
	} {
		n, ok, erang := strtoll(tc.in, 10)
		if n != tc.n && tc.ok || ok != tc.ok || erang != tc.erang {
			t.Errorf("strtoll(%q) = %d %v %v", tc.in, n, ok, erang)
		}
	}
	for _, tc := range []struct {
		in string
		f  float64
		ok bool
	}{
		{"50", 50, true}, {"99.9", 99.9, true}, {".5", .5, true}, {"5.", 5, true}, {"+7", 7, true}, {"-0", 0, true},
		{"0x10", 16, true}, {"0X1P3", 8, true}, {"0x1.8", 1.5, true}, {"1e-310", 1e-310, true}, {"0e5", 0, true}, {"0x0p9", 0, true}, {"inf", math.Inf(1), true},
		{"", 0, false}, {" 5", 0, false}, {"5 ", 0, false}, {"1e-400", 0, false}, {"1e400", 0, false}, {"nan", 0, false}, {"0x", 0, false}, {"1_0", 0, false}, {"abc", 0, false},
	} {
		f, ok := string2d(tc.in)
		if ok != tc.ok || ok && f != tc.f {
			t.Errorf("string2d(%q) = %v %v", tc.in, f, ok)
		}
	}
}
