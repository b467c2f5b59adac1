package repl

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/resp"
)

// State is where a replica's link to its master stands (Redis's
// repl_state, with the handshake steps folded into one).
type State int32

const (
	// StateConnect: the link must (re)connect; the next attempt comes
	// within a second.
	StateConnect State = iota
	// StateConnecting: a connection is being made.
	StateConnecting
	// StateHandshake: PING, AUTH, REPLCONF and PSYNC are exchanged.
	StateHandshake
	// StateTransfer: a full sync's payload is being received and loaded.
	StateTransfer
	// StateConnected: the master's stream is applied.
	StateConnected
)

// RoleName is the state as ROLE names it.
func (s State) RoleName() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateHandshake:
		return "handshake"
	case StateTransfer:
		return "sync"
	case StateConnected:
		return "connected"
	}
	return "connect"
}

// LinkConfig is what the handshake says about this replica, read at the
// start of each connection.
type LinkConfig struct {
	User, Password string        // masteruser, masterauth ("" : no AUTH)
	ListeningPort  string        // REPLCONF listening-port
	AnnounceIP     string        // REPLCONF ip-address ("" : not sent)
	Timeout        time.Duration // repl-timeout
}

// Host is the server a link works for.
type Host interface {
	// LinkConfig returns the configuration as it is now.
	LinkConfig() LinkConfig
	// Dial connects to the master (bind-source-addr, TLS...).
	Dial(addr string, timeout time.Duration) (net.Conn, error)
	// PsyncFrom is what to ask the master to continue: the cached
	// master's replication id and the offset of the next byte wanted,
	// or "?" and -1 for a full sync.
	PsyncFrom() (id string, offset int64)
	// FailingOver reports whether PSYNC must carry FAILOVER (the FAILOVER
	// command made this server a replica of its target).
	FailingOver() bool
	// PsyncReply is called with the master's answer to PSYNC. It reports
	// whether to go on: with the payload or the stream, or, after an
	// error other than a try-later one, with SYNC.
	PsyncReply(rep PsyncReply) bool
	// FullSync loads the payload of a full sync of the stream id from
	// offset. It returns an error when the payload could not be read or
	// loaded; the link then reconnects.
	// A read that waits longer than repl-timeout fails.
	FullSync(id string, offset int64, hdr PayloadHeader, payload io.Reader) error
	// Continued is called when the master accepted to continue; id is
	// its replication id ("" when it did not say).
	Continued(id string)
	// Connected is called when the stream starts, with the connection
	// (for CLIENT LIST and CLIENT KILL) and the master's address.
	Connected(conn net.Conn)
	// Apply runs one command of the master's stream. It reports whether
	// a transaction is open after it (its bytes are applied at EXEC).
	Apply(args [][]byte) (inTx bool)
	// Applied is called with the raw bytes of the commands just applied
	// (a replica's own replicas and backlog get exactly these).
	Applied(raw []byte)
	// Disconnected is called when the link drops; wasConnected reports
	// whether the stream had started.
	Disconnected(wasConnected bool)
	Logger
}

// Link is a replica's connection to its master: it connects, shakes
// hands, asks to continue (PSYNC), loads a full sync's payload through
// its host, then applies the master's stream, and reconnects when the
// connection drops, until Stop.
type Link struct {
	host Host
	Host string
	Port int

	state      atomic.Int32
	lastIO     atomic.Int64 // unix ms of the last bytes from the master
	downSince  atomic.Int64 // unix ms the link went down
	readOff    atomic.Int64 // bytes of stream read past the sync point
	syncTotal  atomic.Int64 // the payload's size (-1: streamed)
	syncRead   atomic.Int64
	syncLastIO atomic.Int64

	stop     chan struct{}
	stopOnce sync.Once
	kick     chan struct{} // reconnect now
	done     chan struct{}

	wmu  sync.Mutex
	conn net.Conn

	// Announced says the first attempt's "Connecting to MASTER" is
	// logged already (REPLICAOF logs it, as replicationSetMaster does);
	// set before Run.
	Announced bool
}

