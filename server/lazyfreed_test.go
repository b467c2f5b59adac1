package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// INFO lazyfreed_objects counts what Redis frees in the background: values
// past the free-effort threshold deleted by UNLINK, and the keys of a
// FLUSHDB/FLUSHALL ASYNC. Sluice's count follows redis-server's.
func TestLazyfreedObjects(t *testing.T) {
	ctx := context.Background()
	lazyfreed := func(c *redis.Client) string {
		for _, l := range strings.Split(c.Info(ctx, "memory").Val(), "\r\n") {
			if v, ok := strings.CutPrefix(l, "lazyfreed_objects:"); ok {
				return v
			}
		}
		return "?"
	}
	counts := map[string][]string{}
	for name, addr := range map[string]string{"sluice": sluiceAddr(t), "redis": redistest.StartRedis(t)} {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		c.ConfigResetStat(ctx)
		step := func() {
			// Redis frees in a background thread: wait for the count to settle.
			prev := lazyfreed(c)
			for i := 0; i < 20; i++ {
				time.Sleep(10 * time.Millisecond)
				if v := lazyfreed(c); v != prev {
					prev, i = v, 0
				}
			}
			counts[name] = append(counts[name], prev)
		}
		big := make([]any, 100)
		for i := range big {
			big[i] = fmt.Sprint("m", i)
		}
		c.SAdd(ctx, "bigset", big...)
		c.SAdd(ctx, "small", "a", "b")
		c.SAdd(ctx, "ints", 1, 2, 3)
		c.Unlink(ctx, "bigset", "small", "ints")
		step()
		c.SAdd(ctx, "bigset", big...)
		c.Del(ctx, "bigset") // DEL frees at once
		step()
		for i := 0; i < 200; i++ {
			c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"f", "v"}})
		}
		c.ConfigSet(ctx, "stream-node-max-entries", "5")
		for i := 0; i < 400; i++ {
			c.XAdd(ctx, &redis.XAddArgs{Stream: "s2", Values: []string{"f", "v"}})
		}
		c.Unlink(ctx, "s", "s2") // s fits one node; s2 has 80
		step()
		c.MSet(ctx, "a", 1, "b", 2, "c", 3)
		c.Do(ctx, "flushall", "async")
		step()
	}
	if strings.Join(counts["sluice"], ",") != strings.Join(counts["redis"], ",") {
		t.Errorf("lazyfreed_objects after each step: sluice %v, redis %v", counts["sluice"], counts["redis"])
	}
}
