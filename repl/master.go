package repl

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/resp"
)

// Master is the replication state of a server as a source of the
// stream (Redis 7.0's server.replid..., server.slaves): its replication
// ids and offset, the replication buffer, and the replicas attached,
// with their full syncs, acknowledgements and timeouts. A replica's
// server has one too: its stream is its master's, which it passes on.
//
// Master's lock is the stream's lock: whoever feeds the stream holds it
// (Lock, and the methods named ...Locked), so every consumer gets the
// same bytes in the same order.
type Master struct {
	mu sync.Mutex

	ID      string // replication id (master_replid)
	ID2     string // second replication id (master_replid2)
	Offset2 int64  // second_repl_offset: ID2 is valid up to this offset -1 (-1: none)
	Offset  int64  // master_repl_offset

	buf      *Buffer
	curDB    int // database of the last command fed (-1: SELECT next)
	enc      []byte
	replicas []*Replica
	sync     *Sync     // the full sync being made, nil when none
	noneAt   time.Time // when the last replica left (repl-backlog-ttl)

	SyncFull, SyncPartialOK, SyncPartialErr atomic.Int64

	// Log is where the lines Master writes go (the server's log).
	Log Logger

	// The replica side (replicaof.go), under the lock: the link to this
	// server's master (nil when a master), the cached master's
	// replication id ("": none), the master's offset the link's read
	// count starts at; what an RDB loaded at start-up said of the stream
	// (aux.go); the WAIT requests (wait.go).
	link     *Link
	cachedID string
	readBase int64
	aux      loadAux
	waits    []*Wait

	// Loading is the state of a replica loading its master's payload
	// (LoadingNone, LoadingSync, LoadingAsync); loadPoint, under the
	// lock, is the load's LoadPoint, and loadSeen that the load passed
	// one.
	Loading   atomic.Int32
	loadPoint chan struct{}
	loadSeen  bool

	shakes sync.Map // REPLCONF before SYNC, by connection (replconf.go)
}

// Logger is where repl writes the server's log lines.
type Logger interface {
	Logf(format string, args ...any)
	Warnf(format string, args ...any)
}

type nopLogger struct{}

func (nopLogger) Logf(string, ...any)  {}
func (nopLogger) Warnf(string, ...any) {}

// Conn is a replica's connection as Master drives it.
type Conn interface {
	// Deliver queues b for the socket ahead of the stream (the reply to
	// PSYNC, the payload, newlines).
	Deliver(b []byte)
	// Signal says the stream has bytes to send.
	Signal()
	// Kill closes the connection (the server calls Remove when it is
	// gone).
	Kill()
	// Queued is what Deliver queued and the socket did not take yet.
	Queued() int64
	// Closing reports whether the connection is being closed.
	Closing() bool
	// Bulk marks a full sync's payload being sent (on) and its end: while
	// on, the connection may keep its large output buffers for reuse.
	Bulk(on bool)
}

// ReplicaState is where a replica stands, as INFO names it.
type ReplicaState int

const (
	WaitStart ReplicaState = iota // waits for a full sync to start
	WaitEnd                       // its image is being made (or streamed to it)
	SendBulk                      // the file image is being sent to it
	Online                        // fed the stream
)

func (s ReplicaState) String() string {
	switch s {
	case Online:
		return "online"
	case SendBulk:
		return "send_bulk"
	}
	return "wait_bgsave"
}

// Replica is a replica attached to a Master.
type Replica struct {
	Conn     Conn
	IP       string // announced (REPLCONF ip-address) or the peer's
	Port     int    // REPLCONF listening-port
	Addr     string // the peer's address
	PSYNC2   bool   // capa psync2: +CONTINUE says the replication id
	EOF      bool   // capa eof: takes a streamed payload
	PrePSYNC bool   // asked with SYNC: sends no ACKs

	state      ReplicaState // under Master's lock
	rd         *Reader      // its position in the stream; nil before its cut
	streaming  atomic.Bool  // rd's bytes may be sent
	startOnAck bool         // online once it acknowledges the streamed payload
	since      time.Time    // when it asked for its sync
	stalled    atomic.Int64 // unix ms since its socket stopped taking the payload (0: it takes it)
	softSince  int64
	ackOff     atomic.Int64
	ackTime    atomic.Int64 // unix ms of the last REPLCONF ACK
}

