package server

import (
	"github.com/sluicedb/sluice/repl"
)

// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]: the state and
// its decisions are repl.Failover's; here the server pauses writes,
// turns replica of the target, or gives up.

// failoverState is master_failover_state.
func (s *Server) failoverState() string { return s.repl.fo.State() }

func failoverCommand(c *Client, args [][]byte) {
	s := c.srv
	fo := &s.repl.fo
	req, errText := repl.ParseFailover(args[1:])
	switch {
	case errText != "":
		c.w.Error(errText)
		return
	case req.Abort:
		if fo.State() == repl.FailoverNone {
			c.w.Error("ERR No failover in progress.")
			return
		}
		s.abortFailover("Failover manually aborted")
		c.w.OK()
		return
	}
	if errText := fo.Check(req, s.repl.m, s.replLink() != nil); errText != "" {
		c.w.Error(errText)
		return
	}
	fo.Begin(req, s)
	s.pauseForFailover(true)
	c.w.OK()
}

// failoverDone: the target accepted the PSYNC FAILOVER; this server
// replicates it now.
func (s *Server) failoverDone() {
	s.repl.fo.Clear()
	s.pauseForFailover(false)
}

// abortFailover gives the failover up; a server that already turned
// replica becomes a master again.
func (s *Server) abortFailover(reason string) {
	fo := &s.repl.fo
	state := fo.Abort(reason, s)
	if state == repl.FailoverNone {
		return
	}
	if state == repl.FailoverInProgress {
		s.promote()
	}
	fo.Clear()
	s.pauseForFailover(false)
}

// updateFailover is updateFailoverStatus: the cron and each ACK call it.
func (s *Server) updateFailover() {
	fo := &s.repl.fo
	switch fo.Step(s.repl.m) {
	case repl.FailoverAbort:
		s.abortFailover("Replica never caught up before timeout")
	case repl.FailoverForce, repl.FailoverGo:
		host, port := fo.Target()
		s.replicaOf(host, port, false)
	}
}
