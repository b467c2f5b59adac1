package latency

import (
	"math/bits"
	"strconv"
	"strings"
	"sync/atomic"
)

// Per-command latency histograms (INFO latencystats, latency-tracking).
//
// Redis keeps an HdrHistogram per command covering 1 ns to 1 s with two
// significant digits, and reports the configured percentiles
// (latency-tracking-info-percentiles) of it in microseconds. Hist uses the
// same bucket layout (256 sub-buckets, the upper 128 of each power of
// two), so a percentile comes out as the same bucket boundary Redis
// reports for the same durations. The server keeps a Hist per command in
// each of its slots, allocated on the command's first call, and adds them
// up in a Counts to report. The 3072 counters are allocated 128 at a time
// (1 KB), as durations reach them: a command's latencies usually span a
// few powers of two, so a histogram takes a few KB rather than Redis's
// 24 KB, which would count against maxmemory.

const (
	subHalfMag = 7               // log2 of the sub-buckets per bucket after the first
	subHalf    = 1 << subHalfMag // 128
	subMask    = 2*subHalf - 1   // 255
	buckets    = 23              // buckets to cover 1 s in ns with 256 sub-buckets
	NumCounts  = (buckets + 1) * subHalf
	minValue   = 1
	maxValue   = 1_000_000_000 // 1 s in ns
)

// Hist is one command's histogram of durations in nanoseconds; it may be
// recorded to from several goroutines. The zero value is empty.
type Hist struct {
	chunks [NumCounts / subHalf]atomic.Pointer[[subHalf]atomic.Int64]
}

// bucket returns the bucket index of v (HdrHistogram's get_bucket_index).
func bucket(v int64) int {
	return bits.Len64(uint64(v)|subMask) - (subHalfMag + 1)
}

// index is the counts index of v.
func index(v int64) int {
	b := bucket(v)
	sub := int(v >> b)
	return (b+1)<<subHalfMag + sub - subHalf
}

// valueAt is the lowest value counted at index i.
func valueAt(i int) int64 {
	b := i>>subHalfMag - 1
	sub := i&(subHalf-1) + subHalf
	if b < 0 {
		sub -= subHalf
		b = 0
	}
	return int64(sub) << b
}

// highest is the highest value equivalent to v (same bucket).
func highest(v int64) int64 {
	b := bucket(v)
	sub := v >> b
	size := b
	if sub > subMask {
		size++
	}
	return sub<<b + 1<<size - 1
}

// Record counts a duration in nanoseconds, clamped to the tracked range.
func (h *Hist) Record(ns int64) {
	ns = min(max(ns, minValue), maxValue)
	i := index(ns)
	p := &h.chunks[i/subHalf]
	ch := p.Load()
	if ch == nil {
		ch = new([subHalf]atomic.Int64)
		if !p.CompareAndSwap(nil, ch) {
			ch = p.Load()
		}
	}
	ch[i%subHalf].Add(1)
}

// Record counts ns in the histogram *p, allocating it on first use.
func Record(p *atomic.Pointer[Hist], ns int64) {
	h := p.Load()
	if h == nil {
		h = new(Hist)
		if !p.CompareAndSwap(nil, h) {
			h = p.Load()
		}
	}
	h.Record(ns)
}

// Counts is the sum of histograms, to report from.
type Counts struct {
	n     [NumCounts]int64
	Total int64 // durations counted
}

// Add adds h's counts.
func (c *Counts) Add(h *Hist) {
	for k := range h.chunks {
		ch := h.chunks[k].Load()
		if ch == nil {
			continue
		}
		for j := range ch {
			if n := ch[j].Load(); n != 0 {
				c.n[k*subHalf+j] += n
				c.Total += n
			}
		}
	}
}

// Percentile is hdr_value_at_percentile (ns).
func (c *Counts) Percentile(p float64) int64 {
	want := int64(min(p, 100)/100*float64(c.Total) + 0.5)
	want = max(want, 1)
	var sum int64
	for i := range c.n {
		sum += c.n[i]
		if sum >= want {
			v := valueAt(i)
			if p == 0 {
				return v
			}
			return highest(v)
		}
	}
	return 0
}

// WritePercentiles writes INFO latencystats' value for one command,
// "p50=23.039,p99=..." in microseconds: pcts are the percentiles, names
// how latency-tracking-info-percentiles spells them.
func (c *Counts) WritePercentiles(b *strings.Builder, pcts []float64, names []string) {
	for i, p := range pcts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('p')
		b.WriteString(names[i])
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(float64(c.Percentile(p))/1000, 'f', 3, 64))
	}
}

// Point is one level of LATENCY HISTOGRAM's distribution: Cum durations
// took at most Usec microseconds.
type Point struct{ Usec, Cum int64 }

// CDF is LATENCY HISTOGRAM's distribution: the cumulative count at each
// power of two from 1024 ns, reported as Redis's logarithmic HdrHistogram
// iteration reports them (the highest value equivalent to the first
// recorded bucket at or past each level, in microseconds; levels that add
// nothing are left out).
func (c *Counts) CDF() []Point {
	var pts []Point
	i, cum, prev := -1, int64(0), int64(0)
	for level := int64(1024); cum < c.Total; level *= 2 {
		lowest := valueAt(index(level))
		for i < 0 || valueAt(i) < lowest {
			if i+1 >= NumCounts {
				break
			}
			i++
			cum += c.n[i]
		}
		if cum > prev {
			pts = append(pts, Point{highest(valueAt(i)) / 1000, cum})
			prev = cum
		}
		if i+1 >= NumCounts {
			break
		}
	}
	return pts
}
