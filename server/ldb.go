package server

import (
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// The server's side of the Lua debugger (package lua's ldb.go): SCRIPT
// DEBUG SYNC puts a client in debug mode, and its next EVAL runs as a
// synchronous debugging session over the client's own connection, which
// the session reads and writes directly while the script holds the
// keyspace, as in Redis: the server serves nobody else until the session
// ends, and the client is closed after the script's reply.
//
// SCRIPT DEBUG YES, Redis's forked session (the script runs in a child
// process whose changes are dropped, while the server goes on), has no
// fork to run on here: the mode is taken, and the EVAL it applies to is
// refused without running, as Redis refuses it when the fork fails
// (redis-cli --ldb ignores SCRIPT DEBUG's reply: the script must not run
// for real where its user expects its changes rolled back).

// A client's debug mode (Client.ldb).
const (
	ldbOff    = iota
	ldbForked // SCRIPT DEBUG YES
	ldbSync   // SCRIPT DEBUG SYNC
)

func scriptDebugCommand(c *Client, args [][]byte) {
	if len(c.w.Buf) > 0 || len(c.pending) > 0 || len(c.held) > 0 {
		c.w.Error("ERR SCRIPT DEBUG must be called outside a pipeline")
		return
	}
	switch {
	case eq(args[2], "no"):
		c.ldb = ldbOff
		c.w.OK()
	case eq(args[2], "sync"):
		c.ldb = ldbSync
		c.w.OK()
	case eq(args[2], "yes"):
		c.ldb = ldbForked
		c.w.OK()
	default:
		c.w.Error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
	}
}

// debugEval runs EVAL (args) of a client in debug mode as a debugging
// session (evalGenericCommandWithDebugging).
func (st *scriptingState) debugEval(c *Client, args [][]byte, ro bool) {
	if c.ldb == ldbForked {
		c.ldb = ldbOff
		c.w.Error("ERR Fork() failed: can't run EVAL in debugging mode: Sluice has no forked sessions, use SCRIPT DEBUG SYNC")
		return
	}
	var stream io.ReadWriter
	if c.fd >= 0 {
		stream = c.loopStream()
	} else if c.debugStream != nil {
		stream = c.debugStream()
	}
	if stream == nil {
		c.w.Error("ERR SCRIPT DEBUG is not supported on this connection")
		return
	}
	srv := st.srv
	srv.Warnf("Redis synchronous debugging eval session started")
	limit := time.Duration(srv.cfg.BusyThreshold.Load()) * time.Millisecond
	if limit == 0 {
		limit = 5 * time.Second
	}
	st.eng.OpenDebug(args[1], stream, limit)
	st.debugging = true
	evalScript(c, args, false, ro)
	st.debugging = false
	st.eng.CloseDebug()
	srv.Warnf("Redis synchronous debugging eval session ended")
	// The end of the session is told by closing the connection after
	// the script's reply.
	c.ldb = ldbOff
	c.closeAfterReply = true
}

// connStream is a goroutine-served connection read in place by a
// debugging session: a read the driver's wake-up interrupts (its read
// deadline) goes on.
type connStream struct{ conn net.Conn }

func (s connStream) Read(p []byte) (int, error) {
	for {
		n, err := s.conn.Read(p)
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			s.conn.SetReadDeadline(time.Time{})
			continue
		}
		return n, err
	}
}

func (s connStream) Write(p []byte) (int, error) {
	s.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	defer s.conn.SetWriteDeadline(time.Time{})
	return s.conn.Write(p)
}

// relayStream is a connection whose reads a reader goroutine hands over
// (serveConnRelay), read by a debugging session.
type relayStream struct {
	conn  net.Conn
	reads <-chan relayChunk
	free  chan<- []byte
	rest  []byte
	buf   []byte
	err   error
}

type relayChunk struct {
	b   []byte
	err error
}

func (s *relayStream) Read(p []byte) (int, error) {
	if len(s.rest) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		if s.buf != nil {
			s.free <- s.buf[:cap(s.buf)]
			s.buf = nil
		}
		ch, ok := <-s.reads
		if !ok {
			return 0, io.EOF
		}
		s.buf, s.rest, s.err = ch.b, ch.b, ch.err
		if len(s.rest) == 0 {
			if s.err == nil {
				s.err = io.EOF
			}
			return 0, s.err
		}
	}
	n := copy(p, s.rest)
	s.rest = s.rest[n:]
	return n, nil
}

func (s *relayStream) Write(p []byte) (int, error) { return connStream{s.conn}.Write(p) }
