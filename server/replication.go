package server

import (
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

// A replica's loading states (repl.Master.Loading).
const (
	loadingSync  = repl.LoadingSync
	loadingAsync = repl.LoadingAsync
)

// replState flags.
const (
	replFeed     = 1 << iota // a backlog exists: write commands feed the stream
	replReadOnly             // this server is a replica: normal clients may not write
)

type replState struct {
	flags atomic.Uint32
	srv   *Server
	// m is the stream's state, and the replica side's (the link to the
	// master, the cached master's id, WAIT's requests); its lock guards
	// it and mc.
	m    *repl.Master
	good atomic.Int64
	// mc is the master's client on a replica (replica.go), kept while
	// its state is cached.
	mc *Client
	// written are keys clients wrote on a writable replica with an
	// expiry: they expire here (replicaKeysCron).
	written repl.WrittenKeys
	// loading is &m.Loading: a replica loading its master's payload.
	loading *atomic.Int32

	fo repl.Failover

	// startMu serializes starting full syncs to disk (a BGSAVE each).
	startMu sync.Mutex
}

// replicaConn is the server's side of a replica: its client.
type replicaConn struct {
	*repl.Replica
	c *Client
}

// clientConn is a client as repl.Master drives a replica's connection.
type clientConn struct{ c *Client }

func (k clientConn) Deliver(b []byte) { k.c.deliver(b) }
func (k clientConn) Signal()          { k.c.signal() }
func (k clientConn) Kill()            { k.c.kill() }
func (k clientConn) Queued() int64    { return k.c.outputMem() }
func (k clientConn) Closing() bool    { return k.c.closeASAP.Load() }
func (k clientConn) Bulk(on bool)     { k.c.setBulk(on) }

// wireReplication sets up the replication state when the server is made.
func (s *Server) wireReplication() {
	r := &s.repl
	r.srv = s
	r.m = repl.NewMaster()
	r.m.Log = s
	r.loading = &r.m.Loading
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
//
// It runs on the server cron's ticks (replTick), on a goroutine of its
// own: once a second it waits for the keyspace, which the cron must not.
func (s *Server) replCron() {
	r := &s.repl
	var ticks int
	for {
		select {
		case <-s.stopCh:
			s.replicaStop()
			return
		case <-s.replTick:
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
	master := r.m.LinkLocked() == nil
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
	a.Run(s)
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
	r.m.ForgetHandshake(c)
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
	r.m.CheckWaits()
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
	if h := r.m.HandshakeOf(c); h != nil && h.RDBOnly && h.FunctionsOnly {
		s.sendFunctionsRDB(c, psync)
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
		if line, ok := r.m.TryPartial(rc.Replica, string(args[1]), off); ok {
			c.w.Buf = append(c.w.Buf, line...)
			c.replica.Store(rc)
			c.signal()
			return
		}
	} else {
		rc.PrePSYNC = true
	}
	r.m.SyncFull.Add(1)
	r.lock()
	c.replica.Store(rc)
	if r.m.AttachLocked(rc.Replica, s.backlogSize(), r.m.LinkLocked() != nil) {
		s.Logf("Replication backlog created, my new replication IDs are '%s' and '%s'", r.m.ID, r.m.ID2)
	}
	r.updateFeed()
	r.unlock()
	s.queueFullSync(rc)
}

// pendingReplica is the replica record for c, from what REPLCONF said.
func (c *Client) pendingReplica() *replicaConn {
	c.replicaOut.Store(true) // its output counts in mem_clients_slaves
	return &replicaConn{Replica: repl.NewReplica(clientConn{c}, c.addr, c.srv.repl.m.HandshakeOf(c)), c: c}
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
			r.m.Ack(rc.Replica, off)
			if rc.Streaming() {
				c.signal()
			}
			r.m.CheckWaits()
			s.updateFailover()
			if s.shutdownPending() && r.m.InSync() {
				s.finishShutdown()
			}
			return // no reply to an ACK
		case eq(opt, "getack"):
			if c.replMaster {
				s.replicaSendAck()
			}
			return
		default:
			if e := r.m.Handshake(c).Set(opt, val); e != "" {
				c.w.Error(e)
				return
			}
		}
	}
	c.w.OK()
}

// replicaExec runs a command a replica sent on its replication link. A
// replica may not touch the keyspace, and its connection carries the
// stream: a command that replies drops it (Redis's "Replica generated a
// reply").
func (c *Client) replicaExec(args [][]byte) {
	cmd := c.srv.lookupCommandOrOriginal(args[0])
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
	w := r.m.AddWaitLocked(c.woff, numreplicas, func(n int64) {
		s.blocking.mu.Lock()
		bw := s.blocking.byClient[c]
		s.blocking.mu.Unlock()
		if bw != nil {
			s.blocking.finish(bw, []byte(":"+strconv.FormatInt(n, 10)+"\r\n"))
		}
	})
	// Ask the replicas for an ACK now (unless writes are paused: the
	// GETACK would change the offsets a paused failover compares).
	if s.pause.typ.Load() == pauseOff {
		r.feedLocked(-1, bargs("REPLCONF", "GETACK", "*"))
	}
	r.unlock()
	c.blockWith(nil, blockList, 0, nil, []byte(":0\r\n"))
	if timeout > 0 {
		r.m.WaitTimeout(w, time.Duration(timeout)*time.Millisecond)
	}
	return true
}

// ---- ROLE and INFO ----

// roleCommand is ROLE.
func roleCommand(c *Client, _ [][]byte) {
	r := &c.srv.repl
	if li := r.m.LinkInfo(); li != nil {
		c.w.Array(5)
		c.w.BulkString("slave")
		c.w.BulkString(li.Host)
		c.w.Int(int64(li.Port))
		c.w.BulkString(li.State.RoleName())
		off := int64(-1)
		if li.State == repl.StateConnected {
			off = li.Offset
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
	if li := r.m.LinkInfo(); li != nil {
		li.Priority = s.cfg.Get("replica-priority")
		li.ReadOnly = s.cfg.Get("replica-read-only") == "yes"
		li.Announced = s.cfg.Get("replica-announced") != "no"
		li.Write(f, time.Now().UnixMilli())
	} else {
		f("role:master")
	}
	good := s.cfg.MinReplicas.Load() != 0 && s.cfg.MinReplicasLag.Load() != 0
	fo := s.failoverState()
	r.lock()
	mi := r.m.InfoLocked(r.good.Load(), good, fo, s.backlogSize())
	r.unlock()
	mi.Write(f)
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

// runningStale reports whether the server is a replica whose link to its
// master is down while replica-serve-stale-data is no (Redis's
// running_stale).
func (s *Server) runningStale() bool {
	if s.cfg.Get("replica-serve-stale-data") != "no" {
		return false
	}
	l := s.replLink()
	return l != nil && l.State() != repl.StateConnected
}

// staleReplica refuses a command on a replica whose link to its master is
// down when replica-serve-stale-data is no, as Redis does (MASTERDOWN):
// commands without the stale flag, and EXEC when it queued any such
// command. It reports whether it refused.
func (c *Client) staleReplica(cmd *Command) bool {
	if c.replMaster || !c.srv.runningStale() {
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
	if r.m.LinkLocked() == nil {
		r.writeLocked(resp.AppendCommand(nil, args...))
	}
	r.unlock()
}

// ---- the replication AUX fields of RDB files (repl's aux.go) ----

// replSaveInfo returns the replication AUX fields for an RDB cut now (the
// exclusive lock is held), nil when this server is in no replication
// chain.
func (s *Server) replSaveInfo() *persist.ReplAux {
	r := &s.repl
	r.lock()
	defer r.unlock()
	db := -1
	if r.mc != nil {
		db = r.mc.dbi
	}
	return r.m.SaveAuxLocked(db)
}

// replLoadBegin prepares loading the RDB at start-up: a master makes a
// backlog, where the keys found expired go as DELs.
func (s *Server) replLoadBegin() {
	r := &s.repl
	replica := !s.iAmMaster()
	r.lock()
	if r.m.LoadBeginLocked(s.backlogSize(), replica) {
		r.updateFeed()
	}
	r.unlock()
}

// replLoadAux notes a replication AUX field of the RDB being loaded.
func (s *Server) replLoadAux(k, v string) { s.repl.m.LoadAux(k, v, s.backlogSize()) }

// replLoadExpired feeds the deletion of a key found expired at load.
func (s *Server) replLoadExpired(dbi int, key []byte) {
	r := &s.repl
	r.lock()
	if r.m.LoadFeedingLocked() {
		cmd := "DEL"
		if s.cfg.Get("lazyfree-lazy-expire") == "yes" {
			cmd = "UNLINK"
		}
		r.feedLocked(dbi, [][]byte{[]byte(cmd), key})
	}
	r.unlock()
}

// replLoadEnd applies what the RDB said of the replication stream: a
// replica keeps its master's client cached, a master without it drops
// the backlog.
func (s *Server) replLoadEnd() {
	r := &s.repl
	replica := !s.iAmMaster()
	r.lock()
	defer r.unlock()
	if db := r.m.LoadEndLocked(replica); db >= 0 {
		r.mc = s.masterClient(min(db, s.ks.NumDBs()-1), "")
	} else if r.m.LinkLocked() == nil && r.m.Backlog() == nil {
		r.freeBacklogLocked()
	}
}
