package server_test

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A server killed with SIGKILL starts again at once on its port, as
// redis-server does (a supervisor, or a test, restarts it right away):
// nothing of the dead process goes on listening. Its loops' rings held
// the listeners once, and the kernel tears a ring down some milliseconds
// after its process is gone: the restart failed to bind the port most
// times. Clients are connected when it dies, and the restarted server has
// what the appendonly file kept.
func TestRestartAtOnceAfterKill(t *testing.T) {
	for name, bin := range processServers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			srv, _ := startProc(t, bin, "--appendonly", "yes", "--appendfsync", "always")
			_, p := hostPort(srv.addr)
			port, _ := strconv.Atoi(p)
			for round := 0; round < 8; round++ {
				c := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1})
				if n, err := c.Incr(ctx, "restarts").Result(); err != nil || n != int64(round+1) {
					t.Fatalf("round %d: INCR = %d, %v", round, n, err)
				}
				var idle []net.Conn
				for range 4 {
					if conn, err := net.Dial("tcp", srv.addr); err == nil {
						idle = append(idle, conn)
					}
				}
				srv.kill()
				srv.startOn(port)
				for _, conn := range idle {
					conn.Close()
				}
				c.Close()
			}
		})
	}
}
