package longdouble

import (
	"math/big"
	"testing"
)

func TestParseFormat(t *testing.T) {
	cases := []struct {
		in   string
		ok   bool
		want string // Format of the parsed value
	}{
		{"10.5", true, "10.5"},
		{"-0", true, "0"},
		{"+3", true, "3"},
		{"5.0e3", true, "5000"},
		{"0x10", true, "16"},
		{"0x1.8p1", true, "3"},
		{"1e4000", true, ""},
		{"inf", true, "+Inf"},
		{"-Infinity", true, "-Inf"},
		{"1e5000", false, ""},  // beyond the extended range
		{"1e-5000", false, ""}, // underflows to zero
		{"", false, ""},
		{" 1", false, ""},
		{"1 ", false, ""},
		{"nan", false, ""},
		{"1.2.3", false, ""},
		{"0x", false, ""},
		{"abc", false, ""},
	}
	for _, c := range cases {
		z := New()
		ok := Parse(z, []byte(c.in))
		if ok != c.ok {
			t.Errorf("Parse(%q) = %v, want %v", c.in, ok, c.ok)
			continue
		}
		if ok && c.want != "" {
			if got := string(Format(nil, z)); got != c.want {
				t.Errorf("Format(Parse(%q)) = %q, want %q", c.in, got, c.want)
			}
		}
	}
}

// The sums INCRBYFLOAT returns, as redis-server 7.0 on x86-64 returns them.
func TestSums(t *testing.T) {
	cases := []struct{ a, b, want string }{
		{"10.5", "0.1", "10.6"},
		{"3.0e3", "200", "3200"},
		{"1", "-1", "0"},
		{"0.1", "0.2", "0.3"},
		{"5.0e3", "2.0e2", "5200"},
	}
	for _, c := range cases {
		a, b := New(), New()
		if !Parse(a, []byte(c.a)) || !Parse(b, []byte(c.b)) {
			t.Fatalf("parse %s, %s", c.a, c.b)
		}
		a.Add(a, b)
		if got := string(Format(nil, a)); got != c.want {
			t.Errorf("%s + %s = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	big1 := New().SetMantExp(big.NewFloat(1), maxExp)
	if !Overflows(big1) {
		t.Error("2^16384 does not overflow")
	}
}
