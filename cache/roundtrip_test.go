package cache_test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	gproto "google.golang.org/protobuf/proto"

	"github.com/sluicedb/sluice/cache"
	"github.com/sluicedb/sluice/cache/codec/goccy"
	"github.com/sluicedb/sluice/cache/codec/json"
	"github.com/sluicedb/sluice/cache/codec/msgpack"
	"github.com/sluicedb/sluice/cache/codec/proto"
	"github.com/sluicedb/sluice/cache/internal/fixtures"
	pb "github.com/sluicedb/sluice/cache/internal/fixtures/fixturespb"
)

// Sample values per struct size: populated, zero, and edge cases (nil
// pointers, empty and nil collections, extreme numbers, other time zones,
// unicode).
func smallValues() []fixtures.Small {
	return []fixtures.Small{
		fixtures.NewSmall(),
		{},
		{ID: math.MinInt64, Name: "日本語 🚀 e\u0301 \x00 \"q\"", Active: false},
	}
}

func mediumValues() []fixtures.Medium {
	m := fixtures.NewMedium()
	m.Tags = []string{}
	m.CreatedAt = time.Date(1969, 7, 20, 20, 17, 40, 1, time.FixedZone("IST", 5*3600+1800))
	m.Score = -1e308 // (±Inf and NaN have no JSON form)
	return []fixtures.Medium{fixtures.NewMedium(), {}, m}
}

func largeValues() []fixtures.Large {
	l := fixtures.NewLarge()
	l.Nickname = nil
	l.Attributes = map[string]string{}
	l.Avatar = nil
	l.Scores = nil
	l.Score = math.MaxUint64
	l.ID = math.MaxInt64
	l.Age = math.MinInt32
	l.Balance = -1e-300
	l.Height = -273.15 // (goccy/go-json v0.12.0 cannot decode math.MaxFloat32 into a float32)
	l.Timeout = -time.Nanosecond
	empty := ""
	l2 := fixtures.NewLarge()
	l2.Nickname = &empty // a pointer to a zero value is not nil
	l2.Bio = "Ünïcødé 🎸 ביטלס"
	return []fixtures.Large{fixtures.NewLarge(), {}, l, l2}
}

func nestedValues() []fixtures.LargeNested {
	n := fixtures.NewLargeNested()
	n.Billing = nil
	n.Parent = nil
	n.Items = nil
	n.Labels = nil
	n2 := fixtures.NewLargeNested()
	n2.Billing = &fixtures.Address{City: "Zero-ish"} // a pointer struct with mostly zero fields
	n2.Items = []fixtures.Item{}
	return []fixtures.LargeNested{fixtures.NewLargeNested(), {}, fixtures.Unicode(), n, n2}
}

// checkRoundTrip stores every value with each cache, one by one and then
// in one batch, and reads them back.
func checkRoundTrip[T any](t *testing.T, tg target, caches []namedCache[T], vals []T, eq func(a, b T) bool) {
	ctx := context.Background()
	for _, nc := range caches {
		t.Run(nc.name, func(t *testing.T) {
			c := nc.cache
			keys := make([]string, len(vals))
			for i, v := range vals {
				keys[i] = strconv.Itoa(i)
				ttl := time.Minute
				if i%2 == 1 {
					ttl = 0 // no expiry
				}
				must(t, tg, c.Set(ctx, keys[i], v, ttl))
				got, found, err := c.Get(ctx, keys[i])
				if err != nil || !found {
					t.Fatalf("value %d: Get = found %v, err %v", i, found, err)
				}
				if !eq(got, v) {
					t.Errorf("value %d: Get returned\n%+v\nwant\n%+v", i, got, v)
				}
			}
			items := make(map[string]T, len(vals))
			bkeys := make([]string, len(vals))
			for i, v := range vals {
				bkeys[i] = "batch:" + keys[i]
				items[bkeys[i]] = v
			}
			must(t, tg, c.SetMany(ctx, items, 0))
			got, err := c.GetMany(ctx, bkeys...)
			must(t, tg, err)
			if len(got) != len(vals) {
				t.Fatalf("GetMany returned %d values, want %d", len(got), len(vals))
			}
			for i, v := range vals {
				if g, ok := got[bkeys[i]]; !ok || !eq(g, v) {
					t.Errorf("value %d: GetMany returned\n%+v\nwant\n%+v", i, g, v)
				}
			}
		})
	}
}

func eqAny[T any](a, b T) bool { return equal(a, b) }

