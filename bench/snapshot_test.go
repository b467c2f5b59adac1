package bench

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestSnapshotDriver runs sluice-bench snapshot end to end on a small
// dataset of each kind: both servers loaded, each round measured, the
// report printed. (What it measures is a benchmark's business; this
// checks the driver works.)
func TestSnapshotDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds sluice-server")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := BuildSluice(context.Background(), root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, ds := range []string{"strings", "collections"} {
		cfg := DefaultSnapshotConfig()
		cfg.SluiceBin, cfg.Dataset, cfg.Keys, cfg.Elements, cfg.Rounds = bin, ds, 2000, 10, 2
		cfg.Log = testLog{t}
		runs, err := RunSnapshot(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 4 {
			t.Fatalf("%s: %d runs, want 4", ds, len(runs))
		}
		for _, r := range runs {
			if r.Probes == 0 || r.MaxWait <= 0 || r.Took <= 0 {
				t.Errorf("%s: %+v", ds, r)
			}
		}
		var out bytes.Buffer
		SnapshotSummary(&out, cfg, runs)
		if !strings.Contains(out.String(), "| 2 | Redis |") || !strings.Contains(out.String(), "worst longest wait") {
			t.Errorf("report:\n%s", out.String())
		}
	}
}
