package server_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// replInfo reads one field of INFO.
func replInfo(t *testing.T, addr, section, field string) string {
	t.Helper()
	s, err := replClient(t, addr, 0).Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("%s INFO: %v", addr, err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(field) + `:(.*)\r$`).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}

// waitOffsets waits until every server reports the same
// master_repl_offset.
func waitOffsets(t *testing.T, addrs ...string) string {
	t.Helper()
	var offs []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		offs = offs[:0]
		for _, a := range addrs {
			offs = append(offs, replInfo(t, a, "replication", "master_repl_offset"))
		}
		same := true
		for _, o := range offs {
			same = same && o == offs[0]
		}
		if same {
			return offs[0]
		}
	}
	t.Fatalf("offsets never matched: %v", offs)
	return ""
}

// TestReplicationChainOffsets: a replica of a replica gets its master's
// stream byte for byte, so all three report the same offset and
// replication id; a replica whose link drops continues from the backlog
// (PSYNC), and so does its own replica; CLIENT LIST shows the master's
// client (flags M) and the replicas (flags S).
func TestReplicationChainOffsets(t *testing.T) {
	t.Chdir(t.TempDir()) // disk-based full syncs write dump.rdb here
	ctx := context.Background()
	_, m := redistest.StartSluice(t, "repl-diskless-sync-delay", "0")
	_, r1 := redistest.StartSluice(t, "repl-diskless-sync-delay", "0")
	_, r2 := redistest.StartSluice(t, "repl-diskless-sync-delay", "0")
	replSeed(t, m)
	mh, mp := hostPort(m)
	r1h, r1p := hostPort(r1)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(replClient(t, r1, 0).Do(ctx, "REPLICAOF", mh, mp).Err())
	waitInfo(t, r1, `master_link_status:up`)
	must(replClient(t, r2, 0).Do(ctx, "REPLICAOF", r1h, r1p).Err())
	waitInfo(t, r2, `master_link_status:up`)
	replWorkload(t, m)
	waitOffsets(t, m, r1, r2)
	waitSame(t, m, r2)
	id := replInfo(t, m, "replication", "master_replid")
	for _, a := range []string{r1, r2} {
		if got := replInfo(t, a, "replication", "master_replid"); got != id {
			t.Fatalf("%s replid %s, master's %s", a, got, id)
		}
	}
	list := replClient(t, r1, 0).ClientList(ctx).Val()
	if !regexp.MustCompile(`(?m) addr=`+regexp.QuoteMeta(m)+` .* flags=M `).MatchString(list) || !strings.Contains(list, "flags=S ") {
		t.Fatalf("CLIENT LIST of the middle replica:\n%s", list)
	}

	// Drop the middle replica's link: it continues, and so does r2.
	partial := replInfo(t, m, "stats", "sync_partial_ok")
	if n, err := replClient(t, r1, 0).Do(ctx, "CLIENT", "KILL", "TYPE", "master").Int(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL TYPE master: %v %v", n, err)
	}
	for i := 0; i < 100; i++ {
		must(replClient(t, m, 0).Incr(ctx, "after-kill").Err())
	}
	waitInfo(t, r1, `master_link_status:up`)
	waitOffsets(t, m, r1, r2)
	if got := replInfo(t, m, "stats", "sync_partial_ok"); got == partial {
		t.Fatalf("the middle replica did not continue (sync_partial_ok %s)", got)
	}
	if got := replInfo(t, r1, "stats", "sync_full"); got != "1" {
		t.Fatalf("the middle replica served %s full syncs, want 1", got)
	}
	if v := replClient(t, r2, 0).Get(ctx, "after-kill").Val(); v != "100" {
		t.Fatalf("r2 after-kill = %q", v)
	}

	// Promote the middle replica: the old stream becomes its second id,
	// and r2 continues with it without a full sync.
	must(replClient(t, r1, 0).Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	if got := replInfo(t, r1, "replication", "master_replid2"); got != id {
		t.Fatalf("after promotion replid2 %s, want %s", got, id)
	}
	must(replClient(t, r1, 0).Set(ctx, "promoted", "yes", 0).Err())
	waitInfo(t, r2, `master_link_status:up`)
	waitOffsets(t, r1, r2)
	if v := replClient(t, r2, 0).Get(ctx, "promoted").Val(); v != "yes" {
		t.Fatalf("r2 promoted = %q", v)
	}
	if got := replInfo(t, r1, "stats", "sync_full"); got != "1" {
		t.Fatalf("r2 needed a full sync after the promotion (sync_full %s)", got)
	}
}

// TestFailoverCommand: FAILOVER TO hands the master role to the named
// replica, which continues the old master's stream: no full sync, and the
// old master replicates it.
func TestFailoverCommand(t *testing.T) {
	t.Chdir(t.TempDir()) // disk-based full syncs write dump.rdb here
	ctx := context.Background()
	_, m := redistest.StartSluice(t, "repl-diskless-sync-delay", "0")
	_, r := redistest.StartSluice(t, "repl-diskless-sync-delay", "0")
	mh, mp := hostPort(m)
	rh, rp := hostPort(r)
	if err := replClient(t, m, 0).Do(ctx, "FAILOVER").Err(); err == nil || err.Error() != "ERR FAILOVER requires connected replicas." {
		t.Fatalf("FAILOVER without replicas: %v", err)
	}
	if err := replClient(t, r, 0).Do(ctx, "REPLICAOF", mh, mp).Err(); err != nil {
		t.Fatal(err)
	}
	waitInfo(t, r, `master_link_status:up`)
	mc := replClient(t, m, 0)
	for i := 0; i < 50; i++ {
		mc.Incr(ctx, "n")
	}
	if err := mc.Do(ctx, "FAILOVER", "TO", rh, rp, "FORCE").Err(); err == nil || !strings.Contains(err.Error(), "requires both a timeout") {
		t.Fatalf("FORCE without TIMEOUT: %v", err)
	}
	if err := mc.Do(ctx, "FAILOVER", "TO", rh, "1").Err(); err == nil || !strings.Contains(err.Error(), "is not a replica") {
		t.Fatalf("FAILOVER to an unknown replica: %v", err)
	}
	if err := mc.Do(ctx, "FAILOVER", "TO", rh, rp).Err(); err != nil {
		t.Fatalf("FAILOVER TO: %v", err)
	}
	waitInfo(t, m, `master_failover_state:no-failover`)
	waitInfo(t, m, `role:slave`)
	waitInfo(t, m, `master_link_status:up`)
	if role := replClient(t, r, 0).Do(ctx, "ROLE").Val().([]any)[0]; role != "master" {
		t.Fatalf("target's role %v", role)
	}
	if got := replInfo(t, r, "stats", "sync_full"); got != "0" {
		t.Fatalf("the old master needed a full sync (%s)", got)
	}
	if n, err := replClient(t, r, 0).Incr(ctx, "n").Result(); err != nil || n != 51 {
		t.Fatalf("INCR on the new master: %v %v", n, err)
	}
	waitOffsets(t, m, r)
	if v := mc.Get(ctx, "n").Val(); v != "51" {
		t.Fatalf("old master n = %q", v)
	}
	if err := mc.Do(ctx, "FAILOVER", "ABORT").Err(); err == nil || err.Error() != "ERR No failover in progress." {
		t.Fatalf("FAILOVER ABORT: %v", err)
	}
}

// TestReplicaExpiredKeys: on a replica a key past its expiry reads as
// absent, stays until the master deletes it, and the master's INCR of it
// changes the master's value (not a new key); keys written on a writable
// replica with an expiry expire there.
func TestReplicaExpiredKeys(t *testing.T) {
	t.Chdir(t.TempDir()) // disk-based full syncs write dump.rdb here
	ctx := context.Background()
	_, m := redistest.StartSluice(t, "enable-debug-command", "yes", "repl-diskless-sync-delay", "0")
	_, r := redistest.StartSluice(t, "repl-diskless-sync-delay", "0")
	mh, mp := hostPort(m)
	mc, rc := replClient(t, m, 0), replClient(t, r, 0)
	if err := rc.Do(ctx, "REPLICAOF", mh, mp).Err(); err != nil {
		t.Fatal(err)
	}
	waitInfo(t, r, `master_link_status:up`)
	mc.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "0")
	mc.Set(ctx, "k", "1", 300*time.Millisecond)
	waitOffsets(t, m, r)
	time.Sleep(400 * time.Millisecond) // k is past its expiry on both
	// What a master sends for a key it has not deleted yet: the replica
	// applies it to the key as it is (here by DEBUG REPLICATE, as Redis's
	// test does with a replica stopped while the key expires).
	mc.Do(ctx, "DEBUG", "REPLICATE", "INCR", "k")
	waitOffsets(t, m, r)
	if n := rc.Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("EXISTS of an expired key on the replica: %d", n)
	}
	if n := rc.DBSize(ctx).Val(); n != 1 {
		t.Fatalf("DBSIZE %d: the replica must keep the key until its master deletes it", n)
	}
	mc.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "1")
	waitUntil(t, 10*time.Second, "the master's DEL of k", func() bool { return rc.DBSize(ctx).Val() == 0 })

	// A writable replica expires the keys its clients write.
	rc.ConfigSet(ctx, "replica-read-only", "no")
	rc.Set(ctx, "local", "v", 200*time.Millisecond)
	waitUntil(t, 10*time.Second, "the replica's own key to expire", func() bool { return rc.DBSize(ctx).Val() == 0 })
}

