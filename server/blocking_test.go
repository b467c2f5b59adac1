package server_test

import (
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestBlockingFIFO: clients blocked on a key are served in the order they
// blocked, each with the reply shape redis-server gives.
func TestBlockingFIFO(t *testing.T) {
	for _, target := range []string{"sluice", "redis"} {
		t.Run(target, func(t *testing.T) {
			var addr string
			if target == "redis" {
				addr = redistest.StartRedis(t)
			} else {
				_, addr = redistest.StartSluice(t)
			}
			a := redistest.Dial(t, addr)
			b := redistest.Dial(t, addr)
			p := redistest.Dial(t, addr)
			p.Do("LPOP", "q", "100")
			p.Do("LPOP", "dst", "100")
			ra := make(chan string, 1)
			rb := make(chan string, 1)
			go func() { r, _ := a.Do("BLPOP", "q", "0"); ra <- r }()
			time.Sleep(50 * time.Millisecond)
			go func() { r, _ := b.Do("BLMOVE", "q", "dst", "RIGHT", "LEFT", "0"); rb <- r }()
			time.Sleep(50 * time.Millisecond)
			if got, _ := p.Do("RPUSH", "q", "x", "y", "z"); got != ":3\r\n" {
				t.Fatalf("RPUSH: %q", got)
			}
			if got := <-ra; got != "*2\r\n$1\r\nq\r\n$1\r\nx\r\n" {
				t.Fatalf("first waiter: %q", got)
			}
			if got := <-rb; got != "$1\r\nz\r\n" {
				t.Fatalf("second waiter: %q", got)
			}
			if got, _ := p.Do("LRANGE", "q", "0", "-1"); got != "*1\r\n$1\r\ny\r\n" {
				t.Fatalf("left over: %q", got)
			}
			if got, _ := a.Do("BRPOP", "none", "0.05"); got != "*-1\r\n" {
				t.Fatalf("timeout: %q", got)
			}
		})
	}
}
