package server_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// oom-score-adj sets the server process's own OOM score (here the test
// process's: the server runs in it) and restores it when turned off.
func TestOOMScoreAdj(t *testing.T) {
	read := func() string {
		b, err := os.ReadFile("/proc/self/oom_score_adj")
		if err != nil {
			t.Skip("no /proc/self/oom_score_adj")
		}
		return strings.TrimSpace(string(b))
	}
	base := read()
	if base != "0" {
		t.Skipf("process starts with oom_score_adj %s", base)
	}
	ctx := context.Background()
	_, addr := redistest.StartSluice(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	defer c.ConfigSet(ctx, "oom-score-adj", "no")
	steps := []struct{ name, value, want string }{
		{"oom-score-adj-values", "10 20 30", "0"}, // off: untouched
		{"oom-score-adj", "yes", "10"},
		{"oom-score-adj-values", "15 20 30", "15"},
		{"oom-score-adj", "absolute", "15"},
		{"oom-score-adj-values", "5 20 30", "5"},
		// REPLICAOF moves the server to the replica class and back.
		{"REPLICAOF", "127.0.0.1 1", "20"},
		{"oom-score-adj-values", "5 25 30", "25"},
		{"REPLICAOF", "NO ONE", "5"},
		{"oom-score-adj", "no", "0"}, // restored
	}
	for _, s := range steps {
		var err error
		if s.name == "REPLICAOF" {
			w := strings.Fields(s.value)
			err = c.Do(ctx, "REPLICAOF", w[0], w[1]).Err()
		} else {
			err = c.ConfigSet(ctx, s.name, s.value).Err()
		}
		if err != nil {
			t.Fatalf("%s %s: %v", s.name, s.value, err)
		}
		if got := read(); got != s.want {
			t.Errorf("after %s %s: oom_score_adj %s, want %s", s.name, s.value, got, s.want)
		}
	}
}
