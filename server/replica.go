package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// Replication, replica side (Redis's replicaof and syncWithMaster): a
// goroutine keeps a link to the master: handshake (PING, AUTH, REPLCONF),
// PSYNC, the RDB loaded in place of the dataset on a full sync, then the
// master's command stream applied through a pseudo client that gets no
// replies. It reconnects when the link drops, asking to continue where it
// left off.

// Link states, as ROLE names them.
const (
	linkConnect int32 = iota
	linkConnecting
	linkTransfer
	linkConnected
)

type replLink struct {
	s    *Server
	host string
	port int

	state     atomic.Int32
	offset    atomic.Int64 // master offset processed
	lastIO    atomic.Int64 // unix ms of the last read from the master
	downSince atomic.Int64 // unix ms the link went down (0: never up)
	syncTotal atomic.Int64
	syncRead  atomic.Int64

	stop     chan struct{}
	stopOnce sync.Once
	wmu      sync.Mutex
	conn     net.Conn
	mc       *Client     // applies the stream
	mreplid  string      // the master's replication id (continuing after a drop)
	killed   atomic.Bool // CLIENT KILL of the master: what was read is not applied
}

func (l *replLink) roleState() string {
	switch l.state.Load() {
	case linkConnecting:
		return "connecting"
	case linkTransfer:
		return "sync"
	case linkConnected:
		return "connected"
	}
	return "connect"
}

// replLink returns the link to the master, nil when this is a master.
func (s *Server) replLink() *replLink {
	if s.repl.flags.Load()&replReadOnly == 0 {
		return nil
	}
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	return s.repl.link
}

// REPLICAOF host port | NO ONE (and SLAVEOF).
func replicaofCommand(c *Client, args [][]byte) {
	s := c.srv
	if c.clusterNotAllowed("ERR REPLICAOF not allowed in cluster mode.") {
		return
	}
	if eq(args[1], "no") && eq(args[2], "one") {
		if s.replLink() != nil {
			s.promote()
			s.Logf("MASTER MODE enabled (user request from '%s')", c.addr)
		}
		c.w.OK()
		return
	}
	if c.replMaster {
		c.w.Error("ERR Command is not valid when client is a replica.")
		return
	}
	port, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil || port < 0 || port > 65535 {
		c.w.Error("ERR Invalid master port")
		return
	}
	if l := s.replLink(); l != nil && strings.EqualFold(l.host, string(args[1])) && l.port == int(port) {
		s.Logf("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.")
		c.w.Simple("OK Already connected to specified master")
		return
	}
	s.replicaOf(string(args[1]), int(port), false)
	s.Logf("REPLICAOF %s:%d enabled (user request from '%s')", args[1], port, c.addr)
	c.w.OK()
}

