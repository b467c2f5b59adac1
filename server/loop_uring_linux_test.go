//go:build linux

package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/uring"
)

// ringAvailable reports whether this kernel gives the loops a ring.
func ringAvailable() bool {
	r, err := uring.New(8, 0)
	if err != nil {
		return false
	}
	defer r.Close()
	b, err := r.RegisterBufRing(0, 2, 64)
	if err != nil {
		return false
	}
	b.Free()
	return true
}

// eachLoopMode runs fn against a fresh server whose loops use the ring
// (replies written, or sent through the ring) and against one whose loops
// use epoll alone (with bufs provided buffers per ring, when not 0).
func eachLoopMode(t *testing.T, bufs int, fn func(t *testing.T, srv *Server, addr string)) {
	for _, mode := range []string{"ring", "ring-sends", "epoll"} {
		ring := mode != "epoll"
		t.Run(mode, func(t *testing.T) {
			if ring && (!ringAvailable() || !lockThreads) {
				t.Skip("io_uring is not available here")
			}
			oldUse, oldBufs, oldSends := useRing, ringBufs, ringSendsOn
			useRing, ringSendsOn = ring, mode == "ring-sends"
			defer func() { ringSendsOn = oldSends }()
			if bufs > 0 {
				ringBufs = bufs
			}
			cfg := NewConfig()
			cfg.Set("port", "0")
			cfg.Set("io-threads", "1")
			srv := New(cfg)
			srv.SetLogger(nil)
			err := srv.Start()
			useRing, ringBufs = oldUse, oldBufs
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			if got := srv.loops[0].ring != nil; got != ring {
				t.Fatalf("loop has a ring: %v, want %v", got, ring)
			}
			fn(t, srv, srv.Addrs()[0].String())
		})
	}
}

