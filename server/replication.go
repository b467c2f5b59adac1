package server

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/repl"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// Replication, master side: the glue between the server and package
// repl, after Redis 7.0's replication.c.
//
// The effects stream (effects.go) goes into one replication buffer that
// the backlog and every replica share (repl.Master). A replica's
// connection pulls its next bytes from its own position in that buffer
// when its socket has room (streamOut), so a slow replica costs no copy
// of the stream; its output limit is checked against what it still has
// to read. Full syncs are fullsync.go, the replica side replica.go,
// FAILOVER failover.go.

// replState flags.
const (
	replFeed     = 1 << iota // a backlog exists: write commands feed the stream
	replReadOnly             // this server is a replica: normal clients may not write
)

type replState struct {
	flags atomic.Uint32
	srv   *Server
	// m is the stream's state; its lock guards it and the fields below
	// marked "under m".
	m     *repl.Master
	waits []*waitReq // under m
	good  atomic.Int64
	conf  sync.Map // *Client -> *replconfInfo: what REPLCONF said before SYNC

	// Replica side (replica.go), under m: the link to the master, nil
	// when a master; the master's client, kept while its state is
	// cached; the cached master's replication id ("": none); the
	// master's offset the link's read count starts at.
	link     *repl.Link
	mc       *Client
	cachedID string
	readBase int64
	loading  atomic.Int32
	// writtenKeys are keys clients wrote on a writable replica with an
	// expiry: they expire here (replicaKeysCron). Under m.
	writtenKeys map[dbKey]struct{}

	// What the RDB loaded at start-up said of the replication stream.
	loadID      string
	loadOffset  int64
	loadDB      int
	loadFeeding bool

	fo repl.Failover

	// startMu serializes starting full syncs to disk (a BGSAVE each).
	startMu sync.Mutex
}

// replicaConn is the server's side of a replica: its client.
type replicaConn struct {
	*repl.Replica
	c *Client
}

func (rc *replicaConn) name() string { return rc.Name() }

// clientConn is a client as repl.Master drives a replica's connection.
type clientConn struct{ c *Client }

func (k clientConn) Deliver(b []byte) { k.c.deliver(b) }
func (k clientConn) Signal()          { k.c.signal() }
func (k clientConn) Kill()            { k.c.kill() }
func (k clientConn) Queued() int64    { return k.c.outputMem() }
func (k clientConn) Closing() bool    { return k.c.closeASAP.Load() }

type waitReq struct {
	c     *Client
	off   int64
	n     int64
	done  bool
	timer *time.Timer
}

// wireReplication sets up the replication state when the server is made.
func (s *Server) wireReplication() {
	r := &s.repl
	r.srv = s
	r.m = repl.NewMaster()
	prevExp := s.ks.OnExpired
	s.ks.OnExpired = func(db *store.DB, key []byte) {
		if prevExp != nil {
			prevExp(db, key)
		}
		if s.repl.flags.Load()&replFeed != 0 {
			s.replFeedDel(db.ID, key, "lazyfree-lazy-expire")
		}
	}
	prevChange := s.cfg.OnChange
	s.cfg.OnChange = func(name, value string) {
		if prevChange != nil {
			prevChange(name, value)
		}
		switch name {
		case "repl-backlog-size":
			r.m.Resize(s.backlogSize())
		}
	}
	prevClose := s.onClientClose
	s.onClientClose = func(c *Client) {
		if prevClose != nil {
			prevClose(c)
		}
		s.replClientClosed(c)
	}
	if v := s.cfg.Get("replicaof"); v != "" {
		if a := config.SplitList(v); len(a) == 2 && !(strings.EqualFold(a[0], "no") && strings.EqualFold(a[1], "one")) {
			port, _ := strconv.Atoi(a[1])
			s.replicaOf(a[0], port, true)
		}
	}
	// CONFIG GET replicaof and CONFIG REWRITE show the master of the
	// moment, as REPLICAOF set it.
	s.cfg.Hooks.Master = func() string {
		if l := s.replLink(); l != nil {
			return l.Host + " " + strconv.Itoa(l.Port)
		}
		return ""
	}
	go s.replCron()
}

