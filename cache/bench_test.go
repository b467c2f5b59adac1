package cache_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	gproto "google.golang.org/protobuf/proto"

	"github.com/sluicedb/sluice/cache"
	"github.com/sluicedb/sluice/cache/codec/json"
	"github.com/sluicedb/sluice/cache/codec/proto"
	"github.com/sluicedb/sluice/cache/internal/fixtures"
	pb "github.com/sluicedb/sluice/cache/internal/fixtures/fixturespb"
)

// The benchmarks reproduce the table of the users' Redis serialization
// benchmark: every codec × struct size × Set and Get, then batches of 100
// (a pipeline of SET ... PX, and MSET). They run against an embedded
// Sluice and a real redis-server as sub-benchmarks; `make bench-cache`
// turns the output into a Markdown table.

const benchTTL = time.Minute

func forBenchTargets(b *testing.B, fn func(b *testing.B, tg target, client *redis.Client)) {
	for _, tg := range targets(b) {
		b.Run(tg.name, func(b *testing.B) {
			fn(b, tg, newClient(b, tg.addr))
		})
	}
}

func BenchmarkCache(b *testing.B) {
	forBenchTargets(b, func(b *testing.B, tg target, client *redis.Client) {
		benchSize(b, tg, "Small", structCaches[fixtures.Small](b, client, "bench:small:"), fixtures.NewSmall(),
			cache.New(client, proto.New[*pb.Small](), cache.WithPrefix("bench:small:Proto:")), pb.NewSmall())
		benchSize(b, tg, "Medium", structCaches[fixtures.Medium](b, client, "bench:medium:"), fixtures.NewMedium(),
			cache.New(client, proto.New[*pb.Medium](), cache.WithPrefix("bench:medium:Proto:")), pb.NewMedium())
		benchSize(b, tg, "Large", structCaches[fixtures.Large](b, client, "bench:large:"), fixtures.NewLarge(),
			cache.New(client, proto.New[*pb.Large](), cache.WithPrefix("bench:large:Proto:")), pb.NewLarge())
		benchSize(b, tg, "LargeNested", structCaches[fixtures.LargeNested](b, client, "bench:nested:"), fixtures.NewLargeNested(),
			cache.New(client, proto.New[*pb.LargeNested](), cache.WithPrefix("bench:nested:Proto:")), pb.NewLargeNested())
	})
}

// benchSize runs Set and Get for every Go-struct codec and for proto, in
// the seed table's order (proto after msgpack, tinylib last).
func benchSize[T any, M gproto.Message](b *testing.B, tg target, size string, caches []namedCache[T], v T, pc *cache.Cache[M], pv M) {
	for _, nc := range caches {
		if nc.name == "Tinylib" {
			benchSetGet(b, tg, "Proto", size, pc, pv)
		}
		benchSetGet(b, tg, nc.name, size, nc.cache, v)
	}
}

func benchSetGet[T any](b *testing.B, tg target, codec, size string, c *cache.Cache[T], v T) {
	ctx := context.Background()
	b.Run(codec+"_Set_"+size, func(b *testing.B) {
		must(b, tg, c.Set(ctx, "k", v, benchTTL))
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Set(ctx, "k", v, benchTTL); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(codec+"_Get_"+size, func(b *testing.B) {
		must(b, tg, c.Set(ctx, "k", v, benchTTL))
		b.ReportAllocs()
		for b.Loop() {
			if _, found, err := c.Get(ctx, "k"); err != nil || !found {
				b.Fatal(found, err)
			}
		}
	})
}

// BenchmarkBatch stores (and reads) values 100 per call with the JSON
// codec; one op is one value, so ns/op compares directly with the
// one-at-a-time Set and Get above.
func BenchmarkBatch(b *testing.B) {
	forBenchTargets(b, func(b *testing.B, tg target, client *redis.Client) {
		benchBatch(b, tg, "Small", cache.New(client, json.New[fixtures.Small](), cache.WithPrefix("batch:small:")), fixtures.NewSmall())
		benchBatch(b, tg, "Large", cache.New(client, json.New[fixtures.Large](), cache.WithPrefix("batch:large:")), fixtures.NewLarge())
	})
}

const batchSize = 100

func benchBatch[T any](b *testing.B, tg target, size string, c *cache.Cache[T], v T) {
	ctx := context.Background()
	items := make(map[string]T, batchSize)
	keys := make([]string, batchSize)
	for i := range batchSize {
		keys[i] = strconv.Itoa(i)
		items[keys[i]] = v
	}
	// head returns the first n items, for the last, partial batch.
	head := func(n int) map[string]T {
		m := make(map[string]T, n)
		for _, k := range keys[:n] {
			m[k] = v
		}
		return m
	}
	set := func(name string, ttl time.Duration) {
		b.Run(name+"_"+size, func(b *testing.B) {
			must(b, tg, c.SetMany(ctx, items, ttl))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += batchSize {
				batch := items
				if n := b.N - i; n < batchSize {
					b.StopTimer()
					batch = head(n)
					b.StartTimer()
				}
				if err := c.SetMany(ctx, batch, ttl); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	set("Pipeline_Set", benchTTL) // with a TTL: a pipeline of SET ... PX
	set("MSet", 0)                // without: one MSET
	b.Run("MGet_"+size, func(b *testing.B) {
		must(b, tg, c.SetMany(ctx, items, 0))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += batchSize {
			ks := keys[:min(batchSize, b.N-i)]
			got, err := c.GetMany(ctx, ks...)
			if err != nil || len(got) != len(ks) {
				b.Fatal(len(got), err)
			}
		}
	})
}
