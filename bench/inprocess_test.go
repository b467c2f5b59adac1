package bench

// In-process round trips: a client in the test's own process (go-redis,
// redigo) sends one command and waits for its reply, against miniredis and
// an embedded Sluice side by side in one run. Over TCP (127.0.0.1) is how
// code under test usually reaches its test server; in memory is the
// servers' Dial (no socket). Run with `make bench-inprocess`, which
// interleaves rounds and compares with benchstat -col /server.

import (
	"context"
	"net"
	"testing"

	"github.com/alicebob/miniredis/v2"
	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/sluicetest"
	sluiceminiredis "github.com/sluicedb/sluice/sluicetest/miniredis"
)

// inProcessServer is a server started for one sub-benchmark: its TCP
// address and its in-memory dialer.
type inProcessServer struct {
	addr string
	dial func() (net.Conn, error)
}

// inProcessServers: miniredis first (benchstat's baseline column), then
// Sluice through sluicetest and through its miniredis-compatible API.
var inProcessServers = []struct {
	name  string
	start func(b *testing.B) inProcessServer
}{
	{"miniredis", func(b *testing.B) inProcessServer {
		m := miniredis.RunT(b)
		return inProcessServer{m.Addr(), m.Dial}
	}},
	{"sluice", func(b *testing.B) inProcessServer {
		s := sluicetest.Start(b)
		return inProcessServer{s.Addr(), func() (net.Conn, error) { return s.Dial(), nil }}
	}},
	{"sluice-miniredis-api", func(b *testing.B) inProcessServer {
		m := sluiceminiredis.RunT(b)
		return inProcessServer{m.Addr(), m.Dial}
	}},
}

const inProcessValue = "value-0123456789"

// BenchmarkInProcessRoundTrip: one SET and one GET per iteration, each
// waiting for its reply.
func BenchmarkInProcessRoundTrip(b *testing.B) {
	ctx := context.Background()
	goRedis := func(b *testing.B, opts *goredis.Options) {
		rdb := goredis.NewClient(opts)
		defer rdb.Close()
		if err := rdb.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := rdb.Set(ctx, "k", inProcessValue, 0).Err(); err != nil {
				b.Fatal(err)
			}
			if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != inProcessValue {
				b.Fatalf("GET = %q, %v", v, err)
			}
		}
	}
	for _, srv := range inProcessServers {
		b.Run("client=go-redis/server="+srv.name, func(b *testing.B) {
			goRedis(b, &goredis.Options{Addr: srv.start(b).addr})
		})
	}
	for _, srv := range inProcessServers {
		b.Run("client=redigo/server="+srv.name, func(b *testing.B) {
			conn, err := redigo.Dial("tcp", srv.start(b).addr)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := conn.Do("SET", "k", inProcessValue); err != nil {
					b.Fatal(err)
				}
				if v, err := redigo.String(conn.Do("GET", "k")); err != nil || v != inProcessValue {
					b.Fatalf("GET = %q, %v", v, err)
				}
			}
		})
	}
	for _, srv := range inProcessServers {
		b.Run("client=go-redis-in-memory/server="+srv.name, func(b *testing.B) {
			dial := srv.start(b).dial
			goRedis(b, &goredis.Options{Dialer: func(context.Context, string, string) (net.Conn, error) { return dial() }})
		})
	}
}
