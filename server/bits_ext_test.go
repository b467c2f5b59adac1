package server_test

import (
	"math/rand"
	"strconv"
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
)

// Random BITCOUNT/BITPOS ranges (BYTE and BIT, negative and out of range
// indexes) and BITFIELD operations on random strings, compared with
// redis-server reply by reply.
func TestBitsRandomVsRedis(t *testing.T) {
	r := redistest.Dial(t, redistest.StartRedis(t))
	_, saddr := redistest.StartSluice(t)
	s := redistest.Dial(t, saddr)
	rng := rand.New(rand.NewSource(1))
	do := func(args ...string) {
		t.Helper()
		want, err := r.Do(args...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Do(args...)
		if err != nil {
			t.Fatal(err)
		}
		if want != got {
			t.Fatalf("%q: redis %q, sluice %q", args, want, got)
		}
	}
	idx := func(n int) string { return strconv.Itoa(rng.Intn(2*n+20) - n - 10) }
	for round := 0; round < 60; round++ {
		n := rng.Intn(40)
		b := make([]byte, n)
		for i := range b {
			switch rng.Intn(3) {
			case 0:
				b[i] = 0
			case 1:
				b[i] = 0xff
			default:
				b[i] = byte(rng.Intn(256))
			}
		}
		do("SET", "k", string(b))
		for i := 0; i < 30; i++ {
			unit := []string{"BYTE", "BIT"}[rng.Intn(2)]
			lim := n
			if unit == "BIT" {
				lim = n * 8
			}
			bit := strconv.Itoa(rng.Intn(2))
			do("BITCOUNT", "k", idx(lim), idx(lim), unit)
			do("BITPOS", "k", bit, idx(lim), idx(lim), unit)
			do("BITPOS", "k", bit, idx(lim))
			typ := []string{"i", "u"}[rng.Intn(2)]
			width := 1 + rng.Intn(63)
			if typ == "i" && rng.Intn(8) == 0 {
				width = 64
			}
			off := strconv.Itoa(rng.Intn(n*8 + 16))
			val := strconv.FormatInt(rng.Int63()>>rng.Intn(63)-rng.Int63()>>rng.Intn(63), 10)
			ow := []string{"WRAP", "SAT", "FAIL"}[rng.Intn(3)]
			w := typ + strconv.Itoa(width)
			do("BITFIELD", "bf", "OVERFLOW", ow, "INCRBY", w, off, val, "GET", w, off, "SET", w, "#1", val)
		}
		do("GET", "bf")
	}
}
