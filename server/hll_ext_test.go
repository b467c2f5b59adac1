package server_test

import (
	"math/rand"
	"strconv"
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
)

// Random PFADD/PFMERGE/PFCOUNT sequences (sparse growth, VAL merging,
// promotion at several hll-sparse-max-bytes) must leave byte-identical
// strings and counts on Sluice and redis-server.
func TestHLLRandomVsRedis(t *testing.T) {
	r := redistest.Dial(t, redistest.StartRedis(t))
	_, saddr := redistest.StartSluice(t)
	s := redistest.Dial(t, saddr)
	rng := rand.New(rand.NewSource(2))
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
			t.Fatalf("%.80q: redis %.200q, sluice %.200q", args, want, got)
		}
	}
	for _, maxBytes := range []string{"3000", "200", "1000"} {
		do("CONFIG", "SET", "hll-sparse-max-bytes", maxBytes)
		do("FLUSHALL")
		for i := 0; i < 200; i++ {
			key := "k" + strconv.Itoa(rng.Intn(4))
			switch rng.Intn(6) {
			case 0:
				do("PFMERGE", key, "k"+strconv.Itoa(rng.Intn(4)), "k"+strconv.Itoa(rng.Intn(4)))
			case 1:
				do("PFCOUNT", key, "k"+strconv.Itoa(rng.Intn(4)))
			default:
				args := []string{"PFADD", key}
				for n := rng.Intn(40); n > 0; n-- {
					args = append(args, strconv.Itoa(rng.Intn(5000)))
				}
				do(args...)
			}
			do("PFCOUNT", key)
			do("GET", key)
		}
	}
	do("CONFIG", "SET", "hll-sparse-max-bytes", "3000")
}
