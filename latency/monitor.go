// Package latency holds the server's two records of how long things take,
// as Redis's latency.c and its per-command HdrHistograms:
//
//   - Monitor, the latency monitor (latency-monitor-threshold): events
//     that took at least the threshold, each with its last 160 one-second
//     samples and its all-time maximum, and the texts of LATENCY GRAPH and
//     LATENCY DOCTOR;
//   - Hist and Counts, the per-command latency histograms
//     (latency-tracking): Redis's bucket layout from 1 ns to 1 s with two
//     significant digits, the percentiles INFO latencystats reports, and
//     LATENCY HISTOGRAM's cumulative distribution.
//
// The server keeps the thresholds, the command table and the replies.
package latency

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// SeriesLen is how many samples an event keeps (Redis's LATENCY_TS_LEN).
const SeriesLen = 160

// Sample is one second's highest latency of an event.
type Sample struct {
	Time    int64 // unix seconds; 0: unused
	Latency int64 // ms
}

type series struct {
	samples [SeriesLen]Sample
	idx     int
	max     int64
}

// Monitor keeps the events of the latency monitor, as Redis keeps them:
// per event, the last SeriesLen samples at one per second (a second's
// sample keeps its highest latency) and the all-time maximum. Its methods
// may be called from any goroutine.
type Monitor struct {
	mu     sync.Mutex
	events map[string]*series
}

// Add records a latency of ms milliseconds for event at unix second now.
func (m *Monitor) Add(event string, ms, now int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*series{}
	}
	ts := m.events[event]
	if ts == nil {
		ts = &series{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	prev := (ts.idx + SeriesLen - 1) % SeriesLen
	if ts.samples[prev].Time == now {
		ts.samples[prev].Latency = max(ts.samples[prev].Latency, ms)
		return
	}
	ts.samples[ts.idx] = Sample{now, ms}
	ts.idx = (ts.idx + 1) % SeriesLen
}

// history returns the series' samples, oldest first.
func (ts *series) history() []Sample {
	var out []Sample
	for j := 0; j < SeriesLen; j++ {
		if s := ts.samples[(ts.idx+j)%SeriesLen]; s.Time != 0 {
			out = append(out, s)
		}
	}
	return out
}

func (m *Monitor) sortedEvents() []string {
	names := make([]string, 0, len(m.events))
	for n := range m.events {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Latest is LATENCY LATEST's entry for one event.
type Latest struct {
	Event         string
	Time, Latency int64 // the latest sample
	Max           int64 // the all-time maximum
}

// Latest returns every event's latest sample, by event name.
func (m *Monitor) Latest() []Latest {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Latest, 0, len(m.events))
	for _, n := range m.sortedEvents() {
		ts := m.events[n]
		last := ts.samples[(ts.idx+SeriesLen-1)%SeriesLen]
		out = append(out, Latest{n, last.Time, last.Latency, ts.max})
	}
	return out
}

// History returns event's samples, oldest first (none for an unknown
// event).
func (m *Monitor) History(event string) []Sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ts := m.events[event]; ts != nil {
		return ts.history()
	}
	return nil
}

// Reset forgets the named events, or every event when none is named, and
// returns how many it forgot.
func (m *Monitor) Reset(events [][]byte) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(events) == 0 {
		n := len(m.events)
		m.events = nil
		return n
	}
	n := 0
	for _, a := range events {
		if _, ok := m.events[string(a)]; ok {
			delete(m.events, string(a))
			n++
		}
	}
	return n
}

// Graph is LATENCY GRAPH's text: event's samples as columns, highest at
// the top, with how long before now (unix seconds) each was taken under
// it. ok is false when the event has no samples.
func (m *Monitor) Graph(event string, now int64) (text string, ok bool) {
	m.mu.Lock()
	ts := m.events[event]
	var h []Sample
	var allMax int64
	if ts != nil {
		h, allMax = ts.history(), ts.max
	}
	m.mu.Unlock()
	if ts == nil {
		return "", false
	}
	return graph(event, h, allMax, now), true
}

func graph(event string, h []Sample, allMax, now int64) string {
	lo, hi := h[0].Latency, h[0].Latency
	for _, s := range h {
		lo, hi = min(lo, s.Latency), max(hi, s.Latency)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", event, hi, lo, allMax)
	b.WriteString(strings.Repeat("-", 80) + "\n")
	const rows = 4
	for r := rows; r >= 1; r-- {
		for _, s := range h {
			level := int64(1)
			if hi > lo {
				level = 1 + (s.Latency-lo)*(rows-1)/(hi-lo)
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
	for _, s := range h {
		b.WriteString(agoLabel(now - s.Time))
		b.WriteByte('\n')
	}
	return b.String()
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

// Doctor is LATENCY DOCTOR's report; enabled says whether monitoring is
// on (latency-monitor-threshold above 0).
func (m *Monitor) Doctor(enabled bool) string {
	if !enabled {
		return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.events) == 0 {
		return "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n"
	}
	var b strings.Builder
	b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
	for i, name := range m.sortedEvents() {
		ts := m.events[name]
		h := ts.history()
		var sum int64
		for _, s := range h {
			sum += s.Latency
		}
		avg := sum / int64(len(h))
		var dev int64
		for _, s := range h {
			dev += max(s.Latency-avg, avg-s.Latency)
		}
		period := int64(0)
		if len(h) > 1 {
			period = (h[len(h)-1].Time - h[0].Time) / int64(len(h)-1)
		}
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %d sec). Worst all time event %dms.\n",
			i+1, name, len(h), avg, dev/int64(len(h)), period, ts.max)
	}
	b.WriteString("\nI have a few advices for you:\n\n")
	b.WriteString("- Check your commands: \"command\" events are commands that ran at least latency-monitor-threshold milliseconds; SLOWLOG GET shows which. Commands that scan or delete large values (KEYS, SMEMBERS, DEL of big keys) are the usual cause; UNLINK and SCAN avoid most of them.\n")
	return b.String()
}
