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
// heap is about 160 MB (redis-server's RSS: 168-179 MB), and RSS is
// 203-209 MB at GOGC 100 or 50 and 196 MB at 25.
//
// A fixed 25% is too tight for a small heap, though: with 10 MB live, a
// collection every 2.5 MB allocated (a ZADD or SET of new members at
// 100k/s runs one every few tens of milliseconds), each taking CPU from
// the clients on the same machine and adding assist time to the event
// loops. So the GC may always let the heap grow by at least minHeadroom:
// the percentage follows the live heap (percentFor, applied by
// manageMemory), 25 from 128 MB up.
// GOGC in the environment still wins and turns the tuning off.
const (
	gcPercent   = 25
	minHeadroom = 32 << 20
)

func init() {
	tune := os.Getenv("GOGC") == ""
	if tune {
		debug.SetGCPercent(percentFor(0))
	}
	go manageMemory(250*time.Millisecond, tune, os.Getenv("SLUICE_IDLE_TRIM") != "0")
}

// percentFor returns the GC percentage for a live heap of live bytes:
// gcPercent, or more where that leaves less than minHeadroom.
func percentFor(live uint64) int {
	if live < 1<<20 {
		live = 1 << 20
	}
	p := int((minHeadroom*100 + live - 1) / live)
	return max(p, gcPercent)
}

func manageMemory(interval time.Duration, tune, trim bool) {
	if !tune && !trim {
		return
	}
	s := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	current := percentFor(0)
	t := idleTrimmer{}
	for range time.Tick(interval) {
		metrics.Read(s)
		if tune {
			// Retune when the percentage moves by more than a tenth.
			if p := percentFor(s[3].Value.Uint64()); p*10 < current*9 || p*10 > current*11 {
				debug.SetGCPercent(p)
				current = p
			}
		}
		if trim && t.step(s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()) {
			debug.FreeOSMemory()
			metrics.Read(s)
			t.last = s[0].Value.Uint64()
		}
	}
}

// idleTrimmer decides when to give free heap memory back to the OS: once
// allocation stops.
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
type idleTrimmer struct {
	last uint64 // bytes allocated so far at the previous step
	busy bool   // the previous interval allocated
}

const (
	quietAlloc = 256 << 10 // bytes allocated in an interval that still count as idle
	minFree    = 4 << 20   // free, unreleased heap worth giving back
)

// step takes the interval's figures and reports whether to trim now.
func (t *idleTrimmer) step(allocs, free, objects uint64) bool {
	delta := allocs - t.last
	t.last = allocs
	if delta > quietAlloc {
		t.busy = true
		return false
	}
	if !t.busy {
		return false
	}
	t.busy = false
	// Free pages plus what a collection would free: the heap above the
	// live data is mostly garbage after a load.
	return free+objects/8 >= minFree
}