// NewLink makes a link to host:port for h. Start it with Run.
func NewLink(h Host, host string, port int) *Link {
	l := &Link{host: h, Host: host, Port: port, stop: make(chan struct{}), kick: make(chan struct{}, 1), done: make(chan struct{})}
	l.downSince.Store(time.Now().UnixMilli())
	return l
}

// Addr is the master's address.
func (l *Link) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// State is where the link stands.
func (l *Link) State() State { return State(l.state.Load()) }

// LastIO is the unix ms of the last bytes received (0: none).
func (l *Link) LastIO() int64 { return l.lastIO.Load() }

// DownSince is the unix ms the link went down (0 while up).
func (l *Link) DownSince() int64 { return l.downSince.Load() }

// Sync reports a full sync's progress: the payload's size (-1 when
// streamed), the bytes read, the unix ms of the last read.
func (l *Link) Sync() (total, read, lastIO int64) {
	return l.syncTotal.Load(), l.syncRead.Load(), l.syncLastIO.Load()
}

// Stop ends the link for good and waits for its goroutine.
func (l *Link) Stop() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.Drop()
	<-l.done
}

// StopAsync ends the link for good without waiting.
func (l *Link) StopAsync() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.Drop()
}

// Stopped reports whether Stop was called.
func (l *Link) Stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// Drop closes the connection (CLIENT KILL TYPE master, a timeout): the
// link reconnects within a second.
func (l *Link) Drop() {
	l.wmu.Lock()
	if l.conn != nil {
		l.conn.Close()
	}
	l.wmu.Unlock()
}

// Reconnect drops the connection and connects again at once.
func (l *Link) Reconnect() {
	l.Drop()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Write sends b to the master (REPLCONF ACK).
func (l *Link) Write(b []byte) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.conn == nil {
		return errors.New("no connection")
	}
	l.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := l.conn.Write(b)
	return err
}

// SendAck tells the master the offset processed, while connected.
func (l *Link) SendAck(offset int64) {
	if l.State() != StateConnected {
		return
	}
	l.Write(appendCmd(nil, "REPLCONF", "ACK", strconv.FormatInt(offset, 10)))
}

// appendCmd is resp.AppendCommand for string arguments (the link's own
// commands: REPLCONF, PSYNC, SYNC).
func appendCmd(b []byte, args ...string) []byte {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return resp.AppendCommand(b, bs...)
}

// Run keeps the link up until Stop: a connection attempt now, and after
// a connection attempt that failed one a second later (Redis's
// replicationCron); at once when the master's connection was lost or a
// handshake or transfer failed, as Redis reconnects then.
func (l *Link) Run() {
	defer close(l.done)
	next := reconnect
	first := true
	for !l.Stopped() {
		switch next {
		case later:
			select {
			case <-l.stop:
				return
			case <-l.kick:
			case <-time.After(time.Second):
			}
		case reconnect:
			if !first {
				l.host.Logf("Reconnecting to MASTER %s", l.Addr())
			}
		case afterFailure:
			l.host.Logf("Reconnecting to MASTER %s after failure", l.Addr())
		}
		if l.Stopped() {
			return
		}
		next = l.session(next == later || first && !l.Announced)
		first = false
	}
}

// again is when the link connects again after a session.
type again int

const (
	later        again = iota // at the next second
	reconnect                 // at once: the master's connection was lost (replicationHandleMasterDisconnection)
	afterFailure              // at once: a handshake or transfer failed (cancelReplicationHandshake)
)

// DialTCP connects to a master at addr (Host.Dial's plain part): from
// source when set (bind-source-addr), with TCP_NODELAY as noDelay says
// (repl-disable-tcp-nodelay).
func DialTCP(addr string, timeout time.Duration, source string, noDelay bool) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(noDelay)
	}
	return conn, nil
}

