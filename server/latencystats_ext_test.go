package server_test

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
)

// INFO latencystats: a line per command called while latency-tracking is
// on, with the configured percentiles, cleared by CONFIG RESETSTAT; a
// blocking command is recorded when it is unblocked.
func TestLatencyStats(t *testing.T) {
	line := regexp.MustCompile(`^latency_percentiles_usec_([a-z|]+):p0=\d+\.\d{3},p50=\d+\.\d{3},p99\.9=\d+\.\d{3}$`)
	_, saddr := redistest.StartSluice(t)
	for name, addr := range map[string]string{"redis": redistest.StartRedis(t), "sluice": saddr} {
		t.Run(name, func(t *testing.T) {
			c, rd := redistest.Dial(t, addr), redistest.Dial(t, addr)
			stats := func() []string {
				raw, _ := c.Do("INFO", "latencystats")
				var cmds []string
				for _, l := range strings.Split(strings.TrimSpace(raw[strings.Index(raw, "\r\n")+2:]), "\r\n")[1:] {
					m := line.FindStringSubmatch(l)
					if m == nil {
						t.Fatalf("latencystats line %q", l)
					}
					cmds = append(cmds, m[1])
				}
				sort.Strings(cmds)
				return cmds
			}
			mustDo(t, c, "+OK\r\n", "CONFIG", "SET", "latency-tracking", "no")
			mustDo(t, c, "+OK\r\n", "CONFIG", "RESETSTAT")
			mustDo(t, c, "+OK\r\n", "SET", "a", "b")
			if got := stats(); len(got) != 0 {
				t.Fatalf("tracking off: %v", got)
			}
			mustDo(t, c, "+OK\r\n", "CONFIG", "SET", "latency-tracking", "yes")
			mustDo(t, c, "+OK\r\n", "CONFIG", "SET", "latency-tracking-info-percentiles", "0.0 50 99.90")
			mustDo(t, c, "+OK\r\n", "SET", "a", "b")
			c.Do("CLIENT", "ID")
			c.Do("DEL", "list")
			send(t, rd, []string{"BLPOP", "list", "0"})
			waitBlocked(t, c, 1)
			if got := strings.Join(stats(), " "); got != "client|id config|set del info set" {
				t.Fatalf("before the push: %s", got)
			}
			mustDo(t, c, ":1\r\n", "LPUSH", "list", "x")
			read(t, rd, "*2\r\n$4\r\nlist\r\n$1\r\nx\r\n")
			if got := strings.Join(stats(), " "); got != "blpop client|id config|set del info lpush set" {
				t.Fatalf("after the push: %s", got)
			}
			mustDo(t, c, "+OK\r\n", "CONFIG", "RESETSTAT")
			if got := strings.Join(stats(), " "); got != "config|resetstat" {
				t.Fatalf("after RESETSTAT: %s", got)
			}
			c.Do("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9")
		})
	}
}