// lock and unlock take the stream's lock (effects.go feeds under it).
func (r *replState) lock()   { r.m.Lock() }
func (r *replState) unlock() { r.m.Unlock() }

// updateFeed sets replFeed from whether the effects stream has a
// consumer (a backlog, the AOF); under m.
func (r *replState) updateFeed() {
	if r.m.Backlog() != nil || r.srv.fx.aof.Load() {
		r.flags.Or(replFeed)
	} else {
		r.flags.And(^uint32(replFeed))
	}
}

// createBacklogLocked makes the backlog if there is none.
func (r *replState) createBacklogLocked() {
	r.m.CreateBacklogLocked(r.srv.backlogSize())
	r.updateFeed()
	r.srv.storeReplMemory(r.m.Backlog().Mem())
}

func (r *replState) freeBacklogLocked() {
	r.m.FreeBacklogLocked()
	r.updateFeed()
	r.srv.storeReplMemory(0)
}

// writeLocked feeds raw stream bytes; selectLocked a SELECT when needed;
// feedLocked one command (-1: any database).
func (r *replState) writeLocked(b []byte) { r.m.WriteLocked(b, r.srv.replicaOverLimit) }
func (r *replState) selectLocked(dbi int) { r.m.SelectLocked(dbi, r.srv.replicaOverLimit) }
func (r *replState) offsetLocked() int64  { return r.m.Offset }
func (r *replState) feedLocked(dbi int, args [][]byte) {
	r.m.FeedLocked(dbi, r.srv.replicaOverLimit, args...)
}

// replicaOverLimit closes a replica over its output limit and reports
// whether it was.
func (s *Server) replicaOverLimit(rp *repl.Replica) bool {
	cfg := s.cfg
	if !rp.OverLimit(cfg.ReplLimit[0].Load(), cfg.ReplLimit[1].Load(), cfg.ReplLimit[2].Load(), s.backlogSize()) {
		return false
	}
	if c := rp.Conn.(clientConn).c; !c.closeASAP.Load() {
		s.Warnf("Client %s scheduled to be closed ASAP for overcoming of output buffer limits.", c.infoLine())
		c.kill()
	}
	return true
}

// replCron: every second, the link's ACK, PINGs to replicas every
// repl-ping-replica-period, newlines to replicas waiting for their sync,
// timed-out replicas, the backlog freed after repl-backlog-ttl without
// replicas, min-replicas counting, FAILOVER's progress; every 100 ms,
// full syncs whose replicas waited long enough.
func (s *Server) replCron() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	r := &s.repl
	var ticks int
	for {
		select {
		case <-s.stopCh:
			s.replicaStop()
			return
		case <-t.C:
		}
		s.startPendingSync()
		s.updateFailover()
		if ticks++; ticks%10 != 0 {
			continue
		}
		// What runs here stops while DEBUG SLEEP (or anything holding the
		// keyspace) does, as Redis's cron stops with its event loop.
		s.ks.Lock.RLock(s.goSlot)
		s.replicaCron()
		s.masterCron(ticks / 10)
		s.ks.Lock.RUnlock(s.goSlot)
		r.good.Store(r.m.Good(s.cfg.MinReplicasLag.Load()))
	}
}

// masterCron is replicationCron's master half; runs once a second.
func (s *Server) masterCron(loops int) {
	r := &s.repl
	ttl, _ := strconv.Atoi(s.cfg.Get("repl-backlog-ttl"))
	period, _ := strconv.Atoi(s.cfg.Get("repl-ping-replica-period"))
	r.lock()
	master := r.link == nil
	// No PING while a cluster manual failover holds writes: the replica
	// waits for this very offset.
	mfPaused := s.cluster != nil && s.cluster.ManualFailoverPaused()
	if master && r.m.NumReplicasLocked() > 0 && r.m.Backlog() != nil && loops%max(period, 1) == 0 && s.failoverState() == repl.FailoverNone && !mfPaused {
		r.feedLocked(-1, bargs("PING"))
	}
	a := r.m.CronLocked(s.replTimeout(), time.Duration(ttl)*time.Second, master)
	r.updateFeed()
	r.unlock()
	// used_memory counts the replication buffer (the backlog and what
	// replicas still have to read), as Redis counts its blocks.
	total, _, _ := s.replMemory()
	s.storeReplMemory(total)
	for _, rp := range a.Newline {
		rp.Conn.Deliver([]byte("\n"))
	}
	for _, l := range a.Logs {
		s.Warnf("%s", l)
	}
	for _, rp := range a.Drop {
		rp.Conn.Kill()
	}
}

