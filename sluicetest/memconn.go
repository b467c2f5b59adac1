package sluicetest

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// memAddr is the address of an in-memory connection.
type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

// pipeHalf is one direction of an in-memory connection: an unbounded
// buffer, so a client that writes a whole pipeline before reading never
// deadlocks against the server writing replies (net.Pipe would).
type pipeHalf struct {
	mu     sync.Mutex
	buf    []byte
	off    int // read position in buf
	closed bool
	notify chan struct{} // signalled when data arrives or the half closes
}

// keepBuf is the largest buffer a drained half keeps for the next writes.
const keepBuf = 64 << 10

func newHalf() *pipeHalf { return &pipeHalf{notify: make(chan struct{}, 1)} }

func (h *pipeHalf) write(b []byte) (int, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return 0, io.ErrClosedPipe
	}
	h.buf = append(h.buf, b...)
	h.mu.Unlock()
	select {
	case h.notify <- struct{}{}:
	default:
	}
	return len(b), nil
}

// read copies what is buffered into b, waiting for data, the close, or
// the reader's deadline (c's).
func (h *pipeHalf) read(b []byte, c *memConn) (int, error) {
	for {
		h.mu.Lock()
		if h.off < len(h.buf) {
			n := copy(b, h.buf[h.off:])
			h.off += n
			if h.off == len(h.buf) {
				h.off = 0
				if cap(h.buf) > keepBuf {
					h.buf = nil
				} else {
					h.buf = h.buf[:0]
				}
			}
			h.mu.Unlock()
			return n, nil
		}
		if h.closed {
			h.mu.Unlock()
			return 0, io.EOF
		}
		h.mu.Unlock()
		c.dmu.Lock()
		d := c.rdeadline
		c.dmu.Unlock()
		if d.IsZero() {
			<-h.notify // no deadline: wait for data or the close only
			continue
		}
		wait := time.Until(d)
		if wait <= 0 {
			return 0, os.ErrDeadlineExceeded
		}
		// One timer per connection, reused: clients set a deadline on
		// every read (go-redis's ReadTimeout).
		if c.timer == nil {
			c.timer = time.NewTimer(wait)
		} else {
			c.timer.Reset(wait)
		}
		select {
		case <-h.notify:
			c.timer.Stop()
		case <-c.timer.C:
			return 0, os.ErrDeadlineExceeded
		}
	}
}

func (h *pipeHalf) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	select {
	case h.notify <- struct{}{}:
	default:
	}
}

// memConn is one end of an in-memory connection.
type memConn struct {
	in, out    *pipeHalf
	local, rem memAddr
	dmu        sync.Mutex
	rdeadline  time.Time
	rmu        sync.Mutex
	timer      *time.Timer // the reader's deadline timer, under rmu
	once       sync.Once
	closedCh   chan struct{}
	peer       *memConn
}

// memPipe returns the two ends of an in-memory connection.
func memPipe() (client, server *memConn) {
	a, b := newHalf(), newHalf()
	client = &memConn{in: a, out: b, local: "mem-client", rem: "mem-server", closedCh: make(chan struct{})}
	server = &memConn{in: b, out: a, local: "mem-server", rem: "mem-client", closedCh: make(chan struct{})}
	client.peer, server.peer = server, client
	return client, server
}

func (c *memConn) Read(b []byte) (int, error) {
	c.rmu.Lock() // reads take turns, as on a socket (they share the timer)
	defer c.rmu.Unlock()
	return c.in.read(b, c)
}

func (c *memConn) Write(b []byte) (int, error) {
	select {
	case <-c.closedCh:
		return 0, io.ErrClosedPipe
	default:
	}
	return c.out.write(b)
}

func (c *memConn) Close() error {
	c.once.Do(func() {
		close(c.closedCh)
		c.out.close()
		c.in.close()
	})
	return nil
}

func (c *memConn) LocalAddr() net.Addr  { return c.local }
func (c *memConn) RemoteAddr() net.Addr { return c.rem }

func (c *memConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *memConn) SetReadDeadline(t time.Time) error {
	c.dmu.Lock()
	c.rdeadline = t
	c.dmu.Unlock()
	// Wake a blocked reader so it re-reads the deadline.
	select {
	case c.in.notify <- struct{}{}:
	default:
	}
	return nil
}

// Writes never block, so a write deadline has nothing to interrupt.
func (c *memConn) SetWriteDeadline(t time.Time) error { return nil }