// errTimeout wraps a read that passed repl-timeout.
type errTimeout struct{ state State }

func (e errTimeout) Error() string { return "timeout" }

// session is one connection to the master, until it drops. It reports
// when to connect again. logConnect has it log the attempt (the cron's
// "Connecting to MASTER"; an attempt at once has logged its own line).
func (l *Link) session(logConnect bool) again {
	h := l.host
	cfg := h.LinkConfig()
	l.state.Store(int32(StateConnecting))
	defer l.state.Store(int32(StateConnect))
	if logConnect {
		h.Logf("Connecting to MASTER %s", l.Addr())
	}
	conn, err := h.Dial(l.Addr(), cfg.Timeout)
	if err != nil {
		h.Warnf("Unable to connect to MASTER: %s", describe(err))
		return later
	}
	l.wmu.Lock()
	if l.Stopped() {
		l.wmu.Unlock()
		conn.Close()
		return later
	}
	l.conn = conn
	l.wmu.Unlock()
	defer func() {
		l.wmu.Lock()
		conn.Close()
		l.conn = nil
		l.wmu.Unlock()
	}()
	h.Logf("MASTER <-> REPLICA sync started")
	h.Logf("Non blocking connect for SYNC fired the event.")
	l.lastIO.Store(time.Now().UnixMilli())
	l.state.Store(int32(StateHandshake))
	br := bufio.NewReaderSize(conn, 64*1024)
	s := &session{l: l, conn: conn, br: br}
	err = s.handshake(cfg)
	if err == nil {
		return reconnect // the stream ended
	}
	if l.Stopped() {
		return later
	}
	var te errTimeout
	if errors.As(err, &te) {
		switch te.state {
		case StateHandshake, StateConnecting:
			h.Warnf("Timeout connecting to the MASTER...")
		case StateTransfer:
			h.Warnf("Timeout receiving bulk data from MASTER... If the problem persists try to set the 'repl-timeout' parameter in redis.conf to a larger value.")
		case StateConnected:
			h.Warnf("MASTER timeout: no data nor PING received...")
			return reconnect
		}
		return afterFailure
	}
	var se sessionErr
	if errors.As(err, &se) {
		if se.msg != "" {
			h.Warnf("%s", se.msg)
		}
		return se.again
	}
	return later
}

// sessionErr ends a session with a log line, and says when to connect
// again.
type sessionErr struct {
	msg   string
	again again // when to connect again (later unless set)
}

func (e sessionErr) Error() string { return e.msg }

func describe(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		var se *os.SyscallError
		if errors.As(op.Err, &se) {
			if errno, ok := se.Err.(syscall.Errno); ok {
				return errno.Error()
			}
		}
	}
	return err.Error()
}

type session struct {
	l    *Link
	conn net.Conn
	br   *bufio.Reader
}

func (s *session) timeout() time.Duration {
	t := s.l.host.LinkConfig().Timeout
	if t <= 0 {
		t = time.Second
	}
	return t
}

// readLine reads one reply line of the handshake, skipping the newlines
// a master sends to keep the link alive.
func (s *session) readLine() (string, error) {
	for {
		s.conn.SetReadDeadline(time.Now().Add(s.timeout()))
		line, err := s.br.ReadString('\n')
		if err != nil {
			return "", s.readErr(err)
		}
		s.l.lastIO.Store(time.Now().UnixMilli())
		line = strings.TrimRight(line, "\r\n")
		if line != "" {
			return line, nil
		}
	}
}

func (s *session) readErr(err error) error {
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return errTimeout{s.l.State()}
	}
	if s.l.Stopped() {
		return sessionErr{}
	}
	switch s.l.State() {
	case StateHandshake:
		return sessionErr{msg: "Master did not respond to command during SYNC handshake"}
	case StateTransfer:
		return sessionErr{msg: "I/O error trying to sync with MASTER: connection lost", again: afterFailure}
	}
	return sessionErr{}
}

