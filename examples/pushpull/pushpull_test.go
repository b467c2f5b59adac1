package main

import (
	"strconv"
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestPushPull runs the pipeline against an in-process Sluice: every task
// comes out of the sink exactly once.
func TestPushPull(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	const n, workers = 100000, 8
	got, err := run(addr, workers, n)
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, n)
	for _, r := range got {
		i, err := strconv.Atoi(r[len("done:"):])
		if err != nil || i < 0 || i >= n {
			t.Fatalf("bad result %q", r)
		}
		if seen[i] {
			t.Fatalf("task %d delivered twice", i)
		}
		seen[i] = true
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("task %d lost (%d results)", i, len(got))
		}
	}
}
