package server

import "testing"

// The histogram reports the bucket boundaries an HdrHistogram of 1 ns..1 s
// with two significant digits (Redis's) reports.
func TestLatencyHistPercentiles(t *testing.T) {
	for _, c := range []struct{ v, lowest, highest int64 }{
		{1, 1, 1},
		{255, 255, 255},
		{256, 256, 257},
		{23039, 22912, 23039}, // p50=23.039 as redis-server reported for a SET
		{23040, 23040, 23167},
		{999_999_999, 998244352, 1002438655},
	} {
		i := histIndex(c.v)
		if got := histValueAt(i); got != c.lowest {
			t.Errorf("lowest of %d = %d, want %d", c.v, got, c.lowest)
		}
		if got := histHighest(histValueAt(i)); got != c.highest {
			t.Errorf("highest of %d = %d, want %d", c.v, got, c.highest)
		}
	}
	var h latencyHist
	for _, ns := range []int64{0, 1000, 2000, 3000, 4000, 5e9} {
		h.record(ns)
	}
	var counts [histCounts]int64
	for k := range h.chunks {
		if ch := h.chunks[k].Load(); ch != nil {
			for j := range ch {
				counts[k*histSubHalf+j] = ch[j].Load()
			}
		}
	}
	for _, c := range []struct {
		p    float64
		want int64
	}{{0, 1}, {50, 2007}, {99, 1002438655}, {100, 1002438655}} {
		if got := histPercentile(&counts, 6, c.p); got != c.want {
			t.Errorf("p%v = %d, want %d", c.p, got, c.want)
		}
	}
}
