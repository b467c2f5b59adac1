package cache_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/cache"
	"github.com/sluicedb/sluice/cache/codec/hash"
	"github.com/sluicedb/sluice/cache/codec/json"
	"github.com/sluicedb/sluice/cache/internal/fixtures"
	"github.com/sluicedb/sluice/internal/redistest"
)

func TestGetMissing(t *testing.T) {
	forTargets(t, func(t *testing.T, tg target, client *redis.Client) {
		ctx := context.Background()
		for _, nc := range structCaches[fixtures.Small](t, client, "") {
			t.Run(nc.name, func(t *testing.T) {
				v, found, err := nc.cache.Get(ctx, "no-such-key")
				if err != nil || found || v != (fixtures.Small{}) {
					t.Errorf("Get of a missing key = %+v, %v, %v; want zero, false, nil", v, found, err)
				}
			})
		}
	})
}

func TestPrefixAndTTL(t *testing.T) {
	forTargets(t, func(t *testing.T, tg target, client *redis.Client) {
		ctx := context.Background()
		c := cache.New(client, json.New[fixtures.Small](), cache.WithPrefix("user:"))
		must(t, tg, c.Set(ctx, "1", fixtures.NewSmall(), 0))
		raw, err := client.Get(ctx, "user:1").Result()
		must(t, tg, err)
		if raw != `{"id":42,"name":"Ada Lovelace","active":true}` {
			t.Errorf("raw value %q", raw)
		}
		if _, err := client.Get(ctx, "1").Result(); err != redis.Nil {
			t.Errorf("unprefixed key exists: %v", err)
		}
		if err := c.Set(ctx, "1", fixtures.Small{}, -time.Second); !errors.Is(err, cache.ErrNegativeTTL) {
			t.Errorf("negative TTL: %v", err)
		}
		// TTLs: whole seconds and milliseconds.
		for _, ttl := range []time.Duration{90 * time.Second, 2500 * time.Millisecond} {
			must(t, tg, c.Set(ctx, "ttl", fixtures.NewSmall(), ttl))
			pttl, err := client.PTTL(ctx, "user:ttl").Result()
			if err != nil || pttl <= 0 || pttl > ttl {
				t.Errorf("Set with TTL %v: PTTL = %v, %v", ttl, pttl, err)
			}
		}
	})
}

func TestBatch(t *testing.T) {
	forTargets(t, func(t *testing.T, tg target, client *redis.Client) {
		ctx := context.Background()
		for _, nc := range structCaches[fixtures.Medium](t, client, "batch:") {
			t.Run(nc.name, func(t *testing.T) {
				c := nc.cache
				items := map[string]fixtures.Medium{}
				for i := range 10 {
					m := fixtures.NewMedium()
					m.ID = int64(i)
					items[strconv.Itoa(i)] = m
				}
				must(t, tg, c.SetMany(ctx, items, 0))
				must(t, tg, c.SetMany(ctx, nil, 0)) // nothing to do
				keys := []string{"missing-a"}
				for k := range items {
					keys = append(keys, k)
				}
				keys = append(keys, "missing-b")
				got, err := c.GetMany(ctx, keys...)
				must(t, tg, err)
				if len(got) != len(items) {
					t.Fatalf("GetMany returned %d values, want %d", len(got), len(items))
				}
				for k, v := range items {
					if !equal(got[k], v) {
						t.Errorf("%s: %+v, want %+v", k, got[k], v)
					}
				}
				if got, err := c.GetMany(ctx); err != nil || len(got) != 0 {
					t.Errorf("GetMany() = %v, %v", got, err)
				}
				if got, err := c.GetMany(ctx, "nope-1", "nope-2"); err != nil || len(got) != 0 {
					t.Errorf("GetMany of missing keys = %v, %v", got, err)
				}

				// With a TTL every key gets it (a pipeline of SET ... EX|PX
				// for strings, PEXPIRE in the transaction for hashes).
				must(t, tg, c.SetMany(ctx, items, 30*time.Second))
				for k := range items {
					pttl, err := client.PTTL(ctx, "batch:"+nc.name+":"+k).Result()
					must(t, tg, err)
					if pttl <= 0 || pttl > 30*time.Second {
						t.Errorf("%s: PTTL %v", k, pttl)
					}
				}
				// Setting without a TTL clears it again.
				must(t, tg, c.SetMany(ctx, items, 0))
				for k := range items {
					if pttl, _ := client.PTTL(ctx, "batch:"+nc.name+":"+k).Result(); pttl != -1 {
						t.Errorf("%s: PTTL %v after SetMany without TTL", k, pttl)
					}
				}

				var del []string
				for k := range items {
					del = append(del, k)
					if len(del) == 4 {
						break
					}
				}
				must(t, tg, c.Delete(ctx, append(del, "never-there")...))
				got, err = c.GetMany(ctx, keys...)
				must(t, tg, err)
				if len(got) != len(items)-len(del) {
					t.Errorf("after Delete GetMany returned %d values, want %d", len(got), len(items)-len(del))
				}
				for _, k := range del {
					if _, ok := got[k]; ok {
						t.Errorf("%s still there after Delete", k)
					}
				}
			})
		}
	})
}

