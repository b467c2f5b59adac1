package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestDebugPauseCron: while DEBUG PAUSE-CRON 1 holds the cron, keys that
// expired stay until they are touched (the active expiry is the cron's),
// and once it is released they go; the same against redis-server.
func TestDebugPauseCron(t *testing.T) {
	ctx := context.Background()
	_, sl := redistest.StartSluice(t, "enable-debug-command", "yes")
	servers := map[string]string{"sluice": sl, "redis": redistest.StartRedis(t, "--enable-debug-command", "yes")}
	got := map[string]string{}
	for name, addr := range servers {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		if err := rdb.Do(ctx, "DEBUG", "PAUSE-CRON", "1").Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := 0; i < 20; i++ {
			rdb.Set(ctx, fmt.Sprint("k", i), "v", 20*time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		paused := rdb.DBSize(ctx).Val()
		if err := rdb.Do(ctx, "DEBUG", "PAUSE-CRON", "0").Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		waitFor(t, name+": the expired keys removed once the cron runs again", func() bool {
			return rdb.DBSize(ctx).Val() == 0
		})
		got[name] = fmt.Sprint("keys while paused: ", paused)
	}
	if got["sluice"] != got["redis"] || got["redis"] != "keys while paused: 20" {
		t.Fatalf("redis %s, sluice %s", got["redis"], got["sluice"])
	}
}

// TestShutdownSignals runs sluice-server and redis-server as processes:
//   - a SIGTERM waits for the cron, so while DEBUG PAUSE-CRON holds it,
//     SHUTDOWN ABORT cancels the shutdown;
//   - a second SIGINT during the save at shutdown exits at once and removes
//     the save's temporary file (temp-<pid>.rdb).
func TestShutdownSignals(t *testing.T) {
	for name, bin := range processServers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			srv := &aofServer{t: t, bin: bin, dir: dir, args: []string{"--bind", "127.0.0.1", "--save", "3600 1", "--appendonly", "no", "--enable-debug-command", "yes"}}
			srv.start()
			cmd, logs := srv.cmd, srv.logs
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			defer func() {
				cmd.Process.Kill()
				<-exited
			}()
			rdb := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1})
			defer rdb.Close()

			rdb.Do(ctx, "DEBUG", "PAUSE-CRON", "1")
			cmd.Process.Signal(syscall.SIGTERM)
			time.Sleep(300 * time.Millisecond)
			if v, err := rdb.Ping(ctx).Result(); v != "PONG" {
				t.Fatalf("after SIGTERM with the cron paused: %q %v\n%s", v, err, logs)
			}
			if v, err := rdb.Do(ctx, "SHUTDOWN", "ABORT").Result(); v != "OK" {
				t.Fatalf("SHUTDOWN ABORT: %v %v", v, err)
			}
			rdb.Do(ctx, "DEBUG", "PAUSE-CRON", "0")
			time.Sleep(300 * time.Millisecond)
			if v, err := rdb.Ping(ctx).Result(); v != "PONG" || !strings.Contains(logs.String(), "Shutdown manually aborted") {
				t.Fatalf("after SHUTDOWN ABORT and the cron again: %q %v\n%s", v, err, logs)
			}

			for i := 0; i < 20; i++ {
				rdb.Set(ctx, strconv.Itoa(i), i, 0)
			}
			rdb.ConfigSet(ctx, "rdb-key-save-delay", "100000") // 100 ms a key: 2 s
			temp := filepath.Join(dir, fmt.Sprintf("temp-%d.rdb", cmd.Process.Pid))
			cmd.Process.Signal(syscall.SIGINT)
			waitFor(t, "the save at shutdown to write "+temp, func() bool {
				_, err := os.Stat(temp)
				return err == nil
			})
			cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-exited:
			case <-time.After(1500 * time.Millisecond):
				t.Fatalf("a second SIGINT did not exit at once:\n%s", logs)
			}
			if _, err := os.Stat(temp); err == nil {
				t.Fatalf("%s left behind", temp)
			}
			if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err == nil {
				t.Fatal("dump.rdb written, though the save was cut short")
			}
			if !strings.Contains(logs.String(), "You insist... exiting now.") {
				t.Fatalf("no \"You insist\" in the log:\n%s", logs)
			}
		})
	}
}
