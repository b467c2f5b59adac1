package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReplicaKeepsExpiredKeys: a replica keeps keys whose expiry passed
// until its master deletes them, as Redis's does (iAmMaster,
// checkAlreadyExpired):
//   - a cluster node that nodes.conf makes a replica loads them from its
//     RDB, where a master drops them (Redis reads nodes.conf before the
//     dataset; cluster/14-consistency-check restarts a replica so);
//   - a writable replica keeps a key given an expiry in the past
//     (PEXPIREAT, SET PXAT, RESTORE ABSTTL), which a master deletes.
func TestReplicaKeepsExpiredKeys(t *testing.T) {
	ctx := context.Background()
	results := map[string][]string{}
	for name, bin := range processServers(t) {
		var got []string
		note := func(format string, a ...any) { got = append(got, fmt.Sprintf(format, a...)) }

		// An RDB with 10 keys that expire 300 ms after it is written.
		src, s := startProc(t, bin)
		at := time.Now().Add(300 * time.Millisecond).UnixMilli()
		for i := 0; i < 10; i++ {
			s.Do(ctx, "SET", "gone"+strconv.Itoa(i), "v", "PXAT", at)
		}
		s.Set(ctx, "kept", "v", 0)
		if err := s.Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		rdb, err := os.ReadFile(filepath.Join(src.dir, "dump.rdb"))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(time.UnixMilli(at + 200)))

		for _, role := range []string{"master", "slave"} {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "dump.rdb"), rdb, 0o644)
			os.WriteFile(filepath.Join(dir, "nodes.conf"), []byte(nodesConf(role)), 0o644)
			_, c := startProcIn(t, bin, dir, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
			note("%s: dbsize %v", role, c.DBSize(ctx).Val())
			// The node turns replica on its cluster cron (clusterCron).
			waitUntil(t, 10*time.Second, "the node's role", func() bool {
				return fmt.Sprint(c.Do(ctx, "ROLE").Val().([]any)[0]) == role
			})
		}

		// A writable replica of a master that has none of these keys.
		msrv, _ := startProc(t, bin)
		_, r := startProc(t, bin, "--replica-read-only", "no")
		replicate(t, r, msrv)
		dump := s.Dump(ctx, "kept").Val()
		for _, cmd := range [][]any{
			{"SET", "a", "1"}, {"PEXPIREAT", "a", "1"},
			{"SET", "b", "1", "PXAT", "1"},
			{"RESTORE", "c", "1", dump, "ABSTTL"},
			{"SET", "d", "1"}, {"EXPIRE", "d", "-5"},
			{"SET", "e", "1"}, {"GETEX", "e", "PXAT", "1"},
			{"DBSIZE"}, {"EXISTS", "a", "b", "c", "d", "e"},
		} {
			v, err := r.Do(ctx, cmd...).Result()
			note("replica: %v -> %v %v", cmd[:min(2, len(cmd))], v, err)
		}
		results[name] = got
	}
	if fmt.Sprint(results["sluice"]) != fmt.Sprint(results["redis"]) {
		t.Fatalf("sluice-server:\n%s\nredis-server:\n%s", strings.Join(results["sluice"], "\n"), strings.Join(results["redis"], "\n"))
	}
	if !strings.Contains(fmt.Sprint(results["redis"]), "slave: dbsize 11") {
		t.Fatalf("the replica dropped keys: %v", results["redis"])
	}
}

// nodesConf is a nodes.conf where this node is a master serving every
// slot, or a replica of a master that is not running.
func nodesConf(role string) string {
	me, other := strings.Repeat("a", 40), strings.Repeat("b", 40)
	if role == "master" {
		return me + " 127.0.0.1:1@10001 myself,master - 0 0 1 connected 0-16383\nvars currentEpoch 1 lastVoteEpoch 0\n"
	}
	return me + " 127.0.0.1:1@10001 myself,slave " + other + " 0 0 1 connected\n" +
		other + " 127.0.0.1:2@10002 master - 0 0 1 connected 0-16383\nvars currentEpoch 1 lastVoteEpoch 0\n"
}

// TestReplicaDelOfKeptKey: on a writable replica, DEL and UNLINK delete a
// key whose time is up but that the replica keeps for its master's DEL,
// and count it, as Redis's delGenericCommand does (expireIfNeeded leaves
// it, dbSyncDelete removes it). Redis's integration/replication-3 relies
// on it: its replica's DBSIZE must be 0 after such a DEL.
func TestReplicaDelOfKeptKey(t *testing.T) {
	ctx := context.Background()
	results := map[string][]string{}
	for name, bin := range processServers(t) {
		var got []string
		note := func(format string, a ...any) { got = append(got, fmt.Sprintf(format, a...)) }
		msrv, m := startProc(t, bin)
		_, r := startProc(t, bin, "--replica-read-only", "no")
		replicate(t, r, msrv)
		waitUntil(t, 10*time.Second, "the replica's link", func() bool {
			return infoString(t, r, "master_link_status") == "up"
		})
		m.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "0")
		for _, k := range []string{"k1", "k2", "k3", "k4"} {
			m.Set(ctx, k, "v", 50*time.Millisecond)
		}
		m.Set(ctx, "live", "v", 0)
		waitUntil(t, 10*time.Second, "the keys on the replica, expired", func() bool {
			return r.DBSize(ctx).Val() == 5 && r.Exists(ctx, "k1", "k2", "k3", "k4").Val() == 0
		})
		note("DEL k1 k2 nosuch: %v", r.Del(ctx, "k1", "k2", "nosuch").Val())
		note("UNLINK k3: %v", r.Unlink(ctx, "k3").Val())
		note("DBSIZE: %v", r.DBSize(ctx).Val())
		note("expired_keys: %s", infoString(t, r, "expired_keys"))
		note("DEL live: %v, DBSIZE %v", r.Del(ctx, "live").Val(), r.DBSize(ctx).Val())
		// On the master, DEL of a key whose time is up expires it and
		// counts nothing.
		note("master DEL k4: %v, DBSIZE %v", m.Del(ctx, "k4").Val(), m.DBSize(ctx).Val())
		results[name] = got
	}
	if fmt.Sprint(results["sluice"]) != fmt.Sprint(results["redis"]) {
		t.Fatalf("sluice-server:\n%s\nredis-server:\n%s", strings.Join(results["sluice"], "\n"), strings.Join(results["redis"], "\n"))
	}
	if !strings.Contains(fmt.Sprint(results["redis"]), "DEL k1 k2 nosuch: 2") {
		t.Fatalf("redis-server's replica: %v", results["redis"])
	}
}
