package server

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// The commands redis-benchmark sends for its data-type tests (-r 100000),
// driven through Client.process like BenchmarkGetSet: parsing, dispatch,
// locking, the handler and statistics. Each benchmark first fills the key
// the way a long redis-benchmark run leaves it, so the figures are for the
// steady state (mostly updates of existing members).
func benchRandomized(b *testing.B, fill int, mk func(r string) []byte) {
	c := newBenchClient(b)
	rng := rand.New(rand.NewPCG(1, 2))
	const variants = 4096
	cmds := make([][]byte, variants)
	for i := range cmds {
		cmds[i] = mk(strconv.Itoa(rng.IntN(100000)))
	}
	for i := 0; i < fill; i++ {
		c.process(mk(strconv.Itoa(i)))
		c.w.Buf = c.w.Buf[:0]
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.process(cmds[i%variants])
		c.w.Buf = c.w.Buf[:0]
	}
}

func BenchmarkRedisBenchZADD(b *testing.B) {
	benchRandomized(b, 100000, func(r string) []byte { return encodeCmd("ZADD", "myzset", r, "element:"+r) })
}

func BenchmarkRedisBenchHSET(b *testing.B) {
	benchRandomized(b, 100000, func(r string) []byte { return encodeCmd("HSET", "myhash", "element:"+r, "xxx") })
}

func BenchmarkRedisBenchMSET(b *testing.B) {
	benchRandomized(b, 100000, func(r string) []byte {
		args := []string{"MSET"}
		for i := 0; i < 10; i++ {
			args = append(args, "key:"+r, "xxx")
		}
		return encodeCmd(args...)
	})
}

func BenchmarkRedisBenchLRANGE100(b *testing.B) {
	c := newBenchClient(b)
	push := encodeCmd("LPUSH", "mylist", "xxx")
	for i := 0; i < 10000; i++ {
		c.process(push)
		c.w.Buf = c.w.Buf[:0]
	}
	lr := encodeCmd("LRANGE", "mylist", "0", "99")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.process(lr)
		c.w.Buf = c.w.Buf[:0]
	}
}

// BenchmarkRedisBenchZPOPMIN pops the lowest member of a 100,000-member
// sorted set, refilling it (outside the timer) when it runs out.
func BenchmarkRedisBenchZPOPMIN(b *testing.B) {
	c := newBenchClient(b)
	pop := encodeCmd("ZPOPMIN", "myzset")
	b.ReportAllocs()
	for done := 0; done < b.N; {
		b.StopTimer()
		for i := 0; i < 100000; i++ {
			c.process(encodeCmd("ZADD", "myzset", strconv.Itoa(i), "element:"+strconv.Itoa(i)))
			c.w.Buf = c.w.Buf[:0]
		}
		b.StartTimer()
		for i := 0; i < 100000 && done < b.N; i, done = i+1, done+1 {
			c.process(pop)
			c.w.Buf = c.w.Buf[:0]
		}
	}
}
