package server

import (
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
	"github.com/sluicedb/sluice/tracking"
)

// Client side caching (CLIENT TRACKING), as Redis 7.0's tracking.c. The
// table of tracked keys and BCAST prefixes is package tracking's (a
// client's mode is its c.trk); here are the handlers, the hooks around
// commands, and the delivery of invalidations: RESP3 pushes (>2
// invalidate [keys]), or, for a RESP2 client redirecting to a connection
// subscribed to __redis__:invalidate, Pub/Sub messages on that channel.

func clientTrackingCommand(c *Client, args [][]byte) {
	var o tracking.Options
	for j := 3; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "redirect") && more > 0:
			j++
			if o.Redirect != 0 {
				c.w.Error("ERR A client can only redirect to a single other client")
				return
			}
			n, err := strconv.ParseInt(string(args[j]), 10, 64)
			if err != nil {
				c.w.Error("ERR value is not an integer or out of range")
				return
			}
			o.Redirect = n
			if c.srv.clientByID(n) == nil {
				c.w.Error("ERR The client ID you want redirect to does not exist")
				return
			}
		case eq(args[j], "bcast"):
			o.BCAST = true
		case eq(args[j], "optin"):
			o.OptIn = true
		case eq(args[j], "optout"):
			o.OptOut = true
		case eq(args[j], "noloop"):
			o.NoLoop = true
		case eq(args[j], "prefix") && more > 0:
			j++
			o.Prefixes = append(o.Prefixes, string(args[j]))
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	t := &c.srv.tracking
	switch {
	case eq(args[2], "on"):
		st := c.trk.Load()
		if st == nil {
			st = &tracking.State{}
		}
		if err := t.Enable(c, st, o); err != nil {
			c.w.Error(err.Error())
			return
		}
		c.trk.Store(st)
	case eq(args[2], "off"):
		t.Disable(c, c.trk.Load())
	default:
		c.w.Error(errSyntax)
		return
	}
	c.w.OK()
}

func clientCachingCommand(c *Client, args [][]byte) {
	yes := eq(args[2], "yes")
	if !yes && !eq(args[2], "no") {
		if st := c.trk.Load(); !c.srv.tracking.On(st) {
			c.w.Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		} else {
			c.w.Error(errSyntax)
		}
		return
	}
	if err := c.srv.tracking.Caching(c.trk.Load(), yes); err != nil {
		c.w.Error(err.Error())
		return
	}
	c.w.OK()
}

func clientGetredirCommand(c *Client, args [][]byte) { c.w.Int(c.srv.trackingRedir(c)) }

func clientTrackinginfoCommand(c *Client, args [][]byte) {
	flags, redir, prefixes := c.srv.tracking.Info(c.trk.Load())
	c.w.Map(3)
	c.w.BulkString("flags")
	c.w.Set(len(flags))
	for _, f := range flags {
		c.w.BulkString(f)
	}
	c.w.BulkString("redirect")
	c.w.Int(redir)
	c.w.BulkString("prefixes")
	c.w.Array(len(prefixes))
	for _, p := range prefixes {
		c.w.BulkString(p)
	}
}

// trackingRedir is CLIENT LIST's redir field and CLIENT GETREDIR: the
// client invalidations are redirected to (0 for none) while tracking,
// else -1.
func (s *Server) trackingRedir(c *Client) int64 {
	if id, on := s.tracking.Redirect(c.trk.Load()); on {
		return id
	}
	return -1
}

// trackBegin runs before a tracking client's command: it records the keys
// the command holds (or the whole keyspace) so that changes it makes are
// known as its own.
func (c *Client) trackBegin(trk *tracking.State, cmd *Command, args [][]byte) {
	e := &tracking.Exec{}
	switch {
	case cmd.Flags&cmdspec.LockAll != 0:
		// A command under the keyspace lock is the only one running.
		e.All = true
	case cmd.Flags&cmdspec.NoLock != 0:
		// It holds no lock (EXEC's queued commands record their own keys).
	default:
		var buf [4]cmdspec.Key
		for _, k := range cmd.Keys(args, buf[:0], cmdspec.Access) {
			e.Keys = append(e.Keys, string(args[k.Pos]))
		}
	}
	trk.Exec.Store(e)
}

