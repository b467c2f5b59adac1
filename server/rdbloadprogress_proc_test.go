package server_test

import (
	"context"
	"fmt"
	"net"
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
			// 3,000 keys at 2 ms each; Redis serves clients
			// every loading-process-events-interval-bytes meanwhile.
			addr, rdb := startLoading(t, bin, 3000, "2000")
			c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
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

// TestLoadingServesEveryClient: while an RDB loads at start-up (here with
// key-load-delay), every client that sends INFO and a transaction that
// loading aborts gets its replies during the load, as Redis answers all
// its clients at each events point. Sluice served one such command per
// pause of the load (a command that reads the keyspace waited for the
// loader's next yield, holding up its event loop's other clients): five
// Sentinels and a test harness polling INFO fell more than a second
// behind, the Sentinels' SLAVEOF transactions were read only after the
// load, and their CLIENT KILLs then cut the harness's connection again and
// again (Redis's Sentinel suite, 12-master-reboot: "I/O error reading
// reply").
func TestLoadingServesEveryClient(t *testing.T) {
	for name, bin := range processServers(t) {
		t.Run(name, func(t *testing.T) {
			// 6,000 keys at 1.5 ms each: 9 s of loading.
			addr, _ := startLoading(t, bin, 6000, "1500")
			waitUntil(t, 5*time.Second, "the server's port", func() bool {
				c, err := net.Dial("tcp", addr)
				if err == nil {
					c.Close()
				}
				return err == nil
			})
			// Six clients, 25 rounds each, all answered within the load:
			// redis-server answers each round trip at its next events
			// point, some 75 ms here (4 s for a client's 50), where
			// Sluice took the 150 EXECs one per pause of the loader.
			conns := make([]*redistest.Conn, 6)
			for k := range conns {
				conns[k] = redistest.Dial(t, addr)
			}
			errs := make(chan error, len(conns))
			for _, c := range conns {
				go func() { errs <- loadingRounds(c, 25) }()
			}
			for range conns {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// loadingRounds sends INFO, then MULTI, SLAVEOF and EXEC in one write,
// rounds times, and checks that the server is still loading and that
// loading aborted the transaction.
func loadingRounds(c *redistest.Conn, rounds int) error {
	for i := 0; i < rounds; i++ {
		if r, err := c.Do("INFO", "persistence"); err != nil || !strings.Contains(r, "loading:1") {
			return fmt.Errorf("round %d: INFO during the load: %.60q %v", i, r, err)
		}
		tx := append(append(redistest.Encode("MULTI"), redistest.Encode("SLAVEOF", "127.0.0.1", "1")...), redistest.Encode("EXEC")...)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(tx); err != nil {
			return err
		}
		var r string
		for j := 0; j < 3; j++ {
			var err error
			if r, err = redistest.ReadReply(c.R); err != nil {
				return err
			}
		}
		if !strings.HasPrefix(r, "-EXECABORT") {
			return fmt.Errorf("round %d: EXEC during the load: %q", i, r)
		}
	}
	return nil
}

// startLoading starts bin on an RDB of keys keys (DEBUG POPULATE) that it
// loads at start-up with key-load-delay delay µs and a pause every 1,024
// bytes, and returns its address and the file.
func startLoading(t *testing.T, bin string, keys int, delay string) (string, []byte) {
	t.Helper()
	ctx := context.Background()
	src, s := startProc(t, bin)
	if err := s.Do(ctx, "DEBUG", "POPULATE", keys).Err(); err != nil {
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
	port := redistest.FreePort(t)
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--dir", dir, "--key-load-delay", delay, "--loading-process-events-interval-bytes", "1024", "--save", "")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return "127.0.0.1:" + strconv.Itoa(port), rdb
}