// Name is the replica as Redis's log names it (replicationGetSlaveName).
func (r *Replica) Name() string {
	if r.Port != 0 {
		return net.JoinHostPort(r.IP, strconv.Itoa(r.Port))
	}
	return r.Addr
}

// AckTime is the unix ms of the replica's last REPLCONF ACK.
func (r *Replica) AckTime() int64 { return r.ackTime.Load() }

// AckOffset is the offset the replica last acknowledged.
func (r *Replica) AckOffset() int64 { return r.ackOff.Load() }

// OutputMem is what the replica has still to read of the replication
// buffer (client-output-buffer-limit and CLIENT LIST count it).
func (r *Replica) OutputMem() int64 {
	if r.rd == nil {
		return 0
	}
	return r.rd.Mem()
}

// Read appends the next stream bytes the replica may be sent to out, at
// most max of them.
func (r *Replica) Read(out []byte, max int) []byte {
	if !r.streaming.Load() || r.rd == nil {
		return out
	}
	n := len(out)
	if cap(out)-n < max {
		nb := make([]byte, n, n+max)
		copy(nb, out)
		out = nb
	}
	k := r.rd.Read(out[n : n+max])
	return out[:n+k]
}

// NewMaster returns the state of a server with a new history.
func NewMaster() *Master {
	return &Master{ID: NewID(), ID2: NoID, Offset2: -1, curDB: -1, noneAt: time.Now(), Log: nopLogger{}}
}

// Lock takes the stream's lock.
func (m *Master) Lock() { m.mu.Lock() }

// Unlock releases it.
func (m *Master) Unlock() { m.mu.Unlock() }

// ---- the backlog and the stream ----

// Backlog returns the replication buffer, nil when there is none.
func (m *Master) Backlog() *Buffer { return m.buf }

// CreateBacklogLocked makes the backlog if there is none: the stream
// starts at the current offset.
func (m *Master) CreateBacklogLocked(size int64) {
	if m.buf != nil {
		return
	}
	m.buf = NewBuffer(m.Offset, size)
	m.curDB = -1
}

// FreeBacklogLocked drops the backlog.
func (m *Master) FreeBacklogLocked() { m.buf = nil }

// RebaseLocked makes an empty backlog start at offset off (a restart's
// stream continues its RDB's).
func (m *Master) RebaseLocked(off, size int64) {
	m.Offset = off
	m.buf = NewBuffer(off, size)
}

// Resize applies a new repl-backlog-size.
func (m *Master) Resize(size int64) {
	m.mu.Lock()
	if m.buf != nil {
		m.buf.SetSize(size)
	}
	m.mu.Unlock()
}

// NewHistoryLocked starts a new replication history: a new id and no
// second one.
func (m *Master) NewHistoryLocked() {
	m.ID = NewID()
	m.ID2, m.Offset2 = NoID, -1
}

// ShiftIDLocked keeps the current id as the second one, valid up to the
// current offset, and starts a new one (a replica promoted).
func (m *Master) ShiftIDLocked() {
	m.ID2 = m.ID
	m.Offset2 = m.Offset + 1
	m.ID = NewID()
	m.curDB = -1
	m.noneAt = time.Now()
}

// ForceSelectLocked makes the next command fed carry a SELECT.
func (m *Master) ForceSelectLocked() { m.curDB = -1 }

// SelectedDB is the database of the last command fed (-1: none yet).
func (m *Master) SelectedDB() int { return m.curDB }

// WriteLocked appends raw stream bytes to the replication buffer and
// wakes the replicas that send it; limit reports a replica over its
// output limit, which is then closed. It reports whether the buffer grew
// a block (when limits are worth checking).
func (m *Master) WriteLocked(b []byte, limit func(*Replica) bool) {
	if m.buf == nil || len(b) == 0 {
		return
	}
	grew := m.buf.Write(b)
	m.Offset += int64(len(b))
	for _, r := range m.replicas {
		if r.rd == nil {
			continue
		}
		if grew && limit != nil && limit(r) {
			continue
		}
		if r.streaming.Load() {
			r.Conn.Signal()
		}
	}
}

