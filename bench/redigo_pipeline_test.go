package bench

// The redigo pipeline benchmark: redigo pipelined vs one command per round
// trip, at batches of 10, 100 and 1000 SETs, against an in-process Sluice, a
// real redis-server and miniredis. Run with `make bench-redigo-pipeline`.
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

var redigoBatches = []int{10, 100, 1000}

func redigoKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("redigo:key:%d", i)
	}
	return keys
}

func benchRedigoPipeline(b *testing.B, addr string) {
	conn, err := redis.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	value := []byte("redigo-value-0123456789")
	for _, batch := range redigoBatches {
		keys := redigoKeys(batch)
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

func BenchmarkRedigoPipelineSluice(b *testing.B) {
	_, addr := redistest.StartSluice(b)
	benchRedigoPipeline(b, addr)
}

func BenchmarkRedigoPipelineRedis(b *testing.B) {
	addr := redistest.StartRedis(b) // skips with a message when redis-server is absent
	benchRedigoPipeline(b, addr)
}

func BenchmarkRedigoPipelineMiniRedis(b *testing.B) {
	s := miniredis.RunT(b)
	benchRedigoPipeline(b, s.Addr())
}