func eqProto[T gproto.Message](a, b T) bool { return gproto.Equal(a, b) }

func TestRoundTrip(t *testing.T) {
	forTargets(t, func(t *testing.T, tg target, client *redis.Client) {
		t.Run("Small", func(t *testing.T) {
			checkRoundTrip(t, tg, structCaches[fixtures.Small](t, client, "rt:small:"), smallValues(), eqAny)
		})
		t.Run("Medium", func(t *testing.T) {
			checkRoundTrip(t, tg, structCaches[fixtures.Medium](t, client, "rt:medium:"), mediumValues(), eqAny)
		})
		t.Run("Large", func(t *testing.T) {
			checkRoundTrip(t, tg, structCaches[fixtures.Large](t, client, "rt:large:"), largeValues(), eqAny)
		})
		t.Run("LargeNested", func(t *testing.T) {
			checkRoundTrip(t, tg, structCaches[fixtures.LargeNested](t, client, "rt:nested:"), nestedValues(), eqAny)
		})
	})
}

func TestRoundTripProto(t *testing.T) {
	forTargets(t, func(t *testing.T, tg target, client *redis.Client) {
		t.Run("Small", func(t *testing.T) {
			c := []namedCache[*pb.Small]{{"Proto", cache.New(client, proto.New[*pb.Small](), cache.WithPrefix("rtpb:small:"))}}
			checkRoundTrip(t, tg, c, []*pb.Small{pb.NewSmall(), {}, {Id: -1, Name: "日本語 🚀"}}, eqProto)
		})
		t.Run("Medium", func(t *testing.T) {
			c := []namedCache[*pb.Medium]{{"Proto", cache.New(client, proto.New[*pb.Medium](), cache.WithPrefix("rtpb:medium:"))}}
			m := pb.NewMedium()
			m.CreatedAt = nil
			m.Tags = nil
			checkRoundTrip(t, tg, c, []*pb.Medium{pb.NewMedium(), {}, m}, eqProto)
		})
		t.Run("Large", func(t *testing.T) {
			c := []namedCache[*pb.Large]{{"Proto", cache.New(client, proto.New[*pb.Large](), cache.WithPrefix("rtpb:large:"))}}
			l := pb.NewLarge()
			l.Nickname = nil
			l.Attributes = nil
			l.Score = math.MaxUint64
			l2 := pb.NewLarge()
			l2.Nickname = gproto.String("") // present but empty
			checkRoundTrip(t, tg, c, []*pb.Large{pb.NewLarge(), {}, l, l2}, eqProto)
		})
		t.Run("LargeNested", func(t *testing.T) {
			c := []namedCache[*pb.LargeNested]{{"Proto", cache.New(client, proto.New[*pb.LargeNested](), cache.WithPrefix("rtpb:nested:"))}}
			n := pb.NewLargeNested()
			n.Billing = nil
			n.Parent = nil
			n.Items = nil
			checkRoundTrip(t, tg, c, []*pb.LargeNested{pb.NewLargeNested(), {}, pb.Unicode(), n}, eqProto)
		})
	})
}

// TestNilPointerValue stores a nil *T with the codecs that can represent
// one: it reads back as found, and nil.
func TestNilPointerValue(t *testing.T) {
	forTargets(t, func(t *testing.T, tg target, client *redis.Client) {
		ctx := context.Background()
		caches := []namedCache[*fixtures.Large]{
			{"JSON", cache.New(client, json.New[*fixtures.Large]())},
			{"GoccyJSON", cache.New(client, goccy.New[*fixtures.Large]())},
			{"MsgPack", cache.New(client, msgpack.New[*fixtures.Large]())},
		}
		for _, nc := range caches {
			must(t, tg, nc.cache.Set(ctx, "nilptr:"+nc.name, nil, 0))
			got, found, err := nc.cache.Get(ctx, "nilptr:"+nc.name)
			if err != nil || !found || got != nil {
				t.Errorf("%s: Get = %v, %v, %v; want nil, true, nil", nc.name, got, found, err)
			}
			v := fixtures.NewLarge()
			must(t, tg, nc.cache.Set(ctx, "ptr:"+nc.name, &v, 0))
			got, found, err = nc.cache.Get(ctx, "ptr:"+nc.name)
			if err != nil || !found || !equal(got, &v) {
				t.Errorf("%s: Get = %+v, %v, %v", nc.name, got, found, err)
			}
		}
	})
}
