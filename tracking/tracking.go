// Package tracking is the invalidation table of client side caching
// (CLIENT TRACKING), as Redis 7.0's tracking.c keeps it: in the default
// mode the keys a tracking client reads are remembered as key -> client
// IDs, and a change to such a key invalidates it for each of those
// clients once (then the key is forgotten until it is read again). In
// BCAST mode clients subscribe to key prefixes, which must not overlap
// one another, and get the keys changed under them, batched. The table,
// like Redis's, is not per database; tracking-table-max-keys bounds it.
//
// A Table is generic over the server's client type C, which it only
// stores and compares; each client's mode is a State the server keeps
// beside it. The server sends the messages: the table says which keys go
// to which clients, with payloads encoded as RESP arrays of keys
// (KeyArray).
package tracking

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicedb/sluice/resp"
)

// State is a client's tracking mode. Its unexported fields are guarded by
// the Table's lock; Exec, Pending and PendingNull are not (see each).
type State struct {
	on, bcast, optin, optout, noloop bool
	caching                          bool // CLIENT CACHING yes/no for the next command
	brokenRedir                      bool
	redirect                         int64
	prefixes                         []string

	// Exec is set while the client runs a command: the keys it holds
	// locked, or all for the keyspace-wide lock. A change to one of those
	// keys while it is set was made by the client itself (only the lock
	// holder can change a key), which NOLOOP and the reply order need.
	Exec atomic.Pointer[Exec]
	// Pending holds the client's own invalidations, sent after the reply of
	// the command that caused them (Redis's tracking_pending_keys), and
	// PendingNull a flush's. Only the client's own goroutine touches them:
	// self-changes run there.
	Pending     []string
	PendingNull bool
}

// Prefixes are the client's BCAST prefixes. It reads them without the
// table's lock (for memory accounting, which may be a moment late).
func (st *State) Prefixes() []string { return st.prefixes }

// Exec is what a running command holds (State.Exec).
type Exec struct {
	All  bool
	Keys []string
}

// Has reports whether key is one the command holds.
func (e *Exec) Has(key []byte) bool {
	if e.All {
		return true
	}
	for _, k := range e.Keys {
		if k == string(key) {
			return true
		}
	}
	return false
}

// bcastPrefix is one prefix of the BCAST table: its subscribed clients and
// the keys changed under it since the last broadcast, with the client
// that made each change (the zero C when unknown) for NOLOOP.
type bcastPrefix[C comparable] struct {
	clients map[C]*State
	keys    map[string]C
	order   []string
}

// Table is the tracking table of a server whose clients are C. The zero
// value is empty; its methods may be called from any goroutine.
type Table[C comparable] struct {
	mu       sync.Mutex
	overMax  int          // Limit calls in a row that stayed over the limit
	clients  atomic.Int64 // clients with tracking on (changed under mu)
	keys     map[string]map[int64]struct{}
	items    int64
	prefixes map[string]*bcastPrefix[C]
	// live is nonzero while there are tracked keys or prefixes: the
	// keyspace hook returns at once otherwise.
	live        atomic.Int64
	bcastQueued atomic.Bool
}

func (t *Table[C]) updateLive() {
	t.live.Store(int64(len(t.keys) + len(t.prefixes)))
}

// Live reports whether any key or prefix is tracked: without, a changed
// key concerns no one.
func (t *Table[C]) Live() bool { return t.live.Load() != 0 }

// Clients is the number of clients with tracking on.
func (t *Table[C]) Clients() int64 { return t.clients.Load() }

// Stats returns INFO's tracking_total_keys, _items and _prefixes.
func (t *Table[C]) Stats() (keys, items, prefixes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int64(len(t.keys)), t.items, int64(len(t.prefixes))
}

// Options are CLIENT TRACKING ON's options.
type Options struct {
	Redirect                     int64 // 0: none
	BCAST, OptIn, OptOut, NoLoop bool
	Prefixes                     []string
}

