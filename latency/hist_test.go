package latency

import (
	"strings"
	"testing"
)

// The histogram reports the bucket boundaries an HdrHistogram of 1 ns..1 s
// with two significant digits (Redis's) reports.
func TestBuckets(t *testing.T) {
	for _, c := range []struct{ v, lowest, highest int64 }{
		{1, 1, 1},
		{255, 255, 255},
		{256, 256, 257},
		{23039, 22912, 23039}, // p50=23.039 as redis-server reported for a SET
		{23040, 23040, 23167},
		{999_999_999, 998244352, 1002438655},
	} {
		i := index(c.v)
		if got := valueAt(i); got != c.lowest {
			t.Errorf("lowest of %d = %d, want %d", c.v, got, c.lowest)
		}
		if got := highest(valueAt(i)); got != c.highest {
			t.Errorf("highest of %d = %d, want %d", c.v, got, c.highest)
		}
	}
}

func TestPercentiles(t *testing.T) {
	var h Hist
	for _, ns := range []int64{0, 1000, 2000, 3000, 4000, 5e9} {
		h.Record(ns)
	}
	var counts Counts
	counts.Add(&h)
	if counts.Total != 6 {
		t.Fatalf("total %d", counts.Total)
	}
	for _, c := range []struct {
		p    float64
		want int64
	}{{0, 1}, {50, 2007}, {99, 1002438655}, {100, 1002438655}} {
		if got := counts.Percentile(c.p); got != c.want {
			t.Errorf("p%v = %d, want %d", c.p, got, c.want)
		}
	}
	var b strings.Builder
	counts.WritePercentiles(&b, []float64{50, 99.9}, []string{"50", "99.9"})
	if got, want := b.String(), "p50=2.007,p99.9=1002438.655"; got != want {
		t.Errorf("percentiles %q, want %q", got, want)
	}
}

// Histograms of several slots add up, and a histogram is allocated on
// its first record only.
func TestRecordAndAdd(t *testing.T) {
	var a, b Hist
	a.Record(1500)
	b.Record(1500)
	b.Record(1_000_000)
	var counts Counts
	counts.Add(&a)
	counts.Add(&b)
	if counts.Total != 3 || counts.Percentile(50) != highest(valueAt(index(1500))) {
		t.Errorf("total %d p50 %d", counts.Total, counts.Percentile(50))
	}
}

func TestCDF(t *testing.T) {
	cases := []struct {
		name string
		ns   []int64
		want []Point
	}{
		{"none", nil, nil},
		{"one fast", []int64{100}, []Point{{1, 1}}},
		// Each point is the level it was reached at (a power of two of ns,
		// to its bucket's highest value), not the durations' own buckets.
		{"spread", []int64{100, 1500, 1500, 3000, 1_000_000},
			[]Point{{1, 1}, {2, 3}, {4, 4}, {1056, 5}}},
		{"clamped to a second", []int64{5e9}, []Point{{1073741, 1}}},
	}
	for _, c := range cases {
		var h Hist
		for _, ns := range c.ns {
			h.Record(ns)
		}
		var counts Counts
		counts.Add(&h)
		got := counts.CDF()
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}
