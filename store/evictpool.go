package store

import (
	"math"
	"time"
)

// Eviction as Redis 7.0's evict.c picks its victims: maxmemory-policy's
// flags, the scores a policy ranks keys by, and Evictor, which samples the
// databases into a pool of the best candidates and deletes the best one.
// The server decides when to evict and what an eviction does besides
// (notifications, replication, client tracking).

// Policy flags (maxmemory-policy).
const (
	PolicyLRU = 1 << iota
	PolicyLFU
	PolicyTTL
	PolicyRandom
	PolicyAllKeys // the allkeys- policies: every key, not only those with an expiry
	PolicyNoEviction
)

// ParsePolicy returns the flags of a maxmemory-policy value (noeviction
// for any other).
func ParsePolicy(v string) int64 {
	switch v {
	case "volatile-lru":
		return PolicyLRU
	case "volatile-lfu":
		return PolicyLFU
	case "volatile-ttl":
		return PolicyTTL
	case "volatile-random":
		return PolicyRandom
	case "allkeys-lru":
		return PolicyAllKeys | PolicyLRU
	case "allkeys-lfu":
		return PolicyAllKeys | PolicyLFU
	case "allkeys-random":
		return PolicyAllKeys | PolicyRandom
	}
	return PolicyNoEviction
}

// EvictionTimeLimit is how long one eviction may go on before the rest is
// left to the background, by maxmemory-eviction-tenacity (Redis's
// evictionTimeLimitUs).
func EvictionTimeLimit(tenacity int64) time.Duration {
	switch {
	case tenacity <= 10:
		return time.Duration(50*tenacity) * time.Microsecond
	case tenacity < 100:
		return time.Duration(500*math.Pow(1.15, float64(tenacity-10))) * time.Microsecond
	}
	return time.Duration(math.MaxInt64)
}

const (
	// PoolSize is the eviction pool's size (Redis's EVPOOL_SIZE).
	PoolSize      = 16
	emptyDBRecent = 100 * time.Millisecond
)

type poolEntry struct {
	score uint64 // higher is a better candidate
	dbi   int
	key   string // "" when the slot is empty
}

// Evictor picks eviction victims across a keyspace's databases. It keeps
// the pool of candidates between evictions, as Redis does, and which
// databases were lately found without candidates. It is not safe for
// concurrent use: one eviction runs at a time.
type Evictor struct {
	pool    [PoolSize]poolEntry
	nextDB  int
	emptyDB []bool // databases found empty at emptyAt
	emptyAt time.Time
	// emptyChanges holds each empty database's Changes when it was found
	// empty.
	emptyChanges []uint64
	nothingLeft  bool // the last Next found no candidate in any database
}

// Next picks the best victim by the policy pol, sampling samples keys of
// each database for the pool (one key for the random policies), and has
// del delete it: del deletes key from database dbi if it is still there
// (with an expiry, when volatile) and returns it, or "" when it was
// missing or expired. Next returns ok=false when there is nothing to
// evict, and key "" when the pick turned out to be expired. The caller
// holds the keyspace reader lock.
func (ev *Evictor) Next(ks *Keyspace, pol int64, samples int, del func(dbi int, key string, volatile bool) string) (dbi int, key string, ok bool) {
	n := ks.NumDBs()
	volatile := pol&PolicyAllKeys == 0
	if len(ev.emptyDB) != n || time.Since(ev.emptyAt) > emptyDBRecent {
		ev.emptyDB = make([]bool, n)
		ev.emptyChanges = make([]uint64, n)
		ev.emptyAt = time.Now()
	}
	if ev.nothingLeft {
		// The last search found no candidate at all (OOM): a database
		// written to since, a key given a TTL say, is looked at again
		// at once. (Summing a database's change counters reads every
		// shard, so it is not done while evictions succeed.)
		for i, empty := range ev.emptyDB {
			if empty && ks.DB(i).Changes() != ev.emptyChanges[i] {
				ev.emptyDB[i] = false
			}
		}
	}
	if pol&PolicyRandom != 0 {
		for i := 0; i < n; i++ {
			ev.nextDB++
			j := ev.nextDB % n
			if ev.emptyDB[j] {
				continue
			}
			var pick string
			if ks.DB(j).Sample(volatile, 1, func(k string, _ *Entry, _ int64) { pick = k }) == 0 {
				ev.markEmpty(j, ks.DB(j))
				continue
			}
			ev.nothingLeft = false
			return j, del(j, pick, volatile), true
		}
		ev.nothingLeft = true
		return 0, "", false
	}
	samples = max(1, samples)
	for {
		total := 0
		for i := 0; i < n; i++ {
			if ev.emptyDB[i] {
				continue
			}
			db := ks.DB(i)
			got := db.Sample(volatile, samples, func(k string, e *Entry, exp int64) {
				ev.insert(i, k, ks.evictScore(pol, e, exp))
			})
			if got == 0 {
				ev.markEmpty(i, db)
			}
			total += got
		}
		if total == 0 {
			ev.nothingLeft = true
			return 0, "", false
		}
		ev.nothingLeft = false
		for k := PoolSize - 1; k >= 0; k-- {
			p := ev.pool[k]
			if p.key == "" {
				continue
			}
			ev.pool[k] = poolEntry{}
			if key := del(p.dbi, p.key, volatile); key != "" {
				return p.dbi, key, true
			}
			// A ghost: deleted since it was sampled. Try the next one.
		}
	}
}

// markEmpty records that database i had no candidates, with its change
// count read after the empty sample (not before every sample, which would
// cost a read of every shard each time): a write in between goes unseen
// for at most emptyDBRecent.
func (ev *Evictor) markEmpty(i int, db *DB) {
	ev.emptyDB[i], ev.emptyChanges[i] = true, db.Changes()
}

// evictScore is evictionPoolPopulate's "idle": higher evicts first. exp
// is the key's expiry (unix ms).
func (ks *Keyspace) evictScore(pol int64, e *Entry, exp int64) uint64 {
	switch {
	case pol&PolicyLRU != 0:
		now, lru := ks.LRUClock(), e.LRU()
		if now >= lru {
			return uint64(now - lru)
		}
		return 0
	case pol&PolicyLFU != 0:
		return uint64(255 - ks.LFUDecr(e.LRU()))
	default: // volatile-ttl: the sooner the expiry the better
		return math.MaxUint64 - uint64(exp)
	}
}

// insert adds a sampled key to the pool, kept sorted by ascending score,
// as Redis's evictionPoolPopulate.
func (ev *Evictor) insert(dbi int, key string, score uint64) {
	pool := &ev.pool
	k := 0
	for k < PoolSize && pool[k].key != "" && pool[k].score < score {
		k++
	}
	if k == 0 && pool[PoolSize-1].key != "" {
		return // worse than every candidate of a full pool
	}
	for j := 0; j < PoolSize; j++ {
		if pool[j].key == key && pool[j].dbi == dbi {
			return // already a candidate
		}
	}
	if k < PoolSize && pool[k].key == "" {
		// An empty slot.
	} else if pool[PoolSize-1].key == "" {
		copy(pool[k+1:], pool[k:PoolSize-1])
	} else {
		k--
		copy(pool[:k], pool[1:k+1])
	}
	pool[k] = poolEntry{score: score, dbi: dbi, key: key}
}
