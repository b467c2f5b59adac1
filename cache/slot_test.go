package cache

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestSlot compares slot with CLUSTER KEYSLOT on a real redis-server.
func TestSlot(t *testing.T) {
	addr := redistest.StartRedis(t, "--cluster-enabled", "yes", "--dir", t.TempDir())
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	keys := []string{"", "a", "foo", "user:1000", "{user}:1", "{user}:2", "x{}y", "{}", "{", "}{", "a{b}c{d}", "{a}{b}",
		"日本語", "\x00\xff", "123456789", "{123456789}abc", "prefix:{tag"}
	for _, k := range keys {
		want, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := slot(k); int64(got) != want {
			t.Errorf("slot(%q) = %d, redis says %d", k, got, want)
		}
	}
}
