package server

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/tlsconf"
)

// TLS glue: the tls-* directives build a tlsconf.Context (Start, CONFIG
// SET), the tls-port listeners accept connections the event loops serve
// (loop_tls_linux.go), and the connections this server opens (replica to
// master, MIGRATE) are wrapped in TLS when tls-replication or tls-cluster
// say so.

// tlsState is the server's current TLS configuration.
type tlsState struct {
	ctx  atomic.Pointer[tlsconf.Context]
	auth atomic.Int64 // tls-auth-clients, as tlsconf.AuthClients
}

// TLSContext returns the TLS configuration in force, nil when TLS is not
// configured (no tls-port, tls-replication or tls-cluster). The cluster
// bus takes its configurations here: ServerConfig(tlsconf.AuthYes) for the
// connections it accepts (Redis's bus always requires a client
// certificate) and ClientConfig() for those it opens, when
// ClusterTLS reports tls-cluster on.
func (s *Server) TLSContext() *tlsconf.Context { return s.tls.ctx.Load() }

// ClusterTLS reports whether tls-cluster is on and, if so, the
// configurations for the cluster bus: server for the connections it
// accepts, client for those it opens (and MIGRATE's).
func (s *Server) ClusterTLS() (server, client *tls.Config, ok bool) {
	ctx := s.tls.ctx.Load()
	if ctx == nil || s.cfg.Get("tls-cluster") != "yes" {
		return nil, nil, false
	}
	return ctx.ServerConfig(tlsconf.AuthYes), ctx.ClientConfig(), true
}

// ErrTLSConfig is returned (wrapped) by Start when the TLS configuration
// cannot be loaded; the reason is in the log, as redis-server's is.
var ErrTLSConfig = errors.New("Failed to configure TLS. Check logs for more info.")

// configureTLS loads the TLS configuration from the directives and puts it
// in force; on failure it logs Redis's line and keeps the one in force.
func (s *Server) configureTLS() error {
	ctx, err := tlsconf.Load(s.cfg.TLSSettings())
	if err != nil {
		s.Warnf("%v", err)
		return err
	}
	s.tls.ctx.Store(ctx)
	return nil
}

// serverTLS is the configuration for a connection accepted now on a TLS
// port (nil when TLS is not configured).
func (s *Server) serverTLS() *tls.Config {
	ctx := s.tls.ctx.Load()
	if ctx == nil {
		return nil
	}
	return ctx.ServerConfig(tlsconf.AuthClients(s.tls.auth.Load()))
}

// dialTLS wraps a connection this server opened (to a master, or
// MIGRATE's target) in TLS and completes the handshake within timeout.
func (s *Server) dialTLS(conn net.Conn, timeout time.Duration) (net.Conn, error) {
	ctx := s.tls.ctx.Load()
	if ctx == nil {
		conn.Close()
		return nil, errors.New("TLS is not configured")
	}
	tc := tls.Client(conn, ctx.ClientConfig())
	tc.SetDeadline(time.Now().Add(timeout))
	if err := tc.Handshake(); err != nil {
		conn.Close()
		return nil, err
	}
	tc.SetDeadline(time.Time{})
	return tc, nil
}

// tlsListener is a TCP listener on the TLS port. The event loops accept
// from its descriptor and hand the connection to a handshake; Accept,
// used where there are no event loops, returns TLS connections.
type tlsListener struct {
	*net.TCPListener
	srv *Server
}

func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.TCPListener.Accept()
	if err != nil {
		return nil, err
	}
	cfg := l.srv.serverTLS()
	if cfg == nil {
		c.Close()
		return nil, errors.New("TLS is not configured")
	}
	return tls.Server(c, cfg), nil
}

func isTLSListener(ln net.Listener) bool {
	_, ok := ln.(*tlsListener)
	return ok
}

// ListenError is Start's error when a port cannot be listened on.
type ListenError struct {
	Port string
	TLS  bool
	Err  error
}

func (e *ListenError) Error() string { return e.Err.Error() }
func (e *ListenError) Unwrap() error { return e.Err }

