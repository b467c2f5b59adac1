//go:build linux

package server

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// A loop that has been idle waits in Go's poller (idle_linux.go), and
// what comes meanwhile wakes it at once: a request, a new connection,
// and, every time, work another goroutine posts (a BLPOP's timeout). The
// waits' limit is made long, so that a wake-up that does not come shows
// as a reply seconds late.
func TestIdleLoopWakes(t *testing.T) {
	oldCron, oldEmpty := idleWaitCron, idleWaitEmpty
	idleWaitCron, idleWaitEmpty = 10*time.Second, 10*time.Second
	t.Cleanup(func() { idleWaitCron, idleWaitEmpty = oldCron, oldEmpty })
	const late = 3 * time.Second

	eachLoopMode(t, 0, func(t *testing.T, srv *Server, addr string) {
		l := srv.loops[0]
		if l.idle == nil {
			t.Fatal("the loop has no idle waiter")
		}
		dial := func() (net.Conn, *bufio.Reader) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			return conn, bufio.NewReader(conn)
		}
		do := func(conn net.Conn, r *bufio.Reader, args ...string) (string, time.Duration) {
			t.Helper()
			req := fmt.Sprintf("*%d\r\n", len(args))
			for _, a := range args {
				req += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
			}
			start := time.Now()
			if _, err := conn.Write([]byte(req)); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(2 * idleWaitCron))
			reply := readReply(t, r)
			return strings.TrimSpace(reply), time.Since(start)
		}
		// idleNow lets the loop go idle: a first wait (in the kernel)
		// long enough that the next is made in the poller, where it
		// then waits.
		idleNow := func() {
			t.Helper()
			time.Sleep(4 * idleSleepAfter)
			deadline := time.Now().Add(late)
			for !l.idle.in.Load() {
				if time.Now().After(deadline) {
					t.Fatal("the idle loop does not wait in Go's poller")
				}
				time.Sleep(idleSleepAfter)
			}
		}

		conn, r := dial()
		defer conn.Close()
		if reply, _ := do(conn, r, "PING"); reply != "+PONG" {
			t.Fatalf("PING: %q", reply)
		}
		for i := 0; i < 3; i++ {
			idleNow()
			reply, d := do(conn, r, "SET", "k", fmt.Sprint(i))
			if reply != "+OK" || d > late {
				t.Fatalf("SET after the loop went idle: %q in %v", reply, d)
			}
		}
		// A BLPOP's timeout is posted to the loop by a timer's goroutine,
		// each time (a ring's first such wake-up came, the later ones did
		// not: see idleWaiter).
		for i := 0; i < 3; i++ {
			idleNow()
			reply, d := do(conn, r, "BLPOP", "nolist", "0.2")
			if reply != "*-1" || d > late {
				t.Fatalf("BLPOP %d with a timeout of 0.2 s: %q in %v", i, reply, d)
			}
		}
		// With no connection left, the listener wakes the loop.
		conn.Close()
		idleNow()
		conn2, r2 := dial()
		defer conn2.Close()
		if reply, d := do(conn2, r2, "GET", "k"); reply != "2" || d > late {
			t.Fatalf("GET on a new connection to an idle loop: %q in %v", reply, d)
		}
	})
}
