package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicedb/sluice/internal/redistest"
)

// TestManualFailover: CLUSTER FAILOVER on a replica (MFSTART, the
// master pauses writes, the replica catches up with its offset, wins the
// election) swaps the roles with no write lost; FORCE and TAKEOVER do it
// too, the last without a vote.
func TestManualFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	t.Parallel()
	addrs := redistest.StartSluiceCluster(t, 3, 1)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	for i := 0; i < 300; i++ {
		if err := cc.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	role := func(addr string) string {
		r, _ := do(t, addr, "role")
		if l, ok := r.([]any); ok && len(l) > 0 {
			return l[0].(string)
		}
		return ""
	}
	// Replica r (addrs[3+i]) of master m (addrs[i]).
	for i, opt := range []string{"", "force", "takeover"} {
		m, r := addrs[i], addrs[3+i]
		args := []any{"cluster", "failover"}
		if opt != "" {
			args = append(args, opt)
		}
		// A manual failover not done within 5 s is aborted (Redis's
		// CLUSTER_MF_TIMEOUT): on a loaded machine, ask again.
		for attempt := 0; ; attempt++ {
			if res, err := do(t, r, args...); err != nil || res != "OK" {
				t.Fatalf("CLUSTER FAILOVER %s: %v %v", opt, res, err)
			}
			deadline := time.Now().Add(12 * time.Second)
			for time.Now().Before(deadline) && !(role(r) == "master" && role(m) == "slave") {
				time.Sleep(50 * time.Millisecond)
			}
			if role(r) == "master" && role(m) == "slave" {
				break
			}
			if attempt == 3 {
				t.Fatalf("CLUSTER FAILOVER %s: the replica never became master", opt)
			}
		}
		waitFor(t, "every node to agree", 15*time.Second, func() bool {
			for _, a := range addrs {
				r, _ := do(t, a, "cluster", "nodes")
				s, _ := r.(string)
				for _, l := range strings.Split(s, "\n") {
					if strings.Contains(l, strings.Split(m, ":")[1]+"@") && !strings.Contains(l, "slave") {
						return false
					}
				}
			}
			return true
		})
	}
	cc.ReloadState(ctx)
	for i := 0; i < 300; i++ {
		v, err := cc.Get(ctx, fmt.Sprintf("k%d", i)).Int()
		if err != nil || v != i {
			t.Fatalf("k%d: %d %v", i, v, err)
		}
	}
}
