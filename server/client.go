package server

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/sluicedb/sluice/acl"
	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/pubsub"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
	"github.com/sluicedb/sluice/tracking"
)

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Client is one connection's state. Its command processing is independent
// of how bytes reach it: the epoll loops and the goroutine driver (used for
// in-memory connections) both feed process and write out c.w.Buf.
type Client struct {
	srv  *Server
	ID   int64
	slot int // BigLock reader slot and stats slot of the driver
	w    resp.Writer
	p    resp.Parser

	// lastCmdLookup is the command this client named last: pipelines and
	// benchmarks repeat one command, and comparing its name costs less
	// than a lookup in the command table.
	lastCmdLookup *Command

	dbi      int
	name     string
	libName  string
	libVer   string
	addr     string
	laddr    string
	fd       int
	unixSock bool
	// ringGen tells this connection's ring completions from those of an
	// earlier one with the same descriptor; ringPollOut says a poll for
	// room in its socket is armed (loop_uring_linux.go).
	ringGen     uint32
	ringPeriod  int64 // the loop's period in which the ring last delivered c's input (loopRing.seen)
	ringPollOut bool
	ringSent    bool     // its held replies are in the ring's current send batch
	tls         *tlsConn // TLS state, nil for plain connections (loop_tls_linux.go)

	authed          bool
	implicitAuth    bool                     // authed without AUTH: the default user needed no password
	reauth          atomic.Bool              // RequireAuthAgain: drop an implicit login before the next batch
	direct          bool                     // a Direct's client (no connection)
	user            atomic.Pointer[acl.User] // ACL user; nil: the default user
	aclKilled       atomic.Bool              // closed by an ACL change: gone from CLIENT LIST
	closeAfterReply bool                     // QUIT, protocol error: close once replies are written
	closeASAP       atomic.Bool
	sigPending      atomic.Bool // queued on its loop's ready list
	blockedFlag     atomic.Bool
	blockedCounted  atomic.Bool  // counted in INFO's blocked_clients: cleared before the reply that ends the block is delivered
	watch           watchState   // keys this client WATCHes, and whether one changed: EXEC fails
	ps              pubsub.Subs  // pub/sub subscriptions
	softSince       atomic.Int64 // unix ms the output passed the soft limit, 0 if below
	replyOff        bool         // CLIENT REPLY OFF
	replySkip       int          // CLIENT REPLY SKIP: skip the next command's reply
	pushed          bool         // the command's reply is pub/sub pushes, which REPLY OFF/SKIP keep
	noEvict         bool
	noTouch         bool
	preOOM          bool  // over maxmemory when the command began (pre_command_oom_state)
	evictAfter      bool  // CONFIG SET changed maxmemory: evict once the command is done
	scriptAllowOOM  bool  // the script being started has the allow-oom flag
	ldb             uint8 // SCRIPT DEBUG's mode: its next EVAL is a debugging session (ldb.go)
	// debugStream is the goroutine driver's connection as a debugging
	// session reads and writes it (nil: no session on this connection).
	debugStream func() io.ReadWriter

	created  time.Time
	lastIO   atomic.Int64 // unix ms of the last interaction
	lastCmd  atomic.Pointer[Command]
	qbufLen  atomic.Int64 // query buffer size for CLIENT LIST: its unparsed bytes
	qbufCap  atomic.Int64 // and its allocation
	batchLen int          // bytes of the batch being processed (CLIENT LIST of itself)
	outLen   atomic.Int64 // pending output for CLIENT LIST
	asyncLen atomic.Int64 // len(async), for readers without amu

	// Memory accounting (memory.go): the part of the client's memory its
	// own goroutine changes, what is counted for it in used memory (-1
	// once closed) and in which class, and the overhead of its
	// subscriptions.
	ownMem          atomic.Int64
	multiMemA       atomic.Int64 // CLIENT LIST multi-mem
	memCounted      atomic.Int64
	memCountedClass atomic.Int32
	evictMem        atomic.Int64 // its part of memState.evictView (-1 once closed)
	evictIn         atomic.Bool  // its part follows its buffers once its first input ran
	pubsubMem       atomic.Int64
	replicaOut      atomic.Bool // a replica: its output counts in mem_clients_slaves
	evicted         atomic.Bool // disconnected by maxmemory-clients: gone from CLIENT LIST
	flagsMu         sync.Mutex
	killHook        func() // driver hook to close the connection from another goroutine
	// shutdownHook ends an event loop's connection from another
	// goroutine (killNow), the loop closing it later: it shuts sockFd
	// down under sockMu, which the loop holds to close the descriptor
	// (sockFd -1 once closed), so a reused descriptor is never touched.
	shutdownHook func()
	sockMu       sync.Mutex
	sockFd       int

	// For other clients' CLIENT LIST: the client's transaction (0 outside
	// MULTI, else the commands queued plus one), and the arguments of the
	// command it is blocked in (argv-mem, and that plus a pointer each).
	txView                       atomic.Int64
	blockedArgv, blockedArgvCost atomic.Int64

	qbuf     []byte   // unconsumed input kept between reads (event loops)
	qbufPeak int      // the most input held since the loop's cron last looked (noteQueryRead)
	qbAlloc  int64    // the query buffer the accounting counts (querybuf.go)
	rb       replyBuf // the reply buffer the accounting counts (replybuf.go)
	pending  []byte   // output the socket did not take yet (event loops)
	held     []byte   // replies waiting for the loop iteration's AOF commit

	keys       []cmdspec.Key
	snapKeys   []cmdspec.Key // captureKeys' scratch
	mark       int64         // nanotime at which the previous command of this batch ended
	errBase    int           // error replies written before the command being timed ended
	scratch    []byte
	tx         *txState                       // MULTI state, nil when not in a transaction
	execTx     *txState                       // the transaction EXEC is running (its CLIENT INFO still shows it)
	txSpare    *txState                       // the last transaction's queue, reused by the next MULTI
	inExec     bool                           // running queued commands under the exclusive lock
	fromScript bool                           // the client scripts run their redis.call commands through
	blocked    bool                           // waiting on a blocking command: input is held, not parsed
	postponed  bool                           // the command was held back by CLIENT PAUSE: not consumed
	cur        *Command                       // the command being called (a blocking command's waiter keeps it)
	curArgs    [][]byte                       // its arguments (slices of the read buffer: valid during the call)
	trk        atomic.Pointer[tracking.State] // CLIENT TRACKING state, nil until first enabled

	// Replication (replication.go): the commands a transaction or script
	// propagates, gathered until it ends; the replication offset after the
	// client's last propagated write (WAIT); whether this is the pseudo
	// client applying a master's stream on a replica.
	rpend      *replPending
	woff       int64
	replMaster bool
	// replica is set once this connection is a replica of this server
	// (SYNC/PSYNC): its output is the replication stream.
	replica atomic.Pointer[replicaConn]

	// Cluster mode (cmd_cluster.go): ASKING for the next command,
	// READONLY, and the keys of the command being checked.
	clAsking   bool
	clReadOnly bool
	clSlot     int // the slot of the command's keys (-1: none), for its script
	clKeys     [][]byte

	// Output produced on other goroutines (pub/sub messages, the reply to a
	// blocked command served by another client's push), written by the
	// client's own driver.
	amu        sync.Mutex
	async      []byte
	asyncSpare []byte
	bulk       atomic.Bool // a full sync's payload is being delivered: big buffers are reused
	signal     func()      // driver hook: write async output and resume input
}