// TestHashReplaces checks that Set on a hash cache replaces the whole hash
// (no stale fields from an earlier value) and stores readable fields.
func TestHashLayout(t *testing.T) {
	forTargets(t, func(t *testing.T, tg target, client *redis.Client) {
		ctx := context.Background()
		h, err := hash.New[fixtures.LargeNested]()
		if err != nil {
			t.Fatal(err)
		}
		c := cache.NewHash(client, h)
		must(t, tg, c.Set(ctx, "order", fixtures.NewLargeNested(), 0))
		fields, err := client.HGetAll(ctx, "order").Result()
		must(t, tg, err)
		want := map[string]string{
			"owner.address.city":    "London",
			"owner.address.geo.lat": "51.5074",
			"billing.zip":           "CB2 1TN",
			"parent.active":         "1",
			"created":               "2024-03-09T12:30:45.123456789Z",
			"labels":                `{"channel":"web","priority":"high","region":"eu-west"}`,
		}
		for f, v := range want {
			if fields[f] != v {
				t.Errorf("field %s = %q, want %q", f, fields[f], v)
			}
		}
		// A second value without Billing and Parent removes their fields.
		v := fixtures.NewLargeNested()
		v.Billing, v.Parent = nil, nil
		must(t, tg, c.Set(ctx, "order", v, 0))
		fields, err = client.HGetAll(ctx, "order").Result()
		must(t, tg, err)
		for f := range fields {
			if strings.HasPrefix(f, "billing.") || strings.HasPrefix(f, "parent.") {
				t.Errorf("stale field %s after Set", f)
			}
		}
		got, found, err := c.Get(ctx, "order")
		if err != nil || !found || got.Billing != nil || got.Parent != nil || !equal(got, v) {
			t.Errorf("Get = %+v, %v, %v", got, found, err)
		}
		// An increment from elsewhere is seen by the next Get.
		must(t, tg, client.HIncrBy(ctx, "order", "owner.age", 1).Err())
		got, _, _ = c.Get(ctx, "order")
		if got.Owner.Age != v.Owner.Age+1 {
			t.Errorf("owner.age = %d after HINCRBY, want %d", got.Owner.Age, v.Owner.Age+1)
		}
	})
}

