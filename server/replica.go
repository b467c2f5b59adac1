package server

import (
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/repl"
	"github.com/sluicedb/sluice/store"
)

// Replication, replica side, after Redis 7.0's replicaof and
// syncWithMaster. The link to the master (repl.Link) connects, shakes
// hands and asks to continue where this server's stream is (PSYNC with
// the cached master: its replication id and offset). A full sync's
// payload is loaded as repl-diskless-load says (repl.Master.LoadFullSync,
// with linkHost as its Loader). Then the master's stream is applied by
// the master's client (flags M in CLIENT LIST) and passed on, byte for
// byte, to this server's own backlog and replicas, so they keep the
// master's offsets.
//
// Keys here expire when the master deletes them: clients see a key past
// its expiry as absent, the master's stream sees it as it is. Keys that
// clients write on a writable replica with an expiry expire here
// (replicaKeysCron).

// replLink returns the link to the master, nil when this is a master.
func (s *Server) replLink() *repl.Link {
	if s.repl.flags.Load()&replReadOnly == 0 {
		return nil
	}
	return s.repl.m.Link()
}

// REPLICAOF host port | NO ONE (and SLAVEOF).
func replicaofCommand(c *Client, args [][]byte) {
	s := c.srv
	if c.clusterNotAllowed("ERR REPLICAOF not allowed in cluster mode.") {
		return
	}
	if s.failoverState() != repl.FailoverNone {
		c.w.Error("ERR REPLICAOF not allowed while failing over.")
		return
	}
	if eq(args[1], "no") && eq(args[2], "one") {
		if s.replLink() != nil {
			s.promote()
			s.Logf("MASTER MODE enabled (user request from '%s')", c.infoLine())
		}
		c.w.OK()
		return
	}
	if c.replica.Load() != nil {
		c.w.Error("ERR Command is not valid when client is a replica.")
		return
	}
	port, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil || port < 0 || port > 65535 {
		c.w.Error("ERR Invalid master port")
		return
	}
	if l := s.replLink(); l != nil && strings.EqualFold(l.Host, string(args[1])) && l.Port == int(port) {
		s.Logf("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.")
		c.w.Simple("OK Already connected to specified master")
		return
	}
	s.replicaOf(string(args[1]), int(port), false)
	s.Logf("REPLICAOF %s:%d enabled (user request from '%s')", args[1], port, c.infoLine())
	c.w.OK()
}

// killMasterLink is CLIENT KILL addr naming the master's link when its
// client was not found: the link to the master at addr is dropped (it
// reconnects); 1 when there was one.
func (s *Server) killMasterLink(addr string) int {
	l := s.replLink()
	if l == nil || l.Addr() != addr || l.State() == repl.StateConnect {
		return 0
	}
	l.Drop()
	return 1
}