// Enable turns tracking on for client c with state st (CLIENT TRACKING
// ON), or returns Redis's error for options that do not go together or
// with the client's current mode; st is then unchanged.
func (t *Table[C]) Enable(c C, st *State, o Options) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !o.BCAST && len(o.Prefixes) > 0:
		return errors.New("ERR PREFIX option requires BCAST mode to be enabled")
	case st.on && st.bcast != o.BCAST:
		return errors.New("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
	case o.BCAST && (o.OptIn || o.OptOut):
		return errors.New("ERR OPTIN and OPTOUT are not compatible with BCAST")
	case o.OptIn && o.OptOut:
		return errors.New("ERR You can't specify both OPTIN mode and OPTOUT mode")
	case st.on && ((o.OptIn && st.optout) || (o.OptOut && st.optin)):
		return errors.New("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
	}
	if o.BCAST {
		if err := CheckPrefixes(st.prefixes, o.Prefixes); err != nil {
			return err
		}
	}
	if !st.on {
		t.clients.Add(1)
	}
	st.on = true
	st.brokenRedir, st.bcast, st.optin, st.optout, st.noloop = false, false, false, false, false
	st.redirect = o.Redirect
	if o.BCAST {
		st.bcast = true
		prefixes := o.Prefixes
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		for _, p := range prefixes {
			t.addPrefix(c, st, p)
		}
	}
	st.optin, st.optout, st.noloop = o.OptIn, o.OptOut, o.NoLoop
	t.updateLive()
	return nil
}

