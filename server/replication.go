package server

import (
	"bufio"
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/store"
)

// Replication, master side, after Redis 7.0's replication.c and the
// propagation rules of server.c's call()/propagatePendingCommands.
//
// A write command feeds the replication stream while it still holds the
// locks of its keys (Client.run), so the stream carries each key's
// changes in the order they were made. What a command feeds is decided
// by the keyspace's change counters: a command that changed the shards
// of its keys is propagated, rewritten where Redis rewrites it (relative
// expiries as absolute ones, SPOP as SREM, blocking pops as their plain
// forms...). The commands run by a transaction or a script are gathered
// on the client and fed at its end, wrapped in MULTI/EXEC when there are
// several. Expired and evicted keys are fed as DEL (or UNLINK).
//
// The stream goes into a ring buffer (the backlog, repl-backlog-size) and
// to every replica that finished its full sync; a replica still loading
// keeps what arrives in a buffer of its own.

// replState flags.
const (
	replFeed     = 1 << iota // the effects stream has a consumer (a backlog, the AOF): write commands emit
	replReadOnly             // this server is a replica: normal clients may not write
)

type replState struct {
	flags atomic.Uint32

	mu       sync.Mutex
	replid   string
	replid2  string
	offset2  int64 // second_repl_offset (-1: none)
	offset   int64 // master_repl_offset
	ring     []byte
	ringPos  int   // where the next byte goes
	histlen  int64 // bytes of history in ring
	curDB    int   // database of the last command fed (-1: SELECT next)
	buf      []byte
	replicas []*replicaConn
	syncWait []*syncWaiter // replicas whose full sync waits for another image to end
	lastPing time.Time
	noneAt   time.Time // when the last replica left (repl-backlog-ttl)
	waits    []*waitReq
	good     atomic.Int64 // min-replicas: replicas that acked within the lag, recounted by cron
	conf     sync.Map     // *Client -> *replconfInfo: what REPLCONF said before SYNC

	link *replLink // replica side (replica.go), nil when a master
	srv  *Server

	mem *memState // the server's accounting, for the backlog's size
}

// replicaConn is a replica attached to this server.
type replicaConn struct {
	c      *Client
	online bool   // full sync done: fed directly
	pend   []byte // stream fed while the RDB is being sent
	port   int
	ip     string
	psync2 bool
	eof    bool // takes a full sync's payload streamed ("capa eof")
	// onlineOnAck: the streamed payload was sent; the replica goes online
	// (gets the stream buffered in pend) at its first REPLCONF ACK.
	onlineOnAck bool
	ackOff      atomic.Int64
	ackTime     atomic.Int64 // unix ms of the last REPLCONF ACK
}

type waitReq struct {
	c      *Client
	off    int64
	n      int64
	done   bool
	timer  *time.Timer
	waiter *waiter
}

func init() {
	register(
		&Command{Name: "sync", Arity: 1, Flags: []string{"admin", "noscript", "no_async_loading", "no_multi", "lock_all"}, ACL: []string{"admin", "slow", "dangerous"}, Group: "server", Since: "1.0.0", Summary: "Internal command used for replication", Complexity: "", Fn: syncCommand},
		&Command{Name: "psync", Arity: -3, Flags: []string{"admin", "noscript", "no_async_loading", "no_multi", "lock_all"}, ACL: []string{"admin", "slow", "dangerous"}, Group: "server", Since: "2.8.0", Summary: "Internal command used for replication", Complexity: "", Fn: syncCommand},
		&Command{Name: "replconf", Arity: -1, Flags: []string{"admin", "noscript", "loading", "stale", "allow_busy"}, ACL: []string{"admin", "slow", "dangerous"}, Group: "server", Since: "3.0.0", Summary: "An internal command for configuring the replication stream", Complexity: "O(1)", Fn: replconfCommand},
		&Command{Name: "replicaof", Arity: 3, Flags: []string{"admin", "noscript", "stale", "no_async_loading"}, ACL: []string{"admin", "slow", "dangerous"}, Group: "server", Since: "5.0.0", Summary: "Make the server a replica of another instance, or promote it as master.", Complexity: "O(1)", Fn: replicaofCommand},
		&Command{Name: "slaveof", Arity: 3, Flags: []string{"admin", "noscript", "stale", "no_async_loading"}, ACL: []string{"admin", "slow", "dangerous"}, Group: "server", Since: "1.0.0", Summary: "Make the server a replica of another instance, or promote it as master.", Complexity: "O(1)", Fn: replicaofCommand},
	)
}