// replTimeout is repl-timeout.
func (s *Server) replTimeout() time.Duration {
	t, _ := strconv.Atoi(s.cfg.Get("repl-timeout"))
	return time.Duration(max(t, 1)) * time.Second
}

// goodReplicas counts the replicas whose last ACK is within lag seconds.
func (r *replState) goodReplicas(lag int64) int64 {
	if r.flags.Load()&replReadOnly != 0 {
		return 1 << 30 // min-replicas-to-write is a master's rule
	}
	if r.flags.Load()&replFeed == 0 {
		return 0
	}
	n := r.m.Good(lag)
	r.good.Store(n)
	return n
}

// backlogSize is repl-backlog-size.
func (s *Server) backlogSize() int64 {
	n, _ := strconv.ParseInt(s.cfg.Get("repl-backlog-size"), 10, 64)
	return max(n, repl.MinBacklog)
}

func bargs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// streamOut appends to out the next bytes of the stream replica c may be
// sent (its driver calls it when the socket has room).
func (c *Client) streamOut(out []byte) []byte {
	rc := c.replica.Load()
	if rc == nil {
		return out
	}
	return rc.Read(out, 64*1024)
}

// ---- replicas ----

func (s *Server) replClientClosed(c *Client) {
	r := &s.repl
	r.conf.Delete(c)
	rc := c.replica.Load()
	if rc == nil {
		return
	}
	rp, useless := r.m.Remove(clientConn{c})
	c.replica.Store(nil)
	if rp != nil && r.m.State(rp) == repl.Online {
		s.Logf("Connection with replica %s lost.", rp.Name())
	}
	if useless && len(strings.Fields(s.cfg.Get("save"))) == 0 {
		// No replica waits for the BGSAVE any more: it is of no use
		// (unless save points make it worth finishing).
		if fs := r.m.Running(); fs != nil {
			fs.CancelSync()
		}
		go s.pe.KillRDBChild()
	}
	s.checkWaits()
}

// disconnectReplicas closes every replica's connection (they reconnect
// and, with PSYNC, learn of a new replication id).
func (s *Server) disconnectReplicas() {
	r := &s.repl
	r.lock()
	rs := append([]*repl.Replica(nil), r.m.ReplicasLocked()...)
	r.unlock()
	for _, rp := range rs {
		rp.Conn.Kill()
	}
}

// SYNC and PSYNC replid offset [FAILOVER]: a replica asks for the stream.
// Runs with the keyspace held exclusively (lock_all), so an image and the
// offset it is cut at agree.
func syncCommand(c *Client, args [][]byte) {
	s := c.srv
	r := &s.repl
	if c.replMaster || c.replica.Load() != nil {
		return // ignored, as Redis ignores SYNC from a replica
	}
	psync := eq(args[0], "psync")
	if psync && len(args) > 3 && eq(args[3], "failover") {
		r.lock()
		id := r.m.ID
		r.unlock()
		if !strings.EqualFold(string(args[1]), id) {
			c.w.Error("ERR PSYNC FAILOVER replid must match my replid.")
			return
		}
		s.promote()
		s.Logf("MASTER MODE enabled (failover request from '%s')", c.infoLine())
	}
	if s.failoverState() != repl.FailoverNone {
		c.w.Error("NOMASTERLINK Can't SYNC while failing over")
		return
	}
	if l := s.replLink(); l != nil && l.State() != repl.StateConnected {
		c.w.Error("NOMASTERLINK Can't SYNC while not connected with my master")
		return
	}
	if len(c.w.Buf) > 0 || c.outputMem() > 0 {
		c.w.Error("ERR SYNC and PSYNC are invalid with pending output")
		return
	}
	rc := c.pendingReplica()
	s.Logf("Replica %s asks for synchronization", rc.Name())
	if psync {
		off, err := strconv.ParseInt(string(args[2]), 10, 64)
		if err != nil {
			s.Warnf("Replica %s asks for synchronization but with a wrong offset", rc.Name())
			c.w.Error(errNotInt)
			return
		}
		d, line, sent := r.m.Continue(rc.Replica, string(args[1]), off)
		if d.Continue {
			r.m.SyncPartialOK.Add(1)
			c.w.Buf = append(c.w.Buf, line...)
			c.replica.Store(rc)
			c.signal()
			s.Logf("Partial resynchronization request from %s accepted. Sending %d bytes of backlog starting from offset %d.", rc.Name(), sent, off)
			return
		}
		if d.Log != "" {
			s.Logf("%s", d.Log)
		}
		if d.Warn != "" {
			s.Warnf("%s", d.Warn)
		}
		if string(args[1]) != "?" {
			r.m.SyncPartialErr.Add(1)
		}
	} else {
		rc.PrePSYNC = true
	}
	r.m.SyncFull.Add(1)
	r.lock()
	c.replica.Store(rc)
	if r.m.AttachLocked(rc.Replica, s.backlogSize(), r.link != nil) {
		s.Logf("Replication backlog created, my new replication IDs are '%s' and '%s'", r.m.ID, r.m.ID2)
	}
	r.updateFeed()
	r.unlock()
	s.queueFullSync(rc)
}

