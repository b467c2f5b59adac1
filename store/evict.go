package store

import (
	"hash/maphash"
	"math/rand/v2"
	"sync/atomic"
)

// LFU: when an LFU maxmemory policy is selected, an entry's lru field holds
// Redis's LFU data instead of an access time: the low 8 bits are a
// logarithmic access counter, the 16 bits above them the time (in minutes,
// modulo 2^16) the counter was last decremented. SetLFU switches the mode;
// the values already stored are reinterpreted, as in Redis ("LRU and LFU
// data will take some time to adjust").

// LFUInitVal is the counter of a new key (Redis's LFU_INIT_VAL).
const LFUInitVal = 5

type lfuState struct {
	on        atomic.Bool
	logFactor atomic.Int64
	decayTime atomic.Int64
}

// SetLFU selects LFU tracking of accesses (an LFU policy) or LRU.
func (ks *Keyspace) SetLFU(on bool) { ks.lfu.on.Store(on) }

// LFU reports whether accesses are tracked as LFU counters.
func (ks *Keyspace) LFU() bool { return ks.lfu.on.Load() }

// SetLFUParams sets lfu-log-factor and lfu-decay-time.
func (ks *Keyspace) SetLFUParams(logFactor, decayTime int64) {
	ks.lfu.logFactor.Store(logFactor)
	ks.lfu.decayTime.Store(decayTime)
}

// lfuMinutes is Redis's LFUGetTimeInMinutes.
func (ks *Keyspace) lfuMinutes() uint32 { return (ks.LRUClock() / 60) & 0xffff }

// LFUDecr returns the counter of LFU data lru, decremented by the decay
// periods elapsed since its last decrement (Redis's LFUDecrAndReturn). It
// does not store it.
func (ks *Keyspace) LFUDecr(lru uint32) uint32 {
	ldt := (lru >> 8) & 0xffff
	counter := lru & 0xff
	decay := ks.lfu.decayTime.Load()
	if decay == 0 {
		return counter
	}
	now := ks.lfuMinutes()
	var elapsed uint32
	if now >= ldt {
		elapsed = now - ldt
	} else {
		elapsed = 0xffff - ldt + now
	}
	periods := int64(elapsed) / decay
	if periods >= int64(counter) {
		return 0
	}
	return counter - uint32(periods)
}

// lfuTouch is Redis's updateLFU: decay, then a logarithmic increment.
func (ks *Keyspace) lfuTouch(lru uint32) uint32 {
	counter := ks.LFUDecr(lru)
	if counter < 255 {
		base := float64(counter) - LFUInitVal
		if base < 0 {
			base = 0
		}
		p := 1.0 / (base*float64(ks.lfu.logFactor.Load()) + 1)
		if rand.Float64() < p {
			counter++
		}
	}
	return ks.lfuMinutes()<<8 | counter
}

// LFUValue returns the lru field for an LFU counter set now (RESTORE FREQ).
func (ks *Keyspace) LFUValue(counter uint32) uint32 { return ks.lfuMinutes()<<8 | counter&0xff }

// newLRU is the lru field of a new value stored over old (nil if none):
// the current LRU clock, or under LFU the initial counter (a replaced
// value keeps the old one's, as Redis's dbSetValue).
func (ks *Keyspace) newLRU(old *Entry) uint32 {
	if !ks.lfu.on.Load() {
		return ks.LRUClock()
	}
	if old != nil {
		return old.lru
	}
	return ks.LFUValue(LFUInitVal)
}

// touch records an access to e.
func (ks *Keyspace) touch(e *Entry) {
	if ks.lfu.on.Load() {
		e.lru = ks.lfuTouch(e.lru)
	} else {
		e.lru = ks.LRUClock()
	}
}

// Sample calls fn for up to n live-or-expired keys of the database (only
// keys with an expiry when volatile), as Redis's dictGetSomeKeys feeds the
// eviction pool: from a random shard on, a few keys of each non-empty shard
// from a random position in its map. Each shard is locked while fn runs on
// its keys; fn must not lock shards. fn gets the key's expiry (unix ms, 0
// for none). It returns the number of keys seen.
func (db *DB) Sample(volatile bool, n int, fn func(key string, e *Entry, exp int64)) int {
	if volatile && !db.hadVolatile.Load() {
		return 0
	}
	seen := 0
	start := rand.IntN(NShards)
	per := max(1, n/4) // spread the sample over a few shards
	for i := 0; i < NShards && seen < n; i++ {
		s := &db.shards[(start+i)&(NShards-1)]
		s.mu.Lock()
		took := 0
		if volatile {
			for k, exp := range s.vol {
				if e := s.m.lookup(k); e != nil {
					fn(k, e, exp)
					seen++
					took++
				}
				if took >= per || seen >= n {
					break
				}
			}
		} else {
			s.m.eachFrom(rand.Int(), func(k string, e *Entry) bool {
				var exp int64
				if e.vol {
					exp = s.vol[k]
				}
				fn(k, e, exp)
				seen++
				took++
				return took < per && seen < n
			})
		}
		s.mu.Unlock()
	}
	return seen
}

// ShardOfString is ShardOf for a string key.
func ShardOfString(key string) int { return int(maphash.String(seed, key) >> (64 - ShardBits)) }

// EntryOf returns the entry stored under key (live or expired) or nil,
// without side effects. The key's shard must be locked.
func (db *DB) EntryOf(key string) *Entry { return db.shards[ShardOfString(key)].m.lookup(key) }
