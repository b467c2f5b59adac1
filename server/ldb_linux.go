//go:build linux

package server

import (
	"io"
	"time"

	"golang.org/x/sys/unix"
)

// fdStream is an event loop's plain connection read and written in place
// by a debugging session, on the loop's goroutine, which the session
// holds: the loop reads nothing meanwhile (nor does its ring, whose
// receives run only when the loop's goroutine enters it). A read ends when
// the client is killed or the server stops.
type fdStream struct{ c *Client }

// loopStream is an event loop's connection as a debugging session reads
// and writes it: the socket itself, or through the loop's TLS record
// layer.
func (c *Client) loopStream() io.ReadWriter {
	if c.tls != nil {
		return &tlsStream{l: c.srv.loops[c.slot], c: c, buf: make([]byte, 64*1024)}
	}
	return fdStream{c}
}

// sessionOver reports whether a session's read is to end: the client was
// killed or the server stops.
func (c *Client) sessionOver() bool {
	select {
	case <-c.srv.stopCh:
		return true
	default:
	}
	return c.closeASAP.Load() || c.fd < 0
}

// waitFd waits up to 100 ms for fd to be ready for events.
func waitFd(fd int, events int16) {
	unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: events}}, 100)
}

func (s fdStream) Read(p []byte) (int, error) {
	c := s.c
	for {
		if c.sessionOver() {
			return 0, io.EOF
		}
		n, err := unix.Read(c.fd, p)
		switch {
		case n > 0:
			return n, nil
		case err == nil:
			return 0, io.EOF
		case err == unix.EAGAIN || err == unix.EINTR:
			waitFd(c.fd, unix.POLLIN)
		default:
			return 0, err
		}
	}
}

func (s fdStream) Write(p []byte) (int, error) { return writeAll(s.c, p) }

// writeAll writes all of p to c's socket, giving up after 5 s without
// progress (Redis's send timeout for the session).
func writeAll(c *Client, p []byte) (int, error) {
	done := 0
	deadline := time.Now().Add(5 * time.Second)
	for done < len(p) {
		if c.fd < 0 {
			return done, io.ErrClosedPipe
		}
		n, err := unix.Write(c.fd, p[done:])
		if n > 0 {
			done += n
			deadline = time.Now().Add(5 * time.Second)
			continue
		}
		if err != unix.EAGAIN && err != unix.EINTR {
			return done, err
		}
		if time.Now().After(deadline) {
			return done, unix.ETIMEDOUT
		}
		waitFd(c.fd, unix.POLLOUT)
	}
	return done, nil
}

// tlsStream is an event loop's TLS connection in a debugging session: the
// loop's record layer opens what the socket brings and seals what is
// written, on the loop's goroutine, which the session holds.
type tlsStream struct {
	l    *loop
	c    *Client
	buf  []byte // what tlsRead decrypts
	rest []byte
}

func (s *tlsStream) Read(p []byte) (int, error) {
	c := s.c
	for len(s.rest) == 0 {
		if c.sessionOver() {
			return 0, io.EOF
		}
		n, err := s.l.tlsRead(c, s.buf)
		switch {
		case n > 0:
			s.rest = s.buf[:n]
		case n == 0 && err == nil:
			return 0, io.EOF
		case err == unix.EAGAIN || err == unix.EINTR:
			waitFd(c.fd, unix.POLLIN)
		default:
			return 0, err
		}
	}
	n := copy(p, s.rest)
	s.rest = s.rest[n:]
	return n, nil
}

func (s *tlsStream) Write(p []byte) (int, error) {
	if _, err := writeAll(s.c, s.l.sealTLS(s.c, p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
