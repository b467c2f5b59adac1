package server

import (
	"os"
	"runtime"
	"strconv"
	"time"
)

// SpinWhenBusy lets s's loops busy-poll while it pays (see spin.Gate), for
// at most the window spinWindow gives; call it before Start. sluice-server
// does. Servers built by other programs leave it off unless SLUICE_SPIN_US
// is set: they share their process, and its CPUs, with the code that
// drives them. (The embedded mode, sluicetest, runs no event loops at all:
// see Config.ServeOnGoroutines.)
func (s *Server) SpinWhenBusy() { s.spinFor = spinWindow(len(s.loops)) }

// spinWindow is the longest window of a server with nloops event loops:
// SLUICE_SPIN_US microseconds if set (0 turns spinning off), else 200µs
// when the loops leave at least one of the Go scheduler's processors to the
// rest of the program, else 0: where every processor runs a loop (one CPU,
// or GOMAXPROCS=1), a spinning loop would take the time that timers, the
// garbage collector and, on the same machine, the clients need.
func spinWindow(nloops int) time.Duration {
	if d, ok := spinFromEnv(); ok {
		return d
	}
	if nloops == 0 || runtime.GOMAXPROCS(0) <= nloops {
		return 0
	}
	return 200 * time.Microsecond
}

// spinFromEnv reads SLUICE_SPIN_US; ok is false when it is not set.
func spinFromEnv() (d time.Duration, ok bool) {
	v, ok := os.LookupEnv("SLUICE_SPIN_US")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		n = 0
	}
	return time.Duration(n) * time.Microsecond, true
}
