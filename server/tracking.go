package server

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// Client side caching (CLIENT TRACKING), as Redis 7.0's tracking.c: in
// the default mode the keys a tracking client reads are remembered in a
// table of key -> client IDs, and a change to such a key sends each of
// those clients one invalidation message (then the key is forgotten until
// it is read again). In BCAST mode clients subscribe to key prefixes and
// get the keys changed under them, batched per command. Messages are
// RESP3 pushes (>2 invalidate [keys]), or, for a RESP2 client redirecting
// to a connection subscribed to __redis__:invalidate, Pub/Sub messages on
// that channel. The table, like Redis's, is not per database.

// trackState is a client's tracking mode. Its fields are guarded by the
// server's tracking.mu, except exec and pending (see below).
type trackState struct {
	on, bcast, optin, optout, noloop bool
	caching                          bool // CLIENT CACHING yes/no for the next command
	brokenRedir                      bool
	redirect                         int64
	prefixes                         []string

	// exec is set while the client runs a command: the keys it holds
	// locked, or all for the keyspace-wide lock. A change to one of those
	// keys while it is set was made by the client itself (only the lock
	// holder can change a key), which NOLOOP and the reply order need.
	exec atomic.Pointer[trackExec]
	// pending holds the client's own invalidations, sent after the reply of
	// the command that caused them (Redis's tracking_pending_keys). Only
	// the client's own goroutine touches it: self-changes run there.
	pending     []string
	pendingNull bool
}

type trackExec struct {
	all  bool
	keys []string
}

func (e *trackExec) has(key []byte) bool {
	if e.all {
		return true
	}
	for _, k := range e.keys {
		if k == string(key) {
			return true
		}
	}
	return false
}

// bcastPrefix is one prefix of the BCAST table: its subscribed clients and
// the keys changed under it since the last broadcast, with the client
// that made each change (nil when unknown) for NOLOOP.
type bcastPrefix struct {
	clients map[*Client]struct{}
	keys    map[string]*Client
	order   []string
}

type trackingTable struct {
	mu       sync.Mutex
	overMax  int          // trackingLimitKeys calls in a row that stayed over the limit
	clients  atomic.Int64 // clients with tracking on (changed under mu)
	keys     map[string]map[int64]struct{}
	items    int64
	prefixes map[string]*bcastPrefix
	// live is nonzero while there are tracked keys or prefixes: the
	// keyspace hook returns at once otherwise.
	live        atomic.Int64
	bcastQueued atomic.Bool
}

func (t *trackingTable) updateLive() {
	t.live.Store(int64(len(t.keys) + len(t.prefixes)))
}

// trackingClients returns the number of clients with tracking on.
func (s *Server) trackingClients() int64 {
	t := &s.tracking
	return t.clients.Load()
}

// trackingStats returns INFO's tracking_total_keys, _items and _prefixes.
func (s *Server) trackingStats() (keys, items, prefixes int64) {
	t := &s.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	return int64(len(t.keys)), t.items, int64(len(t.prefixes))
}

