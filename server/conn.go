package server

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// ServeConn serves one connection on goroutines of its own until it
// closes. It is how the embedded mode serves its connections (in-memory
// ones, and TCP ones unless the server runs event loops) and how
// platforms without the event loops serve theirs; the command engine is
// the same one the event loops use.
//
// A socket (TLS over one included) gets a reader goroutine that hands what it reads to the
// client's goroutine, which runs the commands, writes the replies and
// also wakes for output other clients deliver (pub/sub, the end of a
// block). A connection with no kernel behind it that takes read deadlines
// (the embedded in-memory one) is served by one goroutine that reads, runs
// and writes in turn; delivered output interrupts its read by moving the
// deadline. Measured in process against miniredis on a loaded 2-core VM,
// one goroutine per socket was the faster of the two while the machine
// was quiet but fell behind miniredis once it was busy (1.0-1.3x its time
// per round trip), where the hand-off stayed ahead (0.85x): the hand-off
// brings a second thread in that sleeps and wakes, which the kernel's
// scheduler serves at once, while one thread that never blocks waits for
// its turn like any busy process. In memory, one goroutine is twice as
// fast.
func (s *Server) ServeConn(conn net.Conn) { s.serveConn(conn, false) }

// ServeInternalConn serves conn as ServeConn does, logged in as the default
// user whatever passwords are set, for the embedded mode's own connections
// (its pub/sub subscribers), which must not need the passwords a test sets.
func (s *Server) ServeInternalConn(conn net.Conn) { s.serveConn(conn, true) }

func (s *Server) serveConn(conn net.Conn, internal bool) {
	if overSocket(conn) || conn.SetReadDeadline(time.Time{}) != nil {
		s.serveConnRelay(conn, internal)
		return
	}
	var wake atomic.Bool // output or an unblock is waiting; the read deadline is set
	c := s.newConnClient(conn, internal, func() {
		if !wake.Swap(true) {
			conn.SetReadDeadline(aLongTimeAgo)
		}
	})
	if c == nil {
		return
	}
	c.debugStream = func() io.ReadWriter { return connStream{conn} }
	defer func() {
		conn.Close()
		s.removeClient(c)
	}()
	cs := connServer{srv: s, c: c, conn: conn, st: &s.stats[s.goSlot]}
	rbuf := make([]byte, 16*1024)
	for {
		n, err := conn.Read(rbuf)
		if n > 0 && !cs.input(rbuf[:n]) {
			return
		}
		if err != nil {
			if !wake.Load() || !errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
			// Clear the deadline before the flag: a signal after this
			// point sets both again, one before it is served below.
			conn.SetReadDeadline(time.Time{})
			wake.Store(false)
			if !cs.signalled() {
				return
			}
		}
	}
}

// overSocket reports whether conn reads from a socket, itself or through a
// wrapper such as *tls.Conn.
func overSocket(conn net.Conn) bool {
	for {
		switch c := conn.(type) {
		case syscall.Conn:
			return true
		case interface{ NetConn() net.Conn }:
			conn = c.NetConn()
		default:
			return false
		}
	}
}

// aLongTimeAgo is a read deadline in the past: it interrupts a read at once.
var aLongTimeAgo = time.Unix(1, 0)

// newConnClient registers the client of a goroutine-served connection, or
// answers the maxclients error and closes it (nil).
func (s *Server) newConnClient(conn net.Conn, internal bool, signal func()) *Client {
	laddr, raddr := "", ""
	if a := conn.LocalAddr(); a != nil {
		laddr = a.String()
	}
	if a := conn.RemoteAddr(); a != nil {
		raddr = a.String()
	}
	_, isUnix := conn.(*net.UnixConn)
	// Protected mode is about network peers: an in-memory connection
	// (the embedded mode's net.Pipe) is as local as a unix socket.
	_, overTCP := conn.RemoteAddr().(*net.TCPAddr)
	if !internal && overTCP && s.protectedModeRefuses(s.goSlot, raddr, isUnix) {
		conn.Write([]byte(errProtectedMode))
		conn.Close()
		return nil
	}
	c := s.newClient(s.goSlot, raddr, laddr, isUnix, func(c *Client) {
		c.killHook = func() { conn.Close() }
		c.signal = signal
		if internal {
			c.authed, c.implicitAuth = true, false
		}
	})
	if c == nil {
		conn.Write([]byte("-" + errMaxClients + "\r\n"))
		conn.Close()
	}
	return c
}