// pendingReplica is the replica record for c, from what REPLCONF said.
func (c *Client) pendingReplica() *replicaConn {
	c.replicaOut.Store(true) // its output counts in mem_clients_slaves
	rp := &repl.Replica{Conn: clientConn{c}, Addr: c.addr}
	if h, _, err := net.SplitHostPort(c.addr); err == nil {
		rp.IP = h
	}
	if v, ok := c.srv.repl.conf.Load(c); ok {
		info := v.(*replconfInfo)
		rp.Port, rp.PSYNC2, rp.EOF = info.port, info.psync2, info.eof
		if info.ip != "" {
			rp.IP = info.ip
		}
	}
	return &replicaConn{Replica: rp, c: c}
}

// replconfInfo is what a would-be replica said with REPLCONF before PSYNC.
type replconfInfo struct {
	port   int
	ip     string
	psync2 bool
	eof    bool
}

// REPLCONF option value ...
func replconfCommand(c *Client, args [][]byte) {
	s := c.srv
	r := &s.repl
	if len(args)%2 == 0 {
		c.w.Error("ERR syntax error")
		return
	}
	for i := 1; i < len(args); i += 2 {
		opt, val := args[i], args[i+1]
		switch {
		case eq(opt, "ack"):
			rc := c.replica.Load()
			if rc == nil {
				return
			}
			off, err := strconv.ParseInt(string(val), 10, 64)
			if err != nil {
				return
			}
			if r.m.Ack(rc.Replica, off) {
				// The replica loaded the streamed payload: the stream
				// since the cut follows now.
				s.Logf("Synchronization with replica %s succeeded", rc.Name())
			}
			if rc.Streaming() {
				c.signal()
			}
			s.checkWaits()
			s.updateFailover()
			if s.shutdownPending() && s.replicasInSync() {
				s.finishShutdown()
			}
			return // no reply to an ACK
		case eq(opt, "getack"):
			if c.replMaster {
				s.replicaSendAck()
			}
			return
		case eq(opt, "listening-port"):
			port, err := strconv.ParseInt(string(val), 10, 64)
			if err != nil {
				c.w.Error(errNotInt)
				return
			}
			r.replconf(c).port = int(port)
		case eq(opt, "ip-address"):
			if len(val) >= 46 {
				c.w.Error(fmt.Sprintf("ERR REPLCONF ip-address provided by replica instance is too long: %d bytes", len(val)))
				return
			}
			r.replconf(c).ip = string(val)
		case eq(opt, "capa"):
			if eq(val, "psync2") {
				r.replconf(c).psync2 = true
			} else if eq(val, "eof") {
				r.replconf(c).eof = true
			}
		case eq(opt, "rdb-only"):
			n, err := strconv.ParseInt(string(val), 10, 64)
			if err != nil || n < 0 || n > 1 {
				c.w.Error("ERR value is out of range, must be positive")
				return
			}
		case eq(opt, "rdb-filter-only"):
			for _, f := range config.SplitList(string(val)) {
				if !strings.EqualFold(f, "functions") {
					c.w.Error("ERR Unsupported rdb-filter-only option: " + f)
					return
				}
			}
		default:
			c.w.Error("ERR Unrecognized REPLCONF option: " + string(opt))
			return
		}
	}
	c.w.OK()
}