// deliver appends RESP bytes produced outside the client's driver and
// makes the driver write them. Safe from any goroutine.
func (c *Client) deliver(b []byte) {
	c.amu.Lock()
	first := len(c.async) == 0
	c.async = append(c.async, b...)
	c.asyncLen.Store(int64(len(c.async)))
	c.amu.Unlock()
	c.asyncGrew()
	if first && c.signal != nil {
		c.signal()
	}
}

// asyncGrew counts output delivered from another goroutine and applies
// maxmemory-clients in the background (the deliverer may hold locks an
// eviction takes).
func (c *Client) asyncGrew() {
	if c.updateMem() && c.srv.cfg.MaxmemClients.Load() != 0 {
		c.srv.evictClientsSoon()
	}
}

// swapAsync takes the async output buffer itself (no copy), leaving an
// empty spare in its place; the driver hands it back with returnAsync.
func (c *Client) swapAsync() []byte {
	c.amu.Lock()
	out := c.async
	c.async, c.asyncSpare = c.asyncSpare[:0], nil
	c.asyncLen.Store(0)
	c.amu.Unlock()
	return out
}

// returnAsync keeps a written async buffer for reuse, unless a burst made
// it bigger than the reply buffer the memory accounting allows every
// client: then it is dropped so a subscriber that once fell behind does
// not keep the memory.
func (c *Client) returnAsync(b []byte) {
	if cap(b) > replyBufSize && (!c.bulk.Load() || cap(b) > bulkSpareMax) {
		return
	}
	c.amu.Lock()
	if c.asyncSpare == nil {
		c.asyncSpare = b[:0]
	}
	c.amu.Unlock()
}