// connServer runs a goroutine-served client's commands: input appends what
// was read, signalled serves delivered output and the end of a block.
// Either reports false when the connection must close.
type connServer struct {
	srv  *Server
	c    *Client
	conn net.Conn
	st   *slotStats
	qbuf []byte // input not yet run: a partial command, or input held while blocked
}

func (cs *connServer) input(b []byte) bool {
	cs.st.netIn.Add(int64(len(b)))
	cs.c.lastIO.Store(time.Now().UnixMilli())
	if len(cs.qbuf) == 0 && !cs.c.blocked {
		// Run straight from the read buffer; keep only the rest.
		off, ok := cs.run(b)
		cs.qbuf = append(cs.qbuf, b[off:]...)
		return ok && cs.checkQbuf()
	}
	cs.qbuf = append(cs.qbuf, b...)
	if cs.c.blocked {
		return cs.checkQbuf()
	}
	return cs.runQbuf()
}

func (cs *connServer) signalled() bool {
	c := cs.c
	if c.blocked && !c.blockedFlag.Load() {
		c.blocked = false
	}
	c.w.Buf = c.takeAsync(c.w.Buf)
	if c.closeASAP.Load() || !cs.flush() {
		// Killed: nothing more goes out (see loop.onSignal).
		return false
	}
	for c.replica.Load() != nil {
		// A replica: the replication stream from its position.
		c.w.Buf = c.streamOut(c.w.Buf)
		if len(c.w.Buf) == 0 {
			break
		}
		if c.closeASAP.Load() || !cs.flush() {
			return false
		}
	}
	c.updateMem()
	if !c.blocked && len(cs.qbuf) > 0 && !cs.runQbuf() {
		return false
	}
	return !c.closeASAP.Load()
}

// run runs the commands in b, writing replies as they come, and returns how
// many bytes it consumed.
func (cs *connServer) run(b []byte) (int, bool) {
	c := cs.c
	off := 0
	for !c.blocked {
		k := c.process(b[off:])
		off += k
		if c.repliesOverLimit() {
			return off, false
		}
		if lim := cs.srv.cfg.OutLimitHard.Load(); lim > 0 && c.countedOutput(int64(len(c.w.Buf))) <= lim && k > 0 && off < len(b) && c.ps.Total() == 0 {
			// With a normal-class limit a batch's replies go out
			// together, as the event loops send them (see serve).
			continue
		}
		if !cs.flush() {
			return off, false
		}
		if c.closeAfterReply || c.closeASAP.Load() {
			return off, false
		}
		if k == 0 || off == len(b) {
			break
		}
	}
	return off, true
}

func (cs *connServer) runQbuf() bool {
	off, ok := cs.run(cs.qbuf)
	n := copy(cs.qbuf, cs.qbuf[off:])
	cs.qbuf = cs.qbuf[:n]
	return ok && cs.checkQbuf()
}

func (cs *connServer) checkQbuf() bool {
	c := cs.c
	c.qbuf = cs.qbuf // for the memory accounting
	c.qbufLen.Store(int64(len(cs.qbuf) - c.p.Parsed()))
	if int64(len(cs.qbuf)) > cs.srv.cfg.QbufLimit.Load() {
		cs.srv.Warnf("Closing client that reached max query buffer length (qbuf=%d)", len(cs.qbuf))
		return false
	}
	return c.memChanged()
}

func (cs *connServer) flush() bool {
	c := cs.c
	if len(c.w.Buf) > 0 {
		cs.srv.commitIfPending() // the AOF first, as appendfsync promises
		cs.st.netOut.Add(int64(len(c.w.Buf)))
		if _, err := cs.conn.Write(c.w.Buf); err != nil {
			return false
		}
		c.w.Buf = c.w.Buf[:0]
	}
	return true
}

