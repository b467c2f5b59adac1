package server_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestSentinelFailoverKill9: three real sentinels (redis-server
// --sentinel) watch a sluice-server master and two sluice-server
// replicas, all separate processes. go-redis's failover client writes,
// each write followed by WAIT 1; the master is killed with SIGKILL in the
// middle. The sentinels promote a replica, the client follows them, and
// every write that WAIT acknowledged is on the new master.
func TestSentinelFailoverKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server (run as a sentinel) is not installed")
	}
	bin := buildServer(t)
	ctx := context.Background()
	dir := t.TempDir()

	var procs []*exec.Cmd
	t.Cleanup(func() {
		for _, p := range procs {
			if p.ProcessState == nil {
				p.Process.Kill()
				p.Wait()
			}
		}
	})
	start := func(name string, args ...string) (*exec.Cmd, *os.File) {
		log, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		return cmd, log
	}
	waitUp := func(addr string) {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if c.Ping(ctx).Err() == nil {
				return
			}
		}
		t.Fatalf("%s did not start", addr)
	}
	dump := func() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".log") {
				b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				t.Logf("---- %s\n%s", e.Name(), b)
			}
		}
	}

	// The master and its two replicas.
	ports := []int{redistest.FreePort(t), redistest.FreePort(t), redistest.FreePort(t)}
	var servers []*exec.Cmd
	for i, port := range ports {
		args := []string{bin, "--port", strconv.Itoa(port), "--dir", dir, "--dbfilename", fmt.Sprintf("dump%d.rdb", i), "--save", "", "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}
		if i > 0 {
			args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(ports[0]))
		}
		cmd, _ := start(fmt.Sprintf("server%d", i), args...)
		servers = append(servers, cmd)
		waitUp("127.0.0.1:" + strconv.Itoa(port))
	}
	master := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(ports[0])})
	defer master.Close()
	waitUntil(t, 20*time.Second, "two replicas online", func() bool {
		info := master.Info(ctx, "replication").Val()
		return strings.Count(info, "state=online") == 2
	})

	// Three sentinels.
	var sentinels []string
	for i := 0; i < 3; i++ {
		port := redistest.FreePort(t)
		conf := filepath.Join(dir, fmt.Sprintf("sentinel%d.conf", i))
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
			"sentinel monitor mymaster 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds mymaster 1000\n"+
			"sentinel failover-timeout mymaster 10000\n"+
			"sentinel parallel-syncs mymaster 2\n", port, dir, ports[0])
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		start(fmt.Sprintf("sentinel%d", i), redisServer, conf, "--sentinel")
		addr := "127.0.0.1:" + strconv.Itoa(port)
		waitUp(addr)
		sentinels = append(sentinels, addr)
	}
	for _, addr := range sentinels {
		s := redis.NewSentinelClient(&redis.Options{Addr: addr})
		defer s.Close()
		waitUntil(t, 30*time.Second, "sentinel "+addr+" sees the replicas and the other sentinels", func() bool {
			m, err := s.Master(ctx, "mymaster").Result()
			return err == nil && m["num-slaves"] == "2" && m["num-other-sentinels"] == "2"
		})
	}

	// Writes, each acknowledged by WAIT 1 or not counted.
	fc := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "mymaster",
		SentinelAddrs: sentinels,
		DialTimeout:   time.Second,
		ReadTimeout:   2 * time.Second,
		WriteTimeout:  2 * time.Second,
		MaxRetries:    -1,
	})
	defer fc.Close()
	var mu sync.Mutex
	acked := map[string]string{}
	stop := make(chan struct{})
	done := make(chan struct{})
	var attempts, failures int
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key, val := fmt.Sprintf("k:%d", i), fmt.Sprintf("v:%d", i)
			attempts++
			if err := fc.Set(ctx, key, val, 0).Err(); err != nil {
				failures++
				time.Sleep(50 * time.Millisecond)
				continue
			}
			n, err := fc.Do(ctx, "WAIT", 1, 1000).Int()
			if err != nil || n < 1 {
				failures++
				continue
			}
			mu.Lock()
			acked[key] = val
			mu.Unlock()
		}
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitUntil(t, 20*time.Second, "writes acknowledged before the kill", func() bool { return count() >= 200 })
	servers[0].Process.Signal(syscall.SIGKILL)
	servers[0].Wait()
	killedAt := count()

	// The sentinels fail over; writes go on against the new master.
	var newMaster string
	waitUntil(t, 40*time.Second, "a new master", func() bool {
		s := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
		defer s.Close()
		addr, err := s.GetMasterAddrByName(ctx, "mymaster").Result()
		if err != nil || addr[1] == strconv.Itoa(ports[0]) {
			return false
		}
		newMaster = addr[0] + ":" + addr[1]
		return true
	})
	waitUntil(t, 30*time.Second, "writes acknowledged after the failover", func() bool { return count() >= killedAt+100 })
	close(stop)
	<-done

	nm := redis.NewClient(&redis.Options{Addr: newMaster})
	defer nm.Close()
	if role := nm.Do(ctx, "ROLE").Val().([]any)[0]; role != "master" {
		dump()
		t.Fatalf("new master %s says role %v", newMaster, role)
	}
	mu.Lock()
	defer mu.Unlock()
	var lost []string
	for k, v := range acked {
		if got, err := nm.Get(ctx, k).Result(); err != nil || got != v {
			lost = append(lost, k)
		}
	}
	if len(lost) > 0 {
		dump()
		t.Fatalf("%d of %d writes acknowledged by WAIT 1 are missing on the new master %s: %v", len(lost), len(acked), newMaster, lost[:min(len(lost), 10)])
	}
	t.Logf("%d writes acknowledged (%d before the kill), %d attempts, %d failed or unacknowledged; new master %s", len(acked), killedAt, attempts, failures, newMaster)
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
