// Package spin decides when an event loop should busy-poll for its next
// event instead of sleeping until it comes. A loop that sleeps whenever it
// runs out of work pays a wake-up for the next one; a loop that polls pays
// the time it polls. Gate weighs the two from what the loop measures: the
// CPU a sleep costs its thread, and how soon work comes after the loop
// runs out of it.
package spin

import "time"

// Gate: an event loop that sleeps (in epoll_wait or io_uring_enter) as
// soon as it runs out of input pays for it when the next request arrives:
// the thread is scheduled out and back in, which costs CPU (a few
// microseconds, more on a virtual machine) and latency. Polling for a short
// window first avoids that when the next request comes within the window,
// and wastes the window when it does not. So a loop spins only while
// spinning pays for itself in CPU: each loop measures what one sleep costs
// it (its thread's CPU time across a blocking wait, sampled), spins for at
// most that long (the ski-rental rule: never spend more waiting than the
// sleep would have cost), and keeps a moving balance of what spinning saved
// (a sleep avoided, less the time spun) or wasted (a window spun for
// nothing). While the balance is negative the loop sleeps at once, and
// probes now and then, spinning for a few idle spells, to learn whether the
// traffic changed. A loop that spun with nothing to do used a whole core
// at any request rate; the gate stops that.

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

// Gate decides, per loop, whether to busy-poll before sleeping.
type Gate struct {
	max     int64 // the longest window allowed, in ns; 0: never spin
	wake    int64 // moving average (1/8) of the CPU one sleep costs, in ns; 0: not measured yet
	balance int64 // moving average (1/16) of what spinning saved (+) or wasted (-) per idle spell, in ns
	sleeps  int   // sleeps seen, for sampling their cost
	spells  int   // idle spells since the last probe
	probe   int   // spells left in the current probe
}

// NewGate returns a gate whose window never exceeds max (0: never spin).
func NewGate(max time.Duration) Gate { return Gate{max: int64(max)} }

// Wake is the CPU one sleep costs the loop's thread as measured, in ns (0:
// not measured yet).
func (g *Gate) Wake() int64 { return g.wake }

// Window is how long the loop polls before sleeping when it spins.
func (g *Gate) Window() int64 { return min(g.wake, g.max) }

// spinning reports whether the loop should poll for up to window now.
func (g *Gate) Spinning() bool {
	return g.max > 0 && g.wake > 0 && (g.balance > 0 || g.probe > 0)
}

// sampleSleep reports whether the loop should measure the CPU cost of the
// sleep it is about to take (see SleptFor).
func (g *Gate) SampleSleep() bool {
	g.sleeps++
	return g.max > 0 && (g.sleeps <= wakeSamples || g.sleeps%wakeSampleEvery == 0)
}

// sleptFor records that one sleep, measured, cost cpu ns of the thread's
// CPU time and lasted wall ns. A wait that returned at once (work was
// already there) did not sleep and says nothing about a sleep's cost.
func (g *Gate) SleptFor(cpu, wall int64) {
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
func (g *Gate) Observe(idle int64, woke bool) {
	w := g.Window()
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