// CheckPrefixes rejects BCAST prefixes that overlap each other or a
// client's current ones (one is a prefix of the other), with Redis's
// errors.
func CheckPrefixes(current, prefixes []string) error {
	overlap := func(a, b string) bool {
		n := min(len(a), len(b))
		return a[:n] == b[:n]
	}
	for i, p := range prefixes {
		for _, q := range current {
			if overlap(p, q) {
				return errors.New("ERR Prefix '" + p + "' overlaps with an existing prefix '" + q + "'. Prefixes for a single client must not overlap.")
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlap(p, q) {
				return errors.New("ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap.")
			}
		}
	}
	return nil
}

// addPrefix subscribes c to a BCAST prefix. t.mu is held.
func (t *Table[C]) addPrefix(c C, st *State, p string) {
	if t.prefixes == nil {
		t.prefixes = map[string]*bcastPrefix[C]{}
	}
	bp := t.prefixes[p]
	if bp == nil {
		bp = &bcastPrefix[C]{clients: map[C]*State{}, keys: map[string]C{}}
		t.prefixes[p] = bp
	}
	if _, ok := bp.clients[c]; !ok {
		bp.clients[c] = st
		st.prefixes = append(st.prefixes, p)
	}
}

// Disable turns tracking off for c (CLIENT TRACKING off, RESET, close);
// st may be nil.
func (t *Table[C]) Disable(c C, st *State) {
	if st == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range st.prefixes {
		if bp := t.prefixes[p]; bp != nil {
			delete(bp.clients, c)
			if len(bp.clients) == 0 {
				delete(t.prefixes, p)
			}
		}
	}
	st.prefixes = nil
	if st.on {
		t.clients.Add(-1)
	}
	st.on, st.brokenRedir, st.bcast, st.optin, st.optout, st.caching, st.noloop = false, false, false, false, false, false, false
	t.updateLive()
}

// Caching is CLIENT CACHING yes|no: the next command's reads are
// remembered (OPTIN) or not (OPTOUT). st may be nil.
func (t *Table[C]) Caching(st *State, yes bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case st == nil || !st.on:
		return errors.New("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	case yes && !st.optin:
		return errors.New("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
	case !yes && !st.optout:
		return errors.New("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
	}
	st.caching = true
	return nil
}

// EndCaching ends a CLIENT CACHING's effect (after the command it was
// for).
func (t *Table[C]) EndCaching(st *State) {
	t.mu.Lock()
	st.caching = false
	t.mu.Unlock()
}

// On reports whether tracking is on for st (nil: never enabled).
func (t *Table[C]) On(st *State) bool {
	if st == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return st.on
}

// Redirect returns the client ID st's invalidations go to (0: its own
// connection), and whether tracking is on.
func (t *Table[C]) Redirect(st *State) (id int64, on bool) {
	if st == nil {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return st.redirect, st.on
}

// BreakRedirect marks st's redirection as broken (its target is gone).
func (t *Table[C]) BreakRedirect(st *State) {
	t.mu.Lock()
	st.brokenRedir = true
	t.mu.Unlock()
}

// Invalidates reports whether a key change is sent to st's client:
// tracking is on and not in BCAST mode (whose keys come by prefix), and
// with NOLOOP whether its own changes are left out.
func (t *Table[C]) Invalidates(st *State) (send, noloop bool) {
	if st == nil {
		return false, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	send = st.on && !st.bcast
	return send, send && st.noloop
}

// Info is CLIENT TRACKINGINFO's reply: the flags in Redis's order, the
// redirection (-1 when tracking is off), and the prefixes sorted (Redis
// lists them from a radix tree). st may be nil.
func (t *Table[C]) Info(st *State) (flags []string, redirect int64, prefixes []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st == nil {
		st = &State{}
	}
	flags = []string{"off"}
	if st.on {
		flags[0] = "on"
	}
	if st.bcast {
		flags = append(flags, "bcast")
	}
	if st.optin {
		flags = append(flags, "optin")
		if st.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if st.optout {
		flags = append(flags, "optout")
		if st.caching {
			flags = append(flags, "caching-no")
		}
	}
	if st.noloop {
		flags = append(flags, "noloop")
	}
	if st.brokenRedir {
		flags = append(flags, "broken_redirect")
	}
	redirect = -1
	if st.on {
		redirect = st.redirect
	}
	prefixes = append([]string(nil), st.prefixes...)
	sort.Strings(prefixes)
	return flags, redirect, prefixes
}

// AppendListFlags appends CLIENT LIST's flags of st (t, R, B in Redis's
// order; none when tracking is off). st may be nil.
func (t *Table[C]) AppendListFlags(st *State, dst []byte) []byte {
	if st == nil {
		return dst
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !st.on {
		return dst
	}
	dst = append(dst, 't')
	if st.brokenRedir {
		dst = append(dst, 'R')
	}
	if st.bcast {
		dst = append(dst, 'B')
	}
	return dst
}

// Remember adds keys a read-only command read to the table for the
// client id with state st (Redis's trackingRememberKeys), when its mode
// remembers reads. It reports whether the table is now over maxKeys
// (tracking-table-max-keys; 0 is no limit).
func (t *Table[C]) Remember(st *State, id int64, keys [][]byte, maxKeys int64) bool {
	if st == nil || len(keys) == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !st.on || st.bcast || (st.optin && !st.caching) || (st.optout && st.caching) {
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
		if _, ok := ids[id]; !ok {
			ids[id] = struct{}{}
			t.items++
		}
	}
	t.updateLive()
	return maxKeys > 0 && int64(len(t.keys)) > maxKeys
}

// Invalidate records a change of key (Redis's trackingInvalidateKey): the
// BCAST prefixes it falls under queue it for the next Broadcast, and the
// IDs of the clients that read it are returned, the key forgotten. It is
// called with the key's lock held, so a client whose State.Exec holds the
// key made the change.
func (t *Table[C]) Invalidate(key []byte) (ids map[int64]struct{}) {
	return t.invalidate(key, true)
}

// InvalidateExpired is Invalidate for a key that expired: the change is
// no client's (Redis's trackingInvalidateKey with no client), so NOLOOP
// does not leave it out even for the client whose command found it
// expired.
func (t *Table[C]) InvalidateExpired(key []byte) (ids map[int64]struct{}) {
	return t.invalidate(key, false)
}

func (t *Table[C]) invalidate(key []byte, attribute bool) (ids map[int64]struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p, bp := range t.prefixes {
		if !strings.HasPrefix(string(key), p) {
			continue
		}
		var by C
		for cl, st := range bp.clients {
			if e := st.Exec.Load(); attribute && e != nil && e.Has(key) {
				by = cl
			}
		}
		if _, ok := bp.keys[string(key)]; !ok {
			bp.order = append(bp.order, string(key))
		}
		bp.keys[string(key)] = by
		t.bcastQueued.Store(true)
	}
	ids = t.keys[string(key)]
	if ids != nil {
		delete(t.keys, string(key))
		t.items -= int64(len(ids))
		t.updateLive()
	}
	return ids
}

// Victim is a key Limit dropped, with the clients that tracked it.
type Victim struct {
	Key string
	IDs map[int64]struct{}
}

// Over reports, without locking, whether the table may hold more than
// maxKeys keys (Limit then has work).
func (t *Table[C]) Over(maxKeys int64) bool { return maxKeys > 0 && t.live.Load() > maxKeys }

// Limit keeps the table within maxKeys (tracking-table-max-keys; Redis's
// trackingLimitUsedSlots): over it, it drops random keys, to be
// invalidated as if they were modified, with an effort that grows while
// the table stays over.
func (t *Table[C]) Limit(maxKeys int64) []Victim {
	if maxKeys <= 0 || t.clients.Load() == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if int64(len(t.keys)) <= maxKeys {
		t.overMax = 0
		return nil
	}
	effort := 100 * (t.overMax + 1)
	var victims []Victim
	for k, ids := range t.keys { // map order is random: Redis walks at random
		if effort == 0 || int64(len(t.keys)) <= maxKeys {
			break
		}
		effort--
		delete(t.keys, k)
		t.items -= int64(len(ids))
		victims = append(victims, Victim{k, ids})
	}
	if int64(len(t.keys)) <= maxKeys {
		t.overMax = 0
	} else {
		t.overMax++
	}
	t.updateLive()
	return victims
}

// FlushAll empties the key table (FLUSHDB, FLUSHALL: every tracking
// client is told "all keys"). It reports false when there was no one to
// tell.
func (t *Table[C]) FlushAll() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clients.Load() == 0 && len(t.keys) == 0 {
		return false
	}
	t.keys = nil
	t.items = 0
	t.updateLive()
	return true
}

// BroadcastQueued reports whether keys changed under a BCAST prefix wait
// for Broadcast.
func (t *Table[C]) BroadcastQueued() bool { return t.bcastQueued.Load() }

// Msg is an invalidation for a client: Payload is a KeyArray.
type Msg[C comparable] struct {
	To      C
	Payload []byte
}

// Broadcast returns the invalidations of the keys changed under each
// BCAST prefix since the last call, one per subscribed client (a NOLOOP
// client's without the keys it changed itself), and forgets the keys.
func (t *Table[C]) Broadcast() []Msg[C] {
	if !t.bcastQueued.CompareAndSwap(true, false) {
		return nil
	}
	var out []Msg[C]
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, bp := range t.prefixes {
		if len(bp.order) == 0 {
			continue
		}
		all := KeyArray(bp.order...)
		for cl, st := range bp.clients {
			if !st.noloop {
				out = append(out, Msg[C]{cl, all})
				continue
			}
			var mine []string
			for _, k := range bp.order {
				if bp.keys[k] != cl {
					mine = append(mine, k)
				}
			}
			if len(mine) > 0 {
				out = append(out, Msg[C]{cl, KeyArray(mine...)})
			}
		}
		bp.keys = map[string]C{}
		bp.order = nil
	}
	return out
}

// KeyArray is an invalidation's payload: keys as a RESP array.
func KeyArray(keys ...string) []byte {
	w := resp.Writer{Proto: 2}
	w.Array(len(keys))
	for _, k := range keys {
		w.BulkString(k)
	}
	return w.Buf
}
