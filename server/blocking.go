package server

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
	"github.com/sluicedb/sluice/tracking"
)

// Blocking operations (BLPOP, BLMOVE, BZPOPMIN, ...), after Redis's blocked.c.
//
// A blocking command that finds nothing to pop registers a waiter for each
// of its keys, in FIFO order per (db, key), and blocks its client (the
// driver stops parsing its input). A command that creates a watched key
// calls signalKeyAsReady; once that command's locks are released,
// serveReadyKeys takes the keyspace exclusively and, for each ready key,
// serves the waiters in the order they blocked by running their pop again
// against the store. Timeouts, CLIENT UNBLOCK and disconnection remove a
// waiter; all three go through the registry lock, so a waiter is answered
// exactly once.

// serveResult tells the ready-key loop what a waiter did with a key.
type serveResult uint8

const (
	serveDone serveResult = iota // replied: the waiter is finished
	serveSkip                    // the key's type is not this waiter's: try the next
	serveStop                    // the key is empty or gone: stop serving it
)

type blockKind uint8

const (
	blockList blockKind = iota
	blockZset
	blockStream
)

// waiter is a blocked client.
type waiter struct {
	c     *Client
	dbi   int
	keys  []string
	kind  blockKind
	proto int
	// serve pops from key for this waiter, writing its reply to w.
	serve func(w *resp.Writer, db *store.DB, key []byte) serveResult
	timer *time.Timer
	done  bool
	cmd   *Command // the blocking command, for its stats on unblock
	start int64    // nanotime it blocked
	args  [][]byte // the command's arguments, for the slow log on unblock
	// timeout is the reply when the timeout passes (nil: timeoutReply).
	timeout []byte
}

type readyKey struct {
	dbi int
	key string
}

// blockRegistry is the server's set of blocked clients.
type blockRegistry struct {
	mu       sync.Mutex
	waiters  map[readyKey][]*waiter
	byClient map[*Client]*waiter
	ready    []readyKey
	readySet map[readyKey]struct{}

	count   atomic.Int64 // registered waiters: signalKeyAsReady's fast path
	pending atomic.Bool  // ready keys wait to be served
	serving atomic.Bool  // serveReadyKeys is running (keyspace held exclusively)
}

// parseTimeout parses a blocking command's timeout in seconds (a float)
// into an absolute unix time in ms (0: forever), replying with Redis's
// errors when invalid.
func (c *Client) parseTimeout(b []byte) (int64, bool) {
	f, ok := parseTimeoutFloat(b)
	if !ok {
		c.w.Error("ERR timeout is not a float or out of range")
		return 0, false
	}
	ms := math.Ceil(f * 1000)
	// C converts an out-of-range value to LLONG_MIN: "negative".
	if ms < 0 || ms >= 9.2233720368547758e18 || math.IsInf(ms, 0) {
		c.w.Error(errTimeoutNeg)
		return 0, false
	}
	if ms == 0 {
		return 0, true
	}
	return int64(ms) + wallMs(), true
}

// parseTimeoutMs parses a timeout in milliseconds (CLIENT PAUSE, WAIT),
// replying with Redis's errors (getTimeoutFromObjectOrReply with
// UNIT_MILLISECONDS) when it is not an integer or negative.
func (c *Client) parseTimeoutMs(b []byte) (int64, bool) {
	ms, ok := resp.ParseInt(b)
	if !ok {
		c.w.Error("ERR timeout is not an integer or out of range")
		return 0, false
	}
	if ms < 0 {
		c.w.Error(errTimeoutNeg)
		return 0, false
	}
	return ms, true
}

// parseTimeoutFloat parses like Redis's string2ld: no spaces, no trailing
// bytes, no NaN.
func parseTimeoutFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) >= 5*1024 || isSpace(b[0]) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	if math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// canBlock reports whether the client may block now: not inside MULTI/EXEC
// (where Redis answers as if the timeout had passed).
func (c *Client) canBlock() bool { return !c.inExec }

// blockOn blocks the client on keys until one of them can be served by
// serve, the deadline (unix ms, 0: never) passes, or it is unblocked.
func (c *Client) blockOn(keys [][]byte, kind blockKind, deadline int64, serve func(w *resp.Writer, db *store.DB, key []byte) serveResult) {
	c.blockWith(keys, kind, deadline, serve, nil)
}

