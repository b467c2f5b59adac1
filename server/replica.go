package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
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
// payload is loaded as repl-diskless-load says: written to disk first
// (disabled), read straight from the socket into the emptied dataset
// (on-empty-db, when it is empty), or into a dataset aside that replaces
// the old one once whole (swapdb: clients go on reading the old one while
// the replication id is the master's). Then the master's stream is
// applied by the master's client (flags M in CLIENT LIST) and passed on,
// byte for byte, to this server's own backlog and replicas, so they keep
// the master's offsets.
//
// Keys here expire when the master deletes them: clients see a key past
// its expiry as absent, the master's stream sees it as it is. Keys that
// clients write on a writable replica with an expiry expire here
// (replicaKeysCron).

// Loading states (INFO loading and async_loading).
const (
	loadingNone = iota
	loadingSync
	loadingAsync
)

// replLink returns the link to the master, nil when this is a master.
func (s *Server) replLink() *repl.Link {
	if s.repl.flags.Load()&replReadOnly == 0 {
		return nil
	}
	s.repl.lock()
	defer s.repl.unlock()
	return s.repl.link
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
	if l == nil || net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) != addr || l.State() == repl.StateConnect {
		return 0
	}
	l.Drop()
	return 1
}

// replicaOf makes the server a replica of host:port
// (replicationSetMaster). Its replicas stay: they may continue with it
// once it knows the new master's stream.
func (s *Server) replicaOf(host string, port int, _ bool) {
	r := &s.repl
	old := s.replicaStop()
	r.lock()
	if old == nil {
		// A master turning replica: its own history is what it asks the
		// new master to continue (replicationCacheMasterUsingMyself).
		s.Logf("Before turning into a replica, using my own master parameters to synthesize a cached master: I may be able to synchronize with the new master with just a partial transfer.")
		r.cachedID = r.m.ID
		r.mc = nil
	}
	h := &linkHost{s: s}
	l := repl.NewLink(h, host, port)
	h.l = l
	r.link = l
	r.flags.Or(replReadOnly)
	r.unlock()
	s.disconnectBlocked()
	s.ks.ExpiryPaused.Store(true) // a replica's keys expire when its master says so
	s.Logf("Connecting to MASTER %s:%d", host, port)
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
	l := r.link
	r.link = nil
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
	r.cachedID = ""
	r.mc = nil
	r.m.ShiftIDLocked()
	s.Warnf("Setting secondary replication ID to %s, valid up to offset: %d. New replication ID is %s", r.m.ID2, r.m.Offset2, r.m.ID)
	r.createBacklogLocked()
	r.unlock()
	s.disconnectReplicas()
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
	r := &s.repl
	r.lock()
	defer r.unlock()
	return r.m.Offset
}

// replicaReadOffsets are INFO's slave_read_repl_offset and
// slave_repl_offset.
func (s *Server) replicaReadOffsets() (read, applied int64) {
	r := &s.repl
	r.lock()
	applied, base := r.m.Offset, r.readBase
	l := r.link
	r.unlock()
	if l == nil || l.State() != repl.StateConnected {
		return applied, applied
	}
	return base + l.ReadOffset(), applied
}

// infoReplica writes INFO replication's replica part.
func (s *Server) infoReplica(f func(format string, args ...any), l *repl.Link) {
	now := time.Now().UnixMilli()
	f("role:slave")
	f("master_host:%s", l.Host)
	f("master_port:%d", l.Port)
	st := l.State()
	if s.repl.loading.Load() != loadingNone {
		st = repl.StateTransfer
	}
	f("master_link_status:%s", map[bool]string{true: "up", false: "down"}[st == repl.StateConnected])
	last := int64(-1)
	if t := l.LastIO(); t != 0 && st == repl.StateConnected {
		last = (now - t) / 1000
	}
	f("master_last_io_seconds_ago:%d", last)
	f("master_sync_in_progress:%d", b2i(st == repl.StateTransfer))
	read, applied := s.replicaReadOffsets()
	f("slave_read_repl_offset:%d", read)
	f("slave_repl_offset:%d", applied)
	if st == repl.StateTransfer {
		total, got, lastIO := l.Sync()
		total = max(total, 0)
		perc := 0.0
		if total > 0 {
			perc = float64(got) / float64(total) * 100
		}
		f("master_sync_total_bytes:%d", total)
		f("master_sync_read_bytes:%d", got)
		f("master_sync_left_bytes:%d", total-got)
		f("master_sync_perc:%.2f", perc)
		f("master_sync_last_io_seconds_ago:%d", (now-lastIO)/1000)
	}
	if st != repl.StateConnected {
		since := int64(-1)
		if t := l.DownSince(); t != 0 {
			since = (now - t) / 1000
		}
		f("master_link_down_since_seconds:%d", since)
	}
	f("slave_priority:%s", s.cfg.Get("replica-priority"))
	f("slave_read_only:%d", b2i(s.cfg.Get("replica-read-only") == "yes"))
	f("replica_announced:%d", b2i(s.cfg.Get("replica-announced") != "no"))
}

