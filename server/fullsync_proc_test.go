package server_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A diskless full sync (repl-diskless-sync yes), on sluice-server and on
// redis-server, each with replicas of its own kind, as processes:
//   - a replica killed while the image is sent to it and to another does
//     not hold up the other, nor the end of the image;
//   - the image goes through a child process: killed, the sync ends (and
//     the replica syncs again), and it exits when its parent is killed.
func TestDisklessSyncKills(t *testing.T) {
	for name, bin := range processServers(t) {
		t.Run(name+"/replica killed", func(t *testing.T) { disklessReplicaKilled(t, bin) })
		t.Run(name+"/child killed", func(t *testing.T) { disklessChildKilled(t, bin) })
		t.Run(name+"/parent killed", func(t *testing.T) { disklessParentKilled(t, bin) })
	}
}

// A full sync through a BGSAVE's file (repl-diskless-sync no) to a
// replica that reads it slowly (it loads from the socket, a key each half
// millisecond): the transfer spans several of the master's cron seconds,
// whose keep-alive newlines are for replicas still waiting for their
// file, not in the middle of it. redis-server and sluice-server each
// with replicas of their own kind; the replica ends with the master's
// dataset.
func TestFileSyncToASlowReplica(t *testing.T) {
	for name, bin := range processServers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			master, m := startProc(t, bin, "--repl-diskless-sync", "no", "--rdbcompression", "no")
			if err := m.Do(ctx, "DEBUG", "POPULATE", "5000", "test", "5000").Err(); err != nil {
				t.Fatal(err)
			}
			_, r := startProc(t, bin, "--repl-diskless-load", "swapdb", "--key-load-delay", "500")
			replicate(t, r, master)
			waitUntil(t, 60*time.Second, "the replica's sync", func() bool {
				return linkUp(r)
			})
			if n := infoInt(t, m, "sync_full"); n != 1 {
				t.Errorf("the master made %d full syncs, want 1", n)
			}
			want := m.Do(ctx, "DEBUG", "DIGEST").Val()
			if got := r.Do(ctx, "DEBUG", "DIGEST").Val(); got != want {
				t.Errorf("replica's digest %v, master's %v", got, want)
			}
		})
	}
}

func startProc(t *testing.T, bin string, args ...string) (*aofServer, *redis.Client) {
	t.Helper()
	return startProcIn(t, bin, t.TempDir(), args...)
}

// startProcIn is startProc with the server's directory given.
func startProcIn(t *testing.T, bin, dir string, args ...string) (*aofServer, *redis.Client) {
	t.Helper()
	srv := &aofServer{t: t, bin: bin, dir: dir, args: append([]string{
		"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--enable-debug-command", "yes",
	}, args...)}
	srv.start()
	t.Cleanup(srv.kill)
	rdb := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return srv, rdb
}

// linkUp reports whether a replica's link to its master is up.
func linkUp(r *redis.Client) bool {
	return strings.Contains(r.Info(context.Background(), "replication").Val(), "master_link_status:up")
}

// childPids lists the processes whose parent is pid.
func childPids(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, n)
		}
	}
	return kids
}

func replicate(t *testing.T, replica *redis.Client, master *aofServer) {
	t.Helper()
	h, p := hostPort(master.addr)
	if err := replica.SlaveOf(context.Background(), h, p).Err(); err != nil {
		t.Fatal(err)
	}
}

// The slow replica reads the image at a key a millisecond (key-load-delay):
// the master's sender waits on its socket when it is killed.
func disklessReplicaKilled(t *testing.T, bin string) {
	ctx := context.Background()
	master, m := startProc(t, bin, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "5",
		"--repl-diskless-sync-max-replicas", "2", "--rdbcompression", "no")
	if err := m.Do(ctx, "DEBUG", "POPULATE", "5000", "test", "10000").Err(); err != nil {
		t.Fatal(err)
	}
	slow, s := startProc(t, bin, "--repl-diskless-load", "swapdb", "--key-load-delay", "1000")
	_, f := startProc(t, bin)
	replicate(t, s, master)
	replicate(t, f, master)
	waitUntil(t, 20*time.Second, "the slow replica loading", func() bool {
		return strings.Contains(slow.logs.String(), "Loading DB in memory")
	})
	time.Sleep(500 * time.Millisecond)
	if v := infoInt(t, m, "rdb_bgsave_in_progress"); v != 1 {
		t.Fatalf("the image was sent before the replica was killed (rdb_bgsave_in_progress:%d)", v)
	}
	slow.kill()
	waitUntil(t, 15*time.Second, "the image's end", func() bool { return infoInt(t, m, "rdb_bgsave_in_progress") == 0 })
	waitUntil(t, 15*time.Second, "the other replica's sync", func() bool {
		return linkUp(f) && f.DBSize(ctx).Val() == 5000
	})
	if !strings.Contains(master.logs.String(), "Diskless rdb transfer, done reading from pipe, 1 replicas still up.") {
		t.Errorf("no log line for the image's end with one replica:\n%s", master.logs.String())
	}
}