// serveConnRelay serves a socket, or a connection without read deadlines:
// a reader goroutine hands what it reads to the client's goroutine, which
// also wakes for output delivered by other clients.
func (s *Server) serveConnRelay(conn net.Conn, internal bool) {
	sig := make(chan struct{}, 1)
	c := s.newConnClient(conn, internal, func() {
		select {
		case sig <- struct{}{}:
		default:
		}
	})
	if c == nil {
		return
	}
	defer func() {
		conn.Close()
		s.removeClient(c)
	}()

	// Two buffers: the reader fills one while the client's goroutine runs
	// the other's commands, so handing a chunk over wakes only one of the
	// two goroutines.
	reads := make(chan relayChunk)
	free := make(chan []byte, 2)
	free <- make([]byte, 16*1024)
	free <- make([]byte, 16*1024)
	done := make(chan struct{}) // closed when the client's goroutine returns
	go func() {
		for {
			var buf []byte
			select {
			case buf = <-free:
			case <-done:
				return
			}
			n, err := conn.Read(buf)
			select {
			case reads <- relayChunk{buf[:n], err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer close(done) // before the deferred Close, which ends a blocked Read
	// A debugging session reads what the reader hands over, returning
	// the buffers; it ends the connection, so nothing is read after it.
	c.debugStream = func() io.ReadWriter { return &relayStream{conn: conn, reads: reads, free: free} }

	cs := connServer{srv: s, c: c, conn: conn, st: &s.stats[s.goSlot]}
	for {
		select {
		case ch := <-reads:
			if len(ch.b) > 0 && !cs.input(ch.b) {
				return
			}
			if ch.err != nil {
				return
			}
			free <- ch.b[:cap(ch.b)]
		case <-sig:
			if !cs.signalled() {
				return
			}
		}
	}
}

// repliesOverLimit applies client-output-buffer-limit to a batch's replies
// before they are written, as Redis checks a client's output buffer as
// replies are added to it: past the limit the client gets none of them
// and is closed.
func (c *Client) repliesOverLimit() bool {
	cfg := c.srv.cfg
	if len(c.w.Buf) == 0 || cfg.OutLimitHard.Load() == 0 && cfg.OutLimitSoft.Load() == 0 && c.ps.Total() == 0 {
		return false
	}
	if !c.outputOverLimit(int64(len(c.w.Buf) + len(c.pending))) {
		return false
	}
	c.srv.Logf("Client id=%d closed for overcoming of output buffer limits.", c.ID)
	c.w.Buf = c.w.Buf[:0]
	c.pending = nil
	c.closeASAP.Store(true)
	return true
}

// replyCut is, for the commands whose reply can grow without bound from a
// small request (KEYS, and HRANDFIELD, SRANDMEMBER and ZRANDMEMBER with a
// negative count), Redis's CLIENT_CLOSE_ASAP check in their loops: every
// 1024th element (i counts them) it applies the output buffer limit, and
// once the reply passed it, the reply is dropped, the client is to be
// closed and the command stops. Clients without a connection (scripts',
// the AOF loader's, a master's, Direct's) have no limit, as in Redis.
func (c *Client) replyCut(i uint64) bool {
	if i&1023 != 1023 || c.fromScript || c.replMaster || c.direct {
		return false
	}
	return c.closeASAP.Load() || c.repliesOverLimit()
}

// killNow is kill for CLIENT KILL and the ACL's kills: the connection
// ends within the command, as Redis's freeClient closes it there (a killed
// replica reconnects before the killer's next command). Output limits and
// maxmemory-clients close a client later, as Redis's freeClientAsync does.
func (c *Client) killNow() {
	c.kill()
	if c.shutdownHook != nil {
		c.shutdownHook()
	}
}

// kill closes the client's connection from any goroutine.
func (c *Client) kill() {
	c.closeASAP.Store(true)
	c.releaseMem() // its buffers go with it: used memory drops now, as in Redis
	if c.killHook != nil {
		c.killHook()
	}
}