// SelectLocked feeds SELECT when db is not the stream's database (-1:
// any).
func (m *Master) SelectLocked(db int, limit func(*Replica) bool) {
	if db < 0 || db == m.curDB {
		return
	}
	m.curDB = db
	m.enc = resp.AppendCommand(m.enc[:0], []byte("SELECT"), strconv.AppendInt(nil, int64(db), 10))
	m.WriteLocked(m.enc, limit)
}

// FeedLocked feeds one command run in database db (-1: any).
func (m *Master) FeedLocked(db int, limit func(*Replica) bool, args ...[]byte) {
	m.SelectLocked(db, limit)
	m.enc = resp.AppendCommand(m.enc[:0], args...)
	m.WriteLocked(m.enc, limit)
}

// OverLimit applies client-output-buffer-limit's replica class (hard,
// soft bytes, soft seconds) to what r still has to read. The hard limit
// is at least the backlog's size, as Redis's is: a replica could not
// otherwise continue from the backlog.
func (r *Replica) OverLimit(hard, soft, secs, backlog int64) bool {
	if hard == 0 && soft == 0 || r.rd == nil {
		return false
	}
	if hard > 0 && hard < backlog {
		hard = backlog
	}
	mem := r.rd.Mem()
	if hard > 0 && mem > hard {
		return true
	}
	if soft > 0 && mem > soft {
		now := time.Now().UnixMilli()
		if r.softSince == 0 {
			r.softSince = now
			return false
		}
		return now-r.softSince > secs*1000
	}
	r.softSince = 0
	return false
}

// ---- replicas ----

// Replicas returns the replicas attached (for the caller to read under
// the lock).
func (m *Master) ReplicasLocked() []*Replica { return m.replicas }

// NumReplicas counts the replicas attached.
func (m *Master) NumReplicas() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.replicas)
}

// Find returns the replica of conn, or nil.
func (m *Master) Find(c Conn) *Replica {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.replicas {
		if r.Conn == c {
			return r
		}
	}
	return nil
}

// FindAnnounced returns the replica announced at host:port.
func (m *Master) FindAnnounced(host string, port int) *Replica {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.replicas {
		if strings.EqualFold(r.IP, host) && r.Port == port {
			return r
		}
	}
	return nil
}

// State is where r stands.
func (m *Master) State(r *Replica) ReplicaState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return r.state
}

// StateLocked is State for a caller that holds the lock.
func (m *Master) StateLocked(r *Replica) ReplicaState { return r.state }

// Remove forgets a replica whose connection is gone. It reports whether
// it was online (Redis logs its loss) and whether a full sync nobody
// waits for any more was left (the caller may kill it).
func (m *Master) Remove(c Conn) (r *Replica, useless bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, x := range m.replicas {
		if x.Conn != c {
			continue
		}
		m.replicas = append(m.replicas[:i], m.replicas[i+1:]...)
		if x.rd != nil {
			x.rd.Close()
		}
		if len(m.replicas) == 0 {
			m.noneAt = time.Now()
		}
		if s := m.sync; s != nil {
			useless = s.left(x)
		}
		return x, useless
	}
	return nil, false
}

// Continue accepts a replica's PSYNC when the backlog has what it asks
// for (masterTryPartialResynchronization): r is attached online, reading
// from off, and the reply line is returned for the caller to send before
// the stream. The decision's log lines are the caller's to write.
func (m *Master) Continue(r *Replica, replid string, off int64) (Decision, string, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := History{ID: m.ID, ID2: m.ID2, Offset2: m.Offset2, Offset: m.Offset}
	if m.buf != nil {
		h.Backlog = m.buf
	}
	d := Psync(h, replid, off, r.Name())
	if !d.Continue {
		return d, "", 0
	}
	r.rd = m.buf.ReaderAt(off)
	r.state = Online
	r.ackTime.Store(time.Now().UnixMilli())
	m.replicas = append(m.replicas, r)
	line := "+CONTINUE\r\n"
	if r.PSYNC2 {
		line = "+CONTINUE " + m.ID + "\r\n"
	}
	r.streaming.Store(true)
	return d, line, m.Offset + 1 - off
}