func TestDecodeError(t *testing.T) {
	forTargets(t, func(t *testing.T, tg target, client *redis.Client) {
		ctx := context.Background()
		var mu sync.Mutex
		reported := map[string][]error{}
		onError := cache.WithErrorHandler(func(_ context.Context, key string, err error) {
			mu.Lock()
			reported[key] = append(reported[key], err)
			mu.Unlock()
		})
		codecName := map[string]string{"JSON": "json", "Hash": "hash", "GoccyJSON": "goccy-json", "MsgPack": "msgpack", "Tinylib": "msgp"}
		for _, nc := range structCaches[fixtures.Large](t, client, "corrupt:", onError) {
			t.Run(nc.name, func(t *testing.T) {
				c := nc.cache
				good := fixtures.NewLarge()
				must(t, tg, c.Set(ctx, "good", good, 0))
				key := "corrupt:" + nc.name + ":bad"
				if nc.name == "Hash" {
					must(t, tg, client.Del(ctx, key).Err())
					must(t, tg, client.HSet(ctx, key, "id", "12", "age", "not-a-number").Err())
				} else {
					must(t, tg, client.Set(ctx, key, "\xc1\xff{not valid", 0).Err())
				}
				_, found, err := c.Get(ctx, "bad")
				var de *cache.DecodeError
				if found || !errors.As(err, &de) {
					t.Fatalf("Get of a corrupt value = found %v, err %v; want a *DecodeError", found, err)
				}
				if de.Key != key || de.Codec != codecName[nc.name] || de.Err == nil || !strings.Contains(de.Error(), key) {
					t.Errorf("DecodeError = %+v (%v)", de, de)
				}

				got, err := c.GetMany(ctx, "good", "bad", "missing")
				if !errors.As(err, &de) || de.Key != key {
					t.Errorf("GetMany error = %v; want a *DecodeError for %s", err, key)
				}
				if len(got) != 1 || !equal(got["good"], good) {
					t.Errorf("GetMany values = %+v; want just the good one", got)
				}

				// GetOrLoad reports the bad value, loads and overwrites it.
				v, err := c.GetOrLoad(ctx, "bad", 0, func(context.Context) (fixtures.Large, error) { return good, nil })
				if err != nil || !equal(v, good) {
					t.Errorf("GetOrLoad = %+v, %v", v, err)
				}
				mu.Lock()
				errs := reported[key]
				mu.Unlock()
				if len(errs) != 1 || !errors.As(errs[0], &de) {
					t.Errorf("reported errors %v; want one *DecodeError", errs)
				}
				if v, found, err := c.Get(ctx, "bad"); err != nil || !found || !equal(v, good) {
					t.Errorf("after GetOrLoad Get = %v, %v", found, err)
				}
			})
		}
	})
}