// bulkSpareMax is the largest async buffer a client receiving a full
// sync's payload keeps for reuse: the sender lets 4 MB wait (repl's
// syncBuffered), which append grows to at most 8 MB. Without reuse each
// 4 MB sent allocated about 8 MB, and the collections that followed cost
// the master more than the sync's encoding.
const bulkSpareMax = 8 << 20

// setBulk marks a full sync's payload being delivered to c (on) and its
// end, when the big buffers it kept are let go.
func (c *Client) setBulk(on bool) {
	c.bulk.Store(on)
	if !on {
		c.amu.Lock()
		if cap(c.asyncSpare) > replyBufSize {
			c.asyncSpare = nil
		}
		c.amu.Unlock()
	}
}

// takeAsync returns and clears the pending async output.
func (c *Client) takeAsync(dst []byte) []byte {
	c.amu.Lock()
	dst = append(dst, c.async...)
	c.async = c.async[:0]
	c.asyncLen.Store(0)
	c.amu.Unlock()
	return dst
}

// setBlocked marks the client blocked (its driver stops parsing input).
// Only the client's own command handler may block it.
func (c *Client) setBlocked() {
	c.blocked = true
	c.blockedArgv.Store(argvLen(c.curArgs))
	c.blockedArgvCost.Store(argvCost(c.curArgs))
	c.blockedFlag.Store(true)
	c.blockedCounted.Store(true)
}

// replyingToBlock stops counting the client as blocked before the reply
// that ends its block is delivered, so a client that has read that reply
// never finds itself still counted in INFO's blocked_clients.
func (c *Client) replyingToBlock() { c.blockedCounted.Store(false) }

// unblock ends a block from any goroutine, after its reply was delivered,
// and makes the driver resume the commands that arrived meanwhile.
func (c *Client) unblock() {
	c.blockedCounted.Store(false)
	c.blockedFlag.Store(false)
	c.blockedArgv.Store(0)
	c.blockedArgvCost.Store(0)
	if c.signal != nil {
		c.signal()
	}
}

// txState is a client's MULTI queue.
type txState struct {
	cmds  [][][]byte
	names []*Command
	// The flags of the queued commands as EXEC's checks see them (Redis's
	// mstate.cmd_flags and cmd_inv_flags): ORed, and their complements
	// ORed.
	flags, invFlags cmdspec.Flags
	dirty           bool     // a command failed to queue: EXEC aborts
	buf             []byte   // the queued arguments' bytes
	args            [][]byte // the queued arguments, slices of buf
	// argvSums is CLIENT LIST's multi-mem (Redis's mstate.argv_len_sums):
	// the queued arguments' bytes and a pointer for each.
	argvSums int64
}

