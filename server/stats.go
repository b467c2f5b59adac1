package server

import (
	"sync/atomic"

	"github.com/sluicedb/sluice/latency"
)

// cmdStat counts one command's calls in one slot.
type cmdStat struct {
	calls, usec, rejected, failed atomic.Int64
	hist                          atomic.Pointer[latency.Hist] // nil until tracked (latency.go)
}

// slotStats are the statistics of one driver slot (an event loop, or the
// goroutine driver). Each slot writes only its own counters, so commands on
// different cores never contend on a statistics cache line.
type slotStats struct {
	cmds          []cmdStat
	commands      atomic.Int64
	connections   atomic.Int64
	rejectedConns atomic.Int64
	errorReplies  atomic.Int64
	netIn, netOut atomic.Int64
	_             [64]byte
}

func newSlotStats() slotStats { return slotStats{cmds: make([]cmdStat, len(cmdList))} }

func (s *slotStats) record(cmd *Command, ns int64, failed bool) {
	st := &s.cmds[cmd.id]
	st.calls.Add(1)
	st.usec.Add(ns / 1000)
	if failed {
		st.failed.Add(1)
		s.errorReplies.Add(1)
	}
	s.commands.Add(1)
}

func (s *slotStats) rejected(cmd *Command) {
	s.cmds[cmd.id].rejected.Add(1)
	s.errorReplies.Add(1)
}

func (s *slotStats) reset() {
	for i := range s.cmds {
		st := &s.cmds[i]
		st.calls.Store(0)
		st.usec.Store(0)
		st.rejected.Store(0)
		st.failed.Store(0)
		st.hist.Store(nil)
	}
	s.commands.Store(0)
	s.connections.Store(0)
	s.rejectedConns.Store(0)
	s.errorReplies.Store(0)
	s.netIn.Store(0)
	s.netOut.Store(0)
}
