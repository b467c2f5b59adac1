package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A replica killed with CLIENT KILL gets nothing the master feeds after
// the kill, as in Redis, whose CLIENT KILL frees the replica (and closes
// its socket) at once. Redis's own test (integration/replication,
// "Diskless load swapdb (async_loading)") counts on it: in one
// transaction it kills the replica, shrinks the backlog and writes past
// it, so that the replica, reconnecting, must make a full sync. Were the
// writes streamed to the dying replica, its offset would be the master's
// and its PSYNC would go on partially, keeping its old data.
func TestKilledReplicaGetsNothingMore(t *testing.T) {
	for name, bin := range processServers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			master, m := startProc(t, bin, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0")
			_, r := startProc(t, bin)
			replicate(t, r, master)
			waitUntil(t, 20*time.Second, "the first sync", func() bool { return linkUp(r) })
			big := strings.Repeat("A", 16384)
			for i := 1; i <= 20; i++ {
				if err := m.ConfigSet(ctx, "repl-backlog-size", "1mb").Err(); err != nil {
					t.Fatal(err)
				}
				cmds, err := m.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Do(ctx, "CLIENT", "KILL", "TYPE", "replica")
					p.ConfigSet(ctx, "repl-backlog-size", "16384")
					for k := 0; k < 10; k++ {
						p.Set(ctx, "k"+string(rune('0'+k)), big, 0)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if n := cmds[0].(*redis.Cmd).Val(); n != int64(1) {
					t.Fatalf("CLIENT KILL killed %v", n)
				}
				waitUntil(t, 20*time.Second, "the replica back", func() bool {
					return linkUp(r) && infoInt(t, m, "connected_slaves") == 1 &&
						infoInt(t, m, "sync_full")+infoInt(t, m, "sync_partial_ok") == int64(i+1)
				})
				if n := infoInt(t, m, "sync_partial_ok"); n != 0 {
					t.Fatalf("round %d: the killed replica continued partially (sync_partial_ok:%d)", i, n)
				}
			}
		})
	}
}
