package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestThroughputClusterMode runs the throughput driver in cluster mode
// (go-redis ClusterClient) against a three-master Sluice cluster.
func TestThroughputClusterMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	addrs := redistest.StartSluiceCluster(t, 3, 0)
	cfg := DefaultThroughputConfig()
	cfg.Addr = strings.Join(addrs, ",")
	cfg.Mode = "cluster"
	cfg.Workers = 8
	cfg.Keyspace = 3000
	cfg.Duration = 500 * time.Millisecond
	for _, ap := range []bool{false, true} {
		cfg.Autopipeline = ap
		res, err := RunThroughput(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Ops == 0 || res.Errors != 0 {
			t.Fatalf("autopipeline=%v: %d ops, %d errors (first: %s)", ap, res.Ops, res.Errors, res.FirstError)
		}
	}
	// The keys went to all three masters.
	for _, a := range addrs {
		c := redistest.Dial(t, a)
		r, _ := c.Do("DBSIZE")
		if r == ":0\r\n" {
			t.Errorf("master %s holds no key", a)
		}
	}
}