func (s *session) cmd(args ...string) (string, error) {
	if err := s.l.Write(appendCmd(nil, args...)); err != nil {
		return "", sessionErr{msg: "Sending command to master in replication handshake: " + err.Error()}
	}
	return s.readLine()
}

func (s *session) handshake(cfg LinkConfig) error {
	l, h := s.l, s.l.host
	line, err := s.cmd("PING")
	if err != nil {
		return err
	}
	if line[0] == '-' && !strings.HasPrefix(line, "-NOAUTH") && !strings.HasPrefix(line, "-NOPERM") && !strings.HasPrefix(line, "-ERR operation not permitted") {
		return sessionErr{msg: "Error reply to PING from master: '" + line + "'"}
	}
	h.Logf("Master replied to PING, replication can continue...")
	if cfg.Password != "" {
		args := []string{"AUTH", cfg.Password}
		if cfg.User != "" {
			args = []string{"AUTH", cfg.User, cfg.Password}
		}
		if line, err = s.cmd(args...); err != nil {
			return err
		}
		if line[0] == '-' {
			return sessionErr{msg: "Unable to AUTH to MASTER: " + line}
		}
	}
	if line, err = s.cmd("REPLCONF", "listening-port", cfg.ListeningPort); err != nil {
		return err
	}
	if line[0] == '-' {
		h.Logf("(Non critical) Master does not understand REPLCONF listening-port: %s", line)
	}
	if cfg.AnnounceIP != "" {
		if line, err = s.cmd("REPLCONF", "ip-address", cfg.AnnounceIP); err != nil {
			return err
		}
		if line[0] == '-' {
			h.Logf("(Non critical) Master does not understand REPLCONF ip-address: %s", line)
		}
	}
	if line, err = s.cmd("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return err
	}
	if line[0] == '-' {
		h.Logf("(Non critical) Master does not understand REPLCONF capa: %s", line)
	}
	id, off := h.PsyncFrom()
	offs := strconv.FormatInt(off, 10)
	if id != "?" {
		h.Logf("Trying a partial resynchronization (request %s:%s).", id, offs)
	} else {
		h.Logf("Partial resynchronization not possible (no cached master)")
	}
	args := []string{"PSYNC", id, offs}
	if h.FailingOver() {
		args = append(args, "FAILOVER")
	}
	if line, err = s.cmd(args...); err != nil {
		return err
	}
	rep := ParsePsyncReply(line)
	if rep.Kind == PsyncTryLater {
		h.Logf("Master is currently unable to PSYNC but should be in the future: %s", line)
	}
	if !h.PsyncReply(rep) {
		return sessionErr{}
	}
	switch rep.Kind {
	case PsyncTryLater:
		return sessionErr{}
	case PsyncError:
		if strings.HasPrefix(line, "-ERR") {
			h.Logf("Master does not support PSYNC or is in error state (reply: %s)", line)
		} else {
			h.Warnf("Unexpected reply to PSYNC from master: %s", line)
		}
		h.Logf("Retrying with SYNC...")
		if err := l.Write(appendCmd(nil, "SYNC")); err != nil {
			return sessionErr{msg: "I/O error writing to MASTER: " + err.Error()}
		}
		rep = PsyncReply{Kind: PsyncFull, Offset: -1}
		if err := s.fullSync(rep); err != nil {
			return err
		}
	case PsyncFull:
		h.Logf("Full resync from master: %s:%d", rep.ID, rep.Offset)
		if err := s.fullSync(rep); err != nil {
			return err
		}
	case PsyncContinue:
		h.Logf("Successful partial resynchronization with master.")
		h.Continued(rep.ID)
		h.Logf("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.")
	}
	return s.stream()
}