// TestMisconfPing: after a failed BGSAVE with save points set, writes and
// PING get MISCONF (Sentinel reads such an instance as down), reads go
// on, and removing the save points lifts it, as redis-server does.
func TestMisconfPing(t *testing.T) {
	t.Chdir(t.TempDir()) // CONFIG SET dir moves the working directory: restored at the end
	script := [][]string{
		{"CONFIG", "SET", "dir", "/"},
		{"CONFIG", "SET", "dbfilename", "."},
		{"CONFIG", "SET", "save", "1000000 1000000"},
		{"SET", "k", "v"},
		{"BGSAVE"},
		{"SLEEP"},
		{"PING"},
		{"SET", "k", "w"},
		{"GET", "k"},
		{"MULTI"},
		{"SET", "k", "x"},
		{"EXEC"},
		{"CONFIG", "SET", "save", ""},
		{"PING"},
		{"SET", "k", "y"},
	}
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		var out []string
		for _, args := range script {
			if args[0] == "SLEEP" {
				time.Sleep(500 * time.Millisecond)
				continue
			}
			r, err := c.Do(args...)
			if err != nil {
				t.Fatalf("%s %v: %v", addr, args, err)
			}
			if args[0] == "BGSAVE" {
				r = "(started)"
			}
			out = append(out, strings.Join(args, " ")+" -> "+r)
		}
		return out
	}
	redisAddr := redistest.StartRedis(t, "--enable-protected-configs", "yes")
	_, sluiceAddr := redistest.StartSluice(t, "enable-protected-configs", "yes")
	want, got := run(redisAddr), run(sluiceAddr)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sluice:\n%s\nredis-server:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
