package repl

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// Failover is the FAILOVER command's state, after Redis 7.0's
// failoverCommand and updateFailoverStatus: the master holds writes,
// waits until a replica (the one named, or any) acknowledged its whole
// stream, then becomes a replica of it and asks it, with PSYNC ...
// FAILOVER, to take over. TIMEOUT gives up waiting (or, with FORCE,
// fails over to the named replica anyway).
type Failover struct {
	mu    sync.Mutex
	state string // FailoverNone when ""
	host  string // the target ("": any replica)
	port  int
	end   time.Time // zero: no timeout
	force bool
}

// Failover states, as INFO's master_failover_state names them.
const (
	FailoverNone       = "no-failover"
	FailoverWaitSync   = "waiting-for-sync"
	FailoverInProgress = "failover-in-progress"
)

// State is master_failover_state.
func (f *Failover) State() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == "" {
		return FailoverNone
	}
	return f.state
}

// Target is the replica failed over to ("" : any, not chosen yet).
func (f *Failover) Target() (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.host, f.port
}

// FailoverRequest is a parsed FAILOVER command.
type FailoverRequest struct {
	Abort   bool
	Host    string // "" : any replica
	Port    int
	Timeout time.Duration
	Force   bool
}

// ParseFailover parses FAILOVER's arguments (after the command name); the
// error is Redis's reply.
func ParseFailover(args [][]byte) (FailoverRequest, string) {
	var req FailoverRequest
	eq := func(b []byte, s string) bool { return strings.EqualFold(string(b), s) }
	if len(args) == 1 && eq(args[0], "abort") {
		return FailoverRequest{Abort: true}, ""
	}
	hasHost := false
	for j := 0; j < len(args); j++ {
		switch {
		case eq(args[j], "timeout") && j+1 < len(args) && req.Timeout == 0:
			n, err := strconv.ParseInt(string(args[j+1]), 10, 64)
			if err != nil {
				return req, "ERR value is not an integer or out of range"
			}
			if n <= 0 {
				return req, "ERR FAILOVER timeout must be greater than 0"
			}
			req.Timeout = time.Duration(n) * time.Millisecond
			j++
		case eq(args[j], "to") && j+2 < len(args) && !hasHost:
			n, err := strconv.ParseInt(string(args[j+2]), 10, 64)
			if err != nil {
				return req, "ERR value is not an integer or out of range"
			}
			req.Host, req.Port, hasHost = string(args[j+1]), int(n), true
			j += 2
		case eq(args[j], "force") && !req.Force:
			req.Force = true
		default:
			return req, "ERR syntax error"
		}
	}
	return req, ""
}

// Begin starts waiting for a replica to catch up. The caller checked the
// request against the server (Check).
func (f *Failover) Begin(req FailoverRequest, log Logger) {
	if req.Host != "" {
		log.Logf("FAILOVER requested to %s:%d.", req.Host, req.Port)
	} else {
		log.Logf("FAILOVER requested to any replica.")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.host, f.port, f.force = req.Host, req.Port, req.Force
	f.end = time.Time{}
	if req.Timeout > 0 {
		f.end = time.Now().Add(req.Timeout)
	}
	f.state = FailoverWaitSync
}

// Check validates a request against this master: the error replies of
// failoverCommand, in its order.
func (f *Failover) Check(req FailoverRequest, m *Master, isReplica bool) string {
	if f.State() != FailoverNone {
		return "ERR FAILOVER already in progress."
	}
	if isReplica {
		return "ERR FAILOVER is not valid when server is a replica."
	}
	if m.NumReplicas() == 0 {
		return "ERR FAILOVER requires connected replicas."
	}
	if req.Force && (req.Timeout == 0 || req.Host == "") {
		return "ERR FAILOVER with force option requires both a timeout and target HOST and IP."
	}
	if req.Host != "" {
		r := m.FindAnnounced(req.Host, req.Port)
		if r == nil {
			return "ERR FAILOVER target HOST and PORT is not a replica."
		}
		if m.State(r) != Online {
			return "ERR FAILOVER target replica is not online."
		}
	}
	return ""
}

// Abort logs why the failover is given up and returns its state
// (FailoverNone: there was none). The caller makes a server that already
// turned replica a master again, then clears it.
func (f *Failover) Abort(reason string, log Logger) string {
	state := f.State()
	if state == FailoverNone {
		return state
	}
	if host, port := f.Target(); host != "" {
		log.Logf("FAILOVER to %s:%d aborted: %s", host, port, reason)
	} else {
		log.Logf("FAILOVER to any replica aborted: %s", reason)
	}
	return state
}

// Clear ends the failover.
func (f *Failover) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state, f.host, f.port, f.force, f.end = "", "", 0, false, time.Time{}
}

// FailoverStep is what updateFailoverStatus decides.
type FailoverStep int

const (
	FailoverWait  FailoverStep = iota // nothing yet
	FailoverAbort                     // the timeout passed: give up
	FailoverForce                     // the timeout passed: fail over anyway
	FailoverGo                        // the target caught up: fail over
)

// Step decides what to do while waiting for a replica to catch up. On
// FailoverForce and FailoverGo the state is in progress and the target
// chosen (Target), and the decision logged.
func (f *Failover) Step(m *Master) FailoverStep {
	st := f.step(m)
	switch st {
	case FailoverForce:
		host, port := f.Target()
		m.Log.Logf("FAILOVER to %s:%d time out exceeded, failing over.", host, port)
	case FailoverGo:
		host, port := f.Target()
		m.Log.Logf("Failover target %s:%d is synced, failing over.", host, port)
	}
	return st
}

func (f *Failover) step(m *Master) FailoverStep {
	f.mu.Lock()
	if f.state != FailoverWaitSync {
		f.mu.Unlock()
		return FailoverWait
	}
	if !f.end.IsZero() && !time.Now().Before(f.end) {
		defer f.mu.Unlock()
		if f.force {
			f.state = FailoverInProgress
			return FailoverForce
		}
		return FailoverAbort
	}
	host, port := f.host, f.port
	f.mu.Unlock()
	r := m.CaughtUp(host, port)
	if r == nil {
		return FailoverWait
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != FailoverWaitSync {
		return FailoverWait
	}
	f.host, f.port = r.IP, r.Port
	f.state = FailoverInProgress
	return FailoverGo
}
