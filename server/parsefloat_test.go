package server

import (
	"math"
	"strconv"
	"testing"
)

// parseFloat's integer fast path must agree with the general strtod-like
// path bit for bit (sign of zero included), and the general path must
// still take what strconv takes (and hex floats without exponent).
func TestParseFloatFastPath(t *testing.T) {
	for _, in := range []string{
		"0", "-0", "+0", "1", "-1", "+7", "007", "-007", "123456789012345", "-123456789012345",
		"1234567890123456", "99999999999999999", "1.5", "-2.25", "1e3", "inf", "-inf", "+inf",
		"0x10", "-0x1p4", "", "-", "+", "1 ", " 1", "1a", "--1", "9223372036854775807",
	} {
		got, gotErr := parseFloat([]byte(in))
		want, wantErr := strconv.ParseFloat(hexFloat([]byte(in)), 64)
		if (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%q: error %v, want %v", in, gotErr, wantErr)
			continue
		}
		if gotErr == nil && math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%q: %v (%x), want %v (%x)", in, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	if f, err := parseFloat([]byte("0x10")); err != nil || f != 16 {
		t.Errorf("0x10: %v %v, want 16", f, err)
	}
}
