// Package lolwut draws the computer art of Redis's LOLWUT command: version
// 5's "Schotter" (after Georg Nees, 1968) in Braille characters, and
// version 6's city skyline in the four grays of a colour terminal. Both
// are random, as in Redis; what they look like for given arguments (the
// canvas's size, the rows that are not displaced) is Redis's.
package lolwut

import (
	"math"
	"math/rand/v2"
	"strings"
)

// Canvas is a grid of pixels of a few colours; drawing outside it does
// nothing.
type Canvas struct {
	w, h   int
	pixels []byte
}

// NewCanvas returns a w×h canvas filled with colour bg.
func NewCanvas(w, h int, bg byte) *Canvas {
	c := &Canvas{w: w, h: h, pixels: make([]byte, w*h)}
	for i := range c.pixels {
		c.pixels[i] = bg
	}
	return c
}

// Set colours the pixel at x, y.
func (c *Canvas) Set(x, y int, colour byte) {
	if x >= 0 && x < c.w && y >= 0 && y < c.h {
		c.pixels[x+y*c.w] = colour
	}
}

// At returns the pixel's colour (0 outside the canvas).
func (c *Canvas) At(x, y int) byte {
	if x < 0 || x >= c.w || y < 0 || y >= c.h {
		return 0
	}
	return c.pixels[x+y*c.w]
}

// Line draws a line from x1, y1 to x2, y2 (Bresenham's).
func (c *Canvas) Line(x1, y1, x2, y2 int, colour byte) {
	dx, dy := abs(x2-x1), abs(y2-y1)
	sx, sy := -1, -1
	if x1 < x2 {
		sx = 1
	}
	if y1 < y2 {
		sy = 1
	}
	err := dx - dy
	for {
		c.Set(x1, y1, colour)
		if x1 == x2 && y1 == y2 {
			return
		}
		e2 := err * 2
		if e2 > -dy {
			err -= dy
			x1 += sx
		}
		if e2 < dx {
			err += dx
			y1 += sy
		}
	}
}

// Square draws a square of side size centred on x, y and turned by angle
// radians: its corners lie on the circle through them, a quarter turn
// apart. (The arithmetic is in float32 where Redis's is.)
func (c *Canvas) Square(x, y int, size, angle float32, colour byte) {
	size = float32(math.Round(float64(size) / 1.4142135623))
	var px, py [4]int
	k := float32(math.Pi/4 + float64(angle))
	for j := range 4 {
		px[j] = int(math.Round(math.Sin(float64(k))*float64(size) + float64(x)))
		py[j] = int(math.Round(math.Cos(float64(k))*float64(size) + float64(y)))
		k = float32(float64(k) + math.Pi/2)
	}
	for j := range 4 {
		c.Line(px[j], py[j], px[(j+1)%4], py[(j+1)%4], colour)
	}
}

// Schotter draws, for a terminal cols wide, perRow × perCol squares whose
// turn and displacement grow at random down the rows (the first two rows
// stay in order).
func Schotter(cols, perRow, perCol int, rng *rand.Rand) *Canvas {
	w := cols * 2
	pad := 0
	if w > 4 {
		pad = 2
	}
	side := float32(w-pad*2) / float32(perRow)
	c := NewCanvas(w, int(side*float32(perCol)+float32(pad*2)), 0)
	for y := range perCol {
		for x := range perRow {
			sx := int(float32(x)*side + side/2 + float32(pad))
			sy := int(float32(y)*side + side/2 + float32(pad))
			var angle float32
			if y > 1 {
				r := func() float32 { return rng.Float32() / float32(perCol) * float32(y) }
				r1, r2, r3 := r(), r(), r()
				if rng.IntN(2) == 1 {
					r1 = -r1
				}
				if rng.IntN(2) == 1 {
					r2 = -r2
				}
				if rng.IntN(2) == 1 {
					r3 = -r3
				}
				angle = r1
				sx = int(float32(sx) + r2*side/3)
				sy = int(float32(sy) + r3*side/3)
			}
			c.Square(sx, sy, side, angle, 1)
		}
	}
	return c
}

// Braille renders a two-colour canvas in Braille characters, each a 2×4
// block of pixels, a line of text for every four rows.
func (c *Canvas) Braille() string {
	var b strings.Builder
	// The dot each pixel of a block lights, by its place: column, row.
	dots := [2][4]rune{{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}}
	for y := 0; y < c.h; y += 4 {
		for x := 0; x < c.w; x += 2 {
			r := rune(0x2800)
			for dx := range 2 {
				for dy := range 4 {
					if c.At(x+dx, y+dy) != 0 {
						r |= dots[dx][dy]
					}
				}
			}
			b.WriteRune(r)
		}
		if y != c.h-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Skyline draws skyscrapers on a cols × rows canvas of white sky: two
// rows of grey ones without windows behind, the lighter further back, and
// black ones with grey windows in front.
func Skyline(cols, rows int, rng *rand.Rand) *Canvas {
	c := NewCanvas(cols, rows, 3)
	for colour := byte(2); colour >= 1; colour-- {
		for off := -10; off < c.w; {
			off += rng.IntN(8)
			s := skyscraper{x: off, w: 10 + rng.IntN(9), colour: colour}
			if colour == 2 {
				s.h = c.h/2 + rng.IntN(c.h)/2
			} else {
				s.h = c.h/2 + rng.IntN(c.h)/3
			}
			c.skyscraper(s, rng)
			if colour == 2 {
				off += s.w / 2
			} else {
				off += s.w + 1
			}
		}
	}
	for off := -10; off < c.w; {
		off += rng.IntN(8)
		s := skyscraper{x: off, w: 5 + rng.IntN(14), windows: true}
		if s.w%4 != 0 {
			s.w += s.w % 3
		}
		s.h = c.h/3 + rng.IntN(c.h)/2
		c.skyscraper(s, rng)
		off += s.w + 5
	}
	return c
}

type skyscraper struct {
	x, w, h int
	windows bool
	colour  byte
}

// skyscraper draws s standing on the canvas's bottom row: a roof two
// pixels narrower on each side, and windows two pixels wide in random
// greys, away from its edges.
func (c *Canvas) skyscraper(s skyscraper, rng *rand.Rand) {
	bottom := c.h - 1
	top := bottom - s.h + 1
	for y := bottom; y >= top; y-- {
		for x := s.x; x < s.x+s.w; x++ {
			if y == top && (x <= s.x+1 || x >= s.x+s.w-2) {
				continue
			}
			colour := s.colour
			if s.windows && x > s.x+1 && x < s.x+s.w-2 && y > top+1 && y < bottom-1 {
				relx, rely := x-(s.x+1), y-(top+1)
				if relx/2%2 == 1 && rely%2 == 1 {
					for colour == s.colour {
						colour = byte(1 + rng.IntN(2))
					}
					if relx%2 == 1 {
						colour = c.At(x-1, y)
					}
				}
			}
			c.Set(x, y, colour)
		}
	}
}

// Grays renders a canvas of four greys as terminal cells, a space with
// the grey as foreground and background colour, a line for each row.
func (c *Canvas) Grays() string {
	escapes := [4]string{"0;30;40m", "0;90;100m", "0;37;47m", "0;97;107m"}
	var b strings.Builder
	for y := range c.h {
		for x := range c.w {
			e := escapes[0]
			if p := c.At(x, y); p < 4 {
				e = escapes[p]
			}
			b.WriteString("\033[" + e + " \033[0m")
		}
		if y != c.h-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