func clientTrackingCommand(c *Client, args [][]byte) {
	var redir int64
	var bcast, optin, optout, noloop bool
	var prefixes []string
	for j := 3; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "redirect") && more > 0:
			j++
			if redir != 0 {
				c.w.Error("ERR A client can only redirect to a single other client")
				return
			}
			n, err := strconv.ParseInt(string(args[j]), 10, 64)
			if err != nil {
				c.w.Error("ERR value is not an integer or out of range")
				return
			}
			redir = n
			if c.srv.clientByID(redir) == nil {
				c.w.Error("ERR The client ID you want redirect to does not exist")
				return
			}
		case eq(args[j], "bcast"):
			bcast = true
		case eq(args[j], "optin"):
			optin = true
		case eq(args[j], "optout"):
			optout = true
		case eq(args[j], "noloop"):
			noloop = true
		case eq(args[j], "prefix") && more > 0:
			j++
			prefixes = append(prefixes, string(args[j]))
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	t := &c.srv.tracking
	switch {
	case eq(args[2], "on"):
		t.mu.Lock()
		defer t.mu.Unlock()
		if !bcast && len(prefixes) > 0 {
			c.w.Error("ERR PREFIX option requires BCAST mode to be enabled")
			return
		}
		ts := c.trk
		if ts != nil && ts.on && ts.bcast != bcast {
			c.w.Error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if bcast && (optin || optout) {
			c.w.Error("ERR OPTIN and OPTOUT are not compatible with BCAST")
			return
		}
		if optin && optout {
			c.w.Error("ERR You can't specify both OPTIN mode and OPTOUT mode")
			return
		}
		if ts != nil && ts.on && ((optin && ts.optout) || (optout && ts.optin)) {
			c.w.Error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if bcast && !c.checkPrefixes(prefixes) {
			return
		}
		if ts == nil {
			ts = &trackState{}
			c.trk = ts
		}
		if !ts.on {
			t.clients.Add(1)
		}
		ts.on = true
		ts.brokenRedir, ts.bcast, ts.optin, ts.optout, ts.noloop = false, false, false, false, false
		ts.redirect = redir
		if bcast {
			ts.bcast = true
			if len(prefixes) == 0 {
				prefixes = []string{""}
			}
			for _, p := range prefixes {
				t.addPrefix(c, p)
			}
		}
		ts.optin, ts.optout, ts.noloop = optin, optout, noloop
		t.updateLive()
	case eq(args[2], "off"):
		t.mu.Lock()
		t.disable(c)
		t.mu.Unlock()
	default:
		c.w.Error(errSyntax)
		return
	}
	c.w.OK()
}

// checkPrefixes rejects BCAST prefixes that overlap each other or the
// client's current ones, with Redis's errors. tracking.mu is held.
func (c *Client) checkPrefixes(prefixes []string) bool {
	overlap := func(a, b string) bool {
		n := min(len(a), len(b))
		return a[:n] == b[:n]
	}
	for i, p := range prefixes {
		if c.trk != nil {
			for _, q := range c.trk.prefixes {
				if overlap(p, q) {
					c.w.Error("ERR Prefix '" + p + "' overlaps with an existing prefix '" + q + "'. Prefixes for a single client must not overlap.")
					return false
				}
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlap(p, q) {
				c.w.Error("ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap.")
				return false
			}
		}
	}
	return true
}

// addPrefix subscribes c to a BCAST prefix. tracking.mu is held.
func (t *trackingTable) addPrefix(c *Client, p string) {
	if t.prefixes == nil {
		t.prefixes = map[string]*bcastPrefix{}
	}
	bp := t.prefixes[p]
	if bp == nil {
		bp = &bcastPrefix{clients: map[*Client]struct{}{}, keys: map[string]*Client{}}
		t.prefixes[p] = bp
	}
	if _, ok := bp.clients[c]; !ok {
		bp.clients[c] = struct{}{}
		c.trk.prefixes = append(c.trk.prefixes, p)
	}
}

// disable turns tracking off for c (CLIENT TRACKING off, RESET, close).
// tracking.mu is held.
func (t *trackingTable) disable(c *Client) {
	ts := c.trk
	if ts == nil {
		return
	}
	for _, p := range ts.prefixes {
		if bp := t.prefixes[p]; bp != nil {
			delete(bp.clients, c)
			if len(bp.clients) == 0 {
				delete(t.prefixes, p)
			}
		}
	}
	ts.prefixes = nil
	if ts.on {
		t.clients.Add(-1)
	}
	ts.on, ts.brokenRedir, ts.bcast, ts.optin, ts.optout, ts.caching, ts.noloop = false, false, false, false, false, false, false
	t.updateLive()
}

func clientCachingCommand(c *Client, args [][]byte) {
	t := &c.srv.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := c.trk
	if ts == nil || !ts.on {
		c.w.Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch {
	case eq(args[2], "yes"):
		if !ts.optin {
			c.w.Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case eq(args[2], "no"):
		if !ts.optout {
			c.w.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		c.w.Error(errSyntax)
		return
	}
	ts.caching = true
	c.w.OK()
}

func clientGetredirCommand(c *Client, args [][]byte) {
	t := &c.srv.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.trk != nil && c.trk.on {
		c.w.Int(c.trk.redirect)
		return
	}
	c.w.Int(-1)
}

func clientTrackinginfoCommand(c *Client, args [][]byte) {
	t := &c.srv.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := c.trk
	if ts == nil {
		ts = &trackState{}
	}
	flags := []string{"off"}
	if ts.on {
		flags[0] = "on"
	}
	if ts.bcast {
		flags = append(flags, "bcast")
	}
	if ts.optin {
		flags = append(flags, "optin")
		if ts.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if ts.optout {
		flags = append(flags, "optout")
		if ts.caching {
			flags = append(flags, "caching-no")
		}
	}
	if ts.noloop {
		flags = append(flags, "noloop")
	}
	if ts.brokenRedir {
		flags = append(flags, "broken_redirect")
	}
	c.w.Map(3)
	c.w.BulkString("flags")
	c.w.Set(len(flags))
	for _, f := range flags {
		c.w.BulkString(f)
	}
	c.w.BulkString("redirect")
	if ts.on {
		c.w.Int(ts.redirect)
	} else {
		c.w.Int(-1)
	}
	c.w.BulkString("prefixes")
	// Redis lists a client's prefixes from a radix tree: sorted.
	ps := append([]string(nil), ts.prefixes...)
	sort.Strings(ps)
	c.w.Array(len(ps))
	for _, p := range ps {
		c.w.BulkString(p)
	}
}

// trackingFlags returns the CLIENT LIST flags of t's tracking state (t, R,
// B in Redis's order).
func (s *Server) trackingFlags(c *Client, dst []byte) []byte {
	tt := &s.tracking
	tt.mu.Lock()
	defer tt.mu.Unlock()
	ts := c.trk
	if ts == nil || !ts.on {
		return dst
	}
	dst = append(dst, 't')
	if ts.brokenRedir {
		dst = append(dst, 'R')
	}
	if ts.bcast {
		dst = append(dst, 'B')
	}
	return dst
}

// trackingRedir is CLIENT LIST's redir field: the client invalidations
// are redirected to (0 for none) while tracking, else -1.
func (s *Server) trackingRedir(c *Client) int64 {
	t := &s.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.trk == nil || !c.trk.on {
		return -1
	}
	return c.trk.redirect
}

// trackBegin runs before a tracking client's command: it records the keys
// the command holds (or the whole keyspace) so that changes it makes are
// known as its own.
func (c *Client) trackBegin(cmd *Command, args [][]byte) {
	e := &trackExec{}
	switch {
	case cmd.Flags&cmdspec.LockAll != 0:
		// A command under the keyspace lock is the only one running.
		e.all = true
	case cmd.Flags&cmdspec.NoLock != 0:
		// It holds no lock (EXEC's queued commands record their own keys).
	default:
		var buf [4]cmdspec.Key
		for _, k := range cmd.Keys(args, buf[:0], cmdspec.Access) {
			e.keys = append(e.keys, string(args[k.Pos]))
		}
	}
	c.trk.exec.Store(e)
}

// trackEnd runs after a tracking client's command: a read-only command's
// keys are remembered, and the invalidations the command caused to the
// client itself are sent after its reply.
func (c *Client) trackEnd(cmd *Command, args [][]byte) {
	ts := c.trk
	ts.exec.Store(nil)
	s := c.srv
	t := &s.tracking
	if cmd.Flags&cmdspec.Readonly != 0 && cmd.Flags&cmdspec.PubSub == 0 && !isReadOnlyScriptCall(cmd) {
		if c.trackRemember(cmd, args) {
			s.trackingLimitKeys()
		}
	}
	if !c.inExec && !c.fromScript {
		t.mu.Lock()
		// As Redis's resetClient: the flag lasts past any CLIENT command
		// (not only CACHING itself) and through a MULTI queue.
		if c.tx == nil && !strings.HasPrefix(cmd.Name, "client|") {
			ts.caching = false
		}
		t.mu.Unlock()
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
	if run := c.srv.lua.cur; run != nil && run.caller != nil && run.caller.trk != nil && run.caller.trackRememberKeys(run.keys) {
		c.srv.trackingLimitKeys()
	}
}

// trackRemember adds the keys of a read-only command to the tracking table
// for c (Redis's trackingRememberKeys). It reports whether the table is
// now over tracking-table-max-keys.
func (c *Client) trackRemember(cmd *Command, args [][]byte) bool {
	if c.trk == nil {
		return false
	}
	var buf [4][]byte
	var kbuf [4]cmdspec.Key
	keys := buf[:0]
	for _, k := range cmd.Keys(args, kbuf[:0], cmdspec.Access) {
		keys = append(keys, args[k.Pos])
	}
	return c.trackRememberKeys(keys)
}

// trackRememberKeys adds keys to the tracking table for c and reports
// whether the table is now over tracking-table-max-keys.
func (c *Client) trackRememberKeys(keys [][]byte) bool {
	ts := c.trk
	if ts == nil || len(keys) == 0 {
		return false
	}
	t := &c.srv.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	if !ts.on || ts.bcast || (ts.optin && !ts.caching) || (ts.optout && ts.caching) {
		return false
	}
	for _, k := range keys {
		if t.keys == nil {
			t.keys = map[string]map[int64]struct{}{}
		}
		ids := t.keys[string(k)]
		if ids == nil {
			ids = map[int64]struct{}{}
			t.keys[string(k)] = ids
		}
		if _, ok := ids[c.ID]; !ok {
			ids[c.ID] = struct{}{}
			t.items++
		}
	}
	t.updateLive()
	maxKeys := c.srv.cfg.TrackingMaxKeys.Load()
	return maxKeys > 0 && int64(len(t.keys)) > maxKeys
}

// trackFlushPending sends the invalidations c's own command caused, after
// its reply, then the BCAST invalidations collected meanwhile.
func (c *Client) trackFlushPending() {
	c.trackSendPending(c)
	if c.srv.tracking.bcastQueued.Load() {
		c.srv.trackingBroadcast(c)
	}
}

// trackSendPending sends the invalidations queued for c's own changes.
// self is the client whose goroutine this is (c, or nil when another
// goroutine serves c, which is then blocked and leaves pending alone).
func (c *Client) trackSendPending(self *Client) {
	ts := c.trk
	if ts == nil || !ts.pendingNull && len(ts.pending) == 0 {
		return
	}
	if ts.pendingNull {
		c.srv.sendTracking(c, self, nullFor(c.w.Proto))
	}
	for _, k := range ts.pending {
		c.srv.sendTracking(c, self, keyArray(k))
	}
	ts.pending, ts.pendingNull = ts.pending[:0], false
}

func keyArray(keys ...string) []byte {
	w := resp.Writer{Proto: 2}
	w.Array(len(keys))
	for _, k := range keys {
		w.BulkString(k)
	}
	return w.Buf
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
	t := &s.tracking
	if t.live.Load() == 0 {
		return
	}
	t.mu.Lock()
	for p, bp := range t.prefixes {
		if !strings.HasPrefix(string(key), p) {
			continue
		}
		var by *Client
		for cl := range bp.clients {
			if e := cl.trk.exec.Load(); e != nil && e.has(key) {
				by = cl
			}
		}
		if _, ok := bp.keys[string(key)]; !ok {
			bp.order = append(bp.order, string(key))
		}
		bp.keys[string(key)] = by
		t.bcastQueued.Store(true)
	}
	ids := t.keys[string(key)]
	if ids != nil {
		delete(t.keys, string(key))
		t.items -= int64(len(ids))
		t.updateLive()
	}
	t.mu.Unlock()
	s.invalidateTrackers(key, ids)
}

// invalidateTrackers sends the invalidation of key to the clients ids
// that tracked it (the key is already out of the table).
func (s *Server) invalidateTrackers(key []byte, ids map[int64]struct{}) {
	t := &s.tracking
	for id := range ids {
		target := s.clientByID(id)
		if target == nil {
			continue
		}
		t.mu.Lock()
		skip := target.trk == nil || !target.trk.on || target.trk.bcast
		noloop := !skip && target.trk.noloop
		t.mu.Unlock()
		if skip {
			continue
		}
		if e := target.trk.exec.Load(); e != nil && e.has(key) {
			// The target changed the key itself: it is on this goroutine.
			if !noloop {
				target.trk.pending = append(target.trk.pending, string(key))
			}
			continue
		}
		s.sendTracking(target, nil, keyArray(string(key)))
	}
}

// trackingLimitKeys keeps the tracking table within
// tracking-table-max-keys (Redis's trackingLimitUsedSlots): over the limit
// it invalidates random keys, as if they were modified, with an effort
// that grows while it stays over. It runs after commands that track keys
// and from the cron.
func (s *Server) trackingLimitKeys() {
	t := &s.tracking
	maxKeys := s.cfg.TrackingMaxKeys.Load()
	if maxKeys <= 0 || t.clients.Load() == 0 {
		return
	}
	t.mu.Lock()
	if int64(len(t.keys)) <= maxKeys {
		t.overMax = 0
		t.mu.Unlock()
		return
	}
	effort := 100 * (t.overMax + 1)
	type victim struct {
		key string
		ids map[int64]struct{}
	}
	var victims []victim
	for k, ids := range t.keys { // map order is random: Redis walks at random
		if effort == 0 || int64(len(t.keys)) <= maxKeys {
			break
		}
		effort--
		delete(t.keys, k)
		t.items -= int64(len(ids))
		victims = append(victims, victim{k, ids})
	}
	if int64(len(t.keys)) <= maxKeys {
		t.overMax = 0
	} else {
		t.overMax++
	}
	t.updateLive()
	t.mu.Unlock()
	for _, v := range victims {
		s.invalidateTrackers([]byte(v.key), v.ids)
	}
}

// trackingFlushAll is FLUSHDB/FLUSHALL's invalidation: a null to every
// tracking client ("all keys"), and the table is emptied.
func (s *Server) trackingFlushAll(by *Client) {
	t := &s.tracking
	t.mu.Lock()
	if t.clients.Load() == 0 && len(t.keys) == 0 {
		t.mu.Unlock()
		return
	}
	t.keys = nil
	t.items = 0
	t.updateLive()
	t.mu.Unlock()
	for _, c := range s.clientsSnapshot() {
		t.mu.Lock()
		on := c.trk != nil && c.trk.on
		t.mu.Unlock()
		if !on {
			continue
		}
		if c == by {
			c.trk.pendingNull = true
			continue
		}
		s.sendTracking(c, nil, nullFor(c.w.Proto))
	}
}

// trackingBroadcast sends the keys changed under each BCAST prefix to its
// clients (Redis does it before the event loop sleeps). self is the client
// whose goroutine runs it, or nil.
func (s *Server) trackingBroadcast(self *Client) {
	t := &s.tracking
	if !t.bcastQueued.CompareAndSwap(true, false) {
		return
	}
	type msg struct {
		c       *Client
		payload []byte
	}
	var out []msg
	t.mu.Lock()
	for _, bp := range t.prefixes {
		if len(bp.order) == 0 {
			continue
		}
		all := keyArray(bp.order...)
		for cl := range bp.clients {
			if !cl.trk.noloop {
				out = append(out, msg{cl, all})
				continue
			}
			var mine []string
			for _, k := range bp.order {
				if bp.keys[k] != cl {
					mine = append(mine, k)
				}
			}
			if len(mine) > 0 {
				out = append(out, msg{cl, keyArray(mine...)})
			}
		}
		bp.keys = map[string]*Client{}
		bp.order = nil
	}
	t.mu.Unlock()
	for _, m := range out {
		s.sendTracking(m.c, self, m.payload)
	}
}

// sendTracking sends an invalidation (payload: an array of keys, or a
// null) for tracking client c, to c or to the client it redirects to
// (Redis's sendTrackingMessage). self is the client whose goroutine this
// is: output to it is written in place, after the reply being built.
func (s *Server) sendTracking(c, self *Client, payload []byte) {
	t := &s.tracking
	t.mu.Lock()
	redir := c.trk.redirect
	t.mu.Unlock()
	target := c
	if redir != 0 {
		target = s.clientByID(redir)
		if target == nil {
			t.mu.Lock()
			c.trk.brokenRedir = true
			t.mu.Unlock()
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
	case redir != 0 && target.subCount(kindChannel)+target.subCount(kindShard) > 0:
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
