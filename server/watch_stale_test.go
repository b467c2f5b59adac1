package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// WATCH of keys that had already expired (with active expiry off, so they
// linger): their lazy deletion, DEL, FLUSHDB and SWAPDB decide EXEC as in
// redis-server.
func TestWatchStaleKeys(t *testing.T) {
	ctx := context.Background()
	_, saddr := redistest.StartSluice(t, "enable-debug-command", "yes")
	raddr := redistest.StartRedis(t, "--enable-debug-command", "yes")
	type step func(c *redis.Conn) error
	scenarios := map[string][]step{
		"lazy expiry of a stale key": {
			func(c *redis.Conn) error { return c.Set(ctx, "x", "foo", time.Millisecond).Err() },
			sleep, watch("x"),
			func(c *redis.Conn) error { return c.Exists(ctx, "x").Err() },
		},
		"DEL of a stale key": {
			func(c *redis.Conn) error { return c.Set(ctx, "x", "foo", time.Millisecond).Err() },
			sleep, watch("x"),
			func(c *redis.Conn) error { return c.Del(ctx, "x").Err() },
		},
		"SET over a stale key": {
			func(c *redis.Conn) error { return c.Set(ctx, "x", "foo", time.Millisecond).Err() },
			sleep, watch("x"),
			func(c *redis.Conn) error { return c.Set(ctx, "x", "bar", 0).Err() },
		},
		"live key expires after WATCH": {
			func(c *redis.Conn) error { return c.Set(ctx, "x", "foo", 300*time.Millisecond).Err() },
			watch("x"),
			func(c *redis.Conn) error { time.Sleep(400 * time.Millisecond); return nil },
		},
		"FLUSHDB of a stale key": {
			func(c *redis.Conn) error { return c.Set(ctx, "x", "foo", time.Millisecond).Err() },
			sleep, watch("x"),
			func(c *redis.Conn) error { return c.FlushDB(ctx).Err() },
		},
		"SWAPDB: nothing replaced by a stale key": {
			func(c *redis.Conn) error { return c.Set(ctx, "x", "foo", time.Millisecond).Err() },
			sleep,
			func(c *redis.Conn) error { return c.Select(ctx, 1).Err() },
			watch("x"),
			func(c *redis.Conn) error { return c.SwapDB(ctx, 0, 1).Err() },
		},
		"SWAPDB: stale key replaced by another stale key": {
			func(c *redis.Conn) error { return c.Select(ctx, 1).Err() },
			func(c *redis.Conn) error { return c.Set(ctx, "x", "foo", time.Millisecond).Err() },
			func(c *redis.Conn) error { return c.Select(ctx, 0).Err() },
			func(c *redis.Conn) error { return c.Set(ctx, "x", "bar", time.Millisecond).Err() },
			sleep, watch("x"),
			func(c *redis.Conn) error { return c.SwapDB(ctx, 0, 1).Err() },
		},
		"SWAPDB: stale key replaced by a live one": {
			func(c *redis.Conn) error { return c.Select(ctx, 1).Err() },
			func(c *redis.Conn) error { return c.Set(ctx, "x", "live", 0).Err() },
			func(c *redis.Conn) error { return c.Select(ctx, 0).Err() },
			func(c *redis.Conn) error { return c.Set(ctx, "x", "bar", time.Millisecond).Err() },
			sleep, watch("x"),
			func(c *redis.Conn) error { return c.SwapDB(ctx, 0, 1).Err() },
		},
	}
	for name, steps := range scenarios {
		results := map[string]string{}
		for server, addr := range map[string]string{"sluice": saddr, "redis": raddr} {
			client := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
			c := client.Conn()
			c.FlushAll(ctx)
			c.Do(ctx, "debug", "set-active-expire", "0")
			for i, s := range steps {
				if err := s(c); err != nil {
					t.Fatalf("%s on %s, step %d: %v", name, server, i, err)
				}
			}
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Ping(ctx); return nil })
			results[server] = "EXEC ran"
			if err == redis.TxFailedErr {
				results[server] = "EXEC aborted"
			} else if err != nil {
				results[server] = err.Error()
			}
			c.Do(ctx, "debug", "set-active-expire", "1")
			c.Close()
			client.Close()
		}
		if results["sluice"] != results["redis"] {
			t.Errorf("%s: sluice %s, redis-server %s", name, results["sluice"], results["redis"])
		}
	}
}

func sleep(*redis.Conn) error { time.Sleep(5 * time.Millisecond); return nil }

func watch(key string) func(c *redis.Conn) error {
	return func(c *redis.Conn) error { return c.Do(context.Background(), "watch", key).Err() }
}