// masterLinkState is what the cluster reads of the link: up, the unix ms
// of its last read, and of its going down.
func (s *Server) masterLinkState() (up bool, lastIO, downSince int64) {
	l := s.replLink()
	if l == nil {
		return false, 0, 0
	}
	return l.State() == repl.StateConnected, l.LastIO(), l.DownSince()
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
	return r.link == h.l
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
	d := net.Dialer{Timeout: timeout}
	if src := s.cfg.Get("bind-source-addr"); src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(s.cfg.Get("repl-disable-tcp-nodelay") != "yes")
	}
	if s.cfg.Get("tls-replication") == "yes" {
		return s.dialTLS(conn, timeout)
	}
	return conn, nil
}

func (h *linkHost) PsyncFrom() (string, int64) {
	r := &h.s.repl
	r.lock()
	defer r.unlock()
	if r.cachedID == "" {
		return "?", -1
	}
	return r.cachedID, r.m.Offset + 1
}

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

// Continued: the master continues this server's stream
// (replicationResurrectCachedMaster). A new replication id becomes ours,
// the old one the second; replicas reconnect to learn it.
func (h *linkHost) Continued(id string) {
	s := h.s
	r := &s.repl
	r.lock()
	if r.link != h.l {
		r.unlock()
		return
	}
	changed := id != "" && id != r.cachedID
	if changed {
		s.Warnf("Master replication ID changed to %s", id)
		r.m.ID2 = r.cachedID
		r.m.Offset2 = r.m.Offset + 1
		r.m.ID = id
		r.cachedID = id
	} else {
		r.m.ID = r.cachedID
	}
	r.createBacklogLocked()
	r.unlock()
	if changed {
		s.disconnectReplicas()
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
		// Past maxclients: the master's client is made anyway.
		mc = &Client{srv: s, slot: s.goSlot, fd: -1, authed: true, addr: addr, replMaster: true, created: time.Now()}
		mc.w.Proto = 2
	}
	r.lock()
	if r.link != h.l {
		r.unlock()
		s.removeClient(mc)
		return
	}
	if old := r.mc; old != nil {
		mc.dbi = old.dbi // the cached master's selected database
	}
	r.mc = mc
	r.cachedID = r.m.ID
	r.readBase = r.m.Offset
	r.unlock()
	if l := s.replLink(); l != nil {
		l.ResetReadOffset()
	}
}

