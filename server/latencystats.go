package server

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
// (latency-tracking-info-percentiles) of it in microseconds. latencyHist
// uses the same bucket layout (256 sub-buckets, the upper 128 of each
// power of two), so a percentile comes out as the same bucket boundary
// Redis reports for the same durations. Each slot keeps its own
// histogram per command, allocated on the command's first call; INFO adds
// them up. The 3072 counters are allocated 128 at a time (1 KB), as
// durations reach them: a command's latencies usually span a few powers
// of two, so a histogram takes a few KB rather than Redis's 24 KB, which
// would count against maxmemory.

const (
	histSubHalfMag = 7                   // log2 of the sub-buckets per bucket after the first
	histSubHalf    = 1 << histSubHalfMag // 128
	histSubMask    = 2*histSubHalf - 1   // 255
	histBuckets    = 23                  // buckets to cover 1 s in ns with 256 sub-buckets
	histCounts     = (histBuckets + 1) * histSubHalf
	histMinValue   = 1
	histMaxValue   = 1_000_000_000 // 1 s in ns
)

type latencyHist struct {
	chunks [histCounts / histSubHalf]atomic.Pointer[[histSubHalf]atomic.Int64]
}

// histBucket returns the bucket index of v (HdrHistogram's get_bucket_index).
func histBucket(v int64) int {
	return bits.Len64(uint64(v)|histSubMask) - (histSubHalfMag + 1)
}

// histIndex is the counts index of v.
func histIndex(v int64) int {
	b := histBucket(v)
	sub := int(v >> b)
	return (b+1)<<histSubHalfMag + sub - histSubHalf
}

// histValueAt is the lowest value counted at index i.
func histValueAt(i int) int64 {
	b := i>>histSubHalfMag - 1
	sub := i&(histSubHalf-1) + histSubHalf
	if b < 0 {
		sub -= histSubHalf
		b = 0
	}
	return int64(sub) << b
}

// histHighest is the highest value equivalent to v (same bucket).
func histHighest(v int64) int64 {
	b := histBucket(v)
	sub := v >> b
	size := b
	if sub > histSubMask {
		size++
	}
	return sub<<b + 1<<size - 1
}

// record counts a duration in nanoseconds, clamped to the tracked range.
func (h *latencyHist) record(ns int64) {
	ns = min(max(ns, histMinValue), histMaxValue)
	i := histIndex(ns)
	p := &h.chunks[i/histSubHalf]
	ch := p.Load()
	if ch == nil {
		ch = new([histSubHalf]atomic.Int64)
		if !p.CompareAndSwap(nil, ch) {
			ch = p.Load()
		}
	}
	ch[i%histSubHalf].Add(1)
}

// percentile is hdr_value_at_percentile over counts (ns).
func histPercentile(counts *[histCounts]int64, total int64, p float64) int64 {
	want := int64(min(p, 100)/100*float64(total) + 0.5)
	want = max(want, 1)
	var sum int64
	for i := range counts {
		sum += counts[i]
		if sum >= want {
			v := histValueAt(i)
			if p == 0 {
				return v
			}
			return histHighest(v)
		}
	}
	return 0
}

// recordLatency adds a command's duration to this slot's histogram of cmd.
func (s *slotStats) recordLatency(cmd *Command, ns int64) {
	st := &s.cmds[cmd.id]
	h := st.hist.Load()
	if h == nil {
		h = new(latencyHist)
		if !st.hist.CompareAndSwap(nil, h) {
			h = st.hist.Load()
		}
	}
	h.record(ns)
}