// trackEnd runs after a tracking client's command: a read-only command's
// keys are remembered, and the invalidations the command caused to the
// client itself are sent after its reply.
func (c *Client) trackEnd(trk *tracking.State, cmd *Command, args [][]byte) {
	trk.Exec.Store(nil)
	s := c.srv
	if cmd.Flags&cmdspec.Readonly != 0 && cmd.Flags&cmdspec.PubSub == 0 && !isReadOnlyScriptCall(cmd) {
		if c.trackRemember(trk, cmd, args) {
			s.trackingLimitKeys(nil)
		}
	}
	if !c.inExec && !c.fromScript {
		// As Redis's resetClient: the flag lasts past any CLIENT command
		// (not only CACHING itself) and through a MULTI queue.
		if c.tx == nil && !strings.HasPrefix(cmd.Name, "client|") {
			s.tracking.EndCaching(trk)
		}
		c.trackFlushPending()
	}
}

// isReadOnlyScriptCall reports EVAL_RO, EVALSHA_RO and FCALL_RO: read-only
// commands whose keys are remembered only when the script reads
// (trackScriptRead), as in Redis.
func isReadOnlyScriptCall(cmd *Command) bool {
	switch cmd.Name {
	case "eval_ro", "evalsha_ro", "fcall_ro":
		return true
	}
	return false
}

// trackScriptRead runs after a command a script called: when it is a
// read-only command and the script's caller tracks, the caller remembers
// the keys it declared to the script (EVAL's or FCALL's KEYS), not the
// ones the command named, as Redis 7.0 does.
func (c *Client) trackScriptRead(cmd *Command, args [][]byte) {
	if cmd.Flags&cmdspec.Readonly == 0 || cmd.Flags&cmdspec.PubSub != 0 {
		return
	}
	s := c.srv
	if run := s.lua.cur; run != nil && run.caller != nil {
		if s.tracking.Remember(run.caller.trk.Load(), run.caller.ID, run.keys, s.cfg.TrackingMaxKeys.Load()) {
			s.trackingLimitKeys(nil)
		}
	}
}

// trackRemember adds the keys of a read-only command to the tracking table
// for c (Redis's trackingRememberKeys). It reports whether the table is
// now over tracking-table-max-keys.
func (c *Client) trackRemember(trk *tracking.State, cmd *Command, args [][]byte) bool {
	var buf [4][]byte
	var kbuf [4]cmdspec.Key
	keys := buf[:0]
	for _, k := range cmd.Keys(args, kbuf[:0], cmdspec.Access) {
		keys = append(keys, args[k.Pos])
	}
	return c.srv.tracking.Remember(trk, c.ID, keys, c.srv.cfg.TrackingMaxKeys.Load())
}

// trackFlushPending sends the invalidations c's own command caused, after
// its reply, then the BCAST invalidations collected meanwhile.
func (c *Client) trackFlushPending() {
	c.trackSendPending(c)
	if c.srv.tracking.BroadcastQueued() {
		c.srv.trackingBroadcast(c)
	}
}

// trackSendPending sends the invalidations queued for c's own changes.
// self is the client whose goroutine this is (c, or nil when another
// goroutine serves c, which is then blocked and leaves pending alone).
func (c *Client) trackSendPending(self *Client) {
	ts := c.trk.Load()
	if ts == nil || !ts.PendingNull && len(ts.Pending) == 0 {
		return
	}
	if ts.PendingNull {
		c.srv.sendTracking(c, self, nullFor(c.w.Proto))
	}
	for _, k := range ts.Pending {
		c.srv.sendTracking(c, self, tracking.KeyArray(k))
	}
	ts.Pending, ts.PendingNull = ts.Pending[:0], false
}

func nullFor(proto int) []byte {
	if proto == 3 {
		return []byte("_\r\n")
	}
	return []byte("$-1\r\n")
}

// trackingInvalidate is the keyspace hook for a changed key (Redis's
// trackingInvalidateKey): it runs on the goroutine that changed the key,
// with the key's shard locked.
func (s *Server) trackingInvalidate(db *store.DB, key []byte) {
	if s.tracking.Live() {
		s.invalidateTrackers(key, s.tracking.Invalidate(key), true, nil)
	}
}