func (h *linkHost) Disconnected(wasConnected bool) {
	s := h.s
	r := &s.repl
	r.lock()
	mc := r.mc
	cur := r.link == h.l
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
	if r.link != h.l {
		mc = nil
	}
	r.unlock()
	if mc == nil {
		return false
	}
	mc.lastIO.Store(time.Now().UnixMilli())
	cmd := lookupCommand(args[0])
	switch {
	case cmd == nil:
		mc.w.Error(unknownCommand(args))
	default:
		if cmd.sub != nil && len(args) >= 2 {
			if sub := cmd.lookupSub(args[1]); sub != nil {
				cmd = sub
			}
		}
		switch {
		case (cmd.Arity > 0 && cmd.Arity != len(args)) || len(args) < -cmd.Arity:
			mc.w.Error(errArity(cmd.Name))
		case mc.tx != nil && !isTxControl(cmd):
			mc.queue(cmd, args)
		default:
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
		s.logLatestBacklog()
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

// logLatestBacklog logs the end of the backlog (showLatestBacklog).
func (s *Server) logLatestBacklog() {
	r := &s.repl
	r.lock()
	var b []byte
	if buf := r.m.Backlog(); buf != nil && buf.Histlen() > 0 {
		b = buf.Bytes(max(buf.First(), buf.Offset()-127))
	}
	r.unlock()
	if len(b) > 0 {
		s.Warnf("Latest backlog is: '%s'", strconv.Quote(string(b)))
	}
}

// Applied passes applied stream bytes on to the backlog and the replicas.
func (h *linkHost) Applied(raw []byte) {
	r := &h.s.repl
	r.lock()
	if r.link != h.l {
	} else if r.m.Backlog() != nil {
		r.writeLocked(raw)
	} else {
		r.m.Offset += int64(len(raw))
	}
	r.unlock()
}

// attachToNewMaster: this server's history ends; its replicas must sync
// again, and its backlog is of no use (replicationAttachToNewMaster).
func (s *Server) attachToNewMaster() {
	r := &s.repl
	r.lock()
	r.cachedID = ""
	r.mc = nil
	r.freeBacklogLocked()
	r.unlock()
	s.disconnectReplicas()
}

// FullSync loads the master's payload.
func (h *linkHost) FullSync(id string, offset int64, hdr repl.PayloadHeader, payload io.Reader) error {
	s := h.s
	r := &s.repl
	mode := s.cfg.Get("repl-diskless-load")
	empty := s.datasetEmpty()
	diskless := mode == "swapdb" || mode == "on-empty-db" && empty
	target := "disk"
	if diskless {
		target = "parser"
	}
	if hdr.Size < 0 {
		s.Logf("MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to %s", target)
	} else {
		s.Logf("MASTER <-> REPLICA sync: receiving %d bytes from master to %s", hdr.Size, target)
	}
	if !h.current() {
		return errors.New("replaced")
	}
	if s.pe.AOFState() != persist.AOFOff {
		// The AOF stops for the load and starts again after it, with a
		// rewrite of the new dataset (Redis's restartAOFAfterSYNC).
		s.pe.StopAppendOnly()
		s.updateEffects()
		defer func() {
			if err := s.pe.StartAppendOnly(); err != nil {
				s.Warnf("Failed enabling the AOF after successful master synchronization!")
			}
			s.updateEffects()
		}()
	}
	var ld *replLoad
	var err error
	switch {
	case !diskless:
		ld, err = s.loadViaDisk(payload)
	case mode == "swapdb":
		r.lock()
		async := r.m.ID == id
		r.unlock()
		ld, err = s.loadAside(payload, async)
	default:
		s.attachToNewMaster()
		s.Logf("MASTER <-> REPLICA sync: Flushing old data")
		s.flushForLoad()
		s.Logf("MASTER <-> REPLICA sync: Loading DB in memory")
		ld, err = s.loadInPlace(payload, loadingSync)
		if err != nil {
			s.Warnf("Failed trying to load the MASTER synchronization DB from socket, check server logs.")
			s.flushForLoad()
		}
	}
	if err != nil {
		return err
	}
	mc := &Client{srv: s, slot: s.goSlot, fd: -1, authed: true, replMaster: true, created: time.Now(), dbi: ld.streamDB}
	mc.w.Proto = 2
	r.lock()
	if r.link != h.l {
		r.unlock()
		return errors.New("replaced")
	}
	r.m.ID = id
	r.m.ID2, r.m.Offset2 = repl.NoID, -1
	r.m.Offset = offset
	r.cachedID = id
	r.mc = mc
	r.freeBacklogLocked()
	r.createBacklogLocked()
	r.unlock()
	s.Logf("MASTER <-> REPLICA sync: Finished with success")
	return nil
}

// datasetEmpty reports whether no database holds a key.
func (s *Server) datasetEmpty() bool {
	for i := 0; i < s.ks.NumDBs(); i++ {
		if s.ks.DB(i).Size() > 0 {
			return false
		}
	}
	return true
}

// flushForLoad empties the dataset and the function libraries.
func (s *Server) flushForLoad() {
	s.ks.Lock.Lock()
	for i := 0; i < s.ks.NumDBs(); i++ {
		s.ks.DB(i).Flush()
		s.ks.DB(i).DropScanSnapshots()
	}
	s.flushFunctions()
	s.ks.Lock.Unlock()
}

// tempSeq tells apart the temporary files of loads in one process.
var tempSeq atomic.Int64

// loadViaDisk writes the payload to a temporary file, renames it over
// dbfilename and loads it (repl-diskless-load disabled).
func (s *Server) loadViaDisk(payload io.Reader) (*replLoad, error) {
	// Servers in one process share the working directory: the name is
	// the process's and this load's.
	tmp := fmt.Sprintf("temp-%d.%d.%d.rdb", time.Now().Unix(), os.Getpid(), tempSeq.Add(1))
	f, err := os.Create(tmp)
	if err != nil {
		s.Warnf("Opening the temp file needed for MASTER <-> REPLICA synchronization: %s", strerror(err))
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	_, err = io.Copy(bw, payload)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err != nil {
		os.Remove(tmp)
		s.Warnf("I/O error trying to sync with MASTER: %v", err)
		return nil, err
	}
	s.attachToNewMaster()
	// Opened before the rename: the load reads this payload even if
	// another server of the process renames its own over dbfilename.
	f, err = os.Open(tmp)
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	defer f.Close()
	name := s.cfg.Get("dbfilename")
	if err := os.Rename(tmp, name); err != nil {
		s.Warnf("Failed trying to rename the temp DB into %s in MASTER <-> REPLICA synchronization: %s", name, strerror(err))
		os.Remove(tmp)
		return nil, err
	}
	s.Logf("MASTER <-> REPLICA sync: Flushing old data")
	s.flushForLoad()
	s.Logf("MASTER <-> REPLICA sync: Loading DB in memory")
	ld, err := s.loadInPlace(bufio.NewReaderSize(f, 1<<20), loadingSync)
	if err != nil {
		s.Warnf("Failed trying to load the MASTER synchronization DB from disk, check server logs.")
		s.flushForLoad()
		return nil, err
	}
	return ld, nil
}

// loadAside loads the payload into a dataset aside and swaps it in once
// whole (swapdb). async: clients go on with the old dataset meanwhile
// (the master's replication id is ours); else they get -LOADING.
func (s *Server) loadAside(payload io.Reader, async bool) (*replLoad, error) {
	state := int32(loadingSync)
	if async {
		state = loadingAsync
	}
	s.Logf("MASTER <-> REPLICA sync: Loading DB in memory")
	tmp := store.New(s.ks.NumDBs(), s.ks.Lock.Slots())
	ld := &replLoad{s: s, ks: tmp}
	err := ld.run(payload, state)
	if err != nil {
		s.Warnf("Failed trying to load the MASTER synchronization DB from socket, check server logs.")
		s.Logf("MASTER <-> REPLICA sync: Discarding temporary DB in background")
		return nil, err
	}
	s.attachToNewMaster()
	s.Logf("MASTER <-> REPLICA sync: Swapping active DB with loaded DB")
	s.ks.Lock.Lock()
	s.ks.SwapDatabases(tmp)
	s.flushFunctions()
	for _, code := range ld.funcs {
		if _, err := s.lua.eng.LoadLibrary(code, true); err != nil {
			s.Warnf("Failed loading library from the master: %v", err)
		}
	}
	s.ks.Lock.Unlock()
	s.Logf("MASTER <-> REPLICA sync: Discarding old DB in background")
	return ld, nil
}

// loadInPlace loads the payload into the (emptied) dataset.
func (s *Server) loadInPlace(payload io.Reader, state int32) (*replLoad, error) {
	ld := &replLoad{s: s}
	if err := ld.run(payload, state); err != nil {
		return nil, err
	}
	return ld, nil
}

// replLoad loads a master's RDB: into ks when set (a dataset aside),
// else into the server's keyspace; function libraries are gathered for a
// dataset aside and loaded at once otherwise.
type replLoad struct {
	s        *Server
	ks       *store.Keyspace
	funcs    []string
	streamDB int
	loaded   int64
}

func (ld *replLoad) run(payload io.Reader, state int32) error {
	s := ld.s
	r := &s.repl
	r.loading.Store(state)
	defer r.loading.Store(loadingNone)
	if p, _ := strconv.Atoi(s.cfg.Get("watchdog-period")); p > 0 {
		// A load holds Redis's main thread: its software watchdog fires.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			t := time.NewTicker(time.Duration(p) * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					s.Warnf("--- WATCHDOG TIMER EXPIRED ---")
				}
			}
		}()
	}
	usec, _ := strconv.ParseInt(s.cfg.Get("key-load-delay"), 10, 64)
	delay := keyDelay{usec: usec}
	h := &rdb.Handler{
		Aux: func(k, v []byte) {
			switch strings.ToLower(string(k)) {
			case "repl-stream-db":
				n, _ := strconv.Atoi(string(v))
				if n >= 0 && n < s.ks.NumDBs() {
					ld.streamDB = n
				}
			case "redis-ver":
				s.Logf("Loading RDB produced by version %s", v)
			}
		},
		SelectDB: func(db int) error {
			if db >= s.ks.NumDBs() {
				return fmt.Errorf("FATAL: Data file was created with a Redis server configured to handle more than %d databases. Exiting", s.ks.NumDBs())
			}
			return nil
		},
		Function: func(code []byte) error {
			if ld.ks != nil {
				ld.funcs = append(ld.funcs, string(code))
				return nil
			}
			s.ks.Lock.Lock()
			defer s.ks.Lock.Unlock()
			_, err := s.lua.eng.LoadLibrary(string(code), true)
			return err
		},
		Key: func(rec *rdb.Record) error {
			e := s.entryFromRDB(rec.Value)
			if e == nil {
				return fmt.Errorf("Bad data format of key '%s' in DB %d (duplicate members or fields)", rec.Key, rec.DB)
			}
			var exp int64
			if rec.HasExpire {
				exp = max(rec.Expire, 1)
			}
			if ld.ks != nil {
				db := ld.ks.DB(rec.DB)
				db.Delete(rec.Key)
				db.AddExpire(rec.Key, e, exp)
			} else {
				s.ks.Lock.Lock()
				db := s.ks.DB(rec.DB)
				db.Delete(rec.Key)
				db.AddExpire(rec.Key, e, exp)
				s.ks.Lock.Unlock()
			}
			ld.loaded++
			if delay.usec != 0 {
				delay.key()
			}
			return nil
		},
	}
	err := rdb.ReadStream(payload, s.cfg.Get("rdbchecksum") != "no", h)
	if err != nil {
		var fe *rdb.FileError
		switch {
		case errors.As(err, &fe) && fe.Err == nil && strings.HasPrefix(fe.Msg, "Unexpected EOF"):
			s.Warnf("Internal error in RDB reading offset %d, function at rdb.c:0 -> %s. Failure loading rdb format from socket, assuming connection error, resuming operation.", fe.Off, fe.Msg)
		case errors.As(err, &fe):
			s.Warnf("Internal error in RDB reading offset %d, function at rdb.c:0 -> %s. Failure loading rdb format", fe.Off, fe.Msg)
		default:
			s.Warnf("Internal error in RDB reading offset 0, function at rdb.c:0 -> %v. Failure loading rdb format from socket, assuming connection error, resuming operation.", err)
		}
		return err
	}
	s.Logf("Done loading RDB, keys loaded: %d, keys expired: 0.", ld.loaded)
	return nil
}

// keyDelay is key-load-delay: usec microseconds per key; a negative
// value sleeps one microsecond once in -usec keys (Redis's debugDelay).
// Sleeps shorter than the timer's resolution would take longer than
// asked, so the delay is owed and slept in pieces of 2 ms.
type keyDelay struct {
	usec int64
	owed time.Duration
}

func (d *keyDelay) key() {
	usec := d.usec
	if usec < 0 {
		if rand.Uint64()%uint64(-usec) != 0 {
			return
		}
		usec = 1
	}
	d.owed += time.Duration(usec) * time.Microsecond
	if d.owed >= 2*time.Millisecond {
		t := time.Now()
		time.Sleep(d.owed)
		d.owed -= time.Since(t)
	}
}

// loadingRefused refuses a command while a replica loads its master's
// payload: -LOADING for commands not allowed while loading, and while
// loading aside (async) for those not allowed then.
func (c *Client) loadingRefused(cmd *Command, args [][]byte) bool {
	return c.srv.repl.loading.Load() != loadingNone && c.loadingRefusedSlow(cmd, args)
}

func (c *Client) loadingRefusedSlow(cmd *Command, args [][]byte) bool {
	switch c.srv.repl.loading.Load() {
	case loadingSync:
		if cmd.Flags&cmdspec.Loading != 0 && !denyLoadingConfig(cmd, args) {
			return false
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
	r := &s.repl
	r.lock()
	keys := r.writtenKeys
	r.writtenKeys = nil
	r.unlock()
	if len(keys) == 0 {
		return
	}
	keep := map[dbKey]struct{}{}
	s.ks.Lock.RLock(s.goSlot)
	now := s.ks.Now()
	for k := range keys {
		db := s.ks.DB(k.db)
		i := store.ShardOf([]byte(k.key))
		db.LockShard(i)
		e := db.PeekRaw([]byte(k.key))
		switch {
		case e == nil:
		case db.ExpireOf([]byte(k.key), e) == 0:
		case db.ExpireOf([]byte(k.key), e) <= now:
			db.RemoveIfExpired([]byte(k.key))
		default:
			keep[k] = struct{}{}
		}
		db.UnlockShard(i)
	}
	s.ks.Lock.RUnlock(s.goSlot)
	r.lock()
	if r.writtenKeys == nil {
		r.writtenKeys = keep
	} else {
		for k := range keep {
			r.writtenKeys[k] = struct{}{}
		}
	}
	r.unlock()
}

type dbKey struct {
	db  int
	key string
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
		e := db.PeekRaw(args[p])
		if e == nil || db.ExpireOf(args[p], e) == 0 {
			continue
		}
		r := &s.repl
		r.lock()
		if r.writtenKeys == nil {
			r.writtenKeys = map[dbKey]struct{}{}
		}
		r.writtenKeys[dbKey{c.dbi, string(args[p])}] = struct{}{}
		r.unlock()
	}
}
