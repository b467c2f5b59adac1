package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestReplicaOffsetWhileLoading: a replica loading its master's payload
// has neither a master nor a cached master (replicationAttachToNewMaster
// dropped it), and says so as Redis's does: INFO's slave_repl_offset and
// slave_read_repl_offset are 1, and the offset its cluster bus announces
// (replicationGetSlaveOffset) is 0, which makes a master hide it from
// CLUSTER SLOTS (cluster/22-replica-in-sync). Once loaded, both follow
// the master's.
func TestReplicaOffsetWhileLoading(t *testing.T) {
	ctx := context.Background()
	results := map[string][]string{}
	for name, bin := range processServers(t) {
		msrv, m := startProc(t, bin, "--repl-diskless-sync", "no")
		if err := m.Do(ctx, "DEBUG", "POPULATE", "3000", "k", "100").Err(); err != nil {
			t.Fatal(err)
		}
		// 3,001 keys at a millisecond each.
		// Redis serves clients during a load every
		// loading-process-events-interval-bytes.
		_, r := startProc(t, bin, "--repl-diskless-load", "disabled", "--key-load-delay", "1000", "--loading-process-events-interval-bytes", "1024")
		replicate(t, r, msrv)
		waitUntil(t, 30*time.Second, "the replica's load", func() bool {
			return infoInt(t, r, "loading") == 1
		})
		var got []string
		for _, f := range []string{"master_sync_in_progress", "slave_read_repl_offset", "slave_repl_offset"} {
			got = append(got, fmt.Sprintf("loading: %s=%d", f, infoInt(t, r, f)))
		}
		r.ConfigSet(ctx, "key-load-delay", "0")
		waitUntil(t, 60*time.Second, "the replica's sync", func() bool { return linkUp(r) })
		m.Set(ctx, "after", "v", 0)
		want := infoInt(t, m, "master_repl_offset")
		waitUntil(t, 10*time.Second, "the replica's offset", func() bool {
			return infoInt(t, r, "slave_repl_offset") == want
		})
		got = append(got, fmt.Sprintf("synced: offset>1=%v", want > 1))
		results[name] = got
	}
	if fmt.Sprint(results["sluice"]) != fmt.Sprint(results["redis"]) {
		t.Fatalf("sluice-server:\n%s\nredis-server:\n%s", strings.Join(results["sluice"], "\n"), strings.Join(results["redis"], "\n"))
	}
}

// TestReplicaLoadHoldsCommands: a replica loading its master's payload
// answers what waits only every loading-process-events-interval-bytes (2
// MB by default), as Redis's does from its main thread: a command sent
// while a small payload loads waits and then runs on the loaded dataset,
// where Sluice answered -LOADING at once (the cluster suite's restarts
// met it in CONFIG SET on a replica whose master had just restarted).
func TestReplicaLoadHoldsCommands(t *testing.T) {
	ctx := context.Background()
	results := map[string][]string{}
	for name, bin := range processServers(t) {
		msrv, m := startProc(t, bin, "--repl-diskless-sync", "no")
		if err := m.Do(ctx, "DEBUG", "POPULATE", "200", "k", "10").Err(); err != nil {
			t.Fatal(err)
		}
		// 200 keys at 5 ms each: a second of loading.
		rsrv, r := startProc(t, bin, "--repl-diskless-load", "disabled", "--key-load-delay", "5000")
		replicate(t, r, msrv)
		waitUntil(t, 30*time.Second, "the replica's load", func() bool {
			return strings.Contains(rsrv.logs.String(), "Loading DB in memory")
		})
		v, err := r.Get(ctx, "k:7").Result()
		results[name] = []string{fmt.Sprintf("GET during the load: %q %v", v, err), fmt.Sprintf("dbsize after: %d", r.DBSize(ctx).Val())}
	}
	if fmt.Sprint(results["sluice"]) != fmt.Sprint(results["redis"]) {
		t.Fatalf("sluice-server:\n%s\nredis-server:\n%s", strings.Join(results["sluice"], "\n"), strings.Join(results["redis"], "\n"))
	}
}

// TestReplicaLoadAnswersEveryClient: once a replica's load of its
// master's payload has passed a point where it answers its clients
// (every loading-process-events-interval-bytes), every client gets
// -LOADING for a command the load refuses, as redis-server answers all
// its waiting clients at each point. Sluice made each such command wait
// for the next point, one after another on an event loop: six clients
// pinging a replica got a reply a point each, and the last ones only
// after the load.
func TestReplicaLoadAnswersEveryClient(t *testing.T) {
	ctx := context.Background()
	for name, bin := range processServers(t) {
		t.Run(name, func(t *testing.T) {
			msrv, m := startProc(t, bin, "--repl-diskless-sync", "no")
			if err := m.Do(ctx, "DEBUG", "POPULATE", "6000").Err(); err != nil {
				t.Fatal(err)
			}
			// 6,000 keys at 1.5 ms each: 9 s of loading, with a point
			// every 1,024 bytes (some 75 ms).
			rsrv, r := startProc(t, bin, "--repl-diskless-load", "disabled", "--key-load-delay", "1500", "--loading-process-events-interval-bytes", "1024")
			replicate(t, r, msrv)
			waitUntil(t, 30*time.Second, "the replica's load", func() bool {
				return infoInt(t, r, "loading") == 1
			})
			conns := make([]*redistest.Conn, 6)
			for k := range conns {
				conns[k] = redistest.Dial(t, rsrv.addr)
			}
			// 25 PINGs each: redis-server answers each at its next point
			// (2 s for a client's 25); Sluice took the 150 one point each.
			errs := make(chan error, len(conns))
			for _, c := range conns {
				go func() {
					for i := 0; i < 25; i++ {
						if r, err := c.Do("PING"); err != nil || !strings.HasPrefix(r, "-LOADING") {
							errs <- fmt.Errorf("PING %d during the load: %q %v", i, r, err)
							return
						}
					}
					errs <- nil
				}()
			}
			for range conns {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}
