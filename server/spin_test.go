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
		t.Fatal("a fresh loop spins before any work arrived")
	}
	// Work arriving every 20µs: the average falls under the window.
	for i := 0; i < 40; i++ {
		g.observe(20*us, true)
	}
	if !g.spinning() {
		t.Fatalf("no spinning after 40 gaps of 20µs (average %dns)", g.gap)
	}
	// One wait that timed out with nothing to do stops it at once.
	g.observe(100*int64(time.Millisecond), false)
	if g.spinning() {
		t.Fatal("still spinning after an idle timeout")
	}
	// Steady light load, a request every 500µs: never.
	for i := 0; i < 200; i++ {
		g.observe(500*us, true)
		if g.spinning() {
			t.Fatalf("spinning with 500µs gaps, after %d of them", i+1)
		}
	}
	// A lone long gap among short ones is absorbed, not a reset.
	for i := 0; i < 60; i++ {
		g.observe(10*us, true)
	}
	g.observe(300*us, true)
	if !g.spinning() {
		t.Fatalf("one 300µs gap among 10µs ones stopped spinning (average %dns)", g.gap)
	}
	if off := newSpinGate(0); off.spinning() {
		t.Fatal("window 0 spins")
	} else {
		for i := 0; i < 100; i++ {
			off.observe(0, true)
		}
		if off.spinning() {
			t.Fatal("window 0 spins under load")
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