// reset empties the queue, keeping its memory for the next transaction.
func (tx *txState) reset() {
	clear(tx.cmds)
	clear(tx.args)
	tx.cmds, tx.names, tx.args, tx.buf = tx.cmds[:0], tx.names[:0], tx.args[:0], tx.buf[:0]
	tx.flags, tx.invFlags = 0, 0
	tx.dirty = false
	tx.argvSums = 0
}

// DB returns the client's selected database.
func (c *Client) DB() *store.DB { return c.srv.ks.DB(c.dbi) }

// process executes the complete commands at the front of buf and returns
// how many bytes it consumed. It stops early when the output passes
// flushAt (the driver writes and calls again), the client blocks, or the
// client is to be closed.
func (c *Client) process(buf []byte) int {
	off := 0
	c.mark = 0
	c.batchLen = len(buf)
	defer func() {
		c.mark = 0
		c.noteReplyPeak(len(c.w.Buf))
	}()
	if c.reauth.Load() {
		c.applyReauth()
	}
	c.p.AuthRequired = !c.authed && c.srv.cfg.RequirePass() != ""
	c.p.MaxBulkLen = c.srv.cfg.MaxBulkLen.Load()
	for off < len(buf) {
		if c.closeAfterReply || c.blocked {
			break
		}
		n, args, err := c.p.Next(buf[off:])
		if err != nil {
			if err == resp.ErrIncomplete {
				break
			}
			if pe, ok := err.(*resp.ProtocolError); ok {
				c.w.Error(pe.Msg)
			}
			c.closeAfterReply = true
			c.p.Reset()
			return len(buf)
		}
		if len(args) == 0 {
			off += n
			continue
		}
		c.exec(args)
		if c.postponed {
			// Paused: the command stays in the buffer and is parsed
			// again when the client resumes.
			c.postponed = false
			break
		}
		off += n
		if len(c.w.Buf) >= flushAt {
			break
		}
	}
	return off
}

// flushAt is the output size at which a batch is written before parsing
// more commands, which bounds memory for pipelines of any depth.
const flushAt = 64 * 1024

// reply-mode helpers: CLIENT REPLY OFF/SKIP drop replies.
func (c *Client) exec(args [][]byte) {
	mark := len(c.w.Buf)
	c.pushed = false
	if e := c.srv.embed.errReply.Load(); e != nil && !c.direct && !c.fromScript {
		c.w.Error(*e)
		return
	}
	if c.replica.Load() != nil {
		c.replicaExec(args)
		return
	}
	c.dispatch(args)
	if c.postponed {
		return // it did not run: the reply mode applies when it does
	}
	if c.replyOff {
		if !c.pushed {
			c.w.Buf = c.w.Buf[:mark]
		}
	} else if c.replySkip > 0 {
		// The skip is armed by CLIENT REPLY SKIP and applies to the next command.
		if c.replySkip == 2 {
			c.replySkip = 1
		} else {
			if !c.pushed {
				c.w.Buf = c.w.Buf[:mark]
			}
			c.replySkip = 0
		}
	}
}