// wireReplication sets up the replication state when the server is made.
func (s *Server) wireReplication() {
	r := &s.repl
	r.srv = s
	r.replid = randomHex(40)
	r.replid2 = strings.Repeat("0", 40)
	r.offset2 = -1
	r.curDB = -1
	prevExp := s.ks.OnExpired
	s.ks.OnExpired = func(db *store.DB, key []byte) {
		if prevExp != nil {
			prevExp(db, key)
		}
		if s.repl.flags.Load()&replFeed != 0 {
			s.replFeedDel(db.ID, key, "lazyfree-lazy-expire")
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
		if a := splitArgs(v); len(a) == 2 && !(strings.EqualFold(a[0], "no") && strings.EqualFold(a[1], "one")) {
			port, _ := strconv.Atoi(a[1])
			s.replicaOf(a[0], port, true)
		}
	}
	go s.replCron()
}

// replCron: PING to replicas every repl-ping-replica-period, the backlog
// freed after repl-backlog-ttl without replicas, min-replicas counting,
// and on a replica the ACK to the master every second.
func (s *Server) replCron() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	r := &s.repl
	for {
		select {
		case <-s.stopCh:
			s.replicaStop()
			return
		case <-t.C:
		}
		if l := s.replLink(); l != nil {
			l.sendAck()
			if !s.ks.ExpiryPaused.Load() && s.pause.typ.Load() == pauseOff {
				s.ks.ExpiryPaused.Store(true) // replicas wait for their master's DELs
			}
		}
		if r.flags.Load()&replFeed == 0 {
			continue
		}
		s.serveSyncWaiters()
		r.mu.Lock()
		now := time.Now()
		period, _ := strconv.Atoi(s.cfg.Get("repl-ping-replica-period"))
		mfPaused := s.cluster != nil && s.cluster.ManualFailoverPaused() // the replica waits for this offset
		if len(r.replicas) > 0 && r.link == nil && !mfPaused && now.Sub(r.lastPing) >= time.Duration(max(period, 1))*time.Second {
			r.lastPing = now
			r.feedLocked(-1, [][]byte{[]byte("PING")})
		}
		if len(r.replicas) == 0 && len(r.syncWait) == 0 {
			ttl, _ := strconv.Atoi(s.cfg.Get("repl-backlog-ttl"))
			if ttl > 0 && now.Sub(r.noneAt) >= time.Duration(ttl)*time.Second && r.link == nil {
				r.freeBacklogLocked()
			}
		}
		r.mu.Unlock()
		r.recountGood(s.cfg.minReplicasLag.Load())
	}
}

func (r *replState) recountGood(lag int64) {
	r.mu.Lock()
	now := time.Now().UnixMilli()
	n := int64(0)
	for _, rc := range r.replicas {
		if rc.online && now-rc.ackTime.Load() <= lag*1000 {
			n++
		}
	}
	r.mu.Unlock()
	r.good.Store(n)
}

// goodReplicas counts the replicas whose last ACK is within lag seconds.
func (r *replState) goodReplicas(lag int64) int64 {
	if r.flags.Load()&replFeed == 0 {
		return 0
	}
	r.recountGood(lag)
	return r.good.Load()
}

func (r *replState) freeBacklogLocked() {
	if r.mem != nil {
		r.mem.backlog.Store(0)
	}
	r.ring = nil
	r.ringPos, r.histlen = 0, 0
	r.srv.updateEffectsLocked()
}

// createBacklogLocked makes the backlog if there is none.
func (r *replState) createBacklogLocked(s *Server) {
	if r.ring != nil {
		return
	}
	size, _ := strconv.ParseInt(s.cfg.Get("repl-backlog-size"), 10, 64)
	if size < 16*1024 {
		size = 16 * 1024
	}
	r.ring = make([]byte, size)
	r.mem = &s.mem
	r.mem.backlog.Store(store.AllocSize(len(r.ring)))
	r.ringPos, r.histlen = 0, 0
	r.curDB = -1
	r.noneAt = time.Now() // repl-backlog-ttl counts from here until a replica attaches
	s.updateEffectsLocked()
}

