package store

import (
	"time"
)

// Active expiry, after Redis's activeExpireCycle: every tick, for each
// shard, sample keys that have an expiry and remove the expired ones;
// repeat on a shard while more than a quarter of the sample had expired,
// within a time budget per tick, so expired keys are reclaimed even when
// nobody reads them.
const (
	expireSample    = 20
	expireThreshold = expireSample / 4
)

// ExpireCycle runs one active expiry pass with the given time budget and
// returns how many keys it removed. slot is the BigLock reader slot to use.
func (ks *Keyspace) ExpireCycle(slot int, budget time.Duration) int {
	if ks.ExpiryPaused.Load() || ks.Loading.Load() {
		return 0
	}
	start := time.Now()
	removed := 0
	ks.Lock.RLock(slot)
	defer ks.Lock.RUnlock(slot)
	n := ks.NumDBs()
	for d := 0; d < n; d++ {
		db := ks.DB(d)
		if !db.hadVolatile.Load() {
			continue
		}
		for i := range db.shards {
			s := &db.shards[i]
			for {
				s.mu.Lock()
				if len(s.vol) == 0 {
					s.mu.Unlock()
					break
				}
				now := ks.Now()
				sampled, expired := 0, 0
				for k, exp := range s.vol {
					sampled++
					if s.m.lookup(k) == nil {
						delete(s.vol, k)
					} else if exp <= now {
						db.removeExpired(s, []byte(k))
						expired++
					}
					if sampled >= expireSample {
						break
					}
				}
				s.mu.Unlock()
				removed += expired
				if expired <= expireThreshold {
					break
				}
				if time.Since(start) > budget {
					return removed
				}
			}
		}
		if time.Since(start) > budget {
			return removed
		}
	}
	return removed
}

// RunExpiry runs ExpireCycle hz times a second until stop is closed,
// skipping the ticks when paused says so; took, when set, hears how long
// each pass ran.
func (ks *Keyspace) RunExpiry(slot int, hz func() int, paused func() bool, took func(time.Duration), stop <-chan struct{}) {
	for {
		h := hz()
		if h < 1 {
			h = 10
		}
		period := time.Second / time.Duration(h)
		select {
		case <-stop:
			return
		case <-time.After(period):
		}
		if paused == nil || !paused() {
			start := time.Now()
			ks.ExpireCycle(slot, period/4)
			if took != nil {
				took(time.Since(start))
			}
		}
	}
}

// ShardChanges returns the changes counted so far in shard i of db
// (replication compares it before and after a command).
func (db *DB) ShardChanges(i int) uint64 { return db.shards[i].dirty.Load() }

// RemoveIfExpired removes key if it is present but logically expired,
// even while expiry is paused (a replica applying its master's DEL of a
// key it kept past its expiry). The key's shard must be locked.
func (db *DB) RemoveIfExpired(key []byte) bool {
	s, h := db.locate(key)
	e := s.m.get(str(key), h)
	if e == nil || !e.vol || s.vol[string(key)] > db.ks.Now() {
		return false
	}
	db.removeExpired(s, key)
	return true
}

// ExpireAll removes every key whose expiry has passed, in all databases,
// and returns how many it removed: the whole sweep that active expiry
// does a sample at a time, for when a test moves the clock (so a key
// whose time is up is gone at once, from DBSIZE and for keyspace
// notifications too). It does nothing while expiry is paused. slot is the
// BigLock reader slot to use.
func (ks *Keyspace) ExpireAll(slot int) int {
	if ks.ExpiryPaused.Load() {
		return 0
	}
	removed := 0
	ks.Lock.RLock(slot)
	defer ks.Lock.RUnlock(slot)
	for d := 0; d < ks.NumDBs(); d++ {
		db := ks.DB(d)
		if !db.hadVolatile.Load() {
			continue
		}
		for i := range db.shards {
			s := &db.shards[i]
			s.mu.Lock()
			now := ks.Now()
			for k, exp := range s.vol {
				if s.m.lookup(k) == nil {
					delete(s.vol, k)
				} else if exp <= now {
					db.removeExpired(s, []byte(k))
					removed++
				}
			}
			s.mu.Unlock()
		}
	}
	return removed
}