// wireTLS connects the configuration's TLS hooks to the server.
func (s *Server) wireTLS() {
	s.cfg.Hooks.LoadTLS = s.configureTLS
	s.cfg.Hooks.TLSLoaded = func() bool { return s.tls.ctx.Load() != nil }
	s.cfg.Hooks.ListenTLS = func(bind []string, port string) error { return s.relisten(bind, port, true) }
	s.tls.auth.Store(int64(tlsconf.ParseAuthClients(s.cfg.Get("tls-auth-clients"))))
	s.cfg.Hooks.TLSAuthClients = func(v string) { s.tls.auth.Store(int64(tlsconf.ParseAuthClients(v))) }
	// MIGRATE speaks TLS to its target with tls-cluster, as Redis's does.
	s.migrate.Wrap = func(conn net.Conn, timeout time.Duration) (net.Conn, error) {
		if s.cfg.Get("tls-cluster") != "yes" {
			return conn, nil
		}
		return s.dialTLS(conn, timeout)
	}
}

// tlsConn is the TLS state of a connection the event loops serve: the
// tls.Conn over a transport that, once the handshake is done, reads the
// ciphertext the loop read and collects what the tls.Conn writes for the
// loop to send (loop_tls_linux.go).
type tlsConn struct {
	conn  *tls.Conn
	t     loopTransport
	ready bool // handshake done: the loop serves it
	// readErr is how the session ended (close_notify, an alert), kept
	// while the plaintext that came before it is served.
	readErr error
	// rest is ciphertext read but not yet decrypted, and held says that
	// the last read filled its buffer, so that the tls.Conn may hold
	// plaintext (tlsRead).
	rest []byte
	held bool

	hsMu   sync.Mutex
	hsConn net.Conn // the socket the handshake goroutine uses, until it ends
}

// loopTransport is the net.Conn under a loop's tls.Conn. During the
// handshake it is the socket (hs); afterwards Read returns the bytes in
// in, or a temporary error when there are none (crypto/tls keeps its
// record layer usable after a temporary error), and Write appends to out.
type loopTransport struct {
	in, out       []byte
	hs            net.Conn
	local, remote net.Addr
}

// errWouldBlock is the transport's "no ciphertext now": a temporary
// net.Error, after which a tls.Conn can be read again.
var errWouldBlock net.Error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "tls transport: no data" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

func (t *loopTransport) Read(p []byte) (int, error) {
	if t.hs != nil {
		return t.hs.Read(p)
	}
	if len(t.in) == 0 {
		return 0, errWouldBlock
	}
	n := copy(p, t.in)
	t.in = t.in[n:]
	return n, nil
}

func (t *loopTransport) Write(p []byte) (int, error) {
	if t.hs != nil {
		return t.hs.Write(p)
	}
	t.out = append(t.out, p...)
	return len(p), nil
}

func (t *loopTransport) Close() error {
	if t.hs != nil {
		return t.hs.Close()
	}
	return nil
}

func (t *loopTransport) LocalAddr() net.Addr  { return t.local }
func (t *loopTransport) RemoteAddr() net.Addr { return t.remote }
func (t *loopTransport) SetDeadline(d time.Time) error {
	if t.hs != nil {
		return t.hs.SetDeadline(d)
	}
	return nil
}
func (t *loopTransport) SetReadDeadline(d time.Time) error {
	if t.hs != nil {
		return t.hs.SetReadDeadline(d)
	}
	return nil
}
func (t *loopTransport) SetWriteDeadline(d time.Time) error {
	if t.hs != nil {
		return t.hs.SetWriteDeadline(d)
	}
	return nil
}

// seal encrypts p (replies) and returns the ciphertext to send, with any
// TLS records the connection queued before (alerts, key updates). The
// slice is valid until the next seal or read.
func (tc *tlsConn) seal(p []byte) ([]byte, error) {
	var err error
	if len(p) > 0 {
		_, err = tc.conn.Write(p)
	}
	out := tc.t.out
	tc.t.out = tc.t.out[:0]
	if cap(out) > 4*flushAt {
		tc.t.out = nil
	}
	return out, err
}

// abortHandshake ends a handshake in progress (the client is closed).
func (tc *tlsConn) abortHandshake() {
	tc.hsMu.Lock()
	if tc.hsConn != nil {
		tc.hsConn.Close()
		tc.hsConn = nil
	}
	tc.hsMu.Unlock()
}