// AttachLocked attaches r waiting for a full sync. A master without a
// backlog starts a new history (newID reports it) and makes one.
func (m *Master) AttachLocked(r *Replica, size int64, isReplica bool) (newID bool) {
	r.state = WaitStart
	r.since = time.Now()
	r.ackTime.Store(time.Now().UnixMilli())
	m.replicas = append(m.replicas, r)
	if m.buf == nil && !isReplica {
		m.NewHistoryLocked()
		newID = true
	}
	m.CreateBacklogLocked(size)
	return newID
}

// Ack records a replica's REPLCONF ACK. At its first ACK after a
// streamed payload (it loaded it) the replica gets the stream since the
// cut.
func (m *Master) Ack(r *Replica, off int64) {
	if off > r.ackOff.Load() {
		r.ackOff.Store(off)
	}
	r.ackTime.Store(time.Now().UnixMilli())
	m.mu.Lock()
	started := r.startOnAck && r.state == Online
	if started {
		r.startOnAck = false
		r.streaming.Store(true)
	}
	m.mu.Unlock()
	if started {
		m.Log.Logf("Synchronization with replica %s succeeded", r.Name())
	}
}

// Streaming reports whether r gets the stream.
func (r *Replica) Streaming() bool { return r.streaming.Load() }

// AckedLocked counts the online replicas that acknowledged off.
func (m *Master) AckedLocked(off int64) int64 {
	n := int64(0)
	for _, r := range m.replicas {
		if r.state == Online && r.ackOff.Load() >= off {
			n++
		}
	}
	return n
}

// Good counts the online replicas whose last ACK is within lag seconds
// (min-replicas-to-write).
func (m *Master) Good(lag int64) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now().UnixMilli()
	n := int64(0)
	for _, r := range m.replicas {
		if r.state == Online && now-r.ackTime.Load() <= lag*1000 {
			n++
		}
	}
	return n
}

// CaughtUp returns the first replica (among those at host:port, when
// host is set) that acknowledged the whole stream.
func (m *Master) CaughtUp(host string, port int) *Replica {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.replicas {
		if host != "" && !(strings.EqualFold(r.IP, host) && r.Port == port) {
			continue
		}
		if r.ackOff.Load() == m.Offset {
			return r
		}
	}
	return nil
}

// InSync reports whether every replica acknowledged the whole stream (a
// shutdown waits for it: isReadyToShutdown).
func (m *Master) InSync() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.replicas {
		if r.ackOff.Load() != m.Offset {
			return false
		}
	}
	return true
}

// LogLagging logs the replicas that did not acknowledge the whole stream,
// and how many did, as a shutting down master does.
func (m *Master) LogLagging() {
	m.mu.Lock()
	n, lagging := len(m.replicas), 0
	now := time.Now().UnixMilli()
	for _, r := range m.replicas {
		if ack := r.ackOff.Load(); ack != m.Offset {
			lagging++
			lag := int64(0)
			if r.state == Online {
				lag = (now - r.ackTime.Load()) / 1000
			}
			m.Log.Warnf("Lagging replica %s reported offset %d behind master, lag=%d, state=%s.", r.Name(), m.Offset-ack, lag, r.state)
		}
	}
	m.mu.Unlock()
	if n > 0 {
		m.Log.Logf("%d of %d replicas are in sync when shutting down.", n-lagging, n)
	}
}

// CronActions is what a second of replicationCron finds to do.
type CronActions struct {
	Newline []*Replica // waiting for their sync: a newline keeps the link alive
	Drop    []*Replica // timed out
	Logs    []string   // why (Redis's lines)
}

// CronLocked is replicationCron's master half: the replicas waiting for
// a sync (newlines), those timed out, and the backlog freed once no
// replica was attached for ttl.
func (m *Master) CronLocked(timeout, ttl time.Duration, freeBacklog bool) CronActions {
	var a CronActions
	now := time.Now()
	ms := now.UnixMilli()
	for _, r := range m.replicas {
		socket := m.sync != nil && m.sync.Socket && m.sync.has(r)
		switch {
		case r.state == WaitStart || r.state == WaitEnd && !socket:
			a.Newline = append(a.Newline, r)
		case r.state == Online && !r.PrePSYNC && ms-r.ackTime.Load() > timeout.Milliseconds():
			a.Logs = append(a.Logs, "Disconnecting timedout replica (streaming sync): "+r.Name())
			a.Drop = append(a.Drop, r)
		case r.state == WaitEnd && socket:
			if t := r.stalled.Load(); t != 0 && ms-t > timeout.Milliseconds() {
				a.Logs = append(a.Logs, "Disconnecting timedout replica (full sync): "+r.Name())
				a.Drop = append(a.Drop, r)
			}
		}
	}
	if freeBacklog && len(m.replicas) == 0 && m.buf != nil && ttl > 0 && now.Sub(m.noneAt) >= ttl {
		m.buf = nil
	}
	return a
}

