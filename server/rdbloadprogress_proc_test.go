package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestRDBLoadingProgress: while an RDB loads at start-up, clients are
// served every loading-process-events-interval-bytes of it, and INFO's
// loading_loaded_bytes counts what was read, rising towards
// loading_total_bytes, as in Redis. Sluice served them every 1,024 keys
// only (2 s apart here), and said the file was all loaded from the first
// key on (it reads it whole first).
func TestRDBLoadingProgress(t *testing.T) {
	ctx := context.Background()
	for name, bin := range processServers(t) {
		t.Run(name, func(t *testing.T) {
			src, s := startProc(t, bin)
			if err := s.Do(ctx, "DEBUG", "POPULATE", "3000").Err(); err != nil {
				t.Fatal(err)
			}
			if err := s.Save(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			rdb, err := os.ReadFile(filepath.Join(src.dir, "dump.rdb"))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "dump.rdb"), rdb, 0o644)
			// 3,000 keys at 2 ms each; Redis serves clients
			// every loading-process-events-interval-bytes meanwhile.
			port := redistest.FreePort(t)
			cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--dir", dir, "--key-load-delay", "2000", "--loading-process-events-interval-bytes", "1024", "--save", "")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1})
			defer c.Close()
			waitUntil(t, 10*time.Second, "the server's INFO", func() bool { return c.Info(ctx, "persistence").Err() == nil })
			total := infoInt(t, c, "loading_total_bytes")
			first := infoInt(t, c, "loading_loaded_bytes")
			time.Sleep(300 * time.Millisecond)
			second := infoInt(t, c, "loading_loaded_bytes")
			if infoInt(t, c, "loading") != 1 {
				t.Fatalf("the load ended before it was sampled (%d then %d of %d)", first, second, total)
			}
			if !(0 < first && first < second && second < total) || total < int64(len(rdb))-1 {
				t.Errorf("loading_loaded_bytes %d then %d of %d (the file has %d bytes)", first, second, total, len(rdb))
			}
		})
	}
}