// appendCmd encodes args as a RESP array.
func appendCmd(b []byte, args [][]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

func bargs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// writeLocked appends raw stream bytes to the backlog and the replicas.
func (r *replState) writeLocked(b []byte) {
	if r.ring == nil {
		return
	}
	r.offset += int64(len(b))
	size := len(r.ring)
	src := b
	if len(src) > size {
		src = src[len(src)-size:]
	}
	for len(src) > 0 {
		n := copy(r.ring[r.ringPos:], src)
		src = src[n:]
		r.ringPos = (r.ringPos + n) % size
	}
	r.histlen = min(r.histlen+int64(len(b)), int64(size))
	for _, rc := range r.replicas {
		if rc.online {
			rc.c.deliver(b)
		} else {
			rc.pend = append(rc.pend, b...)
		}
	}
}

// selectLocked feeds SELECT when dbi is not the stream's database.
func (r *replState) selectLocked(dbi int) {
	if dbi < 0 || dbi == r.curDB {
		return
	}
	r.curDB = dbi
	r.buf = appendCmd(r.buf[:0], bargs("SELECT", strconv.Itoa(dbi)))
	r.writeLocked(r.buf)
}

// feedLocked feeds one command run in database dbi (-1: any).
func (r *replState) feedLocked(dbi int, args [][]byte) {
	r.selectLocked(dbi)
	r.buf = appendCmd(r.buf[:0], args)
	r.writeLocked(r.buf)
}

// replicaOf returns the replica record of client c, or nil.
func (r *replState) replicaOf(c *Client) *replicaConn {
	for _, rc := range r.replicas {
		if rc.c == c {
			return rc
		}
	}
	return nil
}

func (s *Server) replClientClosed(c *Client) {
	r := &s.repl
	r.conf.Delete(c)
	r.mu.Lock()
	for i, w := range r.syncWait {
		if w.rc.c == c {
			r.syncWait = append(r.syncWait[:i], r.syncWait[i+1:]...)
			break
		}
	}
	for i, rc := range r.replicas {
		if rc.c == c {
			r.replicas = append(r.replicas[:i], r.replicas[i+1:]...)
			if len(r.replicas) == 0 {
				r.noneAt = time.Now()
			}
			s.Logf("Connection with replica %s:%d lost.", rc.ip, rc.port)
			break
		}
	}
	r.mu.Unlock()
}

// SYNC and PSYNC replid offset: a replica asks for the stream. Runs with
// the keyspace held exclusively (lock_all), so the snapshot and the
// offset it is taken at agree.
func syncCommand(c *Client, args [][]byte) {
	s := c.srv
	r := &s.repl
	if c.replMaster {
		return
	}
	r.mu.Lock()
	if r.replicaOf(c) != nil || r.syncWaiting(c) {
		r.mu.Unlock()
		return // already a replica: ignored, as Redis
	}
	if l := r.link; l != nil && l.state.Load() != linkConnected {
		r.mu.Unlock()
		c.w.Error("NOMASTERLINK Can't SYNC while not connected with my master")
		return
	}
	rc := c.pendingReplica()
	psync := eq(args[0], "psync")
	if psync && r.ring != nil && r.link == nil {
		off, err := strconv.ParseInt(string(args[2]), 10, 64)
		first := r.offset - r.histlen + 1
		if err == nil && (string(args[1]) == r.replid || (string(args[1]) == r.replid2 && off <= r.offset2)) && off >= first && off <= r.offset+1 {
			line := "+CONTINUE\r\n"
			if rc.psync2 {
				line = "+CONTINUE " + r.replid + "\r\n"
			}
			out := []byte(line)
			out = append(out, r.backlogFrom(off)...)
			rc.online = true
			rc.ackTime.Store(time.Now().UnixMilli())
			r.replicas = append(r.replicas, rc)
			r.mu.Unlock()
			c.deliver(out)
			s.Logf("Partial resynchronization request from %s accepted. Sending %d bytes of backlog starting from offset %d.", c.addr, r.offset+1-off, off)
			return
		}
	}
	r.createBacklogLocked(s)
	r.mu.Unlock()
	s.Logf("Replica %s asks for synchronization", c.addr)
	w := &syncWaiter{rc: rc, psync: psync}
	img, err := s.cutImage(s.imageMetaUnlocked())
	if err != nil {
		// Another image is being written (a BGSAVE): this replica's
		// starts when it ends (serveSyncWaiters), as Redis's replica
		// waits for the next BGSAVE.
		r.mu.Lock()
		r.syncWait = append(r.syncWait, w)
		r.mu.Unlock()
		s.Logf("Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC")
		return
	}
	s.startFullSync(img, []*syncWaiter{w})
}

// syncWaiter is a replica whose full sync has not started yet.
type syncWaiter struct {
	rc    *replicaConn
	psync bool   // asked with PSYNC: +FULLRESYNC comes first
	buf   []byte // the payload, for a replica that cannot take it streamed
	gone  bool
}

func (r *replState) syncWaiting(c *Client) bool {
	for _, w := range r.syncWait {
		if w.rc.c == c {
			return true
		}
	}
	return false
}

// serveSyncWaiters starts the full sync of the replicas that wait for one,
// if no other image is being written: one image for all of them.
func (s *Server) serveSyncWaiters() {
	r := &s.repl
	r.mu.Lock()
	n := len(r.syncWait)
	r.mu.Unlock()
	if n == 0 || s.ks.Snapshotting() {
		return
	}
	go func() {
		meta := s.imageMetaUnlocked()
		s.ks.Lock.Lock()
		defer s.ks.Lock.Unlock()
		r.mu.Lock()
		ws := r.syncWait
		r.syncWait = nil
		r.mu.Unlock()
		if len(ws) == 0 {
			return
		}
		img, err := s.cutImage(meta)
		if err != nil {
			r.mu.Lock()
			r.syncWait = append(ws, r.syncWait...)
			r.mu.Unlock()
			return
		}
		s.startFullSync(img, ws)
	}()
}

// startFullSync attaches replicas ws to the stream at the offset of the
// image img was just cut (the exclusive lock is held, so they agree) and
// sends them the image in the background.
func (s *Server) startFullSync(img *rdbImage, ws []*syncWaiter) {
	r := &s.repl
	r.mu.Lock()
	r.createBacklogLocked(s) // the stream since the cut goes to the replicas through it
	off := r.offset
	r.curDB = -1
	for _, w := range ws {
		w.rc.ackTime.Store(time.Now().UnixMilli())
		r.replicas = append(r.replicas, w.rc)
		if w.psync {
			w.rc.c.deliver([]byte("+FULLRESYNC " + r.replid + " " + strconv.FormatInt(off, 10) + "\r\n"))
		}
	}
	r.mu.Unlock()
	go s.sendImage(img, ws)
}

// replSyncBuffered is how much of the payload may wait in a replica's
// output before the walk waits for the socket.
const replSyncBuffered = 4 << 20

// sendImage streams img to replicas ws as a full sync's payload: to a
// replica that announced "capa eof" as a diskless master does,
// "$EOF:<mark>\r\n<rdb><mark>", without ever holding the whole payload; to
// another, "$<length>\r\n<rdb>" once the image is complete. Then each
// replica gets the stream buffered since the cut and goes online.
func (s *Server) sendImage(img *rdbImage, ws []*syncWaiter) {
	defer img.Release() // the next image may be cut: replicas waiting for one get it
	r := &s.repl
	var mark [40]byte
	const hexDigits = "0123456789abcdef"
	for i := range mark {
		mark[i] = hexDigits[rand.IntN(16)]
	}
	for _, w := range ws {
		if w.rc.eof {
			w.rc.c.deliver([]byte("$EOF:" + string(mark[:]) + "\r\n"))
		}
	}
	bw := bufio.NewWriterSize(&replSyncWriter{r: r, ws: ws}, 64<<10)
	// rdb-key-save-delay applies here too, as it does to Redis's child
	// whatever it writes to.
	delayUs, _ := strconv.ParseInt(s.cfg.Get("rdb-key-save-delay"), 10, 64)
	delay := time.Duration(delayUs) * time.Microsecond
	s.snapStats.replImages.Add(1)
	err := persist.WriteRDB(bw, img, persist.RDBOptions{
		Version:  Version,
		Checksum: s.cfg.Get("rdbchecksum") != "no",
		Repl:     &persist.ReplAux{StreamDB: 0, ID: s.repl.replid, Offset: 0},
		KeyDelay: func() time.Duration { return delay },
	})
	s.snapStats.replImages.Add(-1)
	if err == nil {
		err = bw.Flush()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range ws {
		c := w.rc.c
		if w.gone || r.replicaOf(c) != w.rc {
			continue
		}
		if err != nil {
			s.Warnf("Sending the RDB to replica %s failed: %v", c.addr, err)
			c.kill()
			continue
		}
		s.Logf("Synchronization with replica %s succeeded", c.addr)
		if w.rc.eof {
			// The replica finds the end of a streamed payload by its
			// mark at the end of what it read, so nothing may follow
			// until it has loaded it: the stream since the cut is sent
			// on its first REPLCONF ACK, as Redis does.
			c.deliver(mark[:])
			w.rc.onlineOnAck = true
			continue
		}
		c.deliver(append([]byte("$"+strconv.Itoa(len(w.buf))+"\r\n"), w.buf...))
		w.buf = nil
		if len(w.rc.pend) > 0 {
			c.deliver(w.rc.pend)
		}
		w.rc.pend = nil
		w.rc.online = true
	}
}

// replSyncWriter hands a full sync's payload to its replicas, waiting
// while a replica's socket is behind; a replica that went away is
// dropped, and when none is left the write fails (ending the walk).
type replSyncWriter struct {
	r  *replState
	ws []*syncWaiter
}

func (t *replSyncWriter) Write(p []byte) (int, error) {
	live := 0
	for _, w := range t.ws {
		if w.gone {
			continue
		}
		if !w.rc.eof {
			w.buf = append(w.buf, p...)
			live++
			continue
		}
		c := w.rc.c
		c.deliver(p)
		for {
			t.r.mu.Lock()
			w.gone = t.r.replicaOf(c) != w.rc
			t.r.mu.Unlock()
			if w.gone || c.closeASAP.Load() || c.outputMem() <= replSyncBuffered {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if !w.gone {
			live++
		}
	}
	if live == 0 {
		return 0, errors.New("no replica left")
	}
	return len(p), nil
}

// pendingReplica is the replica record for c, from what REPLCONF said.
func (c *Client) pendingReplica() *replicaConn {
	rc := &replicaConn{c: c}
	c.replicaOut.Store(true)
	if h, _, err := net.SplitHostPort(c.addr); err == nil {
		rc.ip = h
	}
	if v, ok := c.srv.repl.conf.Load(c); ok {
		info := v.(*replconfInfo)
		rc.port, rc.psync2, rc.eof = info.port, info.psync2, info.eof
		if info.ip != "" {
			rc.ip = info.ip
		}
	}
	return rc
}

// backlogFrom returns the backlog's bytes from offset off on.
func (r *replState) backlogFrom(off int64) []byte {
	n := int(r.offset + 1 - off)
	if n <= 0 {
		return nil
	}
	size := len(r.ring)
	start := ((r.ringPos-n)%size + size) % size
	out := make([]byte, 0, n)
	if start+n <= size {
		return append(out, r.ring[start:start+n]...)
	}
	out = append(out, r.ring[start:]...)
	return append(out, r.ring[:n-(size-start)]...)
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
		case eq(opt, "ack") || eq(opt, "fack"):
			off, _ := strconv.ParseInt(string(val), 10, 64)
			r.mu.Lock()
			rc := r.replicaOf(c)
			if rc != nil && rc.onlineOnAck {
				// The replica loaded the streamed payload: the stream
				// since the cut follows now.
				rc.onlineOnAck = false
				c.deliver(rc.pend)
				rc.pend = nil
				rc.online = true
			}
			r.mu.Unlock()
			if rc == nil {
				return
			}
			if eq(opt, "ack") {
				if off > rc.ackOff.Load() {
					rc.ackOff.Store(off)
				}
				rc.ackTime.Store(time.Now().UnixMilli())
				s.checkWaits()
				if s.shutdownPending() && s.replicasInSync() {
					s.finishShutdown()
				}
			}
			return // no reply to an ACK
		case eq(opt, "getack"):
			if l := s.replLink(); l != nil && c.replMaster {
				l.sendAck()
			}
			return
		case eq(opt, "listening-port"):
			port, err := strconv.Atoi(string(val))
			if err != nil {
				c.w.Error("ERR value is not an integer or out of range")
				return
			}
			r.replconf(c).port = port
		case eq(opt, "ip-address"):
			r.replconf(c).ip = string(val)
		case eq(opt, "capa"):
			if eq(val, "psync2") {
				r.replconf(c).psync2 = true
			} else if eq(val, "eof") {
				r.replconf(c).eof = true
			}
		case eq(opt, "rdb-only"), eq(opt, "rdb-filter-only"):
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

// checkWaits answers the WAIT clients whose offset enough replicas acked.
func (s *Server) checkWaits() {
	r := &s.repl
	r.mu.Lock()
	if len(r.waits) == 0 {
		r.mu.Unlock()
		return
	}
	keep := r.waits[:0]
	var done []*waitReq
	for _, wr := range r.waits {
		if r.ackedLocked(wr.off) >= wr.n {
			done = append(done, wr)
		} else {
			keep = append(keep, wr)
		}
	}
	r.waits = keep
	r.mu.Unlock()
	for _, wr := range done {
		s.finishWait(wr)
	}
}

func (r *replState) ackedLocked(off int64) int64 {
	n := int64(0)
	for _, rc := range r.replicas {
		if rc.online && rc.ackOff.Load() >= off {
			n++
		}
	}
	return n
}

func (s *Server) finishWait(wr *waitReq) {
	r := &s.repl
	r.mu.Lock()
	if wr.done {
		r.mu.Unlock()
		return
	}
	wr.done = true
	n := r.ackedLocked(wr.off)
	for i, x := range r.waits {
		if x == wr {
			r.waits = append(r.waits[:i], r.waits[i+1:]...)
			break
		}
	}
	r.mu.Unlock()
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
	r.mu.Lock()
	if len(r.replicas) == 0 && r.ring == nil {
		r.mu.Unlock()
		return false
	}
	acked := r.ackedLocked(c.woff)
	if acked >= numreplicas || !c.canBlock() {
		r.mu.Unlock()
		c.w.Int(acked)
		return true
	}
	wr := &waitReq{c: c, off: c.woff, n: numreplicas}
	r.waits = append(r.waits, wr)
	// Ask the replicas for an ACK now.
	r.feedLocked(-1, bargs("REPLCONF", "GETACK", "*"))
	r.mu.Unlock()
	c.blockWith(nil, blockList, 0, nil, []byte(":0\r\n"))
	if timeout > 0 {
		wr.timer = time.AfterFunc(time.Duration(timeout)*time.Millisecond, func() { s.finishWait(wr) })
	}
	return true
}

// roleCommand is ROLE.
func roleCommand(c *Client, _ [][]byte) {
	s := c.srv
	r := &s.repl
	if l := s.replLink(); l != nil {
		c.w.Array(5)
		c.w.BulkString("slave")
		c.w.BulkString(l.host)
		c.w.Int(int64(l.port))
		c.w.BulkString(l.roleState())
		c.w.Int(l.offset.Load())
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c.w.Array(3)
	c.w.BulkString("master")
	c.w.Int(r.offset)
	n := 0
	for _, rc := range r.replicas {
		if rc.online {
			n++
		}
	}
	c.w.Array(n)
	for _, rc := range r.replicas {
		if rc.online {
			c.w.Array(3)
			c.w.BulkString(rc.ip)
			c.w.BulkString(strconv.Itoa(rc.port))
			c.w.BulkString(strconv.FormatInt(rc.ackOff.Load(), 10))
		}
	}
}

// infoReplication writes INFO's replication section.
func (s *Server) infoReplication(f func(format string, args ...any)) {
	r := &s.repl
	l := s.replLink()
	if l != nil {
		f("role:slave")
		f("master_host:%s", l.host)
		f("master_port:%d", l.port)
		up := l.state.Load() == linkConnected
		if up {
			f("master_link_status:up")
		} else {
			f("master_link_status:down")
		}
		last := int64(-1)
		if t := l.lastIO.Load(); t != 0 {
			last = (time.Now().UnixMilli() - t) / 1000
		}
		f("master_last_io_seconds_ago:%d", last)
		syncing := l.state.Load() == linkTransfer
		f("master_sync_in_progress:%d", b2i(syncing))
		f("slave_read_repl_offset:%d", l.offset.Load())
		f("slave_repl_offset:%d", l.offset.Load())
		if syncing {
			f("master_sync_total_bytes:%d", l.syncTotal.Load())
			f("master_sync_read_bytes:%d", l.syncRead.Load())
			f("master_sync_left_bytes:%d", l.syncTotal.Load()-l.syncRead.Load())
			f("master_sync_perc:0.00")
			f("master_sync_last_io_seconds_ago:0")
		}
		if !up {
			since := int64(-1)
			if t := l.downSince.Load(); t != 0 {
				since = (time.Now().UnixMilli() - t) / 1000
			}
			f("master_link_down_since_seconds:%d", since)
		}
		f("slave_priority:%s", s.cfg.Get("replica-priority"))
		f("slave_read_only:%d", b2i(s.cfg.Get("replica-read-only") == "yes"))
		f("replica_announced:1")
	} else {
		f("role:master")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f("connected_slaves:%d", len(r.replicas)+len(r.syncWait))
	now := time.Now().UnixMilli()
	for i, rc := range r.replicas {
		// Redis's names: wait_bgsave while its payload is produced
		// (streamed, as by a diskless master), online once sent.
		state := "wait_bgsave"
		if rc.online || rc.onlineOnAck {
			state = "online"
		}
		f("slave%d:ip=%s,port=%d,state=%s,offset=%d,lag=%d", i, rc.ip, rc.port, state, rc.ackOff.Load(), (now-rc.ackTime.Load())/1000)
	}
	for i, w := range r.syncWait {
		// Waiting for another snapshot to end before its own starts.
		f("slave%d:ip=%s,port=%d,state=wait_bgsave,offset=0,lag=0", len(r.replicas)+i, w.rc.ip, w.rc.port)
	}
	f("master_failover_state:no-failover")
	f("master_replid:%s", r.replid)
	f("master_replid2:%s", r.replid2)
	off := r.offset
	if l != nil && r.ring == nil {
		off = l.offset.Load()
	}
	f("master_repl_offset:%d", off)
	f("second_repl_offset:%d", r.offset2)
	f("repl_backlog_active:%d", b2i(r.ring != nil))
	f("repl_backlog_size:%s", s.cfg.Get("repl-backlog-size"))
	first := int64(0)
	if r.ring != nil {
		first = r.offset - r.histlen + 1
	}
	f("repl_backlog_first_byte_offset:%d", first)
	f("repl_backlog_histlen:%d", r.histlen)
}

// replBufferMemory is INFO's mem_total_replication_buffers: the backlog's
// history and what replicas have not been sent yet.
func (s *Server) replBufferMemory() int64 {
	r := &s.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.histlen
	for _, rc := range r.replicas {
		n += int64(len(rc.pend)) + rc.c.outputMem()
	}
	return n
}

// backlogMemory is INFO's mem_replication_backlog.
func (s *Server) backlogMemory() int {
	r := &s.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ring)
}

// readOnlyReplica refuses a write from a normal client on a read-only
// replica; it reports whether it did.
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
	if l := c.srv.replLink(); l == nil || l.state.Load() == linkConnected {
		return false
	}
	if cmd.flags&flagStale != 0 && (cmd.Name != "exec" || !c.txQueuedWithout(flagStale)) {
		return false
	}
	c.rejectCmd(cmd, "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")
	return true
}

func (c *Client) readOnlyReplica(cmd *Command) bool {
	if c.replMaster || c.srv.cfg.Get("replica-read-only") != "yes" {
		return false
	}
	if cmd.flags&flagWrite == 0 && (cmd.Name != "exec" || !c.txQueued(flagWrite)) {
		return false
	}
	c.rejectCmd(cmd, "READONLY You can't write against a read only replica.")
	return true
}
