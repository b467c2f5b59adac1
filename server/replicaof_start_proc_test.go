package server_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// A server started with replicaof in its configuration writes nothing to
// standard error (Redis's test harness counts anything there as a
// failure: the Sentinel suite's restarted instances did) and logs one
// "Connecting to MASTER" before the sync starts; with no RDB file to say
// which history it continues it asks for a full sync ("no cached
// master"). REPLICAOF logs one "Connecting to MASTER" too. Both servers,
// each with a master of its own kind.
func TestReplicaofAtStartLogs(t *testing.T) {
	for name, bin := range processServers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			master, _ := startProc(t, bin, "--repl-diskless-sync-delay", "0")
			h, p := hostPort(master.addr)
			dir := t.TempDir()
			port := redistest.FreePort(t)
			cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
				"--dir", dir, "--logfile", "r.log", "--replicaof", h, p)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			r := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1})
			t.Cleanup(func() { r.Close() })
			waitUntil(t, 20*time.Second, "the replica's sync", func() bool { return linkUp(r) })
			logOf := func() string {
				b, _ := os.ReadFile(filepath.Join(dir, "r.log"))
				return string(b)
			}
			log := logOf()
			if n := strings.Count(log, "Connecting to MASTER"); n != 1 {
				t.Errorf("%d lines \"Connecting to MASTER\" at start, want 1:\n%s", n, log)
			}
			if !strings.Contains(log, "Partial resynchronization not possible (no cached master)") {
				t.Errorf("the replica did not ask for a full sync:\n%s", log)
			}
			// REPLICAOF NO ONE, then REPLICAOF again.
			if err := r.SlaveOf(ctx, "NO", "ONE").Err(); err != nil {
				t.Fatal(err)
			}
			before := strings.Count(logOf(), "Connecting to MASTER")
			if err := r.SlaveOf(ctx, h, p).Err(); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 20*time.Second, "the replica's sync", func() bool { return linkUp(r) })
			if n := strings.Count(logOf(), "Connecting to MASTER") - before; n != 1 {
				t.Errorf("%d lines \"Connecting to MASTER\" after REPLICAOF, want 1:\n%s", n, logOf())
			}
			if stderr.Len() > 0 || stdout.Len() > 0 {
				t.Errorf("standard output %q, standard error %q: want both empty", stdout.String(), stderr.String())
			}
		})
	}
}
