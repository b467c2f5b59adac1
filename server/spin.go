package server

import (
	"os"
	"runtime"
	"strconv"
	"time"
)

// Busy polling. An event loop that sleeps in epoll_wait as soon as it runs
// out of input pays for it when the next request arrives: the thread is
// scheduled out and back in, which costs CPU (a few microseconds on a
// virtual machine) and latency. Polling epoll without blocking for a short
// window first avoids that when the next request comes within the window,
// and wastes the window when it does not. So a loop spins only while
// spinning pays for itself in CPU: each loop measures what one sleep costs
// it (its thread's CPU time across a blocking wait, sampled), spins for at
// most that long (the ski-rental rule: never spend more waiting than the
// sleep would have cost), and keeps a moving balance of what spinning saved
// (a sleep avoided, less the time spun) or wasted (a window spun for
// nothing). While the balance is negative the loop sleeps at once, and
// probes now and then, spinning for a few idle spells, to learn whether the
// traffic changed.
//
// Under request-reply traffic from a client on the same machine (the
// redis-benchmark runs), work arrives several microseconds after the loop
// runs out of it, longer than a sleep costs, so the loop sleeps: a loop
// that spun there used a whole core at any request rate. Where requests
// come faster than a sleep costs (many clients on many cores) it spins.

// Gate tuning: the balance is a moving average over the last ~16 idle
// spells; a loop that does not spin probes for probeSpells spells every
// probeEvery spells.
const (
	probeEvery  = 4096
	probeSpells = 32
	// wakeSamples sleeps are measured at first, then one in wakeSampleEvery.
	wakeSamples     = 8
	wakeSampleEvery = 64
)

// spinGate decides, per loop, whether to busy-poll before sleeping.
type spinGate struct {
	max     int64 // the longest window allowed, in ns; 0: never spin
	wake    int64 // moving average (1/8) of the CPU one sleep costs, in ns; 0: not measured yet
	balance int64 // moving average (1/16) of what spinning saved (+) or wasted (-) per idle spell, in ns
	sleeps  int   // sleeps seen, for sampling their cost
	spells  int   // idle spells since the last probe
	probe   int   // spells left in the current probe
}

func newSpinGate(max time.Duration) spinGate { return spinGate{max: int64(max)} }

// window is how long the loop polls before sleeping when it spins.
func (g *spinGate) window() int64 { return min(g.wake, g.max) }

// spinning reports whether the loop should poll for up to window now.
func (g *spinGate) spinning() bool {
	return g.max > 0 && g.wake > 0 && (g.balance > 0 || g.probe > 0)
}

// sampleSleep reports whether the loop should measure the CPU cost of the
// sleep it is about to take (see sleptFor).
func (g *spinGate) sampleSleep() bool {
	g.sleeps++
	return g.max > 0 && (g.sleeps <= wakeSamples || g.sleeps%wakeSampleEvery == 0)
}

// sleptFor records that one sleep, measured, cost cpu ns of the thread's
// CPU time and lasted wall ns. A wait that returned at once (work was
// already there) did not sleep and says nothing about a sleep's cost.
func (g *spinGate) sleptFor(cpu, wall int64) {
	if cpu <= 0 || wall-cpu < int64(time.Microsecond) {
		return
	}
	if g.wake == 0 {
		g.wake = cpu
		return
	}
	g.wake += (cpu - g.wake) / 8
}

// observe records one idle spell: the loop ran out of work, spun or slept,
// and after idle ns found work (woke) or timed out with nothing to do. A
// spell that slept is scored as if the loop had spun (work that came
// within the window would have been found by spinning), which is
// pessimistic: its idle time includes the wake-up.
func (g *spinGate) observe(idle int64, woke bool) {
	w := g.window()
	if g.max == 0 || w == 0 {
		return
	}
	var v int64
	if woke && idle <= w {
		v = g.wake - idle // a sleep saved, less the time spun
	} else {
		v = -w // a window spun for nothing, then a sleep anyway
	}
	g.balance += (v - g.balance) / 16
	if g.probe > 0 {
		g.probe--
		return
	}
	if g.balance <= 0 {
		if g.spells++; g.spells >= probeEvery {
			g.spells = 0
			g.probe = probeSpells
		}
	}
}

// SpinWhenBusy lets s's loops busy-poll while it pays (see spinGate), for
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
