package spin

import (
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	const us = int64(time.Microsecond)
	g := NewGate(200 * time.Microsecond)
	if g.Spinning() {
		t.Fatal("a fresh loop spins before it measured what a sleep costs")
	}
	// Sleeps are measured; one that returned at once (wall time no
	// longer than its CPU time) did not sleep and is not counted.
	if !g.SampleSleep() {
		t.Fatal("the first sleep is not measured")
	}
	g.SleptFor(2*us, 2*us)
	if g.wake != 0 {
		t.Fatalf("a wait that did not sleep counted as one (%dns)", g.wake)
	}
	g.SleptFor(4*us, 50*us)
	if g.wake != 4*us || g.Window() != 4*us {
		t.Fatalf("wake cost %dns, window %dns after one 4µs sleep", g.wake, g.Window())
	}
	// Work arriving 1µs after the loop ran out of it: spinning saves a
	// 4µs sleep for 1µs of polling, so the loop spins.
	for i := 0; i < 20; i++ {
		g.Observe(1*us, true)
	}
	if !g.Spinning() {
		t.Fatalf("no spinning with 1µs gaps and 4µs sleeps (balance %d)", g.balance)
	}
	// Gaps of 10µs: a 4µs window never finds the work, so it stops
	// within a few spells...
	stopped := -1
	for i := 0; i < 20; i++ {
		g.Observe(10*us, true)
		if !g.Spinning() {
			stopped = i
			break
		}
	}
	if stopped < 0 {
		t.Fatalf("still spinning after 20 gaps of 10µs (balance %d)", g.balance)
	}
	// ...and then only probes: probeSpells spells in every probeEvery.
	spun := 0
	for i := 0; i < 4*probeEvery; i++ {
		if g.Spinning() {
			spun++
		}
		g.Observe(10*us, true)
	}
	if spun == 0 || spun > 4*probeSpells+16 {
		t.Fatalf("spun %d of %d spells with 10µs gaps (want probes only: about %d)", spun, 4*probeEvery, 4*probeSpells)
	}
	// Timeouts with nothing to do count as windows spun in vain.
	h := NewGate(200 * time.Microsecond)
	h.SleptFor(3*us, 100*us)
	for i := 0; i < 20; i++ {
		h.Observe(0, true)
	}
	for i := 0; i < 20; i++ {
		h.Observe(100*int64(time.Millisecond), false)
	}
	if h.Spinning() {
		t.Fatal("spinning after 20 idle timeouts")
	}
	// The window never exceeds the configured maximum.
	m := NewGate(2 * time.Microsecond)
	m.SleptFor(30*us, 100*us)
	if m.Window() != 2*us {
		t.Fatalf("window %dns, the maximum is 2µs", m.Window())
	}
	if off := NewGate(0); off.Spinning() {
		t.Fatal("window 0 spins")
	} else {
		off.SleptFor(3*us, 100*us)
		for i := 0; i < 100; i++ {
			off.Observe(0, true)
		}
		if off.Spinning() || off.SampleSleep() {
			t.Fatal("window 0 spins (or measures sleeps) under load")
		}
	}
}