// Run does what the cron found: a newline to each replica waiting for its
// sync, the log lines, the timed-out replicas dropped.
func (a CronActions) Run(log Logger) {
	for _, r := range a.Newline {
		r.Conn.Deliver([]byte("\n"))
	}
	for _, l := range a.Logs {
		log.Warnf("%s", l)
	}
	for _, r := range a.Drop {
		r.Conn.Kill()
	}
}

// ---- full syncs ----

// Sync is one image of the dataset made for replicas.
type Sync struct {
	Socket   bool       // streamed to the replicas (else a file first)
	Replicas []*Replica // those it is for (under the lock)
	Cancel   chan struct{}
	Done     chan struct{}
}

func (s *Sync) has(r *Replica) bool {
	for _, x := range s.Replicas {
		if x == r {
			return true
		}
	}
	return false
}

// left removes r; it reports whether a file image is now useless (no
// replica waits for its end).
func (s *Sync) left(r *Replica) bool {
	for i, x := range s.Replicas {
		if x != r {
			continue
		}
		s.Replicas = append(s.Replicas[:i], s.Replicas[i+1:]...)
		if s.Socket || r.state != WaitEnd {
			return false
		}
		for _, y := range s.Replicas {
			if y.state == WaitEnd {
				return false
			}
		}
		return true
	}
	return false
}

// CancelSync closes s's cancel channel once.
func (s *Sync) CancelSync() {
	select {
	case <-s.Cancel:
	default:
		close(s.Cancel)
	}
}

// Running returns the full sync being made, nil when none.
func (m *Master) Running() *Sync {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sync
}

// RunningLocked is Running for a caller that holds the lock.
func (m *Master) RunningLocked() *Sync { return m.sync }

// QueueDecision is when a replica's full sync starts.
type QueueDecision int

const (
	QueueWait     QueueDecision = iota // for the next image
	QueueStartNow                      // an image starts now
	QueueAttached                      // shares the file image being made
)

// QueueLocked decides when r's full sync starts (syncCommand's cases):
// sharing a file image another replica waits for, waiting for the next
// one, or now. bgsave reports a background save not made for replicas;
// delay whether diskless syncs wait for more replicas. The log line is
// returned. An attached replica is told +FULLRESYNC with the offset of
// the peer's cut.
func (m *Master) QueueLocked(r *Replica, bgsave, diskless, delay bool) (QueueDecision, string) {
	s := m.sync
	switch {
	case s != nil && !s.Socket:
		for _, x := range s.Replicas {
			if x.state == WaitEnd && x.rd != nil && (r.EOF || !x.EOF) {
				r.state = WaitEnd
				r.rd = x.rd.Clone()
				s.Replicas = append(s.Replicas, r)
				r.fullResync(m.ID, x.rd.Offset()-1)
				return QueueAttached, "Waiting for end of BGSAVE for SYNC"
			}
		}
		return QueueWait, "Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC"
	case s != nil:
		return QueueWait, "Current BGSAVE has socket target. Waiting for next BGSAVE for SYNC"
	case bgsave:
		return QueueWait, "Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC"
	case diskless && r.EOF && delay:
		return QueueWait, "Delay next BGSAVE for diskless SYNC"
	}
	return QueueStartNow, ""
}

// Pending reports whether the replicas waiting for a full sync should get
// one now (replicationStartPendingFork): without diskless sync at once,
// else once maxReplicas wait or the first waited delay.
func (m *Master) Pending(diskless bool, delay time.Duration, maxReplicas int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sync != nil {
		return false
	}
	n := 0
	var idle time.Duration
	for _, r := range m.replicas {
		if r.state == WaitStart {
			n++
			idle = max(idle, time.Since(r.since))
		}
	}
	return n > 0 && (!diskless || maxReplicas > 0 && n >= maxReplicas || idle >= delay)
}