func (c *Client) dispatch(args [][]byte) {
	srv := c.srv
	if srv.tracking.Clients() > 0 && srv.tracking.Over(srv.cfg.TrackingMaxKeys.Load()) {
		// Before any command, queued ones too, as Redis's processCommand
		// calls trackingLimitUsedSlots.
		srv.trackingLimitKeys(c)
	}
	cmd := c.lastCmdLookup
	if cmd == nil || !nameIs(args[0], cmd.Name) || srv.cmds != nil {
		cmd = srv.lookupCommand(args[0])
		if cmd != nil {
			c.lastCmdLookup = cmd
		}
	}
	if cmd == nil {
		c.lastCmd.Store(nil)
		if len(args[0]) == 5 && strings.EqualFold(string(args[0]), "host:") || strings.EqualFold(string(args[0]), "post") {
			// Cross-protocol scripting attempt: Redis frees such a client
			// at once (freeClientAsync), without sending the replies still
			// in its output buffer.
			c.w.Buf = c.w.Buf[:0]
			c.closeAfterReply = true
			return
		}
		c.reject(unknownCommand(args))
		return
	}
	if cmd.sub != nil && len(args) >= 2 {
		sub := cmd.lookupSub(args[1])
		c.lastCmd.Store(sub)
		if sub == nil {
			c.reject("ERR unknown subcommand '" + trunc(cstr(args[1]), 128) + "'. Try " + strings.ToUpper(cmd.Name) + " HELP.")
			return
		}
		cmd = sub
	} else {
		c.lastCmd.Store(cmd)
	}
	if !cmd.checkArity(len(args)) {
		c.rejectCmd(cmd, errArity(cmd.Name))
		return
	}
	if !c.authed && cmd.Flags&cmdspec.NoAuth == 0 && srv.cfg.RequirePass() != "" {
		c.rejectCmd(cmd, errNoAuth)
		return
	}
	// ACLs: one test for a user allowed everything (the default user).
	if u := c.user.Load(); u == nil || u.Restricted() {
		if !c.aclPermit(cmd, args) {
			return
		}
	}
	if srv.cluster != nil && c.clusterRedirect(cmd, args) {
		return
	}
	// Loading, or writes refused for a disk error: one load for both.
	gate := srv.gate.Load()
	if gate&gateLoading != 0 && cmd.Flags&cmdspec.Loading == 0 {
		c.rejectCmd(cmd, errLoading)
		return
	}
	if t := srv.lua.busySince.Load(); t != 0 && c.busyReject(cmd, t) {
		return
	}
	if srv.cfg.MaxmemClients.Load() != 0 && !c.clientEvictCheck() {
		return
	}
	if srv.cfg.MaxMemory.Load() != 0 && !c.oomCheck(cmd, args) {
		return
	}
	if gate&gateDisk != 0 && c.diskDenied(cmd) {
		return
	}
	if srv.cfg.MinReplicas.Load() != 0 && c.noReplicas(cmd) {
		return
	}
	if srv.repl.flags.Load()&replReadOnly != 0 && (c.readOnlyReplica(cmd) || c.staleReplica(cmd) || c.loadingRefused(cmd, args)) {
		return
	}
	if hook := srv.preCall; hook != nil && !hook(c, cmd, args) {
		return
	}

	if srv.pause.typ.Load() != pauseOff && c.postponeIfPaused(cmd, args) {
		return
	}
	if c.tx != nil && !isTxControl(cmd) {
		if cmd.Flags&cmdspec.NoMulti != 0 {
			c.rejectCmd(cmd, "ERR Command not allowed inside a transaction")
			return
		}
		c.queue(cmd, args)
		return
	}
	c.call(cmd, args)
	if c.evictAfter && !c.inExec {
		c.evictAfter = false
		c.evictAfterConfig()
	}
}

