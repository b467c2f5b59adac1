package bitstr

import (
	"bytes"
	"testing"
)

func TestPopcountPos(t *testing.T) {
	cases := []struct {
		p              []byte
		count          int64
		first1, first0 int64
	}{
		{nil, 0, -1, 0},
		{[]byte{0x00}, 0, -1, 0},
		{[]byte{0xff}, 8, 0, 8},
		{[]byte{0xff, 0xf0, 0x00}, 12, 0, 12},
		{[]byte{0x00, 0x00, 0x01}, 1, 23, 0},
		{bytes.Repeat([]byte{0xff}, 17), 136, 0, 136},
		{append(bytes.Repeat([]byte{0}, 9), 0x40), 1, 73, 0},
	}
	for _, c := range cases {
		if got := Popcount(c.p); got != c.count {
			t.Errorf("Popcount(%x) = %d, want %d", c.p, got, c.count)
		}
		if got := Pos(c.p, 1); got != c.first1 {
			t.Errorf("Pos(%x, 1) = %d, want %d", c.p, got, c.first1)
		}
		if got := Pos(c.p, 0); got != c.first0 {
			t.Errorf("Pos(%x, 0) = %d, want %d", c.p, got, c.first0)
		}
	}
}

func TestAndOrXor(t *testing.T) {
	a := []byte{0xf0, 0x0f, 0xaa, 0x55, 1, 2, 3, 4, 5, 0xff}
	b := []byte{0xff, 0xff, 0x0f, 0xf0, 1, 1, 1, 1, 1, 0x0f}
	and, or, xor := append([]byte(nil), a...), append([]byte(nil), a...), append([]byte(nil), a...)
	And(and, b)
	Or(or, b)
	Xor(xor, b)
	for i := range a {
		if and[i] != a[i]&b[i] || or[i] != a[i]|b[i] || xor[i] != a[i]^b[i] {
			t.Fatalf("byte %d: and %x or %x xor %x", i, and[i], or[i], xor[i])
		}
	}
}

func TestBitfieldAccess(t *testing.T) {
	p := make([]byte, 4)
	SetUnsigned(p, 3, 5, 0x1b) // 11011 at bits 3..7
	if p[0] != 0x1b {
		t.Fatalf("SetUnsigned: %08b", p[0])
	}
	if got := GetUnsigned(p, 3, 5); got != 0x1b {
		t.Errorf("GetUnsigned = %d", got)
	}
	if got := GetSigned(p, 3, 5); got != -5 {
		t.Errorf("GetSigned = %d, want -5", got)
	}
	SetUnsigned(p, 6, 16, 0xabcd) // across three bytes
	if got := GetUnsigned(p, 6, 16); got != 0xabcd {
		t.Errorf("GetUnsigned across bytes = %x", got)
	}
}

func TestOverflow(t *testing.T) {
	cases := []struct {
		value uint64
		incr  int64
		bits  int
		ow    int
		over  int
		want  uint64
	}{
		{250, 10, 8, Wrap, 1, 4},
		{250, 10, 8, Sat, 1, 255},
		{5, -10, 8, Sat, -1, 0},
		{5, 10, 8, Wrap, 0, 15},
	}
	for _, c := range cases {
		over, got := UnsignedOverflow(c.value, c.incr, c.bits, c.ow)
		// Without an overflow the caller adds; the value is not returned.
		if over != c.over || (c.over != 0 && c.ow != Fail && got != c.want) {
			t.Errorf("UnsignedOverflow(%d, %d, u%d, %d) = %d, %d; want %d, %d", c.value, c.incr, c.bits, c.ow, over, got, c.over, c.want)
		}
	}
	if over, got := SignedOverflow(120, 10, 8, Wrap); over != 1 || got != -126 {
		t.Errorf("SignedOverflow wrap: %d %d", over, got)
	}
	if over, got := SignedOverflow(-120, -10, 8, Sat); over != -1 || got != -128 {
		t.Errorf("SignedOverflow sat: %d %d", over, got)
	}
}
