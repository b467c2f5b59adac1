package server_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// LATENCY HISTOGRAM: calls and a cumulative distribution per command,
// in the same shape redis-server replies with.
func TestLatencyHistogram(t *testing.T) {
	ctx := context.Background()
	for name, addr := range map[string]string{"sluice": sluiceAddr(t), "redis": redistest.StartRedis(t)} {
		t.Run(name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 3, PoolSize: 1})
			defer c.Close()
			c.ConfigResetStat(ctx)
			all := c.Do(ctx, "latency", "histogram").Val().(map[any]any)
			if len(all) != 1 || all["config|resetstat"] == nil {
				t.Fatalf("after RESETSTAT: %v", all)
			}
			for i := 0; i < 50; i++ {
				c.Set(ctx, "k", i, 0)
			}
			c.ClientID(ctx)
			got := c.Do(ctx, "latency", "histogram", "set", "client", "nosuchcommand").Val().(map[any]any)
			if len(got) != 2 || got["set"] == nil || got["client|id"] == nil {
				t.Fatalf("histogram set client: %v", got)
			}
			set := got["set"].(map[any]any)
			if set["calls"] != int64(50) {
				t.Errorf("calls %v", set["calls"])
			}
			h := set["histogram_usec"].(map[any]any)
			if len(h) == 0 {
				t.Fatal("empty distribution")
			}
			// Cumulative: grows with the bucket and ends at the call count.
			var maxCum int64
			for usec, cum := range h {
				if usec.(int64) < 1 || cum.(int64) < 1 || cum.(int64) > 50 {
					t.Errorf("bucket %v: %v", usec, cum)
				}
				for u2, c2 := range h {
					if u2.(int64) > usec.(int64) && c2.(int64) <= cum.(int64) {
						t.Errorf("not cumulative: %v:%v then %v:%v", usec, cum, u2, c2)
					}
				}
				maxCum = max(maxCum, cum.(int64))
			}
			if maxCum != 50 {
				t.Errorf("last cumulative count %d, want 50", maxCum)
			}
		})
	}
}

func sluiceAddr(t *testing.T) string {
	_, addr := redistest.StartSluice(t)
	return addr
}
