package lolwut

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// A Schotter canvas is twice the columns wide, with two pixels of margin,
// and as tall as its rows of squares; its Braille text has a character
// for every 2×4 pixels; its first two rows are not displaced, so they are
// the same whatever the random numbers.
func TestSchotter(t *testing.T) {
	a := Schotter(40, 6, 6, rand.New(rand.NewPCG(1, 2)))
	b := Schotter(40, 6, 6, rand.New(rand.NewPCG(3, 4)))
	side := float32(76) / 6
	if a.w != 80 || a.h != int(side*6+4) {
		t.Fatalf("canvas %dx%d", a.w, a.h)
	}
	lines := strings.Split(a.Braille(), "\n")
	if len(lines) != (a.h+3)/4+1 || utf8.RuneCountInString(lines[0]) != 40 {
		t.Fatalf("%d lines of %d characters", len(lines), utf8.RuneCountInString(lines[0]))
	}
	// Text lines above where a third-row square can reach (turned, its
	// corners are side/√2 from its centre, moved up by at most side/9).
	top := int(side*2.5+2-side/1.41-side/9) / 4
	bl := strings.Split(b.Braille(), "\n")
	for i := 0; i < top; i++ {
		if lines[i] != bl[i] {
			t.Errorf("line %d differs between two seeds: %q, %q", i, lines[i], bl[i])
		}
	}
	if a.Braille() == b.Braille() {
		t.Error("two seeds drew the same picture")
	}
	for i := 0; i < a.w; i++ {
		if a.At(i, 0) != 0 || a.At(i, 1) != 0 {
			t.Fatalf("pixel in the top margin at x=%d", i)
		}
	}
}

// A skyline fills the canvas with four greys, black buildings along the
// bottom row, and renders a coloured cell per pixel.
func TestSkyline(t *testing.T) {
	c := Skyline(30, 12, rand.New(rand.NewPCG(5, 6)))
	seen := map[byte]bool{}
	for _, p := range c.pixels {
		if p > 3 {
			t.Fatalf("colour %d", p)
		}
		seen[p] = true
	}
	if !seen[0] || !seen[3] {
		t.Errorf("colours drawn: %v", seen)
	}
	lines := strings.Split(c.Grays(), "\n")
	if len(lines) != 12 || strings.Count(lines[0], " \033[0m") != 30 {
		t.Fatalf("%d lines, %d cells in the first", len(lines), strings.Count(lines[0], " \033[0m"))
	}
}

// Line draws both ends and every step between, in any direction, and
// drawing off the canvas does nothing.
func TestLine(t *testing.T) {
	c := NewCanvas(10, 10, 0)
	c.Line(8, 1, 1, 8, 1)
	for i := 1; i <= 8; i++ {
		if c.At(9-i, i) != 1 {
			t.Errorf("no pixel at %d,%d", 9-i, i)
		}
	}
	c.Line(-5, -5, 20, 20, 1)
	if c.At(0, 0) != 1 || c.At(9, 9) != 1 {
		t.Error("clipped line missing")
	}
}
