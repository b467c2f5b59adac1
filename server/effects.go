package server

import (
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/lua"
	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// The effects stream: what write commands did, in the order they did it,
// as the commands that redo it (Redis's propagate()). It has two
// consumers: the replication backlog and the replicas (replication.go),
// and the AOF (package persist). Both get the same commands from the same
// place, so an AOF replays exactly what a replica applies.
//
// A write command emits its effects while it still holds the locks of its
// keys (Client.run), so the stream carries each key's changes in the
// order they were made. What a command emits is decided by the
// keyspace's change counters: a command that changed the shards of its
// keys emits, rewritten where Redis rewrites it by package persist's
// rules (persist.Rewrite: relative expiries as absolute ones, SPOP as
// SREM, INCRBYFLOAT as SET, blocking pops as their plain forms...). The commands run by a transaction or a script
// are gathered on the client and emitted at its end, wrapped in
// MULTI/EXEC when there are several. Expired and evicted keys are emitted
// as DEL (or UNLINK). PUBLISH goes to replicas only, as in Redis. Nothing
// is emitted while a dataset loads.
//
// The stream's lock is the replication state's (repl.lock, repl.Master's
// mutex): holding it, a command's effects go to both consumers whole.
//
// A replica emits nothing to its replicas: its stream is its master's,
// passed on byte for byte as it is applied (replica.go), so its own
// replicas keep the master's offsets. What it applies reaches its AOF.

// effectsState is the stream's own state.
type effectsState struct {
	buf []byte      // encoding scratch, under repl.mu
	aof atomic.Bool // the AOF is on: replies wait for its commits
}

// effectsPending reports whether effects were fed to the AOF that are not
// yet written (or fsynced, as appendfsync says).
func (s *Server) effectsPending() bool {
	return s.fx.aof.Load() && s.pe.Pending()
}

// commitIfPending writes (and fsyncs) the AOF, as appendfsync says,
// before replies go out.
func (s *Server) commitIfPending() {
	if s.fx.aof.Load() && s.pe.Pending() {
		s.pe.Commit()
	}
}

// updateEffects turns the stream on when it has a consumer (a backlog, or
// the AOF) and off when it has none.
func (s *Server) updateEffects() {
	r := &s.repl
	r.lock()
	s.updateEffectsLocked()
	r.unlock()
}

func (s *Server) updateEffectsLocked() {
	aof := s.pe != nil && s.pe.AOFState() != persist.AOFOff
	s.fx.aof.Store(aof)
	s.repl.updateFeed()
}

// emitLocked sends one command run in database dbi (-1: no SELECT) to the
// consumers; toAOF false: replicas only. repl.mu is held.
func (s *Server) emitLocked(dbi int, args [][]byte, toAOF bool) {
	fx := &s.fx
	fx.buf = resp.AppendCommand(fx.buf[:0], args...)
	s.emitRawLocked(dbi, fx.buf, toAOF, true)
}

// emitRawLocked is emitLocked for a command already encoded, to the AOF
// and, unless toRepl is false (a script's redis.set_repl), the replicas.
func (s *Server) emitRawLocked(dbi int, cmd []byte, toAOF, toRepl bool) {
	if toAOF {
		s.pe.Feed(dbi, cmd)
	}
	r := &s.repl
	if toRepl && r.m.Backlog() != nil && r.flags.Load()&replReadOnly == 0 {
		// A replica's stream is its master's, passed on as it is
		// applied (replica.go): its own effects go to its AOF only.
		r.selectLocked(dbi)
		r.writeLocked(cmd)
	}
}

var (
	multiArgs = bargs("MULTI")
	execArgs  = bargs("EXEC")
)

// feedOps emits the commands of one call, wrapped in MULTI/EXEC when there
// are several.
func (s *Server) feedOps(dbi int, ops [][][]byte) {
	s.feedOpsTo(dbi, ops, true)
}

func (s *Server) feedOpsTo(dbi int, ops [][][]byte, toAOF bool) {
	if s.loading.On.Load() {
		return
	}
	r := &s.repl
	r.lock()
	if len(ops) > 1 {
		s.emitLocked(dbi, multiArgs, toAOF)
	}
	for _, op := range ops {
		s.emitLocked(dbi, op, toAOF)
	}
	if len(ops) > 1 {
		s.emitLocked(-1, execArgs, toAOF)
	}
	r.unlock()
}

// feedOne emits a single command and records the stream's offset as the
// client's last write (WAIT).
func (s *Server) feedOne(c *Client, dbi int, args [][]byte, toAOF bool) {
	if s.loading.On.Load() {
		return
	}
	r := &s.repl
	r.lock()
	s.emitLocked(dbi, args, toAOF)
	c.woff = r.offsetLocked()
	r.unlock()
}

// replPending is a client's propagation gathered during a transaction
// or script.
type replPending struct {
	buf []byte
	ops []pendOp
}

type pendOp struct {
	dbi, start, end int
	noAOF           bool // replicas only (PUBLISH, redis.set_repl)
	noRepl          bool // the AOF only (redis.set_repl)
}

// replFeedDel feeds the removal of an expired or evicted key: UNLINK when
// the lazyfree directive named is on, else DEL.
func (s *Server) replFeedDel(dbi int, key []byte, lazyDirective string) {
	if s.replLink() != nil || s.loading.On.Load() {
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
	if s.loading.On.Load() {
		p.ops, p.buf = p.ops[:0], p.buf[:0]
		return
	}
	r := &s.repl
	r.lock()
	aofOps, replOps := 0, 0
	first := -1 // the first op the replicas get
	for i, op := range p.ops {
		if !op.noAOF {
			aofOps++
		}
		if !op.noRepl {
			if replOps++; first < 0 {
				first = i
			}
		}
	}
	// MULTI/EXEC go to each target only around more than one of its own
	// commands, as Redis wraps what each target gets.
	if replOps > 1 {
		s.emitLocked(p.ops[first].dbi, multiArgs, false)
	}
	if aofOps > 1 {
		s.pe.Feed(p.ops[0].dbi, multiRESP)
	}
	for _, op := range p.ops {
		s.emitRawLocked(op.dbi, p.buf[op.start:op.end], !op.noAOF, !op.noRepl)
	}
	if replOps > 1 {
		s.emitLocked(-1, execArgs, false)
	}
	if aofOps > 1 {
		s.pe.Feed(-1, execRESP)
	}
	owner.woff = r.offsetLocked()
	r.unlock()
	p.ops = p.ops[:0]
	p.buf = p.buf[:0]
}

var (
	multiRESP = resp.AppendCommand(nil, bargs("MULTI")...)
	execRESP  = resp.AppendCommand(nil, bargs("EXEC")...)
)

func (c *Client) pend(dbi int, ops [][][]byte, toAOF bool) {
	toRepl := true
	if c.fromScript {
		// redis.set_repl: which targets the script's writes go to now.
		m := c.srv.lua.run.repl
		toAOF, toRepl = toAOF && m&lua.ReplAOF != 0, m&lua.ReplReplica != 0
		if !toAOF && !toRepl {
			return
		}
	}
	if c.rpend == nil {
		c.rpend = &replPending{}
	}
	p := c.rpend
	for _, op := range ops {
		start := len(p.buf)
		p.buf = resp.AppendCommand(p.buf, op...)
		p.ops = append(p.ops, pendOp{dbi: dbi, start: start, end: len(p.buf), noAOF: !toAOF, noRepl: !toRepl})
	}
}

// dirtyOf sums the change counters of the shards of a command's keys.
func dirtyOf(db *store.DB, args [][]byte, keys []cmdspec.Key) uint64 {
	var n uint64
	for _, k := range keys {
		p := int(k.Pos)
		if p < len(args) {
			n += db.ShardChanges(store.ShardOf(args[p]))
		}
	}
	return n
}

// replRun runs cmd and emits what it changed.
func (s *Server) replRun(c *Client, cmd *Command, args [][]byte) {
	flags := s.repl.flags.Load()
	if flags&replReadOnly != 0 && c.fromScript && cmd.Flags&cmdspec.Write != 0 {
		// A script's write on a read-only replica (scriptVerifyWriteCommandAllow).
		if caller := s.lua.run.caller; (caller == nil || !caller.replMaster) && s.cfg.Get("replica-read-only") == "yes" {
			c.w.Error("READONLY You can't write against a read only replica.")
			return
		}
	}
	if flags&replReadOnly != 0 && !c.replMaster && cmd.Flags&cmdspec.Write != 0 {
		// A write on a writable replica: keys written here with an
		// expiry expire here; its effects reach its AOF, not its
		// replicas.
		defer s.noteReplicaWrite(c, cmd, args)
	}
	if flags&replFeed == 0 || s.loading.On.Load() || flags&replReadOnly != 0 && !s.fx.aof.Load() {
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
					c.rpend.ops = append(c.rpend.ops, pendOp{dbi: op.dbi, start: start, end: len(c.rpend.buf), noAOF: op.noAOF, noRepl: op.noRepl})
				}
				p.ops, p.buf = p.ops[:0], p.buf[:0]
			} else {
				s.flushPending(pc.rpend, c)
			}
		}
		return
	}
	write := cmd.Flags&cmdspec.Write != 0
	if !write && cmd.Flags&cmdspec.MayReplicate == 0 {
		cmd.Fn(c, args)
		return
	}
	dbi := c.dbi
	db := c.DB()
	var kp [8]cmdspec.Key
	keys := cmd.Keys(args, kp[:0], cmdspec.Access)
	before := dirtyOf(db, args, keys)
	var fresh map[string]bool
	if cmd.Name == "xreadgroup" {
		fresh = newConsumers(db, args)
	}
	errs := c.w.Errors
	mark := len(c.w.Buf)
	cmd.Fn(c, args)
	changed := len(keys) > 0 && dirtyOf(db, args, keys) != before
	if !changed {
		switch cmd.Name {
		case "publish", "spublish":
			changed = c.w.Errors == errs && s.cluster == nil // cluster mode: the bus carries it
		case "copy", "move", "swapdb", "flushall", "flushdb":
			changed = c.w.Errors == errs
		default:
			changed = len(keys) == 0 && write && c.w.Errors == errs
		}
	}
	if !changed {
		return
	}
	// PUBLISH reaches replicas, not the AOF (forceCommandPropagation
	// with PROPAGATE_REPL only).
	toAOF := cmd.Name != "publish" && cmd.Name != "spublish"
	if persist.Verbatim(cmd.Name, args) {
		// Most writes are emitted as they came: no rewrite, no allocation.
		if nested {
			c.pend(dbi, [][][]byte{args}, toAOF)
			return
		}
		s.feedOne(c, dbi, args, toAOF)
		return
	}
	var reply []byte
	if mark <= len(c.w.Buf) {
		reply = c.w.Buf[mark:]
	}
	var ops [][][]byte
	if cmd.Name == "xreadgroup" {
		ops = persist.XReadGroupEffects(db, args, reply, func(k []byte) bool { return fresh[string(k)] })
	} else {
		ops = persist.Rewrite(db, cmd.Name, args, keys, reply, s.cfg.Get)
	}
	if len(ops) == 0 {
		return
	}
	if nested {
		c.pend(dbi, ops, toAOF)
		return
	}
	s.feedOpsTo(dbi, ops, toAOF)
	s.repl.lock()
	c.woff = s.repl.offsetLocked()
	s.repl.unlock()
}

