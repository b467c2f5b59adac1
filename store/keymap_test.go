package store

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestKeyMapAgainstMap runs random puts and deletes on a keyMap and a Go
// map side by side: lookups, the count and a full iteration must agree
// through growth, tombstones, rebuilds and shrinking.
func TestKeyMapAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var km keyMap
	ref := map[string]*Entry{}
	check := func(step int) {
		t.Helper()
		if km.n != len(ref) {
			t.Fatalf("step %d: %d keys, want %d", step, km.n, len(ref))
		}
		seen := 0
		km.each(func(k string, e *Entry) bool {
			if ref[k] != e {
				t.Fatalf("step %d: iteration gave %q with the wrong entry", step, k)
			}
			seen++
			return true
		})
		if seen != len(ref) {
			t.Fatalf("step %d: iteration saw %d keys, want %d", step, seen, len(ref))
		}
	}
	for step := 0; step < 200000; step++ {
		// The key space grows and then shrinks, so the table does both.
		span := 5000
		if step > 120000 {
			span = 300
		}
		k := fmt.Sprintf("k%d", rng.Intn(span))
		h := HashString(k)
		switch op := rng.Intn(10); {
		case op < 5 && step <= 120000:
			e := &Entry{}
			old := km.put([]byte(k), h, e)
			if old != ref[k] {
				t.Fatalf("step %d: put %q replaced %p, want %p", step, k, old, ref[k])
			}
			ref[k] = e
		case op < 8:
			got := km.del(k, h)
			if got != ref[k] {
				t.Fatalf("step %d: del %q returned %p, want %p", step, k, got, ref[k])
			}
			delete(ref, k)
		default:
			if got := km.get(k, h); got != ref[k] {
				t.Fatalf("step %d: get %q = %p, want %p", step, k, got, ref[k])
			}
			if got := km.lookup(k); got != ref[k] {
				t.Fatalf("step %d: lookup %q = %p, want %p", step, k, got, ref[k])
			}
		}
		if step%10000 == 0 {
			check(step)
		}
	}
	check(-1)
	if len(km.tags) > 8*max(km.n, kmMinSize) {
		t.Fatalf("table of %d slots kept for %d keys", len(km.tags), km.n)
	}
	// An empty key is a key like any other.
	e := &Entry{}
	if km.put([]byte{}, HashString(""), e) != nil || km.lookup("") != e {
		t.Fatal("empty key not stored")
	}
}

// TestKeyMapEachFromVisitsAll checks that a walk from any start slot sees
// every key once.
func TestKeyMapEachFromVisitsAll(t *testing.T) {
	var km keyMap
	for i := 0; i < 1000; i++ {
		k := fmt.Sprintf("key:%d", i)
		km.put([]byte(k), HashString(k), &Entry{})
	}
	for _, start := range []int{0, 1, 517, len(km.tags) - 1, len(km.tags), 1 << 40} {
		seen := map[string]int{}
		km.eachFrom(start, func(k string, _ *Entry) bool { seen[k]++; return true })
		if len(seen) != 1000 {
			t.Fatalf("start %d: saw %d keys", start, len(seen))
		}
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("start %d: %q seen %d times", start, k, n)
			}
		}
	}
}