func disklessChildKilled(t *testing.T, bin string) {
	ctx := context.Background()
	master, m := startProc(t, bin, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
		"--rdb-key-save-delay", "1000", "--repl-timeout", "3")
	if err := m.Do(ctx, "DEBUG", "POPULATE", "10000").Err(); err != nil {
		t.Fatal(err)
	}
	_, r := startProc(t, bin, "--repl-timeout", "3")
	replicate(t, r, master)
	waitUntil(t, 10*time.Second, "the sync's start", func() bool { return infoInt(t, m, "rdb_bgsave_in_progress") == 1 })
	kids := childPids(master.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("the master has children %v, want the sync's", kids)
	}
	syscall.Kill(kids[0], syscall.SIGKILL)
	defer func() {
		if t.Failed() {
			t.Logf("master's log:\n%s", master.logs.String())
		}
	}()
	// The sync fails and its replica is dropped; it asks again at once,
	// and a new child starts.
	waitUntil(t, 5*time.Second, "the failure logged", func() bool {
		logs := master.logs.String()
		return strings.Contains(logs, "Background transfer terminated by signal 9") &&
			strings.Contains(logs, "SYNC failed. BGSAVE child returned an error")
	})
	waitUntil(t, 5*time.Second, "the child collected", func() bool {
		for _, k := range childPids(master.cmd.Process.Pid) {
			if k == kids[0] {
				return false
			}
		}
		return true
	})
	if forks := infoInt(t, m, "total_forks"); forks < 1 {
		t.Errorf("total_forks:%d", forks)
	}
	// The replica syncs again, with an image sent at full speed.
	m.ConfigSet(ctx, "rdb-key-save-delay", "0")
	waitUntil(t, 30*time.Second, "the replica's next sync", func() bool {
		return linkUp(r) && r.DBSize(ctx).Val() == 10000
	})
}

func disklessParentKilled(t *testing.T, bin string) {
	ctx := context.Background()
	master, m := startProc(t, bin, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
		"--rdb-key-save-delay", "1000")
	if err := m.Do(ctx, "DEBUG", "POPULATE", "10000").Err(); err != nil {
		t.Fatal(err)
	}
	_, r := startProc(t, bin)
	replicate(t, r, master)
	waitUntil(t, 10*time.Second, "the sync's start", func() bool { return infoInt(t, m, "rdb_bgsave_in_progress") == 1 })
	kids := childPids(master.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("the master has children %v, want the sync's", kids)
	}
	master.kill()
	waitUntil(t, 5*time.Second, "the child's exit", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(kids[0]) + "/stat")
		// Gone, or a zombie until init reaps it.
		return err != nil || strings.Contains(string(b), ") Z ")
	})
}

// A master whose executable was removed since it started (an upgrade in
// place) cannot start the diskless sync's child: it sends the image
// itself, and its replica syncs.
func TestDisklessSyncWithoutExecutable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	ctx := context.Background()
	master, m := startProc(t, bin, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0")
	_, r := startProc(t, bin)
	if err := m.Do(ctx, "DEBUG", "POPULATE", "1000").Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	replicate(t, r, master)
	waitUntil(t, 20*time.Second, "the replica's sync", func() bool {
		return linkUp(r) && r.DBSize(ctx).Val() == 1000
	})
	if !strings.Contains(master.logs.String(), "Can't start the child for the RDB transfer") {
		t.Errorf("the child started, or was not logged:\n%s", master.logs.String())
	}
}
