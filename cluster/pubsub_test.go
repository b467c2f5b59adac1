package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicedb/sluice/internal/redistest"
)

// TestPubSubOverBus: PUBLISH reaches subscribers on every node over the
// bus; SPUBLISH reaches the shard channel's subscribers on the replica of
// the master that serves it.
func TestPubSubOverBus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	t.Parallel()
	addrs := redistest.StartSluiceCluster(t, 2, 1) // masters 0, 1; replica 2 of 0
	ctx := context.Background()
	client := func(a string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: a})
		t.Cleanup(func() { c.Close() })
		return c
	}
	sub := client(addrs[1]).Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	// The channel "{s}x" hashes to a slot of master 0 (slot of "s": 7365
	// < 8192), whose replica is node 2.
	ssub := client(addrs[2]).SSubscribe(ctx, "{s}x")
	defer ssub.Close()
	if _, err := ssub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := client(addrs[0]).Publish(ctx, "news", "hello").Result(); err != nil || n != 0 {
		t.Fatalf("PUBLISH: %d %v", n, err) // no local subscriber: 0, like Redis
	}
	if n, err := client(addrs[0]).SPublish(ctx, "{s}x", "shard hello").Result(); err != nil || n != 0 {
		t.Fatalf("SPUBLISH: %d %v", n, err)
	}
	for _, c := range []struct {
		ps   *redis.PubSub
		want string
	}{{sub, "hello"}, {ssub, "shard hello"}} {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := c.ps.ReceiveMessage(ctx)
		cancel()
		if err != nil || m.Payload != c.want {
			t.Fatalf("received %v %v, want %q", m, err, c.want)
		}
	}
}
