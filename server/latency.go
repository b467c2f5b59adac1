package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/sluicedb/sluice/latency"
)

// The latency monitor (latency-monitor-threshold, LATENCY LATEST, HISTORY,
// RESET, GRAPH, DOCTOR) and the per-command latency histograms
// (latency-tracking, INFO latencystats, LATENCY HISTOGRAM) are package
// latency's; here are their thresholds and replies. Monitored events:
// "command" and "fast-command" (commands with the fast flag), and
// "expire-cycle" (a slow active expiry pass).

// latencyAddIfNeeded records ms for event when monitoring is on and ms
// reaches the threshold.
func (s *Server) latencyAddIfNeeded(event string, ms int64) {
	if th := s.cfg.LatencyThresh.Load(); th > 0 && ms >= th {
		s.latmon.Add(event, ms, time.Now().Unix())
	}
}

func latencyLatestCommand(c *Client, args [][]byte) {
	latest := c.srv.latmon.Latest()
	c.w.Array(len(latest))
	for _, e := range latest {
		c.w.Array(4)
		c.w.BulkString(e.Event)
		c.w.Int(e.Time)
		c.w.Int(e.Latency)
		c.w.Int(e.Max)
	}
}

func latencyHistoryCommand(c *Client, args [][]byte) {
	h := c.srv.latmon.History(string(args[2]))
	c.w.Array(len(h))
	for _, s := range h {
		c.w.Array(2)
		c.w.Int(s.Time)
		c.w.Int(s.Latency)
	}
}

func latencyResetCommand(c *Client, args [][]byte) {
	c.w.Int(int64(c.srv.latmon.Reset(args[2:])))
}

func latencyGraphCommand(c *Client, args [][]byte) {
	g, ok := c.srv.latmon.Graph(string(args[2]), time.Now().Unix())
	if !ok {
		c.w.Error("ERR No samples available for event '" + string(args[2]) + "'")
		return
	}
	c.w.Verbatim("txt", g)
}

func latencyDoctorCommand(c *Client, args [][]byte) {
	c.w.Verbatim("txt", c.srv.latmon.Doctor(c.srv.cfg.LatencyThresh.Load() != 0))
}

// recordLatency adds a command's duration to this slot's histogram of cmd.
func (s *slotStats) recordLatency(cmd *Command, ns int64) { latency.Record(&s.cmds[cmd.id].hist, ns) }

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
	var counts latency.Counts
	var walk func(cmds []*Command)
	walk = func(cmds []*Command) {
		for _, cmd := range cmds {
			if s.commandHist(cmd, &counts) {
				b.WriteString("latency_percentiles_usec_")
				b.WriteString(safeInfo(cmd.Name))
				b.WriteByte(':')
				counts.WritePercentiles(b, pcts, names)
				b.WriteString("\r\n")
			}
			if len(cmd.Subs) > 0 {
				walk(sortedSubs(cmd))
			}
		}
	}
	walk(sortedCommands())
}

// commandHist sets counts to the sum of cmd's histograms from every slot;
// it reports whether cmd has one (it ran since the last CONFIG RESETSTAT).
func (s *Server) commandHist(cmd *Command, counts *latency.Counts) (found bool) {
	*counts = latency.Counts{}
	for i := range s.stats {
		if cmd.id >= len(s.stats[i].cmds) {
			continue
		}
		if h := s.stats[i].cmds[cmd.id].hist.Load(); h != nil {
			counts.Add(h)
			found = true
		}
	}
	return found
}

// latencyHistogramCommand: LATENCY HISTOGRAM [command ...], every command
// with latency data, or the ones named (a container command names its
// subcommands).
func latencyHistogramCommand(c *Client, args [][]byte) {
	s := c.srv
	type entry struct {
		cmd *Command
		cdf []latency.Point
		n   int64
	}
	var out []entry
	var counts latency.Counts
	add := func(cmd *Command) {
		if s.commandHist(cmd, &counts) {
			out = append(out, entry{cmd, counts.CDF(), counts.Total})
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
		c.w.Map(2)
		c.w.BulkString("calls")
		c.w.Int(e.n)
		c.w.BulkString("histogram_usec")
		c.w.Map(len(e.cdf))
		for _, p := range e.cdf {
			c.w.Int(p.Usec)
			c.w.Int(p.Cum)
		}
	}
}