// StartLocked starts an image for every replica waiting for one: it
// takes their positions in the stream at the current offset (the cut;
// the caller holds whatever stops the stream from moving), and returns
// the sync and the offset, or nil when nobody waits. socket: the image
// is streamed to the replicas' sockets (only those that take a streamed
// payload join it).
func (m *Master) StartLocked(socket bool, size int64) (*Sync, int64) {
	if m.sync != nil {
		return nil, 0
	}
	var ws []*Replica
	for _, r := range m.replicas {
		if r.state == WaitStart && (r.EOF || !socket) {
			ws = append(ws, r)
		}
	}
	if len(ws) == 0 {
		return nil, 0
	}
	m.CreateBacklogLocked(size)
	s := &Sync{Socket: socket, Cancel: make(chan struct{}), Done: make(chan struct{})}
	for _, r := range ws {
		r.state = WaitEnd
		r.rd = m.buf.Reader()
		r.ackTime.Store(time.Now().UnixMilli())
		s.Replicas = append(s.Replicas, r)
	}
	m.curDB = -1 // the stream after the cut starts with SELECT
	m.sync = s
	return s, m.Offset
}

// EndLocked ends s (the image was sent, or given up).
func (m *Master) EndLocked(s *Sync) {
	if m.sync == s {
		m.sync = nil
	}
	select {
	case <-s.Done:
	default:
		close(s.Done)
	}
}

// SentStreamedLocked marks r as having been sent a streamed payload: it
// is online, and gets the stream at its first ACK.
func (m *Master) SentStreamedLocked(r *Replica) {
	r.state = Online
	r.startOnAck = true
	r.stalled.Store(0)
	r.ackTime.Store(time.Now().UnixMilli())
}

// SentFile marks r as having been sent the file payload: it gets the
// stream now. It reports whether r is still attached.
func (m *Master) SentFile(r *Replica) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range m.replicas {
		if x == r {
			r.state = Online
			r.ackTime.Store(time.Now().UnixMilli())
			r.streaming.Store(true)
			return true
		}
	}
	return false
}

// ---- INFO and ROLE ----

// OnlineLocked returns the online replicas (ROLE lists them).
func (m *Master) OnlineLocked() []*Replica {
	var out []*Replica
	for _, r := range m.replicas {
		if r.state == Online {
			out = append(out, r)
		}
	}
	return out
}

// Memory returns the replication buffer's memory
// (mem_total_replication_buffers) and its split between the backlog and
// the replicas (mem_replication_backlog, mem_clients_slaves).
func (m *Master) Memory(backlogSize int64) (total, backlog, replicas int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buf == nil {
		return 0, 0, 0
	}
	total = m.buf.Mem()
	if len(m.replicas) > 0 && total > backlogSize {
		return total, backlogSize, total - backlogSize
	}
	return total, total, 0
}

// CountedForEvict splits the replication buffer's memory total the way
// Redis 7.0's freeMemoryGetNotCountedMemory does: up to repl-backlog-size
// bytes (and the blocks' overhead for that much) are the backlog's and
// count against maxmemory; what exceeds it is the replicas' and does not,
// whether or not replicas are still attached (blocks a departed replica
// held are freed as the backlog moves on).
func CountedForEvict(total, backlogSize int64) (counted, notCounted int64) {
	limit := backlogSize + (backlogSize/BlockMin+1)*blockOverhead
	if total <= limit {
		return total, 0
	}
	return limit, total - limit
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

var _ = fmt.Sprintf

// NumReplicasLocked counts the replicas attached; the lock is held.
func (m *Master) NumReplicasLocked() int { return len(m.replicas) }

// SocketTargetLocked reports whether the next image goes to replica
// sockets: diskless sync is on and every replica waiting for one takes a
// streamed payload.
func (m *Master) SocketTargetLocked(diskless bool) bool {
	for _, r := range m.replicas {
		if r.state == WaitStart && !r.EOF {
			return false
		}
	}
	return diskless
}
