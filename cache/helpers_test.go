package cache_test

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	tmsgp "github.com/tinylib/msgp/msgp"

	"github.com/sluicedb/sluice/cache"
	"github.com/sluicedb/sluice/cache/codec/goccy"
	"github.com/sluicedb/sluice/cache/codec/hash"
	"github.com/sluicedb/sluice/cache/codec/json"
	"github.com/sluicedb/sluice/cache/codec/msgp"
	"github.com/sluicedb/sluice/cache/codec/msgpack"
	"github.com/sluicedb/sluice/internal/redistest"
)

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{}) // go-redis logs every connection it drops
	os.Exit(m.Run())
}

// target is a server the tests run against.
type target struct {
	name   string
	addr   string
	client *redis.Client // set by the benchmarks
}

// targets starts an in-process Sluice and a real redis-server (left out
// when redis-server is not installed, except on CI, where that fails).
func targets(tb testing.TB) []target {
	tb.Helper()
	_, sluice := redistest.StartSluice(tb)
	out := []target{{name: "sluice", addr: sluice}}
	if _, err := exec.LookPath("redis-server"); err == nil || os.Getenv("CI") != "" {
		out = append(out, target{name: "redis", addr: redistest.StartRedis(tb)})
	}
	return out
}

// forTargets runs fn as one subtest per target with a fresh client.
func forTargets(t *testing.T, fn func(t *testing.T, tg target, client *redis.Client)) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			client := newClient(t, tg.addr)
			fn(t, tg, client)
		})
	}
}

func newClient(tb testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	tb.Cleanup(func() { c.Close() })
	return c
}

// must fails the test on err.
func must(tb testing.TB, tg target, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// namedCache is a cache with the name of its codec.
type namedCache[T any] struct {
	name  string
	cache *cache.Cache[T]
}

// msgpPtr is the constraint of the msgp codec's pointer type.
type msgpPtr[T any] interface {
	*T
	tmsgp.Marshaler
	tmsgp.Unmarshaler
}

// namedCodec is a byte codec with its benchmark name.
type namedCodec[T any] struct {
	name  string
	codec cache.Codec[T]
}

// structCodecs returns every byte codec of Go structs for T, in the order
// of the benchmark table, and the hash codec (which goes second).
func structCodecs[T any, PT msgpPtr[T]](tb testing.TB) ([]namedCodec[T], *hash.Codec[T]) {
	h, err := hash.New[T]()
	if err != nil {
		tb.Fatal(err)
	}
	return []namedCodec[T]{
		{"JSON", json.New[T]()},
		{"GoccyJSON", goccy.New[T]()},
		{"MsgPack", msgpack.New[T]()},
		{"Tinylib", msgp.New[T, PT]()},
	}, h
}

// structCaches returns a cache of T for every codec of Go structs, in the
// order of the benchmark table. Each has the key prefix prefix+name+":"
// (JSON and GoccyJSON could read each other's values).
func structCaches[T any, PT msgpPtr[T]](tb testing.TB, client redis.UniversalClient, prefix string, opts ...cache.Option) []namedCache[T] {
	codecs, h := structCodecs[T, PT](tb)
	with := func(name string) []cache.Option {
		return append(opts[:len(opts):len(opts)], cache.WithPrefix(prefix+name+":"))
	}
	var out []namedCache[T]
	for _, nc := range codecs {
		out = append(out, namedCache[T]{nc.name, cache.New(client, nc.codec, with(nc.name)...)})
		if nc.name == "JSON" {
			out = append(out, namedCache[T]{"Hash", cache.NewHash(client, h, with("Hash")...)})
		}
	}
	return out
}

// equal compares two values deeply, treating times as equal when they are
// the same instant and nil slices and maps as equal to empty ones: the
// codecs keep instants, not locations, and not every format tells nil
// from empty.
func equal(a, b any) bool {
	return equalValue(reflect.ValueOf(a), reflect.ValueOf(b))
}

var timeType = reflect.TypeFor[time.Time]()

func equalValue(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	if a.Type() == timeType {
		return a.Interface().(time.Time).Equal(b.Interface().(time.Time))
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalValue(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !equalValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !equalValue(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.String:
		return a.String() == b.String()
	}
	panic("equal: unsupported kind " + a.Kind().String())
}
