package server_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestInfoKeyspaceAvgTTL: INFO keyspace estimates the average TTL of the
// keys with an expiry (clients show it; Sluice used to report 0), as
// redis-server does once its expire cycle has sampled them.
func TestInfoKeyspaceAvgTTL(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	re := regexp.MustCompile(`db0:keys=(\d+),expires=(\d+),avg_ttl=(\d+)`)
	for _, addr := range []string{raddr, saddr} {
		c := redistest.Dial(t, addr)
		c.Do("FLUSHALL")
		c.Do("SET", "a", "1", "EX", "100")
		c.Do("SET", "b", "1", "EX", "200")
		c.Do("SET", "c", "1")
		time.Sleep(300 * time.Millisecond) // Redis's expire cycle runs at hz 10
		info, _ := c.Do("INFO", "keyspace")
		m := re.FindStringSubmatch(info)
		if m == nil {
			t.Fatalf("%s: %q", addr, info)
		}
		avg, _ := strconv.Atoi(m[3])
		if m[1] != "3" || m[2] != "2" || avg < 148000 || avg > 150000 {
			t.Errorf("%s: keys=%s expires=%s avg_ttl=%d, want 3, 2 and about 150000", addr, m[1], m[2], avg)
		}
		c.Do("PERSIST", "a")
		c.Do("PERSIST", "b")
		time.Sleep(300 * time.Millisecond)
		if info, _ := c.Do("INFO", "keyspace"); !regexp.MustCompile(`db0:keys=3,expires=0,avg_ttl=\d+`).MatchString(info) {
			t.Errorf("%s after PERSIST: %q", addr, info)
		}
	}
}