// newConsumers returns, for XREADGROUP ... NOACK (args), the stream keys
// whose group lacks the consumer: reading creates it there, which Redis
// propagates as XGROUP CREATECONSUMER. Nil without NOACK.
func newConsumers(db *store.DB, args [][]byte) map[string]bool {
	group, consumer, noack, streams := persist.XReadGroupArgs(args)
	if !noack || group == nil || streams < 0 {
		return nil
	}
	fresh := map[string]bool{}
	for _, key := range args[streams : streams+(len(args)-streams)/2] {
		if e := db.PeekRaw(key); e != nil && e.Kind() == store.KindStream {
			if g := e.AsStream().Group(group); g != nil && g.Consumer(consumer) == nil {
				fresh[string(key)] = true
			}
		}
	}
	return fresh
}

// replServed feeds the pop a blocked client was served (serveReadyKeys,
// keyspace held exclusively); fresh is newConsumers from before it was.
func (s *Server) replServed(w *waiter, db *store.DB, key []byte, reply []byte, fresh map[string]bool) {
	if w.cmd == nil {
		return
	}
	var ops [][][]byte
	switch w.cmd.Name {
	case "blmove", "brpoplpush":
		if len(w.args) >= 3 {
			args := append([][]byte{w.args[0], key}, w.args[2:]...)
			ops = persist.BlockingAsPlain(w.cmd.Name, args, reply)
		}
	case "blpop", "brpop", "blmpop", "bzpopmin", "bzpopmax", "bzmpop":
		ops = persist.BlockingAsPlain(w.cmd.Name, w.args, reply)
	case "xreadgroup":
		ops = persist.XReadGroupEffects(db, w.args, reply, func(k []byte) bool { return fresh[string(k)] })
	default:
		ops = [][][]byte{w.args} // as they came
	}
	if len(ops) > 0 {
		s.feedOps(db.ID, ops)
	}
}
