package server

import (
	"math/rand/v2"

	"github.com/sluicedb/sluice/lolwut"
)

// lolwutCommand is LOLWUT [VERSION v] [args]: version 5's Schotter
// (LOLWUT VERSION 5 [cols [squares-per-row [squares-per-col]]], by default
// 66, 8, 12), version 6's skyline (LOLWUT VERSION 6 [cols [rows]], by
// default 80, 20), and otherwise, as for this server's own version, the
// version line alone. Sizes are clamped as Redis clamps them.
func lolwutCommand(c *Client, args [][]byte) {
	version := uint32(7)
	if len(args) >= 3 && eq(args[1], "version") {
		v, ok := c.intArg(args[2])
		if !ok {
			return
		}
		version = uint32(v) // Redis prints it as unsigned
		args = args[2:]     // the version takes the command's place
	}
	ints := func(defaults ...int64) ([]int, bool) {
		out := make([]int, len(defaults))
		for i, d := range defaults {
			if i+1 < len(args) {
				v, ok := c.intArg(args[i+1])
				if !ok {
					return nil, false
				}
				d = v
			}
			out[i] = int(clamp(d, 1, 1000))
		}
		return out, true
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	switch version {
	case 5:
		a, ok := ints(66, 8, 12)
		if !ok {
			return
		}
		a[1], a[2] = min(a[1], 200), min(a[2], 200)
		c.w.Verbatim("txt", lolwut.Schotter(a[0], a[1], a[2], rng).Braille()+
			"\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. "+Version+"\n")
	case 6:
		a, ok := ints(80, 20)
		if !ok {
			return
		}
		c.w.Verbatim("txt", lolwut.Skyline(a[0], a[1], rng).Grays()+
			"\nDedicated to the 8 bit game developers of past and present.\n"+
			"Original 8 bit image from Plaguemon by hikikomori. Redis ver. "+Version+"\n")
	default:
		c.w.Verbatim("txt", "Redis ver. "+Version+"\n")
	}
}

func clamp(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }
