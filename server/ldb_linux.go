//go:build linux

package server

import (
	"io"
	"time"

	"golang.org/x/sys/unix"
)

// fdStream is an event loop's connection read and written in place by a
// debugging session, on the loop's goroutine, which the session holds:
// the loop reads nothing meanwhile (nor does its ring, whose receives run
// only when the loop's goroutine enters it). A read ends when the client
// is killed or the server stops.
type fdStream struct{ c *Client }

func (c *Client) loopStream() io.ReadWriter { return fdStream{c} }

func (s fdStream) Read(p []byte) (int, error) {
	c := s.c
	for {
		select {
		case <-c.srv.stopCh:
			return 0, io.EOF
		default:
		}
		if c.closeASAP.Load() || c.fd < 0 {
			return 0, io.EOF
		}
		n, err := unix.Read(c.fd, p)
		switch {
		case n > 0:
			return n, nil
		case err == nil:
			return 0, io.EOF
		case err == unix.EAGAIN || err == unix.EINTR:
			unix.Poll([]unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}, 100)
		default:
			return 0, err
		}
	}
}

// Write writes all of p, giving up after 5 s without progress (Redis's
// send timeout for the session).
func (s fdStream) Write(p []byte) (int, error) {
	c := s.c
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
		unix.Poll([]unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLOUT}}, 100)
	}
	return done, nil
}
