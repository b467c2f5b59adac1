package server

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// The latency monitor (latency-monitor-threshold, LATENCY LATEST, HISTORY,
// RESET, GRAPH): events that took at least the threshold, in
// milliseconds, kept per event as Redis keeps them, the last 160 samples
// at one per second (a second's sample keeps its highest latency) and the
// all-time maximum. Events: "command" and "fast-command" (commands with
// the fast flag), and "expire-cycle" (a slow active expiry pass).

const latencyTSLen = 160

type latencySample struct {
	time    int64 // unix seconds; 0: unused
	latency int64 // ms
}

type latencySeries struct {
	samples [latencyTSLen]latencySample
	idx     int
	max     int64
}

type latencyMonitor struct {
	mu     sync.Mutex
	events map[string]*latencySeries
}

// addIfNeeded records ms for event when monitoring is on and ms reaches
// the threshold.
func (s *Server) latencyAddIfNeeded(event string, ms int64) {
	if th := s.cfg.LatencyThresh.Load(); th > 0 && ms >= th {
		s.latmon.add(event, ms, time.Now().Unix())
	}
}

func (m *latencyMonitor) add(event string, ms, now int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencySeries{}
	}
	ts := m.events[event]
	if ts == nil {
		ts = &latencySeries{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	prev := (ts.idx + latencyTSLen - 1) % latencyTSLen
	if ts.samples[prev].time == now {
		ts.samples[prev].latency = max(ts.samples[prev].latency, ms)
		return
	}
	ts.samples[ts.idx] = latencySample{now, ms}
	ts.idx = (ts.idx + 1) % latencyTSLen
}

// history returns event's samples, oldest first.
func (ts *latencySeries) history() []latencySample {
	var out []latencySample
	for j := 0; j < latencyTSLen; j++ {
		if s := ts.samples[(ts.idx+j)%latencyTSLen]; s.time != 0 {
			out = append(out, s)
		}
	}
	return out
}

func (m *latencyMonitor) sortedEvents() []string {
	names := make([]string, 0, len(m.events))
	for n := range m.events {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func latencyLatestCommand(c *Client, args [][]byte) {
	m := &c.srv.latmon
	m.mu.Lock()
	defer m.mu.Unlock()
	names := m.sortedEvents()
	c.w.Array(len(names))
	for _, n := range names {
		ts := m.events[n]
		last := ts.samples[(ts.idx+latencyTSLen-1)%latencyTSLen]
		c.w.Array(4)
		c.w.BulkString(n)
		c.w.Int(last.time)
		c.w.Int(last.latency)
		c.w.Int(ts.max)
	}
}

func latencyHistoryCommand(c *Client, args [][]byte) {
	m := &c.srv.latmon
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.events[string(args[2])]
	if ts == nil {
		c.w.Array(0)
		return
	}
	h := ts.history()
	c.w.Array(len(h))
	for _, s := range h {
		c.w.Array(2)
		c.w.Int(s.time)
		c.w.Int(s.latency)
	}
}

func latencyResetCommand(c *Client, args [][]byte) {
	m := &c.srv.latmon
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	if len(args) == 2 {
		n = len(m.events)
		m.events = nil
	} else {
		for _, a := range args[2:] {
			if _, ok := m.events[string(a)]; ok {
				delete(m.events, string(a))
				n++
			}
		}
	}
	c.w.Int(int64(n))
}

// latencyGraphCommand draws event's samples as columns, highest at the top,
// with how long ago each was taken under it.
func latencyGraphCommand(c *Client, args [][]byte) {
	m := &c.srv.latmon
	m.mu.Lock()
	ts := m.events[string(args[2])]
	var h []latencySample
	var allMax int64
	if ts != nil {
		h, allMax = ts.history(), ts.max
	}
	m.mu.Unlock()
	if ts == nil {
		c.w.Error("ERR No samples available for event '" + string(args[2]) + "'")
		return
	}
	lo, hi := h[0].latency, h[0].latency
	for _, s := range h {
		lo, hi = min(lo, s.latency), max(hi, s.latency)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", args[2], hi, lo, allMax)
	b.WriteString(strings.Repeat("-", 80) + "\n")
	const rows = 4
	for r := rows; r >= 1; r-- {
		for _, s := range h {
			level := int64(1)
			if hi > lo {
				level = 1 + (s.latency-lo)*(rows-1)/(hi-lo)
			}
			switch {
			case level >= int64(r) && level == int64(r):
				b.WriteByte('#')
			case level > int64(r):
				b.WriteByte('|')
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	now := time.Now().Unix()
	for _, s := range h {
		b.WriteString(agoLabel(now - s.time))
		b.WriteByte('\n')
	}
	c.w.Verbatim("txt", b.String())
}

func agoLabel(secs int64) string {
	switch {
	case secs < 60:
		return fmt.Sprintf("%ds", secs)
	case secs < 3600:
		return fmt.Sprintf("%dm", secs/60)
	case secs < 86400:
		return fmt.Sprintf("%dh", secs/3600)
	}
	return fmt.Sprintf("%dd", secs/86400)
}