// writeLatencyStats writes INFO's latencystats lines.
func (s *Server) writeLatencyStats(b *strings.Builder) {
	var pcts []float64
	var names []string
	for _, f := range strings.Fields(s.cfg.Get("latency-tracking-info-percentiles")) {
		p, err := strconv.ParseFloat(f, 64)
		if err == nil {
			pcts, names = append(pcts, p), append(names, f)
		}
	}
	var counts [histCounts]int64
	var walk func(cmds []*Command)
	walk = func(cmds []*Command) {
		for _, cmd := range cmds {
			total, found := s.commandHist(cmd, &counts)
			if found {
				b.WriteString("latency_percentiles_usec_")
				b.WriteString(safeInfo(cmd.Name))
				b.WriteByte(':')
				for i, p := range pcts {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteByte('p')
					b.WriteString(names[i])
					b.WriteByte('=')
					v := histPercentile(&counts, total, p)
					b.WriteString(strconv.FormatFloat(float64(v)/1000, 'f', 3, 64))
				}
				b.WriteString("\r\n")
			}
			if len(cmd.Subs) > 0 {
				walk(sortedSubs(cmd))
			}
		}
	}
	walk(sortedCommands())
}

// commandHist adds up cmd's histograms from every slot into counts; found
// says whether cmd has one (it ran since the last CONFIG RESETSTAT).
func (s *Server) commandHist(cmd *Command, counts *[histCounts]int64) (total int64, found bool) {
	*counts = [histCounts]int64{}
	for i := range s.stats {
		if cmd.id >= len(s.stats[i].cmds) {
			continue
		}
		h := s.stats[i].cmds[cmd.id].hist.Load()
		if h == nil {
			continue
		}
		found = true
		for k := range h.chunks {
			ch := h.chunks[k].Load()
			if ch == nil {
				continue
			}
			for j := range ch {
				if n := ch[j].Load(); n != 0 {
					counts[k*histSubHalf+j] += n
					total += n
				}
			}
		}
	}
	return total, found
}

// writeCDF writes LATENCY HISTOGRAM's entry for one command: its calls
// and the cumulative count at each power of two from 1024 ns, reported as
// Redis's logarithmic HdrHistogram iteration reports them (the highest
// value equivalent to the first recorded bucket at or past each level, in
// microseconds; levels that add nothing are left out).
func writeCDF(c *Client, counts *[histCounts]int64, total int64) {
	type point struct{ usec, cum int64 }
	var pts []point
	i, cum, prev := -1, int64(0), int64(0)
	for level := int64(1024); cum < total; level *= 2 {
		lowest := histValueAt(histIndex(level))
		for i < 0 || histValueAt(i) < lowest {
			if i+1 >= histCounts {
				break
			}
			i++
			cum += counts[i]
		}
		if cum > prev {
			pts = append(pts, point{histHighest(histValueAt(i)) / 1000, cum})
			prev = cum
		}
		if i+1 >= histCounts {
			break
		}
	}
	c.w.Map(2)
	c.w.BulkString("calls")
	c.w.Int(total)
	c.w.BulkString("histogram_usec")
	c.w.Map(len(pts))
	for _, p := range pts {
		c.w.Int(p.usec)
		c.w.Int(p.cum)
	}
}

// latencyHistogramCommand: LATENCY HISTOGRAM [command ...], every command
// with latency data, or the ones named (a container command names its
// subcommands).
func latencyHistogramCommand(c *Client, args [][]byte) {
	s := c.srv
	var counts [histCounts]int64
	type entry struct {
		cmd   *Command
		total int64
		cnts  [histCounts]int64
	}
	var out []*entry
	add := func(cmd *Command) {
		if total, ok := s.commandHist(cmd, &counts); ok {
			out = append(out, &entry{cmd: cmd, total: total, cnts: counts})
		}
	}
	if len(args) == 2 {
		var walk func(cmds []*Command)
		walk = func(cmds []*Command) {
			for _, cmd := range cmds {
				add(cmd)
				if len(cmd.Subs) > 0 {
					walk(sortedSubs(cmd))
				}
			}
		}
		walk(sortedCommands())
	} else {
		for _, name := range args[2:] {
			cmd := lookupFullName(name)
			if cmd == nil {
				continue
			}
			add(cmd)
			if len(cmd.Subs) > 0 {
				for _, sub := range sortedSubs(cmd) {
					add(sub)
				}
			}
		}
	}
	c.w.Map(len(out))
	for _, e := range out {
		c.w.BulkString(e.cmd.Name)
		writeCDF(c, &e.cnts, e.total)
	}
}
