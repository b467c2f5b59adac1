package bench

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i) // 100..1, unsorted on purpose
	}
	for _, tc := range []struct{ q, want float64 }{
		{50, 50}, {95, 95}, {99, 99}, {99.9, 100}, {100, 100}, {1, 1}, {0.1, 1}, {0, 1},
	} {
		if got := Percentile(xs, tc.q); got != tc.want {
			t.Errorf("Percentile(1..100, %v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if xs[0] != 100 {
		t.Error("Percentile reordered its input")
	}
	// Nearest rank on a short list: ceil(0.5*5)=3rd value.
	if got := Percentile([]float64{5, 1, 4, 2, 3}, 50); got != 3 {
		t.Errorf("p50 of 1..5 = %v, want 3", got)
	}
	if got := Percentile([]float64{10, 20, 30, 40}, 75); got != 30 {
		t.Errorf("p75 of 10..40 = %v, want 30", got)
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("Percentile(nil) should be NaN")
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{100, 1, 2}, 2}, // one outlier round does not move it
		{[]float64{1, 1, 5, 5}, 3},
	} {
		in := append([]float64(nil), tc.xs...)
		if got := Median(in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.xs[i] {
				t.Errorf("Median reordered its input: %v", in)
			}
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) should be NaN")
	}
}

func TestMedianOfRounds(t *testing.T) {
	rounds := []Measurement{
		{RPS: 100, AvgMs: 1.0, P50Ms: 0.9, P95Ms: 2, P99Ms: 3, MaxMs: 9},
		{RPS: 300, AvgMs: 0.5, P50Ms: 0.4, P95Ms: 1, P99Ms: 8, MaxMs: 4},
		{RPS: 200, AvgMs: 2.0, P50Ms: 0.7, P95Ms: 5, P99Ms: 1, MaxMs: 6},
	}
	got := medianOf(rounds)
	want := Measurement{RPS: 200, AvgMs: 1.0, P50Ms: 0.7, P95Ms: 2, P99Ms: 3, MaxMs: 6}
	if got != want {
		t.Errorf("medianOf = %+v, want %+v (each metric's own median)", got, want)
	}
}

func TestRatio(t *testing.T) {
	if got := Ratio(118343.19, 160513.64); math.Abs(got-0.7372) > 0.0001 {
		t.Errorf("Ratio = %v, want 0.7372", got)
	}
	if got := Ratio(3, 2); got != 1.5 {
		t.Errorf("Ratio(3,2) = %v", got)
	}
	for _, r := range []float64{Ratio(1, 0), Ratio(math.NaN(), 1), Ratio(1, math.NaN())} {
		if !math.IsNaN(r) {
			t.Errorf("want NaN, got %v", r)
		}
	}
	if got := fmtRatio(0.263, 0.407); got != "64.6%" {
		t.Errorf("fmtRatio = %q, want 64.6%%", got)
	}
	if got := fmtRatio(1, 0); got != "n/a" {
		t.Errorf("fmtRatio(1,0) = %q", got)
	}
}

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for v := uint64(0); v < 1<<22; v += 1 + v/97 {
		i := histIndex(v)
		if i < prev {
			t.Fatalf("index not monotonic at %d", v)
		}
		prev = i
		lo, hi := histBounds(i)
		if v < lo || v > hi {
			t.Fatalf("value %d outside its bucket [%d,%d]", v, lo, hi)
		}
		if width := hi - lo + 1; width > 1 && float64(width) > float64(lo)/float64(histSub)+1 {
			t.Fatalf("bucket [%d,%d] too wide for 1/%d precision", lo, hi, histSub)
		}
	}
	for _, v := range []uint64{math.MaxUint64, 1 << 63, 1<<40 + 12345} {
		i := histIndex(v)
		if i >= histBuckets {
			t.Fatalf("index %d of %d out of range", i, v)
		}
		if lo, hi := histBounds(i); v < lo || v > hi {
			t.Fatalf("value %d outside its bucket [%d,%d]", v, lo, hi)
		}
	}
}

func TestHistogramPercentiles(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var h, a, b Histogram
	xs := make([]float64, 0, 50000)
	var sum float64
	for i := 0; i < 50000; i++ {
		// A long-tailed latency-like distribution, 10µs .. ~100ms.
		v := time.Duration(10000 * math.Exp(r.Float64()*r.Float64()*9))
		xs = append(xs, float64(v))
		sum += float64(v)
		h.Record(v)
		if i%2 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(&b)
	for _, q := range []float64{50, 90, 95, 99, 99.9, 100} {
		exact := Percentile(xs, q)
		got := float64(h.Percentile(q))
		if math.Abs(got-exact)/exact > 1.0/histSub {
			t.Errorf("p%v = %v, exact %v (off by more than 1/%d)", q, got, exact, histSub)
		}
		if a.Percentile(q) != h.Percentile(q) {
			t.Errorf("merged p%v = %v, want %v", q, a.Percentile(q), h.Percentile(q))
		}
	}
	if h.Count() != 50000 || a.Count() != 50000 {
		t.Errorf("counts %d %d", h.Count(), a.Count())
	}
	if got, want := float64(h.Mean()), sum/50000; math.Abs(got-want) > 1 {
		t.Errorf("mean %v, want %v", got, want)
	}
	if float64(h.Max()) != Percentile(xs, 100) || float64(h.Min()) != Percentile(xs, 0) {
		t.Errorf("min/max %v %v", h.Min(), h.Max())
	}
	var empty Histogram
	if empty.Percentile(99) != 0 || empty.Mean() != 0 {
		t.Error("empty histogram should report zeros")
	}
}

func TestGroupDigits(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 964066.4: "964,066", 1234567.6: "1,234,568", -4500: "-4,500"} {
		if got := groupDigits(in); got != want {
			t.Errorf("groupDigits(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestParseLists(t *testing.T) {
	ints, err := ParseInts("10, 50,100")
	if err != nil || len(ints) != 3 || ints[2] != 100 {
		t.Errorf("ParseInts = %v, %v", ints, err)
	}
	if _, err := ParseInts("10,x"); err == nil {
		t.Error("ParseInts accepted x")
	}
	if _, err := ParseInts("0"); err == nil {
		t.Error("ParseInts accepted 0")
	}
	ds, err := ParseDurations("0,100us,1ms")
	if err != nil || len(ds) != 3 || ds[0] != 0 || ds[1] != 100*time.Microsecond || ds[2] != time.Millisecond {
		t.Errorf("ParseDurations = %v, %v", ds, err)
	}
	if _, err := ParseDurations("-1ms"); err == nil {
		t.Error("negative delay accepted")
	}
}