func (r *replState) replconf(c *Client) *replconfInfo {
	v, _ := r.conf.LoadOrStore(c, &replconfInfo{})
	return v.(*replconfInfo)
}

// replicaExec runs a command a replica sent on its replication link. A
// replica may not touch the keyspace, and its connection carries the
// stream: a command that replies drops it (Redis's "Replica generated a
// reply").
func (c *Client) replicaExec(args [][]byte) {
	cmd := lookupCommand(args[0])
	if cmd != nil && cmd.sub != nil && len(args) >= 2 {
		if sub := cmd.lookupSub(args[1]); sub != nil {
			cmd = sub
		}
	}
	if cmd != nil && cmd.Flags&(cmdspec.Write|cmdspec.Readonly|cmdspec.MayReplicate) != 0 {
		c.rejectCmd(cmd, "ERR Replica can't interact with the keyspace")
	} else {
		c.dispatch(args)
	}
	if len(c.w.Buf) == 0 {
		return
	}
	name := "<unknown>"
	if cmd != nil {
		name = cmd.Name
	}
	if c.w.Buf[0] == '-' {
		msg := strings.TrimRight(string(c.w.Buf[1:]), "\r\n")
		c.srv.Warnf("== CRITICAL == This master is sending an error to its replica: '%s' after processing the command '<unknown>'", msg)
	}
	c.srv.Warnf("Replica generated a reply to command '%s', disconnecting it: %s", name, c.infoLine())
	c.w.Buf = c.w.Buf[:0]
	c.kill()
}

// ---- WAIT ----

// checkWaits answers the WAIT clients whose offset enough replicas acked.
func (s *Server) checkWaits() {
	r := &s.repl
	r.lock()
	if len(r.waits) == 0 {
		r.unlock()
		return
	}
	keep := r.waits[:0]
	var done []*waitReq
	for _, wr := range r.waits {
		if r.m.AckedLocked(wr.off) >= wr.n {
			done = append(done, wr)
		} else {
			keep = append(keep, wr)
		}
	}
	r.waits = keep
	r.unlock()
	for _, wr := range done {
		s.finishWait(wr)
	}
}

func (s *Server) finishWait(wr *waitReq) {
	r := &s.repl
	r.lock()
	if wr.done {
		r.unlock()
		return
	}
	wr.done = true
	n := r.m.AckedLocked(wr.off)
	for i, x := range r.waits {
		if x == wr {
			r.waits = append(r.waits[:i], r.waits[i+1:]...)
			break
		}
	}
	r.unlock()
	if wr.timer != nil {
		wr.timer.Stop()
	}
	s.blocking.mu.Lock()
	w := s.blocking.byClient[wr.c]
	s.blocking.mu.Unlock()
	if w != nil {
		s.blocking.finish(w, []byte(":"+strconv.FormatInt(n, 10)+"\r\n"))
	}
}

// waitReplicas is WAIT with replicas: the count of replicas that acked
// the client's offset, at once when enough did, else when they do or the
// timeout passes.
func (c *Client) waitReplicas(numreplicas, timeout int64) bool {
	s := c.srv
	r := &s.repl
	r.lock()
	if r.m.NumReplicasLocked() == 0 && r.m.Backlog() == nil {
		r.unlock()
		return false
	}
	acked := r.m.AckedLocked(c.woff)
	if acked >= numreplicas || !c.canBlock() {
		r.unlock()
		c.w.Int(acked)
		return true
	}
	wr := &waitReq{c: c, off: c.woff, n: numreplicas}
	r.waits = append(r.waits, wr)
	// Ask the replicas for an ACK now (unless writes are paused: the
	// GETACK would change the offsets a paused failover compares).
	if s.pause.typ.Load() == pauseOff {
		r.feedLocked(-1, bargs("REPLCONF", "GETACK", "*"))
	}
	r.unlock()
	c.blockWith(nil, blockList, 0, nil, []byte(":0\r\n"))
	if timeout > 0 {
		wr.timer = time.AfterFunc(time.Duration(timeout)*time.Millisecond, func() { s.finishWait(wr) })
	}
	return true
}

