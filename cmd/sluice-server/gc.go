package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The keyspace is a large, long-lived heap that changes little per write
// (SET over an existing string overwrites in place), so the GC can run at
// a lower target than Go's default of 100 for little CPU. Measured with
// 1,000,000 keys of 64-byte values loaded by redis-cli --pipe: the live
// heap is about 170 MB (redis-server's RSS: 168-179 MB), and RSS is
// 203-209 MB at GOGC 100 or 50 and 196 MB at 25. GOGC in the environment
// still wins.
func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
	if os.Getenv("SLUICE_IDLE_TRIM") != "0" {
		go trimWhenIdle(500 * time.Millisecond)
	}
}

// trimWhenIdle gives free heap memory back to the OS once allocation stops.
//
// While a load runs, Go's heap holds garbage (the old tables of growing
// maps, replaced values) up to the GC goal, and the background scavenger
// returns freed pages only slowly, so a server that just loaded a dataset
// keeps tens of MB more RSS than its live data for minutes. Redis's
// allocator gives such pages back soon after. So: every interval, read the
// bytes allocated so far; when a busy interval is followed by one that
// allocated almost nothing (the load is over, or the server serves only
// reads and in-place overwrites) and enough free memory is held, run one
// collection and release the free pages (debug.FreeOSMemory). It runs once
// per busy-then-idle transition, never during steady allocation, where the
// normal GC pacing applies. SLUICE_IDLE_TRIM=0 turns it off.
func trimWhenIdle(interval time.Duration) {
	const (
		quiet   = 256 << 10 // bytes allocated in an interval that still count as idle
		minFree = 4 << 20   // free, unreleased heap worth giving back
	)
	s := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	metrics.Read(s)
	last := s[0].Value.Uint64()
	busy := false
	for range time.Tick(interval) {
		metrics.Read(s)
		allocs := s[0].Value.Uint64()
		delta := allocs - last
		last = allocs
		if delta > quiet {
			busy = true
			continue
		}
		if !busy {
			continue
		}
		busy = false
		// Free pages plus what a collection would free: the heap above the
		// live data is mostly garbage after a load.
		free, objects := s[1].Value.Uint64(), s[2].Value.Uint64()
		if free+objects/8 < minFree {
			continue
		}
		debug.FreeOSMemory()
		metrics.Read(s)
		last = s[0].Value.Uint64()
	}
}
