package store

import (
	"sync/atomic"
	"time"
)

// Clock is a keyspace's time: what key expiry is measured against, and
// what a server built on the keyspace reports as the time (TIME, stream
// IDs, idle times, LASTSAVE). It runs with the wall clock until a test
// moves it: Advance shifts it forward (miniredis's FastForward), Set stops
// it at a given instant (SetTime) until it is advanced or set again. Each
// keyspace has its own, so servers embedded in one process keep separate
// times.
//
// Reading a clock nobody moved costs one atomic load more than reading the
// wall clock.
type Clock struct {
	st atomic.Pointer[clockState] // nil: the wall clock
	// The LRU clock (seconds) is the wall one's &^ lruStop + lruAdd: for
	// a frozen clock lruStop is all ones and lruAdd its second, for a
	// running one lruStop is 0 and lruAdd its offset, so that the access
	// path reads it without a branch or a clock read.
	lruStop, lruAdd atomic.Uint32
}

// store sets the clock's state (nil: the wall clock).
func (c *Clock) store(st *clockState) {
	c.st.Store(st)
	c.publishLRU(st)
}

func (c *Clock) publishLRU(st *clockState) {
	switch {
	case st == nil:
		c.lruStop.Store(0)
		c.lruAdd.Store(0)
	case st.frozen:
		c.lruStop.Store(^uint32(0))
		c.lruAdd.Store(uint32(st.at / 1e9))
	default:
		c.lruStop.Store(0)
		c.lruAdd.Store(uint32(st.offset / 1e9))
	}
}

// clockState is an immutable setting of a moved clock.
type clockState struct {
	frozen bool
	at     int64 // unix ns the frozen clock reads
	offset int64 // ns a running clock adds to the wall clock
}

func (st *clockState) unixNano() int64 {
	if st.frozen {
		return st.at
	}
	return time.Now().UnixNano() + st.offset
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	st := c.st.Load()
	if st == nil {
		return time.Now()
	}
	return time.Unix(0, st.unixNano())
}

// UnixMilli returns the clock's current time in unix milliseconds.
func (c *Clock) UnixMilli() int64 {
	st := c.st.Load()
	if st == nil {
		return time.Now().UnixMilli()
	}
	return st.unixNano() / 1e6
}

// unix returns the clock's current time in unix seconds.
func (c *Clock) unix() int64 {
	st := c.st.Load()
	if st == nil {
		return time.Now().Unix()
	}
	return st.unixNano() / 1e9
}

// Advance moves the clock forward by d (backward when d is negative),
// whether it runs or stands still.
func (c *Clock) Advance(d time.Duration) {
	for {
		old := c.st.Load()
		next := &clockState{offset: int64(d)}
		if old != nil {
			next.frozen, next.at, next.offset = old.frozen, old.at+int64(d), old.offset+int64(d)
		}
		if c.st.CompareAndSwap(old, next) {
			c.publishLRU(c.st.Load())
			return
		}
	}
}

// Set stops the clock at t: it reads t until it is advanced or set again.
// The zero time gives the clock back to the wall clock.
func (c *Clock) Set(t time.Time) {
	if t.IsZero() {
		c.store(nil)
		return
	}
	c.store(&clockState{frozen: true, at: t.UnixNano()})
}

// Frozen reports whether the clock stands still (Set was called).
func (c *Clock) Frozen() bool {
	st := c.st.Load()
	return st != nil && st.frozen
}

// Clock returns the keyspace's clock.
func (ks *Keyspace) Clock() *Clock { return &ks.clock }

// Now is the keyspace's current time in unix milliseconds: the time key
// expiry is measured against.
func (ks *Keyspace) Now() int64 {
	if t := ks.heldNow.Load(); t != 0 {
		return t
	}
	return ks.clock.UnixMilli()
}

// HoldNow makes Now read what it reads at the call until release: Redis
// measures the expiry of the keys a command touches against the time the
// outermost command started (call()'s fixed_time_expire), so a key that
// expires while a script or a transaction runs stays for the rest of it.
// Holds nest: the first fixes the time, the last release lets it go. The
// clock itself (TIME, stream IDs) goes on.
func (ks *Keyspace) HoldNow() (release func()) {
	if ks.holders.Add(1) == 1 {
		ks.heldNow.Store(ks.clock.UnixMilli())
	}
	return func() {
		if ks.holders.Add(-1) == 0 {
			ks.heldNow.Store(0)
		}
	}
}

// lruClock is the wall clock in seconds, kept by a goroutine so that
// reading it on every access costs one atomic load, not a clock read.
var lruClock atomic.Uint32

// The LRU clock is the unix time in seconds (Redis's has the same
// resolution and origin), so an idle time set from outside (RESTORE
// IDLETIME) can exceed the server's uptime. It is set just after each
// second of the wall clock begins (a couple of milliseconds after, so
// that a clock being slewed does not wake it a little early): never more
// than that behind, and one wake-up a second (an idle server's wake-ups
// are its CPU time).
func init() {
	lruClock.Store(uint32(time.Now().Unix()))
	go func() {
		for {
			now := time.Now()
			lruClock.Store(uint32(now.Unix()))
			time.Sleep(time.Second - time.Duration(now.Nanosecond()) + 2*time.Millisecond)
		}
	}()
}

// LRUClock is the keyspace's LRU clock in seconds: the wall clock's (kept
// by a goroutine), or the moved clock's, so that idle times grow when a test
// moves the clock.
func (ks *Keyspace) LRUClock() uint32 {
	c := &ks.clock
	return lruClock.Load()&^c.lruStop.Load() + c.lruAdd.Load()
}

// Keyspace returns the keyspace db belongs to.
func (db *DB) Keyspace() *Keyspace { return db.ks }

// CopyFrom sets c to read what o reads now and to run as o runs (a
// restarted embedded server keeps its predecessor's time).
func (c *Clock) CopyFrom(o *Clock) { c.store(o.st.Load()) }

// Freeze stops the clock at what it reads now.
func (c *Clock) Freeze() { c.Set(c.Now()) }

// Run sets a stopped clock running again from what it reads now (a running
// clock is left as it is).
func (c *Clock) Run() {
	for {
		old := c.st.Load()
		if old == nil || !old.frozen {
			return
		}
		next := &clockState{offset: old.at - time.Now().UnixNano()}
		if c.st.CompareAndSwap(old, next) {
			c.publishLRU(c.st.Load())
			return
		}
	}
}