// killMasterLink is CLIENT KILL addr of the master's client: the link to
// the master at addr is dropped (it reconnects); 1 when there was one.
func (s *Server) killMasterLink(addr string) int {
	l := s.replLink()
	if l == nil || net.JoinHostPort(l.host, strconv.Itoa(l.port)) != addr {
		return 0
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.conn == nil {
		return 0
	}
	l.killed.Store(true)
	l.conn.Close()
	return 1
}

// replicaOf makes the server a replica of host:port.
func (s *Server) replicaOf(host string, port int, atStart bool) {
	s.replicaStop()
	r := &s.repl
	mc := &Client{srv: s, slot: s.goSlot, fd: -1, authed: true, addr: net.JoinHostPort(host, strconv.Itoa(port)), replMaster: true}
	mc.w.Proto = 2
	mc.created = time.Now()
	l := &replLink{s: s, host: host, port: port, stop: make(chan struct{}), mc: mc}
	l.downSince.Store(time.Now().UnixMilli())
	r.mu.Lock()
	old := r.replicas
	r.replicas = nil
	r.freeBacklogLocked()
	r.link = l
	r.flags.Or(replReadOnly)
	r.mu.Unlock()
	for _, rc := range old {
		rc.c.kill() // they resync with the new dataset
	}
	s.ks.ExpiryPaused.Store(true) // a replica's keys expire when its master says so
	go l.run(atStart)
}

// replicaStop ends the link to the master, if any.
func (s *Server) replicaStop() *replLink {
	r := &s.repl
	r.mu.Lock()
	l := r.link
	r.link = nil
	r.flags.And(^uint32(replReadOnly))
	r.mu.Unlock()
	if l == nil {
		return nil
	}
	l.stopOnce.Do(func() { close(l.stop) })
	l.wmu.Lock()
	if l.conn != nil {
		l.conn.Close()
	}
	l.wmu.Unlock()
	if s.pause.typ.Load() == pauseOff {
		s.ks.ExpiryPaused.Store(false)
	}
	return l
}

// promote is REPLICAOF NO ONE: the data stays, the master's history
// becomes the second replication id.
func (s *Server) promote() {
	l := s.replicaStop()
	if l == nil {
		return
	}
	r := &s.repl
	r.mu.Lock()
	for _, rc := range r.replicas {
		defer rc.c.kill()
	}
	r.replicas = nil
	r.freeBacklogLocked()
	if l.mreplid != "" {
		r.replid2 = l.mreplid
		r.offset2 = l.offset.Load() + 1
	}
	r.replid = randomHex(40)
	r.offset = l.offset.Load()
	r.curDB = -1
	r.mu.Unlock()
}

func (l *replLink) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

func (l *replLink) run(atStart bool) {
	s := l.s
	// The link starts once the server listens (its port is announced).
	for len(s.Addrs()) == 0 {
		select {
		case <-l.stop:
			return
		case <-s.stopCh:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	for !l.stopped() {
		l.state.Store(linkConnecting)
		s.Logf("Connecting to MASTER %s:%d", l.host, l.port)
		err := l.session()
		wasUp := l.state.Load() == linkConnected
		l.state.Store(linkConnect)
		if wasUp {
			l.downSince.Store(time.Now().UnixMilli())
		}
		if l.stopped() {
			return
		}
		if err != nil {
			s.Warnf("Error condition on socket for SYNC: %v", err)
		}
		select {
		case <-l.stop:
			return
		case <-s.stopCh:
			return
		case <-time.After(time.Second):
		}
	}
}

func (l *replLink) write(b []byte) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.conn == nil {
		return errors.New("no connection")
	}
	l.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := l.conn.Write(b)
	return err
}

// sendAck tells the master the offset processed.
func (l *replLink) sendAck() {
	if l.state.Load() != linkConnected {
		return
	}
	l.write(appendCmd(nil, bargs("REPLCONF", "ACK", strconv.FormatInt(l.offset.Load(), 10))))
}

func (l *replLink) timeout() time.Duration {
	t, _ := strconv.Atoi(l.s.cfg.Get("repl-timeout"))
	return time.Duration(max(t, 1)) * time.Second
}

// session is one connection to the master, until it drops.
func (l *replLink) session() error {
	s := l.s
	d := net.Dialer{Timeout: 5 * time.Second}
	if src := s.cfg.Get("bind-source-addr"); src != "" {
		// The address the replica connects from (bind-source-addr).
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	conn, err := d.Dial("tcp", net.JoinHostPort(l.host, strconv.Itoa(l.port)))
	if err != nil {
		return err
	}
	if s.cfg.Get("tls-replication") == "yes" {
		if conn, err = s.dialTLS(conn, l.timeout()); err != nil {
			return err
		}
	}
	l.wmu.Lock()
	if l.stopped() {
		l.wmu.Unlock()
		conn.Close()
		return nil
	}
	l.conn = conn
	l.killed.Store(false)
	l.wmu.Unlock()
	defer func() {
		l.wmu.Lock()
		conn.Close()
		l.conn = nil
		l.wmu.Unlock()
	}()
	br := bufio.NewReaderSize(conn, 64*1024)
	timeout := l.timeout()
	readLine := func() (string, error) {
		for {
			conn.SetReadDeadline(time.Now().Add(timeout))
			line, err := br.ReadString('\n')
			if err != nil {
				return "", err
			}
			l.lastIO.Store(time.Now().UnixMilli())
			line = strings.TrimRight(line, "\r\n")
			if line != "" {
				return line, nil
			}
		}
	}
	cmd := func(args ...string) (string, error) {
		if err := l.write(appendCmd(nil, bargs(args...))); err != nil {
			return "", err
		}
		return readLine()
	}
	line, err := cmd("PING")
	if err != nil {
		return err
	}
	if strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "-NOAUTH") && !strings.HasPrefix(line, "-NOPERM") && !strings.HasPrefix(line, "-ERR operation not permitted") {
		return errors.New("Error reply to PING from master: '" + line + "'")
	}
	if pass := s.cfg.Get("masterauth"); pass != "" {
		args := []string{"AUTH", pass}
		if user := s.cfg.Get("masteruser"); user != "" {
			args = []string{"AUTH", user, pass}
		}
		if line, err = cmd(args...); err != nil {
			return err
		}
		if strings.HasPrefix(line, "-") {
			return errors.New("Unable to AUTH to MASTER: " + line)
		}
	}
	myPort := s.cfg.Get("port")
	if addrs := s.Addrs(); len(addrs) > 0 {
		if ta, ok := addrs[0].(*net.TCPAddr); ok {
			myPort = strconv.Itoa(ta.Port)
		}
	}
	if tp := s.cfg.Get("tls-port"); tp != "0" && s.cfg.Get("tls-replication") == "yes" {
		myPort = tp // the port a replica over TLS is reached on, as Redis announces
	}
	if ap := s.cfg.Get("replica-announce-port"); ap != "" && ap != "0" {
		myPort = ap
	}
	if _, err = cmd("REPLCONF", "listening-port", myPort); err != nil {
		return err
	}
	if ip := s.cfg.Get("replica-announce-ip"); ip != "" {
		if _, err = cmd("REPLCONF", "ip-address", ip); err != nil {
			return err
		}
	}
	if _, err = cmd("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return err
	}
	id, off := "?", "-1"
	if l.mreplid != "" {
		id, off = l.mreplid, strconv.FormatInt(l.offset.Load()+1, 10)
	}
	if line, err = cmd("PSYNC", id, off); err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(line, "+FULLRESYNC"):
		f := strings.Fields(line)
		if len(f) < 3 {
			return errors.New("bad FULLRESYNC reply: " + line)
		}
		start, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return err
		}
		s.Logf("Full resync from master: %s:%d", f[1], start)
		l.state.Store(linkTransfer)
		payload, err := l.readPayload(br, conn, timeout)
		if err != nil {
			return err
		}
		if err := s.loadFromMaster(payload); err != nil {
			s.Warnf("Failed trying to load the MASTER synchronization DB from socket: %v", err)
			return err
		}
		l.mreplid = f[1]
		l.offset.Store(start)
		l.mc.dbi = 0
		l.mc.tx = nil
		l.mc.p = resp.Parser{}
		s.repl.mu.Lock()
		s.repl.replid = f[1]
		s.repl.mu.Unlock()
		s.Logf("MASTER <-> REPLICA sync: Finished with success")
	case strings.HasPrefix(line, "+CONTINUE"):
		if f := strings.Fields(line); len(f) >= 2 {
			l.mreplid = f[1]
			s.repl.mu.Lock()
			s.repl.replid = f[1]
			s.repl.mu.Unlock()
		}
		s.Logf("Successful partial resynchronization with master.")
	default:
		return errors.New("unexpected reply to PSYNC from master: " + line)
	}
	l.state.Store(linkConnected)
	l.downSince.Store(0)
	l.lastIO.Store(time.Now().UnixMilli())
	l.sendAck()
	return l.stream(br, conn, timeout)
}