func readReply(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	s, err := readReplyErr(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readReplyErr reads one reply: a line, or a bulk string's contents.
func readReplyErr(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if line[0] != '$' {
		return line, nil
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	if n < 0 {
		return line, nil
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b[:n]), nil
}

// Many clients sending pipelines at once, more than the ring has
// buffers: receives end for want of buffers and are armed again, and no
// byte is lost or misplaced.
func TestLoopManyClientsPipelining(t *testing.T) {
	eachLoopMode(t, 4, func(t *testing.T, srv *Server, addr string) {
		const clients, depth = 60, 40
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for i := 0; i < clients; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					errs <- err
					return
				}
				defer conn.Close()
				var req bytes.Buffer
				for j := 0; j < depth; j++ {
					k, v := fmt.Sprintf("c%d:%d", i, j), fmt.Sprintf("v%d-%d", i, j*j)
					fmt.Fprintf(&req, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(v), v)
					fmt.Fprintf(&req, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(k), k)
				}
				if _, err := conn.Write(req.Bytes()); err != nil {
					errs <- err
					return
				}
				r := bufio.NewReader(conn)
				for j := 0; j < depth; j++ {
					if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
						errs <- fmt.Errorf("client %d SET %d: %q %v", i, j, line, err)
						return
					}
					want := fmt.Sprintf("$%d\r\nv%d-%d\r\n", len(fmt.Sprintf("v%d-%d", i, j*j)), i, j*j)
					got := make([]byte, len(want))
					if _, err := io.ReadFull(r, got); err != nil || string(got) != want {
						errs <- fmt.Errorf("client %d GET %d: %q, want %q (%v)", i, j, got, want, err)
						return
					}
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// A value bigger than the provided buffers, sent in one go with commands
// after it, and a client that does not read while its replies pile up
// past what the socket holds: the loop waits for room and goes on.
func TestLoopBigValuesAndSlowReader(t *testing.T) {
	eachLoopMode(t, 0, func(t *testing.T, srv *Server, addr string) {
		// Three clients at once, so that one iteration of the loop has
		// several sockets to fill and some take only part of a send.
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		for i := 0; i < 3; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				errs <- slowBigClient(addr, fmt.Sprintf("big%d", i))
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})
}

// slowBigClient sets key to a 3 MB value and asks for it 20 times, all in
// one write, and reads the replies only once everything is sent.
func slowBigClient(addr, key string) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	val := bytes.Repeat([]byte(key+"-0123456789abcdef"), 3<<20/(len(key)+17))
	var req bytes.Buffer
	fmt.Fprintf(&req, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n", len(key), key, len(val))
	req.Write(val)
	req.WriteString("\r\n*1\r\n$4\r\nPING\r\n")
	const gets = 20
	for i := 0; i < gets; i++ {
		fmt.Fprintf(&req, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(key), key)
	}
	// Write everything before reading anything: 60 MB of replies wait
	// for a reader that comes back only once all is sent.
	done := make(chan error, 1)
	go func() {
		_, err := conn.Write(req.Bytes())
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	r := bufio.NewReaderSize(conn, 1<<20)
	if got, err := readReplyErr(r); err != nil || got != "+OK\r\n" {
		return fmt.Errorf("%s SET: %q %v", key, got, err)
	}
	if got, err := readReplyErr(r); err != nil || got != "+PONG\r\n" {
		return fmt.Errorf("%s PING: %q %v", key, got, err)
	}
	for i := 0; i < gets; i++ {
		if got, err := readReplyErr(r); err != nil || got != string(val) {
			return fmt.Errorf("%s GET %d: %d bytes, want the %d written (%v)", key, i, len(got), len(val), err)
		}
	}
	return <-done
}

// Connections come and go, each with its own name, while others stay:
// replies reach the connection that asked, also when a closed one's
// descriptor is reused at once.
func TestLoopConnectionsComeAndGo(t *testing.T) {
	eachLoopMode(t, 0, func(t *testing.T, srv *Server, addr string) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < 60; i++ {
					conn, err := net.Dial("tcp", addr)
					if err != nil {
						errs <- err
						return
					}
					name := fmt.Sprintf("w%d-%d", w, i)
					fmt.Fprintf(conn, "CLIENT SETNAME %s\r\nCLIENT GETNAME\r\nPING\r\n", name)
					r := bufio.NewReader(conn)
					want := "+OK\r\n$" + strconv.Itoa(len(name)) + "\r\n" + name + "\r\n+PONG\r\n"
					got := make([]byte, len(want))
					_, err = io.ReadFull(r, got)
					conn.Close()
					if err != nil || string(got) != want {
						errs <- fmt.Errorf("%s: got %q (%v)", name, got, err)
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		// The closed connections are gone from the server's view.
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := srv.ConnectedClients()
			if n == 0 || time.Now().After(deadline) {
				if n != 0 {
					t.Fatalf("%d clients still listed after all closed", n)
				}
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// A burst of requests from many clients at once, then silence: every
// reply comes at once. Replies sent through the ring in one batch used to
// set aside the receives that arrived with them (sendHeld), and the loop
// then slept with them unserved until something else woke it: up to its
// 100 ms timeout, for about one request in four of these bursts. With 8
// clients the loop serves them at once; with 40 (batchMinActive or more)
// it waits for others to join them, for the batch wait at most.
func TestLoopBurstThenSilence(t *testing.T) {
	for _, clients := range []int{8, 40} {
		t.Run(fmt.Sprint(clients, "-clients"), func(t *testing.T) { testBurstThenSilence(t, clients) })
	}
}

func testBurstThenSilence(t *testing.T, clients int) {
	eachLoopMode(t, 0, func(t *testing.T, srv *Server, addr string) {
		const rounds = 250
		conns := make([]net.Conn, clients)
		readers := make([]*bufio.Reader, clients)
		for i := range conns {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conns[i], readers[i] = c, bufio.NewReader(c)
		}
		// A reply held back waits for the loop's 100 ms timeout; one that
		// takes 80 ms on a busy machine without that is rare, so a few
		// are allowed.
		slow, worst := 0, time.Duration(0)
		lat := make([]time.Duration, clients)
		errs := make([]error, clients)
		for r := 0; r < rounds; r++ {
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range conns {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-start
					t0 := time.Now()
					if _, err := io.WriteString(conns[i], "PING\r\n"); err != nil {
						errs[i] = err
						return
					}
					line, err := readers[i].ReadString('\n')
					if err == nil && line != "+PONG\r\n" {
						err = fmt.Errorf("got %q", line)
					}
					errs[i], lat[i] = err, time.Since(t0)
				}(i)
			}
			close(start)
			wg.Wait()
			for i := range conns {
				if errs[i] != nil {
					t.Fatalf("round %d, client %d: %v", r, i, errs[i])
				}
				if lat[i] >= 80*time.Millisecond {
					slow++
				}
				worst = max(worst, lat[i])
			}
			time.Sleep(time.Millisecond)
		}
		if slow > 3 {
			t.Fatalf("%d of %d replies took 80 ms or more (the slowest %v)", slow, clients*rounds, worst)
		}
	})
}

// The batch wait follows the input rate of the current and the previous
// period, up to batchWaitMaxUs, and falls to nothing after an idle period.
func TestRingBatchWait(t *testing.T) {
	const period = int64(1) << 20 // ns, as active counts them
	rg := &loopRing{}
	clients := make([]*Client, 200)
	for i := range clients {
		clients[i] = &Client{}
	}
	now := 10 * period
	send := func(n int) {
		for i := 0; i < n; i++ {
			rg.seen(clients[i%len(clients)])
		}
	}
	rg.active(now)
	if w := rg.batchWait(); w != 0 {
		t.Fatalf("wait %dµs before any input", w)
	}
	send(7)
	if w := rg.batchWait(); w != 7 {
		t.Fatalf("wait %dµs after 7 inputs in a period, want 7", w)
	}
	// The next period keeps the last one's rate until it has more.
	rg.active(now + period)
	send(3)
	if w, a := rg.batchWait(), rg.active(now+period); w != 7 || a != 7 {
		t.Fatalf("wait %dµs, %d active at 3 inputs after 7, want 7 and 7", w, a)
	}
	send(500)
	if w := rg.batchWait(); w != batchWaitMaxUs {
		t.Fatalf("wait %dµs at 503 inputs a period, want the maximum %d", w, batchWaitMaxUs)
	}
	// A period without input, then one more: the rate is gone.
	rg.active(now + 3*period)
	if w, a := rg.batchWait(), rg.active(now+3*period); w != 0 || a != 0 {
		t.Fatalf("wait %dµs, %d active after an idle period, want 0", w, a)
	}
}
