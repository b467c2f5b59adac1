package server_test

import (
	"context"
	"log"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/server"
)

// With watchdog-period set, a command that holds its loop for longer than
// the period gets the loop's stack logged once (Redis's "WATCHDOG TIMER
// EXPIRED"); shorter ones, and any with the watchdog off, get nothing.
func TestWatchdog(t *testing.T) {
	cfg := server.NewConfig()
	cfg.Set("port", "0")
	cfg.Set("bind", "127.0.0.1")
	cfg.Set("enable-debug-command", "yes")
	srv := server.New(cfg)
	logs := &syncBuffer{}
	srv.SetLogger(log.New(logs, "", 0))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c := redis.NewClient(&redis.Options{Addr: srv.Addrs()[0].String()})
	defer c.Close()
	ctx := context.Background()
	fired := func() int { return strings.Count(logs.String(), "--- WATCHDOG TIMER EXPIRED ---") }
	c.Do(ctx, "debug", "sleep", "0.5")
	time.Sleep(200 * time.Millisecond)
	if n := fired(); n != 0 {
		t.Fatalf("the watchdog fired %d times while off", n)
	}
	if err := c.ConfigSet(ctx, "watchdog-period", "200").Err(); err != nil {
		t.Fatal(err)
	}
	c.Do(ctx, "debug", "sleep", "0.6")
	time.Sleep(200 * time.Millisecond)
	if n := fired(); n != 1 || !strings.Contains(logs.String(), "server.debugCommand") {
		t.Fatalf("a 600 ms command under a 200 ms watchdog: fired %d times, log:\n%s", n, logs)
	}
	c.Do(ctx, "debug", "sleep", "0.05")
	for range 5 {
		c.Ping(ctx)
		time.Sleep(100 * time.Millisecond) // idle loops are not stalled
	}
	if n := fired(); n != 1 {
		t.Fatalf("short commands and idle time fired the watchdog: %d times", n)
	}
}

// sluice-server writes a crash report with every goroutine's stack to its
// log on SIGABRT and on DEBUG SEGFAULT, and exits, as redis-server logs
// one and dies.
func TestCrashReportBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	for _, how := range []string{"SIGABRT", "DEBUG SEGFAULT"} {
		port := redistest.FreePort(t)
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--enable-debug-command", "yes", "--dir", t.TempDir())
		logs := &syncBuffer{}
		cmd.Stdout = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
		for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("server did not start: %s", logs)
			}
		}
		want := "crashed by signal: 6 (SIGABRT)"
		if how == "SIGABRT" {
			cmd.Process.Signal(syscall.SIGABRT)
		} else {
			c.Do(context.Background(), "debug", "segfault")
			want = "crashed on DEBUG SEGFAULT"
		}
		c.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: the server exited with status 0", how)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%s: the server did not exit", how)
		}
		out := logs.String()
		if !strings.Contains(out, want) || !strings.Contains(out, "------ STACK TRACE ------") || !strings.Contains(out, "goroutine ") {
			t.Errorf("%s: no crash report in the log:\n%s", how, out)
		}
	}
}
