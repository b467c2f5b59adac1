package cache_test

import (
	"context"
	"strconv"
	"strings"
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
// (a pipeline of SET ... EX|PX, and MSET). They run against an embedded
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
		tg.client = client
		benchSize(b, tg, "Small", structCaches[fixtures.Small](b, client, "bench:small:"), fixtures.NewSmall(),
			cache.New(client, proto.New[*pb.Small](), cache.WithPrefix("bench:small:Proto:")), pb.NewSmall())
		benchSize(b, tg, "Medium", structCaches[fixtures.Medium](b, client, "bench:medium:"), fixtures.NewMedium(),
			cache.New(client, proto.New[*pb.Medium](), cache.WithPrefix("bench:medium:Proto:")), pb.NewMedium())
		benchSize(b, tg, "Large", structCaches[fixtures.Large](b, client, "bench:large:"), fixtures.NewLarge(),
			cache.New(client, proto.New[*pb.Large](), cache.WithPrefix("bench:large:Proto:")), pb.NewLarge())
		benchSize(b, tg, "LargeNested", structCaches[fixtures.LargeNested](b, client, "bench:largenested:"), fixtures.NewLargeNested(),
			cache.New(client, proto.New[*pb.LargeNested](), cache.WithPrefix("bench:largenested:Proto:")), pb.NewLargeNested())
	})
}

// benchSize runs Set and Get for every Go-struct codec and for proto, in
// the seed table's order (proto after msgpack, tinylib last). The caches'
// prefixes are "bench:<size>:<codec>:".
func benchSize[T any, M gproto.Message](b *testing.B, tg target, size string, caches []namedCache[T], v T, pc *cache.Cache[M], pv M) {
	prefix := "bench:" + strings.ToLower(size) + ":"
	for _, nc := range caches {
		if nc.name == "Tinylib" {
			benchSetGet(b, tg, "Proto", size, pc, pv, prefix+"Proto:k")
		}
		benchSetGet(b, tg, nc.name, size, nc.cache, v, prefix+nc.name+":k")
	}
}

// storedSize returns the bytes a value takes in Redis: the string's
// length, or the total length of a hash's field names and values.
func storedSize(ctx context.Context, client *redis.Client, key string) (int, bool) {
	if s, err := client.Get(ctx, key).Result(); err == nil {
		return len(s), true
	}
	m, err := client.HGetAll(ctx, key).Result()
	if err != nil || len(m) == 0 {
		return 0, false
	}
	n := 0
	for f, v := range m {
		n += len(f) + len(v)
	}
	return n, true
}

func benchSetGet[T any](b *testing.B, tg target, codec, size string, c *cache.Cache[T], v T, fullKey string) {
	ctx := context.Background()
	b.Run(codec+"_Set_"+size, func(b *testing.B) {
		must(b, tg, c.Set(ctx, "k", v, benchTTL))
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Set(ctx, "k", v, benchTTL); err != nil {
				b.Fatal(err)
			}
		}
		// (after the loop: b.Loop drops metrics reported before it)
		if n, ok := storedSize(ctx, tg.client, fullKey); ok {
			b.ReportMetric(float64(n), "stored-B")
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
	set("Pipeline_Set", benchTTL) // with a TTL: a pipeline of SET ... EX|PX
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

// BenchmarkCodec measures the codecs alone, without Redis: the CPU and
// memory each adds to a Set (Encode) or a Get (Decode). Its "target" is
// "codec-only".
func BenchmarkCodec(b *testing.B) {
	b.Run("codec-only", func(b *testing.B) {
		benchCodecs(b, "Small", fixtures.NewSmall(), pb.NewSmall())
		benchCodecs(b, "Medium", fixtures.NewMedium(), pb.NewMedium())
		benchCodecs(b, "Large", fixtures.NewLarge(), pb.NewLarge())
		benchCodecs(b, "LargeNested", fixtures.NewLargeNested(), pb.NewLargeNested())
	})
}

func benchCodecs[T any, PT msgpPtr[T], M gproto.Message](b *testing.B, size string, v T, pv M) {
	codecs, h := structCodecs[T, PT](b)
	for _, nc := range codecs {
		if nc.name == "Tinylib" {
			benchCodec(b, "Proto", size, cache.Codec[M](proto.New[M]()), pv)
		}
		benchCodec(b, nc.name, size, nc.codec, v)
		if nc.name == "JSON" {
			benchHashCodec(b, size, h, v)
		}
	}
}

func benchCodec[T any](b *testing.B, name, size string, c cache.Codec[T], v T) {
	data, err := c.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	b.Run(name+"_Encode_"+size, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(data)), "stored-B")
	})
	b.Run(name+"_Decode_"+size, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out T
			if err := c.Unmarshal(data, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchHashCodec[T any](b *testing.B, size string, c cache.HashCodec[T], v T) {
	fields, err := c.AppendFields(nil, v)
	if err != nil {
		b.Fatal(err)
	}
	m := map[string]string{}
	n := 0
	for i := 0; i < len(fields); i += 2 {
		m[fields[i]] = fields[i+1]
		n += len(fields[i]) + len(fields[i+1])
	}
	b.Run("Hash_Encode_"+size, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.AppendFields(nil, v); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n), "stored-B")
	})
	b.Run("Hash_Decode_"+size, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out T
			if err := c.DecodeFields(m, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
