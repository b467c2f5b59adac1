package bench

import (
	"math"
	"math/bits"
	"sort"
	"time"
)

// Median returns the median of xs (the mean of the two middle values when
// len(xs) is even) without reordering xs; NaN when xs is empty.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Percentile returns the nearest-rank q-th percentile (0 < q <= 100) of xs:
// the smallest value with at least q% of the values at or below it. xs need
// not be sorted and is left untouched. NaN when xs is empty.
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[rankIndex(uint64(len(s)), q)]
}

// rankIndex is the zero-based index of the nearest-rank q-th percentile in
// n sorted values.
func rankIndex(n uint64, q float64) uint64 {
	if q <= 0 {
		return 0
	}
	r := uint64(math.Ceil(q / 100 * float64(n)))
	if r < 1 {
		r = 1
	}
	if r > n {
		r = n
	}
	return r - 1
}

// Ratio returns a/b, or NaN when b is zero (or either is NaN).
func Ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

// Histogram records durations (nanoseconds) in log-linear buckets: exact
// below 128 ns, then 64 buckets per power of two, so every recorded value is
// known to within 1/64 (1.6%). The zero value is ready to use. It is not
// safe for concurrent use: give each goroutine its own and Merge them.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    uint64
	min    uint64
	max    uint64
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits // 64
	histBuckets = (64-histSubBits)*histSub + 2*histSub
)

func histIndex(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1
	return shift*histSub + int(v>>uint(shift))
}

// histBounds returns the range [lo, hi] of values that land in bucket i.
func histBounds(i int) (lo, hi uint64) {
	if i < 2*histSub {
		return uint64(i), uint64(i)
	}
	shift := uint(i/histSub - 1)
	m := uint64(i%histSub + histSub)
	return m << shift, (m+1)<<shift - 1
}

// Record adds one observation.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = uint64(d)
	}
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += v
}

// Merge adds all of o's observations to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of observations.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest observation (exact).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Min is the smallest observation (exact).
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Mean is the exact arithmetic mean.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Percentile returns the nearest-rank q-th percentile (0 < q <= 100), as the
// midpoint of the bucket holding that rank, clamped to [Min, Max].
func (h *Histogram) Percentile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	want := rankIndex(h.n, q) + 1 // 1-based rank
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= want {
			lo, hi := histBounds(i)
			v := lo + (hi-lo)/2
			if v < h.min {
				v = h.min
			}
			if v > h.max {
				v = h.max
			}
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}
