//go:build linux

package server

import (
	"crypto/tls"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// TLS connections on the event loops.
//
// A loop accepts a connection on a TLS port like any other and registers
// its client (so maxclients, CLIENT LIST and the idle timeout see it, as
// in Redis), but the handshake runs on a goroutine of its own over a
// duplicate of the socket: a client that stalls mid-handshake holds that
// goroutine, never the loop. When the handshake is done the loop takes the
// connection over: it reads ciphertext from the socket as it reads plain
// connections, feeds it to the tls.Conn through an in-memory transport
// (tls.go's loopTransport) and parses the plaintext that comes out; the
// replies of a batch are encrypted in one tls.Conn.Write and sent with the
// batch's one write. So a TLS connection costs the loop the same system
// calls as a plain one.
//
// The loop's hooks are four: accept (startTLS), onReadable (tlsRead
// instead of the raw read), write (sealTLS before the raw write) and
// close (closeTLS); and a loop that serves TLS connections does not busy
// poll (spin.go): a TLS client takes longer between requests, and
// measured with redis-benchmark --tls at -P 1 polling cost more server CPU
// per request than the wake-ups it saved (1.10x Redis's against 0.84x).

// tlsListenerFDs returns the descriptors of the TLS listeners in lns.
func tlsListenerFDs(lns []net.Listener) map[int]bool {
	out := map[int]bool{}
	for _, ln := range lns {
		if isTLSListener(ln) {
			for _, fd := range listenerFDs([]net.Listener{ln}) {
				out[fd] = true
			}
		}
	}
	return out
}

// startTLS begins the handshake of a client accepted on a TLS port.
func (l *loop) startTLS(c *Client) {
	cfg := l.srv.serverTLS()
	var nc net.Conn
	if cfg != nil {
		if dup, err := unix.Dup(c.fd); err == nil {
			f := os.NewFile(uintptr(dup), "")
			nc, err = net.FileConn(f) // a socket Go's poller waits on
			f.Close()
			if err != nil {
				nc = nil
			}
		}
	}
	if nc == nil {
		l.close(c)
		return
	}
	tc := &tlsConn{hsConn: nc}
	tc.t.hs, tc.t.local, tc.t.remote = nc, nc.LocalAddr(), nc.RemoteAddr()
	tc.conn = tls.Server(&tc.t, cfg)
	c.tls = tc
	go func() {
		err := tc.conn.Handshake()
		tc.hsMu.Lock()
		tc.hsConn = nil
		tc.hsMu.Unlock()
		tc.t.hs = nil // from here on the loop feeds the transport
		nc.Close()
		l.post(func() { l.handshakeDone(c, err) })
	}()
}

// handshakeDone hands a client whose handshake ended to the loop, or
// closes it when the handshake failed.
func (l *loop) handshakeDone(c *Client, err error) {
	if c.fd < 0 || l.conns[c.fd] != c {
		return // closed meanwhile (CLIENT KILL, timeout, shutdown)
	}
	if err != nil {
		l.srv.Warnf("Error accepting a client connection: %v", err)
		l.close(c)
		return
	}
	c.tls.ready = true
	l.tlsConns++
	if l.srv.protectedModeRefuses(l.id, c.addr, false) {
		// As Redis, the refusal is said over TLS once the handshake is done.
		if out, err := c.tls.seal([]byte(errProtectedMode)); err == nil {
			rawWrite(c.fd, out)
		}
		l.close(c)
		return
	}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c.fd)}); err != nil {
		l.close(c)
		return
	}
	// The handshake may have read the first commands with its last
	// record: serve them now, the socket may have nothing more to say.
	l.onReadable(c)
}