func TestGetOrLoad(t *testing.T) {
	forTargets(t, func(t *testing.T, tg target, client *redis.Client) {
		ctx := context.Background()
		for _, nc := range structCaches[fixtures.Small](t, client, "load:") {
			t.Run(nc.name, func(t *testing.T) {
				c := nc.cache
				// GetOrLoad gets past cache errors, so probe for commands
				// Sluice lacks first.
				_, _, err := c.Get(ctx, "probe")
				must(t, tg, err)
				must(t, tg, c.Set(ctx, "probe", fixtures.Small{}, 0))
				const callers = 32
				var loads atomic.Int32
				release := make(chan struct{})
				load := func(ctx context.Context) (fixtures.Small, error) {
					loads.Add(1)
					<-release // hold the flight open while the others arrive
					return fixtures.NewSmall(), nil
				}
				var wg sync.WaitGroup
				results := make([]fixtures.Small, callers)
				errs := make([]error, callers)
				var started sync.WaitGroup
				started.Add(callers)
				for i := range callers {
					wg.Go(func() {
						started.Done()
						results[i], errs[i] = c.GetOrLoad(ctx, "k", time.Minute, load)
					})
				}
				started.Wait()
				close(release)
				wg.Wait()
				for i := range callers {
					if errs[i] != nil || results[i] != fixtures.NewSmall() {
						t.Fatalf("caller %d: %+v, %v", i, results[i], errs[i])
					}
				}
				if n := loads.Load(); n != 1 {
					t.Errorf("loader ran %d times for %d concurrent callers, want 1", n, callers)
				}
				// Cached now: no further load.
				if _, err := c.GetOrLoad(ctx, "k", time.Minute, load); err != nil || loads.Load() != 1 {
					t.Errorf("second GetOrLoad: %v, loads %d", err, loads.Load())
				}
				if pttl, err := client.PTTL(ctx, "load:"+nc.name+":k").Result(); err == nil && (pttl <= 0 || pttl > time.Minute) {
					t.Errorf("loaded value has PTTL %v", pttl)
				}

				// A loader error reaches every caller and caches nothing.
				boom := errors.New("boom")
				_, err = c.GetOrLoad(ctx, "e", 0, func(context.Context) (fixtures.Small, error) { return fixtures.Small{}, boom })
				if !errors.Is(err, boom) {
					t.Errorf("loader error: got %v", err)
				}
				if _, found, _ := c.Get(ctx, "e"); found {
					t.Error("a failed load was cached")
				}
				// A panicking loader becomes a *PanicError.
				_, err = c.GetOrLoad(ctx, "p", 0, func(context.Context) (fixtures.Small, error) { panic("kaboom") })
				var pe *cache.PanicError
				if !errors.As(err, &pe) || pe.Value != "kaboom" {
					t.Errorf("panicking loader: got %v", err)
				}
				// A caller whose context ends stops waiting.
				cctx, cancel := context.WithCancel(ctx)
				block := make(chan struct{})
				done := make(chan error)
				go func() {
					_, err := c.GetOrLoad(cctx, "slow", 0, func(context.Context) (fixtures.Small, error) {
						<-block
						return fixtures.NewSmall(), nil
					})
					done <- err
				}()
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Errorf("cancelled caller: got %v", err)
				}
				close(block)
			})
		}
	})
}

// startCluster starts a one-node Redis Cluster serving every slot. It is
// enough to exercise CROSSSLOT: a cluster node refuses multi-key commands
// whose keys hash to different slots even when it owns them all.
func startCluster(t *testing.T) string {
	addr := redistest.StartRedis(t, "--cluster-enabled", "yes", "--dir", t.TempDir())
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	if err := c.Do(ctx, "cluster", "addslotsrange", "0", "16383").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster did not come up: %v %q", err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster node")
	}
	addr := startCluster(t)
	tg := target{name: "redis", addr: addr}
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	t.Cleanup(func() { client.Close() })
	ctx := context.Background()

	// The premise: a plain MGET across slots fails on this node.
	plain := newClient(t, addr)
	if err := plain.MGet(ctx, "a", "b").Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("MGET across slots on a cluster node: %v; want CROSSSLOT", err)
	}

	for _, nc := range structCaches[fixtures.Medium](t, client, "c:") {
		t.Run(nc.name, func(t *testing.T) {
			items := map[string]fixtures.Medium{}
			for i := range 20 {
				m := fixtures.NewMedium()
				m.ID = int64(i)
				items[strconv.Itoa(i)] = m
			}
			items["{tag}a"] = fixtures.Medium{ID: 100} // two keys in one slot
			items["{tag}b"] = fixtures.Medium{ID: 101}
			keys := []string{"missing"}
			for k := range items {
				keys = append(keys, k)
			}
			for _, ttl := range []time.Duration{0, time.Minute} {
				must(t, tg, nc.cache.SetMany(ctx, items, ttl))
				got, err := nc.cache.GetMany(ctx, keys...)
				must(t, tg, err)
				if len(got) != len(items) {
					t.Fatalf("ttl %v: GetMany returned %d values, want %d", ttl, len(got), len(items))
				}
				for k, v := range items {
					if !equal(got[k], v) {
						t.Errorf("%s: %+v, want %+v", k, got[k], v)
					}
				}
			}
			must(t, tg, nc.cache.Delete(ctx, keys...))
			got, err := nc.cache.GetMany(ctx, keys...)
			if err != nil || len(got) != 0 {
				t.Errorf("after Delete: %d values, %v", len(got), err)
			}
		})
	}
}
