package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestClusterStartVerifiesData: a node started in cluster mode on a
// dataset checks it against its slots once it has loaded, as Redis does
// (verifyClusterConfigWithData): it takes the unassigned slots it has
// keys for, and keys outside database 0 stop it with Redis's words and
// exit status 1 (redis-server 7.0.15 crashes before it checks them). Before, the check ran before the dataset loaded: a
// standalone server's RDB came up in cluster mode with its keys in slots
// nobody served.
func TestClusterStartVerifiesData(t *testing.T) {
	ctx := context.Background()
	for name, bin := range processServers(t) {
		t.Run(name, func(t *testing.T) {
			src, s := startProc(t, bin)
			s.MSet(ctx, "a", 1, "b", 2, "c", 3, "foo", 4)
			if err := s.Save(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			rdb0, _ := os.ReadFile(filepath.Join(src.dir, "dump.rdb"))
			s.Do(ctx, "SELECT", 1)
			s.Do(ctx, "SET", "other", "db")
			s.Save(ctx)
			rdb1, _ := os.ReadFile(filepath.Join(src.dir, "dump.rdb"))

			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "dump.rdb"), rdb0, 0o644)
			node, c := startProcIn(t, bin, dir, "--cluster-enabled", "yes", "--cluster-require-full-coverage", "no")
			info := c.ClusterInfo(ctx).Val()
			if !strings.Contains(info, "cluster_slots_assigned:4\r\n") {
				t.Errorf("CLUSTER INFO:\n%s", info)
			}
			// The node's state turns ok two seconds after it starts
			// (CLUSTER_WRITABLE_DELAY).
			waitUntil(t, 10*time.Second, "the keys served", func() bool {
				return c.MGet(ctx, "a").Err() == nil
			})
			for _, k := range []string{"a", "b", "c", "foo"} {
				if v, err := c.Get(ctx, k).Result(); v == "" {
					t.Errorf("GET %s: %v", k, err)
				}
			}
			slot := strconv.Itoa(int(c.ClusterKeySlot(ctx, "foo").Val()))
			if want := "I have keys for unassigned slot " + slot + ". Taking responsibility for it."; !strings.Contains(node.logs.String(), want) {
				t.Errorf("the log lacks %q:\n%s", want, node.logs.String())
			}

			if name == "redis" {
				return // redis-server 7.0.15 crashes loading keys of database 1 in cluster mode (slotToKeyAddEntry)
			}
			dir = t.TempDir()
			os.WriteFile(filepath.Join(dir, "dump.rdb"), rdb1, 0o644)
			cmd := exec.Command(bin, "--port", strconv.Itoa(redistest.FreePort(t)), "--dir", dir, "--cluster-enabled", "yes", "--save", "")
			done := make(chan struct{})
			var out []byte
			var err error
			go func() { out, err = cmd.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("keys in database 1: still running\n%s", out)
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Errorf("keys in database 1: %v, want exit status 1", err)
			}
			if want := "You can't have keys in a DB different than DB 0 when in Cluster mode. Exiting."; !strings.Contains(string(out), want) {
				t.Errorf("keys in database 1: the log lacks %q:\n%s", want, out)
			}
		})
	}
}

// TestClusterReplicaRestartKeepsItsStream: a cluster node that nodes.conf
// makes a replica takes the replication id and offset of the RDB it
// loads at start-up as its own (a cached master), as Redis's does
// (loadDataFromDisk: !iAmMaster()), so that it may continue its master's
// stream, and with swapdb serves its old dataset during a full sync
// (cluster/17-diskless-load-swapdb). Its link starts only after the
// load, and Sluice took it for a master's RDB: the id became the second
// one, under a new id.
func TestClusterReplicaRestartKeepsItsStream(t *testing.T) {
	ctx := context.Background()
	for name, bin := range processServers(t) {
		t.Run(name, func(t *testing.T) {
			msrv, m := startProc(t, bin)
			rsrv, r := startProc(t, bin)
			replicate(t, r, msrv)
			m.Set(ctx, "k", "v", 0)
			want := infoInt(t, m, "master_repl_offset")
			waitUntil(t, 30*time.Second, "the replica's sync", func() bool {
				return linkUp(r) && infoInt(t, r, "slave_repl_offset") == want
			})
			id := infoString(t, m, "master_replid")
			if err := r.Save(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			rdb, err := os.ReadFile(filepath.Join(rsrv.dir, "dump.rdb"))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "dump.rdb"), rdb, 0o644)
			os.WriteFile(filepath.Join(dir, "nodes.conf"), []byte(nodesConf("slave")), 0o644)
			_, c := startProcIn(t, bin, dir, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
			if got := infoString(t, c, "master_replid"); got != id {
				t.Errorf("master_replid %s, want the RDB's %s", got, id)
			}
			if got := infoInt(t, c, "master_repl_offset"); got != want {
				t.Errorf("master_repl_offset %d, want the RDB's %d", got, want)
			}
		})
	}
}
