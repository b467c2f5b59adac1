package bench

// The users' seed 003 benchmark: redigo pipelined vs one command per round
// trip, at batches of 10, 100 and 1000 SETs, against an in-process Sluice, a
// real redis-server and miniredis. Run with `make bench-seed003`.
//
// Sluice and miniredis run inside the benchmark process, so B/op and
// allocs/op include the server's own allocations for those two; for
// redis-server they are the client's alone.

import (
	"fmt"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/sluicedb/sluice/internal/redistest"
)

var seed003Batches = []int{10, 100, 1000}

func seed003Keys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("seed003:key:%d", i)
	}
	return keys
}

func benchSeed003(b *testing.B, addr string) {
	conn, err := redis.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	value := []byte("seed003-value-0123456789")
	for _, batch := range seed003Batches {
		keys := seed003Keys(batch)
		b.Run(fmt.Sprintf("pipelined/batch_%d", batch), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, k := range keys {
					if err := conn.Send("SET", k, value); err != nil {
						b.Fatal(err)
					}
				}
				if err := conn.Flush(); err != nil {
					b.Fatal(err)
				}
				for range keys {
					if _, err := conn.Receive(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(fmt.Sprintf("one_by_one/batch_%d", batch), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, k := range keys {
					if _, err := conn.Do("SET", k, value); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func BenchmarkSeed003Sluice(b *testing.B) {
	_, addr := redistest.StartSluice(b)
	benchSeed003(b, addr)
}

func BenchmarkSeed003Redis(b *testing.B) {
	addr := redistest.StartRedis(b) // skips with a message when redis-server is absent
	benchSeed003(b, addr)
}

func BenchmarkSeed003MiniRedis(b *testing.B) {
	s := miniredis.RunT(b)
	benchSeed003(b, s.Addr())
}