// trackingExpired is trackingInvalidate for a key that expired: no
// client changed it, so NOLOOP leaves no one out.
func (s *Server) trackingExpired(db *store.DB, key []byte) {
	if s.tracking.Live() {
		s.invalidateTrackers(key, s.tracking.InvalidateExpired(key), false, nil)
	}
}

// invalidateTrackers sends the invalidation of key to the clients ids
// that tracked it (the key is already out of the table); own says a
// client's command changed it (NOLOOP applies), not expiry. self, when
// not nil, is the client on whose goroutine this runs: its own message
// goes straight into its output.
func (s *Server) invalidateTrackers(key []byte, ids map[int64]struct{}, own bool, self *Client) {
	for id := range ids {
		target := s.clientByID(id)
		if target == nil {
			continue
		}
		st := target.trk.Load()
		send, noloop := s.tracking.Invalidates(st)
		if !send {
			continue
		}
		if e := st.Exec.Load(); e != nil && e.Has(key) {
			// The target's command touched the key: it is on this
			// goroutine, and the message goes after its reply.
			if !noloop || !own {
				st.Pending = append(st.Pending, string(key))
			}
			continue
		}
		s.sendTracking(target, self, tracking.KeyArray(string(key)))
	}
}

// trackingLimitKeys keeps the tracking table within
// tracking-table-max-keys: the keys it drops are invalidated as if they
// were modified. It runs after commands that track keys and from the cron.
func (s *Server) trackingLimitKeys(self *Client) {
	for _, v := range s.tracking.Limit(s.cfg.TrackingMaxKeys.Load()) {
		s.invalidateTrackers([]byte(v.Key), v.IDs, false, self)
	}
}

// trackingFlushAll is FLUSHDB/FLUSHALL's invalidation: a null to every
// tracking client ("all keys"), and the table is emptied.
func (s *Server) trackingFlushAll(by *Client) {
	if !s.tracking.FlushAll() {
		return
	}
	for _, c := range s.clientsSnapshot() {
		st := c.trk.Load()
		if !s.tracking.On(st) {
			continue
		}
		if c == by {
			st.PendingNull = true
			continue
		}
		s.sendTracking(c, nil, nullFor(c.w.Proto))
	}
}

// trackingBroadcast sends the keys changed under each BCAST prefix to its
// clients (Redis does it before the event loop sleeps). self is the client
// whose goroutine runs it, or nil.
func (s *Server) trackingBroadcast(self *Client) {
	for _, m := range s.tracking.Broadcast() {
		s.sendTracking(m.To, self, m.Payload)
	}
}

// sendTracking sends an invalidation (payload: an array of keys, or a
// null) for tracking client c, to c or to the client it redirects to
// (Redis's sendTrackingMessage). self is the client whose goroutine this
// is: output to it is written in place, after the reply being built.
func (s *Server) sendTracking(c, self *Client, payload []byte) {
	st := c.trk.Load()
	redir, _ := s.tracking.Redirect(st)
	target := c
	if redir != 0 {
		target = s.clientByID(redir)
		if target == nil {
			s.tracking.BreakRedirect(st)
			if c.w.Proto == 3 {
				w := resp.Writer{Proto: 3}
				w.Push(2)
				w.BulkString("tracking-redir-broken")
				w.Int(redir)
				s.deliverTracking(c, self, w.Buf)
			}
			return
		}
	}
	w := resp.Writer{Proto: 3}
	switch {
	case target.w.Proto == 3:
		w.Push(2)
		w.BulkString("invalidate")
	case redir != 0 && target.ps.Total() > 0:
		w.Proto = 2
		w.Array(3)
		w.BulkString("message")
		w.BulkString("__redis__:invalidate")
	default:
		// A RESP2 connection without redirection gets nothing.
		return
	}
	w.Raw(payload)
	s.deliverTracking(target, self, w.Buf)
}

func (s *Server) deliverTracking(target, self *Client, b []byte) {
	if target == self {
		target.w.Raw(b)
		target.pushed = true // sent even under CLIENT REPLY OFF, as Redis's pushes
		return
	}
	target.deliverPubSub(b)
}