// isTxControl reports commands that run immediately inside MULTI.
func isTxControl(cmd *Command) bool {
	switch cmd.Name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

func (c *Client) queue(cmd *Command, args [][]byte) {
	tx := c.tx
	if tx.dirty || c.watch.Dirty() {
		// EXEC will fail: as Redis's queueMultiCommand, keep nothing.
		c.w.Simple("QUEUED")
		return
	}
	// Arguments are copied into one growing buffer: when it grows, the
	// slices taken earlier keep pointing at the old array, which stays
	// valid, so queueing allocates only when the buffer needs room.
	first := len(tx.args)
	for _, a := range args {
		start := len(tx.buf)
		tx.buf = append(tx.buf, a...)
		tx.args = append(tx.args, tx.buf[start:len(tx.buf):len(tx.buf)])
	}
	tx.argvSums += argvCost(args)
	tx.cmds = append(tx.cmds, tx.args[first:len(tx.args):len(tx.args)])
	tx.names = append(tx.names, cmd)
	f := c.queuedFlags(cmd, args)
	tx.flags |= f
	tx.invFlags |= ^f
	c.w.Simple("QUEUED")
}

// reject replies with an error for a command that did not run, marking an
// open transaction as failed.
func (c *Client) reject(msg string) {
	if c.tx != nil {
		c.tx.dirty = true
	}
	c.w.Error(msg)
}

func (c *Client) rejectCmd(cmd *Command, msg string) {
	c.srv.stats[c.slot].rejected(cmd)
	if cmd.Name == "exec" && c.tx != nil {
		// A refused EXEC ends the transaction, with the reason (Redis's
		// execCommandAbort).
		c.discardTx()
		c.w.Error("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(strings.TrimPrefix(msg, "-"), "ERR "))
		return
	}
	c.reject(msg)
}

const errNoReplicas = "NOREPLICAS Not enough good replicas to write."

// replicasMissing reports whether writes are refused for want of replicas:
// when min-replicas-to-write and min-replicas-max-lag are both set and
// fewer replicas than that acknowledged within the lag (Redis's
// checkGoodReplicasStatus).
func (s *Server) replicasMissing() bool {
	n := s.cfg.MinReplicas.Load()
	lag := s.cfg.MinReplicasLag.Load()
	return n != 0 && lag != 0 && s.repl.goodReplicas(lag) < n
}

// noReplicas is processCommand's min-replicas-to-write check: a write
// command (or an EXEC with one queued) is refused with NOREPLICAS.
func (c *Client) noReplicas(cmd *Command) bool {
	if !c.srv.replicasMissing() {
		return false
	}
	if cmd.Flags&cmdspec.Write == 0 && (cmd.Name != "exec" || !c.txQueued(cmdspec.Write)) {
		return false
	}
	c.rejectCmd(cmd, errNoReplicas)
	return true
}

func unknownCommand(args [][]byte) string {
	var sb strings.Builder
	sb.WriteString("ERR unknown command '")
	sb.WriteString(trunc(cstr(args[0]), 128))
	sb.WriteString("', with args beginning with: ")
	n := 0
	for _, a := range args[1:] {
		if n >= 128 {
			break
		}
		s := "'" + trunc(cstr(a), 128-n) + "' "
		sb.WriteString(s)
		n += len(s)
	}
	return sb.String()
}

// cstr returns b up to its first NUL byte: Redis formats user input in
// error messages with %s, which ends there.
func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func trunc(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}

// call runs cmd under the locks its keys need and records its stats.
func (c *Client) call(cmd *Command, args [][]byte) {
	if c.inExec && !c.fromScript {
		// EXEC checks ACLs again: they may have changed since queueing.
		if u := c.user.Load(); u != nil && u.Restricted() && !c.aclExecPermit(cmd, args) {
			return
		}
	}
	ks := c.srv.ks
	// One clock read per command: a command starts where the previous one
	// of the same batch ended (process resets the mark for each batch).
	start := c.mark
	if start == 0 {
		start = nanotime()
	}
	c.errBase = c.countErrors()
	c.cur, c.curArgs = cmd, args
	trk := c.trk.Load()
	if trk != nil {
		c.trackBegin(trk, cmd, args)
	}
	switch {
	case c.inExec || cmd.Flags&cmdspec.NoLock != 0:
		c.run(cmd, args)
	case cmd.Flags&cmdspec.LockAll != 0:
		if c.srv.lua.busySince.Load() != 0 && c.heldLoop() {
			// A stand-in serves this loop while a script holds the keyspace.
			c.rejectCmd(cmd, c.srv.busyText())
			if trk != nil {
				trk.Exec.Store(nil)
			}
			return
		}
		ks.Lock.Lock()
		if c.replMaster {
			ks.SetMasterViewAll(true)
			c.run(cmd, args)
			ks.SetMasterViewAll(false)
		} else {
			c.run(cmd, args)
		}
		ks.Lock.Unlock()
	default:
		if !ks.Lock.TryRLock(c.slot) && !c.lockOrBusy(cmd) {
			if trk != nil {
				trk.Exec.Store(nil)
			}
			return
		}
		db := c.DB()
		c.keys = cmd.Keys(args, c.keys[:0], cmdspec.Access)
		switch len(c.keys) {
		case 0:
			c.run(cmd, args)
		case 1:
			i := store.ShardOf(args[c.keys[0].Pos])
			db.LockShard(i)
			if c.replMaster {
				db.SetMasterView(i, true)
				c.run(cmd, args)
				db.SetMasterView(i, false)
			} else {
				c.run(cmd, args)
			}
			db.UnlockShard(i)
		default:
			var set store.ShardSet
			for _, k := range c.keys {
				set.Add(args[k.Pos])
			}
			set.Lock(db)
			if c.replMaster {
				set.SetMasterView(db, true)
				c.run(cmd, args)
				set.SetMasterView(db, false)
			} else {
				c.run(cmd, args)
			}
			set.Unlock(db)
		}
		ks.Lock.RUnlock(c.slot)
	}
	if trk != nil {
		c.trackEnd(trk, cmd, args)
	} else if c.fromScript && c.srv.tracking.Clients() > 0 {
		c.trackScriptRead(cmd, args)
	}
	if c.srv.monitors.n.Load() > 0 && monitored(cmd) {
		c.srv.feedMonitors(c, c.dbi, args, c.fromScript)
	}
	end := nanotime()
	ns := end - start
	c.mark = end
	// Errors since errBase: for EXEC, the commands it ran moved errBase
	// past their own errors, so only EXEC's own (EXECABORT...) count, as
	// Redis's incrCommandStatsOnError.
	errs := c.countErrors()
	st := &c.srv.stats[c.slot]
	st.record(cmd, ns, errs != c.errBase)
	if c.srv.cfg.LatencyTrack.Load() && !c.blocked {
		// A blocked command's latency is recorded when it is unblocked.
		st.recordLatency(cmd, ns)
	}
	c.errBase = errs
	if th := c.srv.cfg.SlowlogThresh.Load(); th >= 0 && ns/1000 >= th && !c.blocked && cmd.Flags&cmdspec.SkipSlowlog == 0 {
		// A blocked command is logged when it is unblocked, with the
		// time it waited (unblockStats).
		c.RecordSlow(args, ns/1000)
	}
	if !c.blocked && ns >= 1_000_000 && c.srv.cfg.LatencyThresh.Load() > 0 {
		event := "command"
		if cmd.Flags&cmdspec.Fast != 0 {
			event = "fast-command"
		}
		c.srv.latencyAddIfNeeded(event, ns/1_000_000)
	}
	if !c.inExec && c.srv.blocking.pending.Load() && c.srv.lua.busySince.Load() == 0 {
		// Serve clients blocked on keys this command filled: after its
		// own stats and slow log entry, outside its duration, as Redis's
		// handleClientsBlockedOnKeys after call(). Not while a script
		// runs: it holds the keyspace (a command allowed while busy
		// would wait for it, or deadlock in the stand-in of the script's
		// own loop); the script's caller serves them once it ends.
		c.srv.serveReadyKeys()
		c.mark = 0
	}
}

// run runs cmd's handler. While a snapshot is being written, the values
// a write command's keys have are first given to it (captureKeys), since
// the handler may change them in place. With replicas (or a backlog) it also feeds the
// replication stream, under the locks the command holds, so the stream
// has every key's changes in the order they were made; without, it costs
// one atomic load.
func (c *Client) run(cmd *Command, args [][]byte) {
	if cmd.Flags&(cmdspec.Write|cmdspec.MayReplicate) != 0 && c.srv.ks.Snapshotting() {
		c.captureKeys(c.DB(), cmd, args)
	}
	if c.srv.repl.flags.Load() == 0 {
		cmd.Fn(c, args)
		return
	}
	c.srv.replRun(c, cmd, args)
}

// lockOrBusy waits for the keyspace reader lock that a transaction, a
// keyspace-wide command or a script holds. While a script holds it, the
// wait turns into a BUSY reply once the script passes busy-reply-threshold
// (or at once when the client's loop is being served by a stand-in, whose
// commands must never wait on the script), as Redis replies to commands
// that arrive during a long script. It reports whether the lock is held.
func (c *Client) lockOrBusy(cmd *Command) bool {
	ks := c.srv.ks
	if c.srv.lua.busySince.Load() == 0 || c.replMaster {
		// The master's stream waits for a script to end, never -BUSY.
		ks.Lock.RLock(c.slot)
		return true
	}
	for !ks.Lock.TryRLock(c.slot) {
		t := c.srv.lua.busySince.Load()
		if t == 0 {
			ks.Lock.RLock(c.slot)
			return true
		}
		if c.busyReject(cmd, t) {
			return false
		}
		if c.heldLoop() {
			c.rejectCmd(cmd, c.srv.busyText())
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

// heldLoop reports whether c's event loop is being served by a stand-in.
func (c *Client) heldLoop() bool {
	return c.slot < len(c.srv.loops) && c.srv.loops[c.slot].heldByScript()
}

// errorNoStats replies with an error that was already counted in INFO
// errorstats (a script passing on the error of a command it called): the
// command still counts as failed, but the error is not counted again.
func (c *Client) errorNoStats(msg string) {
	hook := c.w.OnError
	c.w.OnError = nil
	c.w.Error(msg)
	c.w.OnError = hook
}

// countErrors is a cheap way to see if a command replied with an error:
// the count of error replies the writer has produced.
func (c *Client) countErrors() int { return c.w.Errors }

// Helpers for handlers.

// removeMembers is HDEL and SREM: it removes members with remove until the
// collection is empty (then the key is deleted), signals the change and
// the keyspace events (event, then "del" when the key went away) and
// replies with how many were removed.
func (c *Client) removeMembers(key []byte, members [][]byte, remove func([]byte) bool, size func() int, class int64, event string) {
	deleted, removed := 0, false
	for _, m := range members {
		if remove(m) {
			deleted++
			if size() == 0 {
				c.DB().Delete(key)
				removed = true
				break
			}
		}
	}
	if deleted > 0 {
		c.DB().Modified(key)
		c.notify(class, event, key)
		if removed {
			c.notify(config.NotifyGeneric, "del", key)
		}
	}
	c.w.Int(int64(deleted))
}

// lookupKind returns key's live entry when it holds a value of kind (nil
// when the key is missing). For another type it replies WRONGTYPE to w and
// returns ok=false. Each family's typed lookup (c.lookupList, c.lookupHash,
// ...) goes through it.
func lookupKind(w *resp.Writer, db *store.DB, key []byte, kind store.Kind) (e *store.Entry, ok bool) {
	e = db.Lookup(key)
	if e != nil && e.Kind() != kind {
		w.Error(errWrongType)
		return nil, false
	}
	return e, true
}

func (c *Client) wrongType() { c.w.Error(errWrongType) }

// intArg parses an integer argument, replying with Redis's error if invalid.
func (c *Client) intArg(b []byte) (int64, bool) {
	v, ok := resp.ParseInt(b)
	if !ok {
		c.w.Error(errNotInt)
	}
	return v, ok
}

func eq(b []byte, s string) bool { return len(b) == len(s) && strings.EqualFold(string(b), s) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