// fullSync receives and loads the payload.
func (s *session) fullSync(rep PsyncReply) error {
	l, h := s.l, s.l.host
	l.state.Store(int32(StateTransfer))
	l.syncTotal.Store(-1)
	l.syncRead.Store(0)
	l.syncLastIO.Store(time.Now().UnixMilli())
	line, err := s.readLine()
	if err != nil {
		return err
	}
	hdr, err := ParsePayloadHeader(line)
	if err == ErrPayloadError {
		return sessionErr{msg: "MASTER aborted replication with an error: " + line[1:]}
	}
	if err != nil {
		return sessionErr{msg: err.Error()}
	}
	l.syncTotal.Store(hdr.Size)
	pr := NewPayloadReader(s.br, hdr)
	pr.OnRead = func(n int) {
		now := time.Now().UnixMilli()
		l.lastIO.Store(now)
		l.syncLastIO.Store(now)
		l.syncRead.Add(int64(n))
		s.conn.SetReadDeadline(time.Now().Add(s.timeout()))
	}
	s.conn.SetReadDeadline(time.Now().Add(s.timeout()))
	dr := &deadlineReader{pr: pr}
	if err := h.FullSync(rep.ID, rep.Offset, hdr, dr); err != nil {
		if l.Stopped() {
			return sessionErr{}
		}
		if dr.timedOut {
			return errTimeout{StateTransfer}
		}
		return sessionErr{again: afterFailure}
	}
	return nil
}

// deadlineReader is the payload as the host reads it; it notes a read
// that passed repl-timeout.
type deadlineReader struct {
	pr       *PayloadReader
	timedOut bool
}

func (d *deadlineReader) Read(b []byte) (int, error) {
	n, err := d.pr.Read(b)
	if err != nil && err != io.EOF {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			d.timedOut = true
		}
	}
	return n, err
}

// stream applies the master's commands until the connection drops.
func (s *session) stream() error {
	l, h := s.l, s.l.host
	l.state.Store(int32(StateConnected))
	l.downSince.Store(0)
	l.lastIO.Store(time.Now().UnixMilli())
	h.Connected(s.conn)
	defer func() {
		l.downSince.Store(time.Now().UnixMilli())
		h.Disconnected(true)
	}()
	var p resp.Parser
	buf := make([]byte, 0, 64*1024)
	applied := 0 // bytes of buf applied and handed on
	parsed := 0  // bytes of buf parsed (applied, or queued in a transaction)
	for {
		if l.Stopped() {
			return nil
		}
		if cap(buf)-len(buf) < 16*1024 {
			// Keep what is not applied yet; grow for big commands.
			n := copy(buf, buf[applied:])
			buf, parsed, applied = buf[:n], parsed-applied, 0
			if need := p.Need(); cap(buf)-len(buf) < max(16*1024, need-(len(buf)-parsed)) {
				nb := make([]byte, len(buf), max(2*cap(buf), len(buf)+need+16*1024))
				copy(nb, buf)
				buf = nb
			}
		}
		s.conn.SetReadDeadline(time.Now().Add(s.timeout()))
		n, err := s.br.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			l.lastIO.Store(time.Now().UnixMilli())
			l.readOff.Add(int64(n))
			buf = buf[:len(buf)+n]
			for parsed < len(buf) {
				k, args, perr := p.Next(buf[parsed:])
				if perr == resp.ErrIncomplete {
					break
				}
				if perr != nil {
					h.Warnf("Protocol error from MASTER: %v", perr)
					return sessionErr{again: reconnect}
				}
				parsed += k
				inTx := false
				if len(args) > 0 && !l.Stopped() {
					inTx = h.Apply(args)
				}
				if !inTx {
					h.Applied(buf[applied:parsed])
					applied = parsed
				}
			}
		}
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return errTimeout{StateConnected}
			}
			if !l.Stopped() {
				h.Warnf("Connection with master lost.")
			}
			return nil
		}
	}
}

// ReadOffset is the bytes of stream read since the stream started
// (slave_read_repl_offset is the sync point plus this).
func (l *Link) ReadOffset() int64 { return l.readOff.Load() }

// ResetReadOffset starts the read count again (at a new sync point).
func (l *Link) ResetReadOffset() { l.readOff.Store(0) }