// tlsRead reads ciphertext from c's socket and returns the plaintext it
// decrypts into p, like a read(2): n > 0, or -1 with EAGAIN when no whole
// record came, or n <= 0 with another error when the connection ended.
//
// It reads until p is full or the socket has no more for now: while no
// plaintext came (a record may come in pieces), and while each read fills
// the loop's buffer. The socket is never left holding ciphertext unless p
// is full, in which case the loop is told to read again (readAgain): the
// ring's loop learns of TLS input from its epoll descriptor only when new
// input arrives, so input left in a socket would wait for its next timer.
// Ciphertext read but not yet decrypted when p fills is kept with the
// connection (tlsConn.rest) for the next call.
func (l *loop) tlsRead(c *Client, p []byte) (int, error) {
	tc := c.tls
	if !tc.ready {
		return -1, unix.EAGAIN
	}
	if tc.readErr != nil {
		return -1, tc.readErr
	}
	if l.tlsBuf == nil {
		l.tlsBuf = make([]byte, readSize)
	}
	// The socket is read first, unless the last call filled p: then
	// plaintext may wait inside the tls.Conn, and ciphertext in rest.
	read := !tc.held
	tc.held = false
	got, filled, drained := 0, false, false
	var end error // how the socket ended, when it did
	for got < len(p) {
		if read {
			read = false
			n, err := rawRead(c.fd, l.tlsBuf)
			switch {
			case n > 0:
				tc.t.in, filled = l.tlsBuf[:n], n == len(l.tlsBuf)
			case n < 0 && err == unix.EINTR:
				read = true
				continue
			case n == 0:
				end = io.EOF
			case err == unix.EAGAIN:
				drained = true
			default:
				end = err
			}
			if n <= 0 && got > 0 {
				break
			}
		}
		m, rerr := tc.conn.Read(p[got:])
		got += m
		if rerr == nil {
			continue
		}
		if rerr != errWouldBlock {
			// A close_notify (EOF) or a TLS error: send the alert it
			// queued, and end the connection once the plaintext before
			// it is served.
			tc.t.in, tc.rest = nil, nil
			l.flushTLSControl(c)
			if got > 0 {
				tc.readErr = rerr
				l.readAgain(c)
				return got, nil
			}
			return -1, rerr
		}
		// Everything held is decrypted: read on, unless the socket said
		// it has no more, or plaintext came and the last read left the
		// socket empty.
		if drained || end != nil || (got > 0 && !filled) {
			break
		}
		read = true
	}
	if end != nil && got > 0 {
		tc.readErr = end // once this plaintext is served
		l.readAgain(c)
	}
	if len(tc.t.in) > 0 {
		// p filled up before the ciphertext read was all decrypted.
		tc.rest = append(tc.rest[:0], tc.t.in...)
		tc.t.in = tc.rest
	} else {
		tc.t.in, tc.rest = nil, nil
	}
	if got == len(p) {
		// More may wait inside the tls.Conn, in rest or in the socket
		// (no socket event will say so).
		tc.held = true
		l.readAgain(c)
	}
	if got == 0 {
		l.flushTLSControl(c)
		if end == io.EOF {
			return 0, nil
		}
		if end != nil {
			return -1, end
		}
		return -1, unix.EAGAIN
	}
	return got, nil
}

// readAgain has the loop read c again soon, for what no socket event will
// announce.
func (l *loop) readAgain(c *Client) {
	l.post(func() {
		if c.fd >= 0 && l.conns[c.fd] == c {
			l.onReadable(c)
		}
	})
}

// flushTLSControl sends the records the tls.Conn wrote while reading
// (alerts, key update replies) when no reply will carry them.
func (l *loop) flushTLSControl(c *Client) {
	if len(c.tls.t.out) == 0 {
		return
	}
	saved := c.w.Buf
	c.w.Buf = nil
	l.write(c)
	c.w.Buf = saved
}

// sealTLS encrypts a batch's replies for write.
func (l *loop) sealTLS(c *Client, p []byte) []byte {
	if !c.tls.ready {
		return nil // no output before the handshake is done (none is made)
	}
	out, err := c.tls.seal(p)
	if err != nil {
		c.closeASAP.Store(true)
	}
	return out
}

// closeTLS ends c's TLS session before its socket closes: a handshake in
// progress is abandoned; an established session gets close_notify, as
// Redis's SSL_shutdown sends, when no output is still waiting.
func (l *loop) closeTLS(c *Client) {
	tc := c.tls
	if !tc.ready {
		tc.abortHandshake()
		return
	}
	l.tlsConns--
	if len(c.pending) == 0 {
		tc.conn.CloseWrite()
		if out, _ := tc.seal(nil); len(out) > 0 {
			rawWrite(c.fd, out)
		}
	}
}