// blockWith is blockOn with the reply for a timeout or CLIENT UNBLOCK
// (nil: the null reply of the blocking pops). With no keys, only those
// end the block (WAIT).
func (c *Client) blockWith(keys [][]byte, kind blockKind, deadline int64, serve func(w *resp.Writer, db *store.DB, key []byte) serveResult, timeout []byte) {
	b := &c.srv.blocking
	w := &waiter{c: c, dbi: c.dbi, kind: kind, proto: c.w.Proto, serve: serve, cmd: c.cur, start: nanotime(), timeout: timeout}
	for _, a := range c.curArgs { // the read buffer moves on: copy, for the slow log
		w.args = append(w.args, append([]byte(nil), a...))
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !seen[string(k)] {
			seen[string(k)] = true
			w.keys = append(w.keys, string(k))
		}
	}
	// Mark the client blocked before anyone can answer it.
	c.setBlocked()
	b.mu.Lock()
	if b.waiters == nil {
		b.waiters = map[readyKey][]*waiter{}
		b.byClient = map[*Client]*waiter{}
		b.readySet = map[readyKey]struct{}{}
	}
	for _, k := range w.keys {
		rk := readyKey{w.dbi, k}
		b.waiters[rk] = append(b.waiters[rk], w)
	}
	b.byClient[c] = w
	b.count.Add(1)
	if deadline > 0 {
		d := time.Duration(deadline-wallMs()) * time.Millisecond
		if d < 0 {
			d = 0
		}
		w.timer = time.AfterFunc(d, func() { b.finish(w, w.timedOut()) })
	}
	b.mu.Unlock()
}

// timedOut is w's reply when its timeout passes or CLIENT UNBLOCK ends it.
func (w *waiter) timedOut() []byte {
	if w.timeout != nil {
		return w.timeout
	}
	return timeoutReply(w.proto)
}

func timeoutReply(proto int) []byte {
	if proto == 3 {
		return []byte("_\r\n")
	}
	return []byte("*-1\r\n")
}

// removeLocked drops w from the registry. b.mu must be held.
func (b *blockRegistry) removeLocked(w *waiter) {
	if w.done {
		return
	}
	w.done = true
	for _, k := range w.keys {
		rk := readyKey{w.dbi, k}
		q := b.waiters[rk]
		for i, x := range q {
			if x == w {
				q = append(q[:i], q[i+1:]...)
				break
			}
		}
		if len(q) == 0 {
			delete(b.waiters, rk)
		} else {
			b.waiters[rk] = q
		}
	}
	delete(b.byClient, w.c)
	b.count.Add(-1)
	if w.timer != nil {
		w.timer.Stop()
	}
}

// finish ends w's block with reply (nil: none), unless it already ended.
func (b *blockRegistry) finish(w *waiter, reply []byte) bool {
	b.mu.Lock()
	if w.done {
		b.mu.Unlock()
		return false
	}
	b.removeLocked(w)
	b.mu.Unlock()
	if reply != nil {
		w.unblockStats(reply)
		w.c.replyingToBlock()
		w.c.deliver(reply)
	}
	w.c.unblock()
	return true
}

// unblockStats accounts for the end of w's block as Redis's
// updateStatsOnUnblock: the time blocked counts in the command's usec and
// latency histogram, and an error reply (CLIENT UNBLOCK ... ERROR, a
// wrong-type destination) in errorstats, total_error_replies and the
// command's failed_calls.
func (w *waiter) unblockStats(reply []byte) {
	c := w.c
	if w.cmd == nil || w.cmd.id >= len(c.srv.stats[c.slot].cmds) {
		return
	}
	st := &c.srv.stats[c.slot]
	ns := nanotime() - w.start
	st.cmds[w.cmd.id].usec.Add(ns / 1000)
	if c.srv.cfg.LatencyTrack.Load() {
		st.recordLatency(w.cmd, ns)
	}
	c.RecordSlow(w.args, ns/1000) // as Redis's updateStatsOnUnblock
	if len(reply) > 0 && reply[0] == '-' {
		c.srv.countError(strings.TrimSuffix(string(reply), "\r\n"))
		st.cmds[w.cmd.id].failed.Add(1)
		st.errorReplies.Add(1)
	}
}

// clientClosed forgets a disconnected client's block.
func (b *blockRegistry) clientClosed(c *Client) {
	if b.count.Load() == 0 {
		return
	}
	b.mu.Lock()
	if w := b.byClient[c]; w != nil {
		b.removeLocked(w)
	}
	b.mu.Unlock()
}

