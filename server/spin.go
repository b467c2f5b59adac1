package server

import (
	"os"
	"runtime"
	"strconv"
	"time"
)

// Busy polling. An event loop that sleeps in epoll_wait as soon as it runs
// out of input pays a wake-up when the next request arrives: on a virtual
// machine that is tens of microseconds, since the idle vCPU halts and an
// interrupt must bring it back. Under request-reply traffic (each client
// waits for its reply before it sends again, as redis-benchmark does at
// -P 1) the next request is usually only microseconds away, so these
// wake-ups are much of the latency the server adds, and most of its tail.
// So a loop whose recent requests came close together polls epoll without
// blocking for up to a short window before it sleeps. A loop that is idle,
// or lightly loaded with gaps longer than the window, never spins.

// maxGapSample caps one idle-time sample, so that a loop returning from a
// long idle spell starts spinning after a few dozen close batches.
const maxGapSample = int64(10 * time.Millisecond)

// spinGate decides, per loop, whether to busy-poll before sleeping.
type spinGate struct {
	window int64 // how long to poll, in ns; 0: never
	gap    int64 // moving average (1/8) of the idle time before work arrived, in ns
}

func newSpinGate(window time.Duration) spinGate {
	return spinGate{window: int64(window), gap: maxGapSample}
}

// spinning reports whether the loop should poll for up to window now: work
// has lately arrived within the window on average.
func (g *spinGate) spinning() bool { return g.window > 0 && g.gap < g.window }

// observe records one idle spell of idle ns (spinning and sleeping) that
// ended with work (woke) or with a timeout and nothing to do.
func (g *spinGate) observe(idle int64, woke bool) {
	if !woke {
		g.gap = maxGapSample
		return
	}
	g.gap += (min(idle, maxGapSample) - g.gap) / 8
}

// SpinWhenBusy turns busy polling on for s, with the window spinWindow
// gives; call it before Start. sluice-server does. Servers built by other
// programs leave it off unless SLUICE_SPIN_US is set: they share their
// process, and its CPUs, with the code that drives them. (The embedded
// mode, sluicetest, runs no event loops at all: see
// Config.ServeOnGoroutines.)
func (s *Server) SpinWhenBusy() { s.spinFor = spinWindow(len(s.loops)) }

// spinWindow is the window of a server with nloops event loops:
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
