package server

import (
	"bytes"
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/rdb"
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
	replFeed     = 1 << iota // a backlog exists: write commands feed the stream
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
	lastPing time.Time
	noneAt   time.Time // when the last replica left (repl-backlog-ttl)
	waits    []*waitReq
	good     atomic.Int64 // min-replicas: replicas that acked within the lag, recounted by cron
	conf     sync.Map     // *Client -> *replconfInfo: what REPLCONF said before SYNC

	link *replLink // replica side (replica.go), nil when a master
}

// replicaConn is a replica attached to this server.
type replicaConn struct {
	c       *Client
	online  bool   // full sync done: fed directly
	pend    []byte // stream fed while the RDB is being sent
	port    int
	ip      string
	psync2  bool
	ackOff  atomic.Int64
	ackTime atomic.Int64 // unix ms of the last REPLCONF ACK
}

// replPending is a client's propagation gathered during a transaction
// or script.
type replPending struct {
	buf []byte
	ops []pendOp
}

type pendOp struct{ dbi, start, end int }

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
		r.mu.Lock()
		now := time.Now()
		period, _ := strconv.Atoi(s.cfg.Get("repl-ping-replica-period"))
		if len(r.replicas) > 0 && r.link == nil && now.Sub(r.lastPing) >= time.Duration(max(period, 1))*time.Second {
			r.lastPing = now
			r.feedLocked(-1, [][]byte{[]byte("PING")})
		}
		if len(r.replicas) == 0 {
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
	r.ring = nil
	r.ringPos, r.histlen = 0, 0
	r.flags.And(^uint32(replFeed))
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
	r.ringPos, r.histlen = 0, 0
	r.curDB = -1
	r.flags.Or(replFeed)
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

// feedOps feeds the commands of one call, wrapped in MULTI/EXEC when there
// are several.
func (s *Server) feedOps(dbi int, ops [][][]byte) {
	r := &s.repl
	r.mu.Lock()
	if len(ops) > 1 {
		r.feedLocked(dbi, bargs("MULTI"))
	}
	for _, op := range ops {
		r.feedLocked(dbi, op)
	}
	if len(ops) > 1 {
		r.feedLocked(dbi, bargs("EXEC"))
	}
	r.mu.Unlock()
}

// replFeedDel feeds the removal of an expired or evicted key: UNLINK when
// the lazyfree directive named is on, else DEL.
func (s *Server) replFeedDel(dbi int, key []byte, lazyDirective string) {
	if s.replLink() != nil {
		return // a replica's keys go when its master says so
	}
	cmd := "DEL"
	if s.cfg.Get(lazyDirective) == "yes" {
		cmd = "UNLINK"
	}
	s.feedOps(dbi, [][][]byte{{[]byte(cmd), key}})
}

// replFlush feeds what c gathered during a transaction or script, while
// its locks are still held.
func (s *Server) replFlush(c *Client) {
	s.flushPending(c.rpend, c)
}

func (s *Server) flushPending(p *replPending, owner *Client) {
	if p == nil || len(p.ops) == 0 {
		return
	}
	r := &s.repl
	r.mu.Lock()
	n := len(p.ops)
	if n > 1 {
		r.feedLocked(p.ops[0].dbi, bargs("MULTI"))
	}
	for _, op := range p.ops {
		r.selectLocked(op.dbi)
		r.writeLocked(p.buf[op.start:op.end])
	}
	if n > 1 {
		r.feedLocked(-1, bargs("EXEC"))
	}
	owner.woff = r.offset
	r.mu.Unlock()
	p.ops = p.ops[:0]
	p.buf = p.buf[:0]
}

func (c *Client) pend(dbi int, ops [][][]byte) {
	if c.rpend == nil {
		c.rpend = &replPending{}
	}
	p := c.rpend
	for _, op := range ops {
		start := len(p.buf)
		p.buf = appendCmd(p.buf, op)
		p.ops = append(p.ops, pendOp{dbi: dbi, start: start, end: len(p.buf)})
	}
}

// dirtyOf sums the change counters of the shards of a command's keys.
func dirtyOf(db *store.DB, args [][]byte, keys []int) uint64 {
	var n uint64
	for _, p := range keys {
		if p < len(args) {
			n += db.ShardChanges(store.ShardOf(args[p]))
		}
	}
	return n
}

// replRun runs cmd and feeds the replication stream with what it changed.
func (s *Server) replRun(c *Client, cmd *Command, args [][]byte) {
	flags := s.repl.flags.Load()
	if flags&replReadOnly != 0 && c.fromScript && cmd.flags&flagWrite != 0 {
		// A script's write on a read-only replica (scriptVerifyWriteCommandAllow).
		if caller := s.lua.run.caller; (caller == nil || !caller.replMaster) && s.cfg.Get("replica-read-only") == "yes" {
			c.w.Error("READONLY You can't write against a read only replica.")
			return
		}
	}
	if flags&replFeed == 0 {
		cmd.Fn(c, args)
		return
	}
	nested := c.inExec || c.fromScript
	switch cmd.Name {
	case "exec":
		cmd.Fn(c, args) // execLocked feeds what the transaction did
		return
	case "eval", "evalsha", "fcall", "eval_ro", "evalsha_ro", "fcall_ro":
		cmd.Fn(c, args)
		if pc := s.lua.pc; pc != nil && pc.rpend != nil && len(pc.rpend.ops) > 0 {
			if nested {
				p := pc.rpend
				for _, op := range p.ops {
					if c.rpend == nil {
						c.rpend = &replPending{}
					}
					start := len(c.rpend.buf)
					c.rpend.buf = append(c.rpend.buf, p.buf[op.start:op.end]...)
					c.rpend.ops = append(c.rpend.ops, pendOp{dbi: op.dbi, start: start, end: len(c.rpend.buf)})
				}
				p.ops, p.buf = p.ops[:0], p.buf[:0]
			} else {
				s.flushPending(pc.rpend, c)
			}
		}
		return
	}
	write := cmd.flags&flagWrite != 0
	if !write && !hasFlag(cmd, "may_replicate") {
		cmd.Fn(c, args)
		return
	}
	dbi := c.dbi
	db := c.DB()
	var kp [8]int
	keys := cmd.keyPositions(args, kp[:0])
	before := dirtyOf(db, args, keys)
	errs := c.w.Errors
	mark := len(c.w.Buf)
	cmd.Fn(c, args)
	changed := len(keys) > 0 && dirtyOf(db, args, keys) != before
	if !changed {
		switch cmd.Name {
		case "publish", "spublish", "copy", "move", "swapdb", "flushall", "flushdb":
			changed = c.w.Errors == errs
		default:
			changed = len(keys) == 0 && write && c.w.Errors == errs
		}
	}
	if !changed {
		return
	}
	var reply []byte
	if mark <= len(c.w.Buf) {
		reply = c.w.Buf[mark:]
	}
	ops := s.rewriteForRepl(db, cmd, args, reply)
	if len(ops) == 0 {
		return
	}
	if nested {
		c.pend(dbi, ops)
		return
	}
	s.feedOps(dbi, ops)
	s.repl.mu.Lock()
	c.woff = s.repl.offset
	s.repl.mu.Unlock()
}

// delOrUnlink is DEL, or UNLINK when the lazyfree directive is on.
func (s *Server) delOrUnlink(directive string) []byte {
	if s.cfg.Get(directive) == "yes" {
		return []byte("UNLINK")
	}
	return []byte("DEL")
}

// rewriteForRepl returns the commands that replicate cmd (Redis's
// rewriteClientCommandVector/alsoPropagate cases).
func (s *Server) rewriteForRepl(db *store.DB, cmd *Command, args [][]byte, reply []byte) [][][]byte {
	ms := func(n int64) []byte { return strconv.AppendInt(nil, n, 10) }
	expireOf := func(key []byte) (int64, bool) {
		e := db.Peek(key)
		if e == nil {
			return 0, false
		}
		return db.ExpireOf(key, e), true
	}
	switch cmd.Name {
	case "expire", "pexpire", "expireat", "pexpireat":
		key := args[1]
		exp, ok := expireOf(key)
		if !ok {
			return [][][]byte{{s.delOrUnlink("lazyfree-lazy-expire"), key}}
		}
		if exp == 0 {
			return [][][]byte{args}
		}
		out := [][]byte{[]byte("PEXPIREAT"), key, ms(exp)}
		return [][][]byte{append(out, args[3:]...)}
	case "setex", "psetex":
		key := args[1]
		if exp, ok := expireOf(key); ok && exp != 0 {
			return [][][]byte{{[]byte("SET"), key, args[3], []byte("PXAT"), ms(exp)}}
		}
		return [][][]byte{args}
	case "set":
		rel := false
		for i := 3; i < len(args); i++ {
			if eq(args[i], "ex") || eq(args[i], "px") || eq(args[i], "exat") {
				rel = true
			}
		}
		if !rel {
			return [][][]byte{args}
		}
		key := args[1]
		out := [][]byte{[]byte("SET"), key, args[2]}
		for i := 3; i < len(args); i++ {
			if eq(args[i], "ex") || eq(args[i], "px") || eq(args[i], "exat") || eq(args[i], "pxat") {
				i++
				continue
			}
			out = append(out, args[i])
		}
		if exp, ok := expireOf(key); ok && exp != 0 {
			out = append(out, []byte("PXAT"), ms(exp))
		} else if !ok {
			return [][][]byte{{s.delOrUnlink("lazyfree-lazy-expire"), key}}
		}
		return [][][]byte{out}
	case "getex":
		key := args[1]
		exp, ok := expireOf(key)
		switch {
		case !ok:
			return [][][]byte{{s.delOrUnlink("lazyfree-lazy-expire"), key}}
		case exp != 0:
			return [][][]byte{{[]byte("PEXPIREAT"), key, ms(exp)}}
		default:
			return [][][]byte{{[]byte("PERSIST"), key}}
		}
	case "incrbyfloat":
		if v, ok := replyBulk(reply); ok {
			return [][][]byte{{[]byte("SET"), args[1], v, []byte("KEEPTTL")}}
		}
	case "hincrbyfloat":
		if v, ok := replyBulk(reply); ok {
			return [][][]byte{{[]byte("HSET"), args[1], args[2], v}}
		}
	case "spop":
		key := args[1]
		var members [][]byte
		if len(args) == 2 {
			if v, ok := replyBulk(reply); ok {
				members = [][]byte{v}
			}
		} else if v, ok := parseReply(reply); ok {
			if arr, ok := v.([]any); ok {
				for _, x := range arr {
					if b, ok := x.([]byte); ok {
						members = append(members, b)
					}
				}
			}
		}
		if len(members) == 0 {
			return nil
		}
		if len(args) > 2 && db.Peek(key) == nil {
			return [][][]byte{{s.delOrUnlink("lazyfree-lazy-server-del"), key}}
		}
		var ops [][][]byte
		for len(members) > 0 {
			n := min(len(members), 1024)
			op := [][]byte{[]byte("SREM"), key}
			ops = append(ops, append(op, members[:n]...))
			members = members[n:]
		}
		return ops
	case "blpop", "brpop", "blmpop", "bzpopmin", "bzpopmax", "bzmpop", "blmove", "brpoplpush":
		return blockingAsPlain(cmd.Name, args, reply)
	case "eval", "evalsha", "fcall":
		return nil
	}
	return [][][]byte{args}
}

// blockingAsPlain is a blocking pop replicated as the plain command that
// did what it did, from its reply.
func blockingAsPlain(name string, args [][]byte, reply []byte) [][][]byte {
	switch name {
	case "blmove":
		return [][][]byte{{[]byte("LMOVE"), args[1], args[2], args[3], args[4]}}
	case "brpoplpush":
		return [][][]byte{{[]byte("RPOPLPUSH"), args[1], args[2]}}
	}
	v, ok := parseReply(reply)
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 {
		return nil
	}
	key, ok := arr[0].([]byte)
	if !ok {
		return nil
	}
	count := func() []byte {
		if inner, ok := arr[1].([]any); ok {
			return strconv.AppendInt(nil, int64(len(inner)), 10)
		}
		return []byte("1")
	}
	dirArg := func(a, b string) string {
		for _, x := range args {
			if eq(x, b) {
				return b
			}
		}
		return a
	}
	switch name {
	case "blpop":
		return [][][]byte{{[]byte("LPOP"), key}}
	case "brpop":
		return [][][]byte{{[]byte("RPOP"), key}}
	case "bzpopmin":
		return [][][]byte{{[]byte("ZPOPMIN"), key}}
	case "bzpopmax":
		return [][][]byte{{[]byte("ZPOPMAX"), key}}
	case "blmpop":
		cmd := "LPOP"
		if dirArg("left", "right") == "right" {
			cmd = "RPOP"
		}
		return [][][]byte{{[]byte(cmd), key, count()}}
	case "bzmpop":
		cmd := "ZPOPMIN"
		if dirArg("min", "max") == "max" {
			cmd = "ZPOPMAX"
		}
		return [][][]byte{{[]byte(cmd), key, count()}}
	}
	return nil
}

// replServed feeds the pop a blocked client was served (serveReadyKeys,
// keyspace held exclusively).
func (s *Server) replServed(w *waiter, db *store.DB, key []byte, reply []byte) {
	if w.cmd == nil {
		return
	}
	var ops [][][]byte
	switch w.cmd.Name {
	case "blmove", "brpoplpush":
		if len(w.args) >= 3 {
			args := append([][]byte{w.args[0], key}, w.args[2:]...)
			ops = blockingAsPlain(w.cmd.Name, args, reply)
		}
	case "blpop", "brpop", "blmpop", "bzpopmin", "bzpopmax", "bzmpop":
		ops = blockingAsPlain(w.cmd.Name, w.args, reply)
	default:
		ops = [][][]byte{w.args} // XREADGROUP and the like: as they came
	}
	if len(ops) > 0 {
		s.feedOps(db.ID, ops)
	}
}

// replyBulk returns the value of a bulk string reply.
func replyBulk(b []byte) ([]byte, bool) {
	v, ok := parseReply(b)
	if !ok {
		return nil, false
	}
	bs, ok := v.([]byte)
	return bs, ok
}

// parseReply decodes one RESP2/RESP3 reply: []byte for strings, []any for
// aggregates, int64, nil.
func parseReply(b []byte) (any, bool) {
	v, _, ok := parseReplyAt(b)
	return v, ok
}

func parseReplyAt(b []byte) (any, []byte, bool) {
	nl := bytes.Index(b, []byte("\r\n"))
	if len(b) == 0 || nl < 0 {
		return nil, nil, false
	}
	line, rest := b[1:nl], b[nl+2:]
	switch b[0] {
	case '+', '-', ',', '(', '#':
		return line, rest, true
	case ':':
		n, _ := strconv.ParseInt(string(line), 10, 64)
		return n, rest, true
	case '_':
		return nil, rest, true
	case '$', '=':
		n, err := strconv.Atoi(string(line))
		if err != nil {
			return nil, nil, false
		}
		if n < 0 {
			return nil, rest, true
		}
		if len(rest) < n+2 {
			return nil, nil, false
		}
		return rest[:n], rest[n+2:], true
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line))
		if err != nil {
			return nil, nil, false
		}
		if n < 0 {
			return nil, rest, true
		}
		if b[0] == '%' || b[0] == '|' {
			n *= 2
		}
		arr := make([]any, 0, n)
		for i := 0; i < n; i++ {
			var v any
			var ok bool
			v, rest, ok = parseReplyAt(rest)
			if !ok {
				return nil, nil, false
			}
			arr = append(arr, v)
		}
		return arr, rest, true
	}
	return nil, nil, false
}