// signalKeyAsReady records that key in db may now serve blocked clients
// (it was created: a push, ZADD, RENAME/MOVE/COPY/SWAPDB onto it...). The
// caller holds the key's lock; the waiters are served after the command.
func (s *Server) signalKeyAsReady(db *store.DB, key []byte) {
	b := &s.blocking
	if b.count.Load() == 0 {
		return
	}
	if !b.serving.Load() {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	// While serveReadyKeys runs it holds both the keyspace exclusively
	// and b.mu, so a caller that sees serving is that very goroutine.
	rk := readyKey{db.ID, string(key)}
	if _, ok := b.waiters[rk]; !ok {
		return
	}
	if _, ok := b.readySet[rk]; ok {
		return
	}
	b.readySet[rk] = struct{}{}
	b.ready = append(b.ready, rk)
	b.pending.Store(true)
}

// signalReady is signalKeyAsReady for the client's current database.
func (c *Client) signalReady(key []byte) { c.srv.signalKeyAsReady(c.DB(), key) }

// serveReadyKeys serves the clients blocked on keys made ready by the
// command that just ran. Called with no keyspace lock held.
func (s *Server) serveReadyKeys() {
	b := &s.blocking
	if !b.pending.Load() {
		return
	}
	s.ks.Lock.Lock()
	b.mu.Lock()
	b.serving.Store(true)
	for len(b.ready) > 0 {
		rk := b.ready[0]
		b.ready = b.ready[1:]
		delete(b.readySet, rk)
		if rk.dbi >= s.ks.NumDBs() {
			continue
		}
		db := s.ks.DB(rk.dbi)
		key := []byte(rk.key)
		i := 0
		for {
			q := b.waiters[rk]
			if i >= len(q) {
				break
			}
			w := q[i]
			rw := resp.Writer{Proto: w.proto}
			// Changes the served command makes are its client's own (the
			// keyspace is held exclusively): a tracking client gets their
			// invalidations after the reply, as after any command.
			trk := w.c.trk.Load()
			if trk != nil {
				trk.Exec.Store(&tracking.Exec{All: true})
			}
			if s.ks.Snapshotting() {
				w.c.captureKeys(db, w.cmd, w.args)
			}
			var fresh map[string]bool
			if w.cmd != nil && w.cmd.Name == "xreadgroup" && s.repl.flags.Load()&replFeed != 0 {
				fresh = newConsumers(db, w.args)
			}
			res := w.serve(&rw, db, key)
			if trk != nil {
				trk.Exec.Store(nil)
			}
			if res == serveStop {
				break
			}
			if res == serveSkip {
				i++
				continue
			}
			if s.repl.flags.Load()&replFeed != 0 {
				s.replServed(w, db, key, rw.Buf, fresh)
			}
			b.removeLocked(w)
			w.unblockStats(rw.Buf)
			w.c.replyingToBlock()
			w.c.deliver(rw.Buf)
			w.c.trackSendPending(nil) // after the reply
			w.c.unblock()
		}
	}
	b.ready = nil
	b.pending.Store(false)
	b.serving.Store(false)
	b.mu.Unlock()
	s.ks.Lock.Unlock()
}

// unblockClient ends the block of client id as CLIENT UNBLOCK does: with
// the timeout reply, or with withError the -UNBLOCKED error. It reports
// whether the client was blocked.
func unblockClient(srv *Server, id int64, withError bool) bool {
	srv.mu.Lock()
	c := srv.clients[id]
	srv.mu.Unlock()
	if c == nil {
		return false
	}
	b := &srv.blocking
	b.mu.Lock()
	w := b.byClient[c]
	b.mu.Unlock()
	if w == nil {
		return false
	}
	reply := w.timedOut()
	if withError {
		reply = []byte("-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n")
	}
	return b.finish(w, reply)
}

// blockedClients returns the number of blocked clients (INFO clients).
func (s *Server) blockedClients() int64 { return s.blocking.count.Load() }

// readyEntry is the first step of every waiter's retry: the key's entry if
// it now holds a value of kind; otherwise ok is false and res says what to
// do (serveStop: the key is gone, serveSkip: it holds another type).
func readyEntry(db *store.DB, key []byte, kind store.Kind) (e *store.Entry, res serveResult, ok bool) {
	e = db.Lookup(key)
	if e == nil {
		return nil, serveStop, false
	}
	if e.Kind() != kind {
		return nil, serveSkip, false
	}
	return e, serveDone, true
}
