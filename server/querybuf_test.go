package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The query buffer counts as Redis 7.0 keeps it: 16 KiB reserved once a
// client sends something, all of it freed once the client has been idle
// for 3 seconds; a big argument's size kept after the argument, and
// trimmed to what the client uses by the cron while it goes on sending
// small commands. CLIENT LIST's qbuf plus qbuf-free shows it. Both
// servers (unit/querybuf's two tests).
func TestQueryBufferFollowsUse(t *testing.T) {
	for name, addr := range bothServers(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer c.Close()
			qbuf := func(name string) int64 {
				q, _ := strconv.ParseInt(clientField(t, c, name, "qbuf"), 10, 64)
				f, _ := strconv.ParseInt(clientField(t, c, name, "qbuf-free"), 10, 64)
				return q + f
			}
			rawClient(t, addr, "idle")
			if n := qbuf("idle"); n < 16384 || n >= 32768 {
				t.Errorf("a new client's query buffer is %d bytes", n)
			}
			deadline := time.Now().Add(8 * time.Second)
			for qbuf("idle") != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("an idle client's query buffer is still %d bytes", qbuf("idle"))
				}
				time.Sleep(100 * time.Millisecond)
			}
			idle, _ := strconv.Atoi(clientField(t, c, "idle", "idle"))
			if idle < 3 {
				t.Errorf("query buffer freed after %d s idle", idle)
			}

			busy := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer busy.Close()
			busy.Do(ctx, "CLIENT", "SETNAME", "busy")
			busy.Set(ctx, "x", strings.Repeat("A", 400000), 0)
			big := qbuf("busy")
			if big <= 32768 {
				t.Fatalf("after a 400 KB argument the query buffer is %d bytes", big)
			}
			deadline = time.Now().Add(2 * time.Second)
			for qbuf("busy") >= big && time.Now().Before(deadline) {
				busy.Set(ctx, "x", "small", 0)
				time.Sleep(10 * time.Millisecond)
			}
			if n := qbuf("busy"); n <= 0 || n >= big {
				t.Errorf("a client sending small commands after a big one: query buffer %d bytes (was %d)", n, big)
			}
		})
	}
}