// encodeRDB encodes a snapshot as an RDB file's bytes (the full sync
// payload), as writeSnapshot writes it.
func (s *Server) encodeRDB(snap *snapshot) []byte {
	b := rdb.AppendHeader(nil)
	b = rdb.AppendAux(b, "redis-ver", Version)
	b = rdb.AppendAuxInt(b, "redis-bits", 64)
	b = rdb.AppendAuxInt(b, "ctime", snap.ctime)
	b = rdb.AppendAuxInt(b, "used-mem", int64(snap.usedMem))
	b = rdb.AppendAux(b, "repl-stream-db", "0")
	b = rdb.AppendAux(b, "repl-id", s.repl.replid)
	b = rdb.AppendAuxInt(b, "repl-offset", 0)
	b = rdb.AppendAuxInt(b, "aof-base", 0)
	for _, code := range snap.funcs {
		b = rdb.AppendFunction(b, []byte(code))
	}
	for _, ds := range snap.dbs {
		b = rdb.AppendSelectDB(b, ds.id, ds.size, ds.expires)
		for _, ch := range ds.chunks {
			b = append(b, ch.buf...)
		}
	}
	b = append(b, rdb.OpEOF)
	crc := rdb.CRC64(0, b)
	if s.cfg.Get("rdbchecksum") == "no" {
		crc = 0
	}
	return binary.LittleEndian.AppendUint64(b, crc)
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
	if r.replicaOf(c) != nil {
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
	snap := s.takeSnapshot()
	r.mu.Lock()
	off := r.offset
	r.curDB = -1
	rc.ackTime.Store(time.Now().UnixMilli())
	r.replicas = append(r.replicas, rc)
	if psync {
		c.deliver([]byte("+FULLRESYNC " + r.replid + " " + strconv.FormatInt(off, 10) + "\r\n"))
	}
	r.mu.Unlock()
	s.Logf("Replica %s asks for synchronization", c.addr)
	go func() {
		payload := s.encodeRDB(snap)
		head := []byte("$" + strconv.Itoa(len(payload)) + "\r\n")
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.replicaOf(c) != rc {
			return
		}
		c.deliver(append(head, payload...))
		if len(rc.pend) > 0 {
			c.deliver(rc.pend)
		}
		rc.pend = nil
		rc.online = true
		s.Logf("Synchronization with replica %s succeeded", c.addr)
	}()
}

// pendingReplica is the replica record for c, from what REPLCONF said.
func (c *Client) pendingReplica() *replicaConn {
	rc := &replicaConn{c: c}
	if h, _, err := net.SplitHostPort(c.addr); err == nil {
		rc.ip = h
	}
	if v, ok := c.srv.repl.conf.Load(c); ok {
		info := v.(*replconfInfo)
		rc.port, rc.psync2 = info.port, info.psync2
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
	f("connected_slaves:%d", len(r.replicas))
	now := time.Now().UnixMilli()
	for i, rc := range r.replicas {
		state := "wait_bgsave"
		if rc.online {
			state = "online"
		}
		f("slave%d:ip=%s,port=%d,state=%s,offset=%d,lag=%d", i, rc.ip, rc.port, state, rc.ackOff.Load(), (now-rc.ackTime.Load())/1000)
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
