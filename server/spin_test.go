package server

import (
	"os"
	"testing"
	"time"
)

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