// replicaOf makes the server a replica of host:port
// (replicationSetMaster). Its replicas stay: they may continue with it
// once it knows the new master's stream.
//
// atStart: replicaof is in the configuration the server starts with. As
// with redis-server, nothing is logged then (the server's log is not
// open yet: the lines went to standard error, which Redis's test harness
// reads as a failure), and the server's own history is not what it asks
// its master to continue: an RDB file loaded at start says what is
// (Master.LoadEndLocked), else it asks for a full sync.
func (s *Server) replicaOf(host string, port int, atStart bool) {
	r := &s.repl
	old := s.replicaStop()
	h := &linkHost{s: s}
	l := repl.NewLink(h, host, port)
	h.l = l
	r.lock()
	if old == nil && !atStart {
		r.m.CacheMyselfLocked()
		r.mc = nil
	}
	r.m.SetLinkLocked(l)
	r.flags.Or(replReadOnly)
	r.unlock()
	s.disconnectBlocked()
	s.ks.ExpiryPaused.Store(true) // a replica's keys expire when its master says so
	if err := s.cfg.ApplyOOMScore(true); err != nil {
		s.Warnf("Unable to write oom_score_adj: %v", err)
	}
	if !atStart {
		s.Logf("Connecting to MASTER %s:%d", host, port)
		l.Announced = true
	}
	go func() {
		// The link starts once the server listens (its port is announced).
		for len(s.Addrs()) == 0 && !l.Stopped() {
			select {
			case <-s.stopCh:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		l.Run()
	}()
}

// disconnectBlocked ends the clients blocked on keys, with -UNBLOCK, as a
// master turning replica does (disconnectAllBlockedClients).
func (s *Server) disconnectBlocked() {
	s.blocking.mu.Lock()
	var ws []*waiter
	for _, w := range s.blocking.byClient {
		if w.cmd != nil {
			ws = append(ws, w)
		}
	}
	s.blocking.mu.Unlock()
	for _, w := range ws {
		s.blocking.finish(w, []byte("-UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)\r\n"))
	}
}

// replicaStop ends the link to the master, if any, and returns it.
func (s *Server) replicaStop() *repl.Link {
	r := &s.repl
	r.lock()
	l := r.m.SetLinkLocked(nil)
	r.flags.And(^uint32(replReadOnly))
	r.unlock()
	if l == nil {
		return nil
	}
	l.StopAsync()
	if s.pause.typ.Load() == pauseOff {
		s.ks.ExpiryPaused.Store(false)
	}
	return l
}

// promote is REPLICAOF NO ONE (replicationUnsetMaster): the data stays,
// the master's history becomes the second replication id, and replicas
// reconnect to learn the new one.
func (s *Server) promote() {
	l := s.replicaStop()
	if l == nil {
		return
	}
	r := &s.repl
	r.lock()
	r.mc = nil
	r.m.PromoteLocked()
	r.createBacklogLocked()
	r.unlock()
	r.m.KillReplicas()
	if err := s.cfg.ApplyOOMScore(false); err != nil {
		s.Warnf("Unable to write oom_score_adj: %v", err)
	}
}

// replicaCron is replicationCron's replica half; runs once a second.
func (s *Server) replicaCron() {
	l := s.replLink()
	if l == nil {
		return
	}
	s.replicaSendAck()
	if !s.ks.ExpiryPaused.Load() && s.pause.typ.Load() == pauseOff {
		s.ks.ExpiryPaused.Store(true) // replicas wait for their master's DELs
	}
	s.replicaKeysCron()
}

// replicaSendAck tells the master the offset applied.
func (s *Server) replicaSendAck() {
	if l := s.replLink(); l != nil {
		l.SendAck(s.replicaOffset())
	}
}

// replicaOffset is the master's offset applied here.
func (s *Server) replicaOffset() int64 {
	return s.repl.m.ReplicaOffset()
}

// linkHost is the server as its link to the master sees it. A link
// that was replaced (REPLICAOF) while it worked changes nothing.
type linkHost struct {
	s *Server
	l *repl.Link
}

// current reports whether h's link is the server's link.
func (h *linkHost) current() bool {
	r := &h.s.repl
	r.lock()
	defer r.unlock()
	return r.m.LinkLocked() == h.l
}

func (h *linkHost) Logf(format string, args ...any)  { h.s.Logf(format, args...) }
func (h *linkHost) Warnf(format string, args ...any) { h.s.Warnf(format, args...) }

func (h *linkHost) LinkConfig() repl.LinkConfig {
	s := h.s
	cfg := repl.LinkConfig{Password: s.cfg.Get("masterauth"), User: s.cfg.Get("masteruser"), AnnounceIP: s.cfg.Get("replica-announce-ip"), Timeout: s.replTimeout()}
	cfg.ListeningPort = s.cfg.Get("port")
	if addrs := s.Addrs(); len(addrs) > 0 {
		if ta, ok := addrs[0].(*net.TCPAddr); ok {
			cfg.ListeningPort = strconv.Itoa(ta.Port)
		}
	}
	if tp := s.cfg.Get("tls-port"); tp != "0" && s.cfg.Get("tls-replication") == "yes" {
		cfg.ListeningPort = tp // the port a replica over TLS is reached on, as Redis announces
	}
	if ap := s.cfg.Get("replica-announce-port"); ap != "" && ap != "0" {
		cfg.ListeningPort = ap
	}
	return cfg
}

func (h *linkHost) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	s := h.s
	conn, err := repl.DialTCP(addr, timeout, s.cfg.Get("bind-source-addr"), s.cfg.Get("repl-disable-tcp-nodelay") != "yes")
	if err != nil || s.cfg.Get("tls-replication") != "yes" {
		return conn, err
	}
	return s.dialTLS(conn, timeout)
}

func (h *linkHost) PsyncFrom() (string, int64) { return h.s.repl.m.PsyncFrom() }

func (h *linkHost) FailingOver() bool { return h.s.failoverState() == repl.FailoverInProgress }

func (h *linkHost) PsyncReply(rep repl.PsyncReply) bool {
	s := h.s
	if !h.current() {
		return false
	}
	if s.failoverState() == repl.FailoverInProgress {
		if rep.Kind == repl.PsyncContinue || rep.Kind == repl.PsyncFull {
			s.failoverDone()
		} else {
			s.abortFailover("Failover target rejected psync request")
			return false
		}
	}
	return true
}

// Continued: the master continues this server's stream; replicas
// reconnect to learn a new replication id.
func (h *linkHost) Continued(id string) {
	r := &h.s.repl
	r.lock()
	if r.m.LinkLocked() != h.l {
		r.unlock()
		return
	}
	changed := r.m.ResumeLocked(id)
	r.createBacklogLocked()
	r.unlock()
	if changed {
		r.m.KillReplicas()
	}
}

func (h *linkHost) Connected(conn net.Conn) {
	s := h.s
	r := &s.repl
	addr := conn.RemoteAddr().String()
	mc := s.newClient(s.goSlot, addr, conn.LocalAddr().String(), false, func(c *Client) {
		c.replMaster = true
		c.authed = true
		c.killHook = func() {
			if l := s.replLink(); l != nil {
				l.Drop()
			}
		}
	})
	if mc == nil {
		mc = s.masterClient(0, addr) // past maxclients: made anyway
	}
	r.lock()
	if r.m.LinkLocked() != h.l {
		r.unlock()
		s.removeClient(mc)
		return
	}
	if old := r.mc; old != nil {
		mc.dbi = old.dbi // the cached master's selected database
	}
	r.mc = mc
	r.m.StreamStartedLocked()
	r.unlock()
}

// masterClient is a master's client without a connection (a cached
// master's), its stream in database dbi.
func (s *Server) masterClient(dbi int, addr string) *Client {
	mc := &Client{srv: s, slot: s.goSlot, fd: -1, authed: true, addr: addr, replMaster: true, created: time.Now(), dbi: dbi}
	mc.w.Proto = 2
	return mc
}

func (h *linkHost) Disconnected(wasConnected bool) {
	s := h.s
	r := &s.repl
	r.lock()
	mc := r.mc
	cur := r.m.LinkLocked() == h.l
	r.unlock()
	if !wasConnected || mc == nil {
		return
	}
	if !cur {
		s.removeClient(mc)
		return
	}
	if mc.tx != nil {
		mc.discardTx()
	}
	mc.p.Reset()
	s.removeClient(mc)
	s.Logf("Caching the disconnected master state.")
}

// Apply runs one command of the master's stream with the master's
// client. Its reply is dropped; an error is logged, as Redis logs a
// replica's error to its master.
func (h *linkHost) Apply(args [][]byte) bool {
	s := h.s
	r := &s.repl
	r.lock()
	mc := r.mc
	if r.m.LinkLocked() != h.l {
		mc = nil
	}
	r.unlock()
	if mc == nil {
		return false
	}
	mc.lastIO.Store(time.Now().UnixMilli())
	cmd := mc.srv.lookupCommandOrOriginal(args[0])
	switch {
	case cmd == nil:
		mc.w.Error(unknownCommand(args))
	default:
		if cmd.sub != nil && len(args) >= 2 {
			if sub := cmd.lookupSub(args[1]); sub != nil {
				cmd = sub
			}
		}
		mc.lastCmd.Store(cmd)
		switch {
		case (cmd.Arity > 0 && cmd.Arity != len(args)) || len(args) < -cmd.Arity:
			mc.w.Error(errArity(cmd.Name))
		case mc.tx != nil && !isTxControl(cmd):
			mc.queue(cmd, args)
		default:
			for s.pauseHolds(mc, cmd, args) && !h.l.Stopped() {
				time.Sleep(5 * time.Millisecond) // CLIENT PAUSE holds the master's writes back
			}
			if cmd.Name == "del" || cmd.Name == "unlink" {
				s.removeExpiredKeys(mc, args[1:])
			}
			mc.call(cmd, args)
		}
	}
	if b := mc.w.Buf; len(b) > 0 && b[0] == '-' {
		name := "<unknown>"
		if cmd != nil {
			name = cmd.Name
		}
		msg := strings.TrimRight(string(b[1:]), "\r\n")
		s.Warnf("== CRITICAL == This replica is sending an error to its master: '%s' after processing the command '%s'", msg, name)
		r.m.LogLatestBacklog()
	}
	mc.w.Buf = mc.w.Buf[:0]
	mc.mark = 0
	return mc.tx != nil
}

// removeExpiredKeys removes the keys of a DEL from the master that are
// past their expiry here (kept until the master said so).
func (s *Server) removeExpiredKeys(mc *Client, keys [][]byte) {
	ks := s.ks
	ks.Lock.RLock(mc.slot)
	db := mc.DB()
	for _, k := range keys {
		i := store.ShardOf(k)
		db.LockShard(i)
		db.RemoveIfExpired(k)
		db.UnlockShard(i)
	}
	ks.Lock.RUnlock(mc.slot)
}

// Applied passes applied stream bytes on to the backlog and the replicas.
func (h *linkHost) Applied(raw []byte) {
	r := &h.s.repl
	r.lock()
	if r.m.LinkLocked() != h.l {
	} else if r.m.Backlog() != nil {
		r.writeLocked(raw)
	} else {
		r.m.Offset += int64(len(raw))
	}
	r.unlock()
}

// FullSync loads the master's payload (repl's load.go), with h as the
// Loader.
func (h *linkHost) FullSync(id string, offset int64, hdr repl.PayloadHeader, payload io.Reader) error {
	return h.s.repl.m.LoadFullSync(h, id, offset, hdr, payload)
}

func (h *linkHost) LoadConfig() repl.LoadConfig {
	cfg := h.s.cfg
	delay, _ := strconv.ParseInt(cfg.Get("key-load-delay"), 10, 64)
	wd, _ := strconv.Atoi(cfg.Get("watchdog-period"))
	every, _ := strconv.ParseInt(cfg.Get("loading-process-events-interval-bytes"), 10, 64)
	return repl.LoadConfig{Mode: cfg.Get("repl-diskless-load"), DBFilename: cfg.Get("dbfilename"), Checksum: cfg.Get("rdbchecksum") != "no" && !h.s.skipChecksum.Load(), KeyDelay: delay, Watchdog: time.Duration(max(wd, 0)) * time.Millisecond, EventsEvery: every}
}

func (h *linkHost) Current() bool { return h.current() }
func (h *linkHost) NumDBs() int   { return h.s.ks.NumDBs() }

// Detach: this server's history ends; its replicas must sync again, and
// its backlog is of no use (replicationAttachToNewMaster).
func (h *linkHost) Detach() {
	r := &h.s.repl
	r.lock()
	r.m.ForgetMasterLocked()
	r.mc = nil
	r.freeBacklogLocked()
	r.unlock()
	r.m.KillReplicas()
}

// Loaded makes the loaded stream this server's history, with a new
// backlog.
func (h *linkHost) Loaded(id string, offset int64, db int) error {
	mc := h.s.masterClient(db, "")
	r := &h.s.repl
	r.lock()
	defer r.unlock()
	if r.m.LinkLocked() != h.l {
		return errors.New("replaced")
	}
	r.m.SyncedLocked(id, offset)
	r.mc = mc
	r.freeBacklogLocked()
	r.createBacklogLocked()
	return nil
}

// StopAOF stops the AOF for a load; it starts again after it, with a
// rewrite of the new dataset (Redis's restartAOFAfterSYNC).
func (h *linkHost) StopAOF() func() {
	s := h.s
	if s.pe.AOFState() == persist.AOFOff {
		return nil
	}
	s.pe.StopAppendOnly()
	s.updateEffects()
	return func() {
		if err := s.pe.StartAppendOnly(); err != nil {
			s.Warnf("Failed enabling the AOF after successful master synchronization!")
		}
		s.updateEffects()
	}
}

// DatasetEmpty reports whether no database holds a key.
func (h *linkHost) DatasetEmpty() bool {
	ks := h.s.ks
	for i := 0; i < ks.NumDBs(); i++ {
		if ks.DB(i).Size() > 0 {
			return false
		}
	}
	return true
}

// Flush empties the dataset and the function libraries.
func (h *linkHost) Flush() {
	s := h.s
	s.ks.Lock.Lock()
	for i := 0; i < s.ks.NumDBs(); i++ {
		s.ks.DB(i).Flush()
		s.ks.DB(i).DropScanSnapshots()
	}
	s.flushFunctions()
	s.ks.Lock.Unlock()
}

// AddKey adds a key of the master's payload to the dataset, or to the
// one aside.
func (h *linkHost) AddKey(aside *store.Keyspace, rec *rdb.Record) bool {
	s := h.s
	e := s.entryFromRDB(rec.Value)
	if e == nil {
		return false
	}
	var exp int64
	if rec.HasExpire {
		exp = max(rec.Expire, 1)
	}
	ks := aside
	if ks == nil {
		ks = s.ks
		ks.Lock.Lock()
		defer ks.Lock.Unlock()
	}
	db := ks.DB(rec.DB)
	db.Delete(rec.Key)
	db.AddExpire(rec.Key, e, exp)
	return true
}

func (h *linkHost) LoadFunction(code []byte) error {
	s := h.s
	s.ks.Lock.Lock()
	defer s.ks.Lock.Unlock()
	_, err := s.lua.eng.LoadLibrary(string(code), true)
	return err
}

func (h *linkHost) NewAside() *store.Keyspace {
	return store.New(h.s.ks.NumDBs(), h.s.ks.Lock.Slots())
}

// SwapAside puts a dataset loaded aside in place, with its libraries.
func (h *linkHost) SwapAside(aside *store.Keyspace, funcs []string) {
	s := h.s
	s.ks.Lock.Lock()
	s.ks.SwapDatabases(aside)
	s.flushFunctions()
	for _, code := range funcs {
		if _, err := s.lua.eng.LoadLibrary(code, true); err != nil {
			s.Warnf("Failed loading library from the master: %v", err)
		}
	}
	s.ks.Lock.Unlock()
}

// loadingRefused refuses a command while a replica loads its master's
// payload: -LOADING for commands not allowed while loading, and while
// loading aside (async) for those not allowed then.
func (c *Client) loadingRefused(cmd *Command, args [][]byte) bool {
	return c.srv.repl.loading.Load() != repl.LoadingNone && c.loadingRefusedSlow(cmd, args)
}

func (c *Client) loadingRefusedSlow(cmd *Command, args [][]byte) bool {
	switch c.srv.repl.loading.Load() {
	case loadingSync:
		if cmd.Flags&cmdspec.Loading != 0 && !denyLoadingConfig(cmd, args) {
			return false
		}
		// Redis loads on its main thread, answering what waits only
		// every loading-process-events-interval-bytes: the command waits
		// for that point, or runs once the load is over.
		if p := c.srv.repl.m.LoadPoint(); p != nil {
			<-p
			if c.srv.repl.loading.Load() == repl.LoadingNone {
				return false
			}
		}
	case loadingAsync:
		if cmd.Flags&cmdspec.NoAsyncLoading == 0 && !denyLoadingConfig(cmd, args) {
			return false
		}
	default:
		return false
	}
	c.rejectCmd(cmd, "LOADING Redis is loading the dataset in memory")
	return true
}

// denyLoadingConfig reports whether cmd is a CONFIG SET of a directive
// that may not change while a dataset loads (DENY_LOADING_CONFIG).
func denyLoadingConfig(cmd *Command, args [][]byte) bool {
	if cmd.Name != "config|set" {
		return false
	}
	for i := 2; i+1 < len(args); i += 2 {
		switch strings.ToLower(string(args[i])) {
		case "appendonly", "repl-diskless-load", "dir":
			return true
		}
	}
	return false
}

// ---- keys written on a writable replica ----

// replicaKeysCron removes the keys clients wrote on a writable replica
// with an expiry once they expire (Redis's expireSlaveKeys): the master
// never sends a DEL for them.
func (s *Server) replicaKeysCron() {
	w := &s.repl.written
	if w.Len() == 0 {
		return
	}
	s.ks.Lock.RLock(s.goSlot)
	now := s.ks.Now()
	w.Sweep(func(dbi int, key []byte) bool {
		db := s.ks.DB(dbi)
		i := store.ShardOf(key)
		db.LockShard(i)
		defer db.UnlockShard(i)
		exp := int64(0)
		if e := db.PeekRaw(key); e != nil {
			exp = db.ExpireOf(key, e)
		}
		if exp != 0 && exp <= now {
			db.RemoveIfExpired(key)
		}
		return exp > now
	})
	s.ks.Lock.RUnlock(s.goSlot)
}

// noteReplicaWrite remembers the keys a client wrote on a writable
// replica that have an expiry now, to expire them here. The command's
// locks are held.
func (s *Server) noteReplicaWrite(c *Client, cmd *Command, args [][]byte) {
	var kp [8]cmdspec.Key
	keys := cmd.Keys(args, kp[:0], cmdspec.Access)
	if len(keys) == 0 {
		return
	}
	db := c.DB()
	for _, k := range keys {
		p := int(k.Pos)
		if p >= len(args) {
			continue
		}
		if e := db.PeekRaw(args[p]); e != nil && db.ExpireOf(args[p], e) != 0 {
			s.repl.written.Add(c.dbi, args[p])
		}
	}
}
