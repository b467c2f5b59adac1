package bench

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestSlowSubscriberMemory: a subscriber that never reads gets 100 MB
// published to it. The server must close it at client-output-buffer-limit
// pubsub (32mb hard) and give the memory back: RSS within 10% of where it
// started. Runs against sluice-server built from this tree and, for
// reference, redis-server.
func TestSlowSubscriberMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/status")
	}
	if testing.Short() {
		t.Skip("-short: builds sluice-server and publishes 100 MB")
	}
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := BuildSluice(context.Background(), root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultSlowSubConfig()
	cfg.Log = testLog{t}
	check := func(t *testing.T, name, bin string, cfg SlowSubConfig) {
		res, err := SlowSubscriber(context.Background(), name, bin, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Disconnected {
			t.Errorf("%s: the slow subscriber was not disconnected: %s", name, res)
		}
		if res.Delivered >= res.Published {
			t.Errorf("%s: every PUBLISH counted the subscriber: %s", name, res)
		}
		if !strings.HasPrefix(strings.TrimSpace(res.NumsubAfter), "*2 ") || !strings.HasSuffix(strings.TrimSpace(res.NumsubAfter), ":0") {
			t.Errorf("%s: PUBSUB NUMSUB afterwards: %q", name, res.NumsubAfter)
		}
		// RSS is a measurement of the whole process: with other test
		// packages running beside it, the Go runtime's own growth under
		// load (threads, spans) exceeds 10% of a 13 MB server. The figure
		// is asserted when this test runs alone (SLUICE_MEMTEST=1, as in
		// `sluice-bench pubsub -slow-subscriber`) and logged otherwise.
		if cfg.Settle > 0 && !res.Returned {
			if os.Getenv("SLUICE_MEMTEST") == "1" {
				t.Errorf("%s: RSS did not come back within %.0f%%: %s", name, 100*cfg.Tolerance, res)
			} else {
				t.Logf("%s: RSS did not come back within %.0f%% (asserted only with SLUICE_MEMTEST=1): %s", name, 100*cfg.Tolerance, res)
			}
		}
	}
	t.Run("sluice", func(t *testing.T) { check(t, "Sluice", bin, cfg) })
	t.Run("redis", func(t *testing.T) {
		rs, err := exec.LookPath("redis-server")
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("redis-server not found in PATH")
			}
			t.Skip("redis-server not installed")
		}
		// jemalloc returns freed pages after its 10 s decay: the reference
		// is checked for the disconnection only (RSS is logged).
		rcfg := cfg
		rcfg.Settle = 0
		check(t, "Redis", rs, rcfg)
	})
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
