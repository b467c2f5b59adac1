package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// The latency monitor: a command over latency-monitor-threshold shows in
// LATENCY LATEST and HISTORY; RESET, GRAPH and DOCTOR answer as
// redis-server does.
func TestLatencyMonitor(t *testing.T) {
	ctx := context.Background()
	_, saddr := redistest.StartSluice(t, "enable-debug-command", "yes")
	for name, addr := range map[string]string{"sluice": saddr, "redis": redistest.StartRedis(t, "--enable-debug-command", "yes")} {
		t.Run(name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, PoolSize: 1})
			defer c.Close()
			if v := c.Do(ctx, "latency", "latest").Val().([]any); len(v) != 0 {
				t.Fatalf("latest before any event: %v", v)
			}
			// Off by default: nothing recorded.
			c.Do(ctx, "debug", "sleep", "0.12")
			if v := c.Do(ctx, "latency", "history", "command").Val().([]any); len(v) != 0 {
				t.Fatalf("recorded with monitoring off: %v", v)
			}
			c.ConfigSet(ctx, "latency-monitor-threshold", "100")
			c.Do(ctx, "debug", "sleep", "0.05") // under the threshold
			c.Do(ctx, "debug", "sleep", "0.12")
			latest := c.Do(ctx, "latency", "latest").Val().([]any)
			if len(latest) != 1 {
				t.Fatalf("latest %v", latest)
			}
			ev := latest[0].([]any)
			if ev[0] != "command" || ev[2].(int64) < 100 || ev[2].(int64) > 1000 || ev[3].(int64) < ev[2].(int64) {
				t.Errorf("latest event %v", ev)
			}
			hist := c.Do(ctx, "latency", "history", "command").Val().([]any)
			if len(hist) != 1 || hist[0].([]any)[0] != ev[1] {
				t.Errorf("history %v (latest %v)", hist, ev)
			}
			if g, err := c.Do(ctx, "latency", "graph", "command").Text(); err != nil || !strings.HasPrefix(g, "command - high ") {
				t.Errorf("graph: %q %v", g, err)
			}
			if err := c.Do(ctx, "latency", "graph", "nosuch").Err(); err == nil || err.Error() != "ERR No samples available for event 'nosuch'" {
				t.Errorf("graph of an unknown event: %v", err)
			}
			if d, _ := c.Do(ctx, "latency", "doctor").Text(); !strings.Contains(d, "command") {
				t.Errorf("doctor does not mention the event: %q", d)
			}
			if n := c.Do(ctx, "latency", "reset", "nosuch").Val(); n != int64(0) {
				t.Errorf("reset of an unknown event %v", n)
			}
			if n := c.Do(ctx, "latency", "reset").Val(); n != int64(1) {
				t.Errorf("reset %v", n)
			}
			if v := c.Do(ctx, "latency", "latest").Val().([]any); len(v) != 0 {
				t.Errorf("latest after reset %v", v)
			}
			c.ConfigSet(ctx, "latency-monitor-threshold", "0")
		})
	}
}