// ---- ROLE and INFO ----

// roleCommand is ROLE.
func roleCommand(c *Client, _ [][]byte) {
	s := c.srv
	r := &s.repl
	if l := s.replLink(); l != nil {
		c.w.Array(5)
		c.w.BulkString("slave")
		c.w.BulkString(l.Host)
		c.w.Int(int64(l.Port))
		state := l.State().RoleName()
		if r.loading.Load() != loadingNone {
			state = "sync"
		}
		c.w.BulkString(state)
		off := int64(-1)
		if l.State() == repl.StateConnected {
			off = s.replicaOffset()
		}
		c.w.Int(off)
		return
	}
	r.lock()
	defer r.unlock()
	c.w.Array(3)
	c.w.BulkString("master")
	c.w.Int(r.m.Offset)
	online := r.m.OnlineLocked()
	c.w.Array(len(online))
	for _, rp := range online {
		c.w.Array(3)
		c.w.BulkString(rp.IP)
		c.w.BulkString(strconv.Itoa(rp.Port))
		c.w.BulkString(strconv.FormatInt(rp.AckOffset(), 10))
	}
}

// infoReplication writes INFO's replication section.
func (s *Server) infoReplication(f func(format string, args ...any)) {
	r := &s.repl
	if l := s.replLink(); l != nil {
		s.infoReplica(f, l)
	} else {
		f("role:master")
	}
	good := s.cfg.MinReplicas.Load() != 0 && s.cfg.MinReplicasLag.Load() != 0
	fo := s.failoverState()
	r.lock()
	defer r.unlock()
	r.m.InfoLocked(f, r.good.Load(), good, fo, s.backlogSize())
}

// replMemory returns the replication buffer's memory: in all (INFO's
// mem_total_replication_buffers), the backlog's share
// (mem_replication_backlog) and the replicas' share (counted in
// mem_clients_slaves).
func (s *Server) replMemory() (total, backlog, replicas int64) {
	return s.repl.m.Memory(s.backlogSize())
}

// readOnlyReplicaFor reports whether writes by c are refused because this
// server is a read-only replica (c is not its master's stream).
func (s *Server) readOnlyReplicaFor(c *Client) bool {
	return s.repl.flags.Load()&replReadOnly != 0 && !c.replMaster && s.cfg.Get("replica-read-only") == "yes"
}

// staleReplica refuses a command on a replica whose link to its master is
// down when replica-serve-stale-data is no, as Redis does (MASTERDOWN):
// commands without the stale flag, and EXEC when it queued any such
// command. It reports whether it refused.
func (c *Client) staleReplica(cmd *Command) bool {
	if c.replMaster || c.srv.cfg.Get("replica-serve-stale-data") != "no" {
		return false
	}
	if l := c.srv.replLink(); l == nil || l.State() == repl.StateConnected {
		return false
	}
	if cmd.Flags&cmdspec.Stale != 0 && (cmd.Name != "exec" || !c.txQueuedWithout(cmdspec.Stale)) {
		return false
	}
	c.rejectCmd(cmd, "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")
	return true
}

// readOnlyReplica refuses a write from a normal client on a read-only
// replica; it reports whether it did.
func (c *Client) readOnlyReplica(cmd *Command) bool {
	if c.replMaster || c.srv.cfg.Get("replica-read-only") != "yes" {
		return false
	}
	if cmd.Flags&cmdspec.Write == 0 && (cmd.Name != "exec" || !c.txQueued(cmdspec.Write)) {
		return false
	}
	c.rejectCmd(cmd, "READONLY You can't write against a read only replica.")
	return true
}

// changeReplID starts a new replication history (DEBUG CHANGE-REPL-ID).
func (s *Server) changeReplID() {
	r := &s.repl
	r.lock()
	r.m.NewHistoryLocked()
	r.unlock()
}