// readPayload reads the RDB of a full sync: "$<len>\r\n<bytes>" or, from a
// diskless master, "$EOF:<mark>\r\n<bytes><mark>".
func (l *replLink) readPayload(br *bufio.Reader, conn net.Conn, timeout time.Duration) ([]byte, error) {
	var line string
	for {
		conn.SetReadDeadline(time.Now().Add(timeout))
		b, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		l.lastIO.Store(time.Now().UnixMilli())
		if b = strings.TrimRight(b, "\r\n"); b != "" {
			line = b
			break
		}
	}
	if line[0] == '-' {
		return nil, errors.New("MASTER aborted replication with an error: " + line)
	}
	if line[0] != '$' {
		return nil, errors.New("bad protocol from MASTER, the first byte is not '$': " + line)
	}
	chunk := make([]byte, 64*1024)
	if strings.HasPrefix(line, "$EOF:") {
		mark := []byte(line[5:])
		var out []byte
		for {
			conn.SetReadDeadline(time.Now().Add(timeout))
			n, err := br.Read(chunk)
			out = append(out, chunk[:n]...)
			l.syncRead.Store(int64(len(out)))
			l.lastIO.Store(time.Now().UnixMilli())
			if len(out) >= len(mark) && bytes.Equal(out[len(out)-len(mark):], mark) {
				return out[:len(out)-len(mark)], nil
			}
			if err != nil {
				return nil, err
			}
		}
	}
	n, err := strconv.ParseInt(line[1:], 10, 64)
	if err != nil || n < 0 {
		return nil, errors.New("bad payload length: " + line)
	}
	l.syncTotal.Store(n)
	out := make([]byte, n)
	read := 0
	for int64(read) < n {
		conn.SetReadDeadline(time.Now().Add(timeout))
		k, err := br.Read(out[read:])
		read += k
		l.syncRead.Store(int64(read))
		l.lastIO.Store(time.Now().UnixMilli())
		if err != nil && int64(read) < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return out, nil
}

// loadFromMaster replaces the dataset with the master's RDB. An AOF is
// stopped first and started again after, with a rewrite of the new
// dataset (Redis's restartAOFAfterSYNC).
func (s *Server) loadFromMaster(payload []byte) error {
	if s.pe.AOFState() != persist.AOFOff {
		s.pe.StopAppendOnly()
		s.updateEffects()
		defer func() {
			if err := s.pe.StartAppendOnly(); err != nil {
				s.Warnf("Failed enabling the AOF after successful master synchronization!")
			}
			s.updateEffects()
		}()
	}
	s.ks.Lock.Lock()
	defer s.ks.Lock.Unlock()
	for i := 0; i < s.ks.NumDBs(); i++ {
		s.ks.DB(i).Flush()
		s.ks.DB(i).DropScanSnapshots()
	}
	s.flushFunctions()
	if len(payload) == 0 {
		return nil
	}
	return s.loadRDBLocked(payload, false)
}

// stream applies the master's commands until the link drops.
func (l *replLink) stream(br *bufio.Reader, conn net.Conn, timeout time.Duration) error {
	mc := l.mc
	mc.p.Reset()
	buf := make([]byte, 0, 64*1024)
	chunk := make([]byte, 64*1024)
	for {
		if l.stopped() {
			return nil
		}
		conn.SetReadDeadline(time.Now().Add(timeout))
		n, err := br.Read(chunk)
		if n > 0 {
			l.lastIO.Store(time.Now().UnixMilli())
			buf = append(buf, chunk[:n]...)
			off := 0
			for off < len(buf) {
				k, args, perr := mc.p.Next(buf[off:])
				if perr == resp.ErrIncomplete {
					break
				}
				if perr != nil {
					return perr
				}
				if l.killed.Load() {
					return errors.New("link killed")
				}
				if len(args) > 0 && !l.stopped() {
					l.apply(args)
				}
				off += k
				l.offset.Add(int64(k))
			}
			buf = buf[:copy(buf, buf[off:])]
		}
		if err != nil {
			return err
		}
	}
}

// apply runs one command of the master's stream, its reply dropped.
func (l *replLink) apply(args [][]byte) {
	mc := l.mc
	cmd := lookupCommand(args[0])
	if cmd == nil {
		l.s.Warnf("Unknown command '%s' from the master: ignored", args[0])
		return
	}
	if cmd.sub != nil && len(args) >= 2 {
		if sub := cmd.lookupSub(args[1]); sub != nil {
			cmd = sub
		}
	}
	if (cmd.Arity > 0 && cmd.Arity != len(args)) || len(args) < -cmd.Arity {
		return
	}
	if cmd.Name == "del" || cmd.Name == "unlink" {
		// Keys kept past their expiry (replicas do not expire keys) go now.
		ks := l.s.ks
		ks.Lock.RLock(mc.slot)
		db := mc.DB()
		for _, k := range args[1:] {
			i := store.ShardOf(k)
			db.LockShard(i)
			db.RemoveIfExpired(k)
			db.UnlockShard(i)
		}
		ks.Lock.RUnlock(mc.slot)
	}
	if mc.tx != nil && !isTxControl(cmd) {
		mc.queue(cmd, args)
	} else {
		mc.call(cmd, args)
	}
	mc.w.Buf = mc.w.Buf[:0]
	mc.mark = 0
}
