package server

import (
	"os"
	"testing"
	"time"
)

func TestSpinGate(t *testing.T) {
	const us = int64(time.Microsecond)
	g := newSpinGate(200 * time.Microsecond)
	if g.spinning() {
		t.Fatal("a fresh loop spins before it measured what a sleep costs")
	}
	// Sleeps are measured; one that returned at once (wall time no
	// longer than its CPU time) did not sleep and is not counted.
	if !g.sampleSleep() {
		t.Fatal("the first sleep is not measured")
	}
	g.sleptFor(2*us, 2*us)
	if g.wake != 0 {
		t.Fatalf("a wait that did not sleep counted as one (%dns)", g.wake)
	}
	g.sleptFor(4*us, 50*us)
	if g.wake != 4*us || g.window() != 4*us {
		t.Fatalf("wake cost %dns, window %dns after one 4µs sleep", g.wake, g.window())
	}
	// Work arriving 1µs after the loop ran out of it: spinning saves a
	// 4µs sleep for 1µs of polling, so the loop spins.
	for i := 0; i < 20; i++ {
		g.observe(1*us, true)
	}
	if !g.spinning() {
		t.Fatalf("no spinning with 1µs gaps and 4µs sleeps (balance %d)", g.balance)
	}
	// Gaps of 10µs: a 4µs window never finds the work, so it stops
	// within a few spells...
	stopped := -1
	for i := 0; i < 20; i++ {
		g.observe(10*us, true)
		if !g.spinning() {
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
		if g.spinning() {
			spun++
		}
		g.observe(10*us, true)
	}
	if spun == 0 || spun > 4*probeSpells+16 {
		t.Fatalf("spun %d of %d spells with 10µs gaps (want probes only: about %d)", spun, 4*probeEvery, 4*probeSpells)
	}
	// Timeouts with nothing to do count as windows spun in vain.
	h := newSpinGate(200 * time.Microsecond)
	h.sleptFor(3*us, 100*us)
	for i := 0; i < 20; i++ {
		h.observe(0, true)
	}
	for i := 0; i < 20; i++ {
		h.observe(100*int64(time.Millisecond), false)
	}
	if h.spinning() {
		t.Fatal("spinning after 20 idle timeouts")
	}
	// The window never exceeds the configured maximum.
	m := newSpinGate(2 * time.Microsecond)
	m.sleptFor(30*us, 100*us)
	if m.window() != 2*us {
		t.Fatalf("window %dns, the maximum is 2µs", m.window())
	}
	if off := newSpinGate(0); off.spinning() {
		t.Fatal("window 0 spins")
	} else {
		off.sleptFor(3*us, 100*us)
		for i := 0; i < 100; i++ {
			off.observe(0, true)
		}
		if off.spinning() || off.sampleSleep() {
			t.Fatal("window 0 spins (or measures sleeps) under load")
		}
	}
}

func TestSpinWindow(t *testing.T) {
	if _, set := os.LookupEnv("SLUICE_SPIN_US"); !set {
		if s := New(nil); s.spinFor != 0 {
			t.Errorf("an embedded server spins by default (%v)", s.spinFor)
		}
	}
	t.Setenv("SLUICE_SPIN_US", "50")
	if got := spinWindow(1); got != 50*time.Microsecond {
		t.Errorf("SLUICE_SPIN_US=50: %v", got)
	}
	t.Setenv("SLUICE_SPIN_US", "0")
	if got := spinWindow(1); got != 0 {
		t.Errorf("SLUICE_SPIN_US=0: %v", got)
	}
	t.Setenv("SLUICE_SPIN_US", "-3")
	if got := spinWindow(1); got != 0 {
		t.Errorf("SLUICE_SPIN_US=-3: %v", got)
	}
}