// replicateRaw feeds a command to the replicas as it is (DEBUG REPLICATE).
func (s *Server) replicateRaw(args [][]byte) {
	r := &s.repl
	r.lock()
	if r.link == nil {
		r.writeLocked(resp.AppendCommand(nil, args...))
	}
	r.unlock()
}

// ---- the replication AUX fields of RDB files ----

// replSaveInfo returns the replication AUX fields for an RDB cut now (the
// exclusive lock is held), nil when this server is in no replication
// chain (rdbPopulateSaveInfo): the stream's id, its offset, and the
// database its last command was in, so a server restarted from the file
// can continue the stream (as a master, with replicas; as a replica, with
// its master).
func (s *Server) replSaveInfo() *persist.ReplAux {
	r := &s.repl
	r.lock()
	defer r.unlock()
	switch {
	case r.link == nil && r.m.Backlog() != nil:
		return &persist.ReplAux{ID: r.m.ID, Offset: r.m.Offset, StreamDB: max(r.m.SelectedDB(), 0)}
	case r.link != nil && (r.mc != nil || r.cachedID != ""):
		db := 0
		if r.mc != nil {
			db = r.mc.dbi
		}
		return &persist.ReplAux{ID: r.m.ID, Offset: r.m.Offset, StreamDB: db}
	}
	return nil
}

// replLoadBegin prepares loading the RDB at start-up: a master makes a
// backlog, where the keys found expired go as DELs.
func (s *Server) replLoadBegin() {
	r := &s.repl
	r.lock()
	r.loadID, r.loadOffset, r.loadDB = "", -1, -1
	if r.link == nil {
		r.m.RebaseLocked(0, s.backlogSize())
		r.updateFeed()
		r.loadFeeding = true
	}
	r.unlock()
}

// replLoadAux notes a replication AUX field of the RDB being loaded. The
// AUX fields come before the keys: a master's backlog is placed at the
// file's offset at once, so the DELs of expired keys follow it.
func (s *Server) replLoadAux(k, v string) {
	r := &s.repl
	r.lock()
	defer r.unlock()
	switch strings.ToLower(k) {
	case "repl-id":
		if len(v) == repl.IDLen {
			r.loadID = v
		}
	case "repl-offset":
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			r.loadOffset = n
			if b := r.m.Backlog(); r.loadFeeding && b != nil && b.Histlen() == 0 {
				r.m.RebaseLocked(n, s.backlogSize())
			}
		}
	case "repl-stream-db":
		if n, err := strconv.Atoi(v); err == nil {
			r.loadDB = n
		}
	}
}

// replLoadExpired feeds the deletion of a key found expired at load.
func (s *Server) replLoadExpired(dbi int, key []byte) {
	r := &s.repl
	r.lock()
	if r.loadFeeding && r.m.Backlog() != nil {
		cmd := "DEL"
		if s.cfg.Get("lazyfree-lazy-expire") == "yes" {
			cmd = "UNLINK"
		}
		r.feedLocked(dbi, [][]byte{[]byte(cmd), key})
	}
	r.unlock()
}

// replLoadEnd applies what the RDB said of the replication stream
// (loadDataFromDisk): a replica continues it as its cached master; a
// master keeps it as its second id, so its replicas may continue, with
// the backlog of what expired meanwhile. Without it a master drops the
// backlog.
func (s *Server) replLoadEnd() {
	r := &s.repl
	r.lock()
	defer r.unlock()
	r.loadFeeding = false
	valid := r.loadID != "" && r.loadOffset >= 0 && r.loadDB >= 0
	switch {
	case valid && r.link != nil:
		r.m.ID = r.loadID
		r.m.Offset = r.loadOffset
		r.cachedID = r.loadID
		mc := &Client{srv: s, slot: s.goSlot, fd: -1, authed: true, replMaster: true, created: time.Now(), dbi: min(r.loadDB, s.ks.NumDBs()-1)}
		mc.w.Proto = 2
		r.mc = mc
	case valid:
		r.m.ID2 = r.loadID
		r.m.Offset2 = r.loadOffset + 1
	case r.link == nil:
		r.freeBacklogLocked()
		r.m.Offset = 0
	}
}
