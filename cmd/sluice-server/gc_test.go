package main

import "testing"

func TestPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 3200},             // 1 MB floor: 32 MB of headroom
		{16 << 20, 200},       // 32 MB over 16 MB live
		{128 << 20, 25},       // from 128 MB on, the base 25%
		{1 << 30, gcPercent},  // never below it
		{100 << 20, 32},       // 32 MB / 100 MB, rounded up
		{(32 << 20) + 1, 100}, // just over 32 MB: 100% (rounded up from 99.99...)
	} {
		if got := percentFor(c.live); got != c.want {
			t.Errorf("percentFor(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

func TestIdleTrimmer(t *testing.T) {
	var tr idleTrimmer
	mb := uint64(1 << 20)
	steps := []struct {
		allocs, free, objects uint64
		want                  bool
	}{
		{0, 0, 0, false},               // idle from the start: nothing to do
		{100 * mb, 0, 100 * mb, false}, // busy
		{200 * mb, 0, 200 * mb, false}, // busy
		{200 * mb, 0, 200 * mb, true},  // quiet after busy, 25 MB reclaimable: trim
		{200 * mb, 0, 200 * mb, false}, // still quiet: once per transition
		{201 * mb, 0, 1 * mb, false},   // busy again
		{201 * mb, 0, 1 * mb, false},   // quiet, but too little to give back
	}
	for i, s := range steps {
		if got := tr.step(s.allocs, s.free, s.objects); got != s.want {
			t.Errorf("step %d: %v, want %v", i, got, s.want)
		}
	}
}
