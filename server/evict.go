package server

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/lua"
	"github.com/sluicedb/sluice/store"
	"github.com/sluicedb/sluice/tracking"
)

// maxmemory: eviction as Redis 7.0's evict.c, on the memory Sluice counts
// as Redis does (memory.go): before each command, while used memory less
// the replicas' output and the AOF buffer is over maxmemory, keys are
// evicted by the policy from a pool of sampled candidates, each eviction
// freeing what the key was counted for; past
// maxmemory-eviction-tenacity's time limit the eviction goes on in the
// background, and when nothing can be evicted a command that may grow
// memory is refused with OOM.

// Policy flags (maxmemory-policy).
const (
	polLRU = 1 << iota
	polLFU
	polTTL
	polRandom
	polAllKeys
	polNoEviction
)

func parsePolicy(v string) int64 {
	switch v {
	case "volatile-lru":
		return polLRU
	case "volatile-lfu":
		return polLFU
	case "volatile-ttl":
		return polTTL
	case "volatile-random":
		return polRandom
	case "allkeys-lru":
		return polAllKeys | polLRU
	case "allkeys-lfu":
		return polAllKeys | polLFU
	case "allkeys-random":
		return polAllKeys | polRandom
	}
	return polNoEviction
}

// performEvictions results.
const (
	evictOK      = iota // under the limit (or freed enough)
	evictRunning        // still over, eviction goes on in the background
	evictFail           // over the limit and nothing can be evicted
)

const (
	evpoolSize    = 16 // Redis's EVPOOL_SIZE
	errOOM        = "OOM command not allowed when used memory > 'maxmemory'."
	emptyDBRecent = 100 * time.Millisecond
)

type poolEntry struct {
	score uint64 // higher is a better candidate
	dbi   int
	key   string // "" when the slot is empty
}

// evictState is the server's key eviction state.
type evictState struct {
	policy  atomic.Int64
	evicted atomic.Int64 // evicted_keys
	running atomic.Bool  // background eviction (tenacity time limit reached)
	stopped atomic.Bool

	mu      sync.Mutex // one eviction at a time; guards the pool
	pool    [evpoolSize]poolEntry
	nextDB  int
	emptyDB []bool // databases found empty at emptyAt
	emptyAt time.Time
	// emptyChanges holds each empty database's Changes when it was found
	// empty.
	emptyChanges []uint64
	nothingLeft  bool    // the last evictOne found no candidate in any database
	evictor      *Client // the client whose command is evicting (nil: background)
	victimsBuf   []byte
	freed        int64 // what the victims deleted by this eviction were counted for
}

func newEvictState() *evictState {
	ev := &evictState{}
	ev.policy.Store(polNoEviction)
	return ev
}

// growString is e.MutableRaw(n) for commands that grow a string in place
// (SETBIT, SETRANGE, APPEND, BITFIELD): the keyspace counts the growth at
// once, so the next command already evicts for it, as in Redis.
func (c *Client) growString(e *store.Entry, n int) []byte { return e.MutableRaw(n) }

// maxmemoryChanged applies maxmemory, maxmemory-policy, maxmemory-clients
// and the LFU parameters (at start-up and after CONFIG SET).
func (s *Server) maxmemoryChanged() {
	ev := s.ev
	pol := s.cfg.mmPolicy.Load()
	ev.policy.Store(pol)
	s.ks.SetLFU(pol&polLFU != 0)
	s.ks.SetLFUParams(s.cfg.lfuLogFactor.Load(), s.cfg.lfuDecayTime.Load())
	if ev.stopped.Load() {
		return
	}
	// A lower maxmemory-clients (or maxmemory, for a percentage) evicts
	// clients at once, as Redis's applyClientMaxMemoryUsage.
	s.evictClients()
}

// evictAfterConfig is CONFIG SET maxmemory's performEvictions, run once
// the command is done (its locks released); in a transaction, once EXEC
// is.
func (c *Client) evictAfterConfig() {
	s := c.srv
	if mm := s.cfg.maxMemory.Load(); mm == 0 || s.evictUsed() <= mm || s.ev.policy.Load()&polNoEviction != 0 {
		return
	}
	if s.performEvictions(c.slot, nil) == evictRunning {
		s.startBackgroundEviction()
	}
}

// wireEviction connects the configuration hook.
func (s *Server) wireEviction() {
	s.ev = newEvictState()
	s.cfg.mmHook = s.maxmemoryChanged
	s.maxmemoryChanged()
}

// infoUsedMemory is INFO's used_memory. Redis evicts before every command,
// INFO included, so it never reports more than maxmemory while something
// can be evicted; the check before the command may have raced with other
// clients' writes, so INFO evicts again when it finds itself over (outside
// a transaction or script, which hold keyspace locks).
func (s *Server) infoUsedMemory(c *Client) int64 {
	if mm := s.cfg.maxMemory.Load(); mm != 0 && s.evictUsed() > mm && c != nil && !c.inExec && !c.fromScript &&
		s.lua.busySince.Load() == 0 {
		s.performEvictions(c.slot, nil)
	}
	return s.usedMemory()
}

// overMaxmemory reports whether used memory is above maxmemory.
func (s *Server) overMaxmemory() bool {
	mm := s.cfg.maxMemory.Load()
	return mm != 0 && s.evictUsed() > mm
}

// evictionTimeLimit is Redis's evictionTimeLimitUs for
// maxmemory-eviction-tenacity.
func evictionTimeLimit(tenacity int64) time.Duration {
	switch {
	case tenacity <= 10:
		return time.Duration(50*tenacity) * time.Microsecond
	case tenacity < 100:
		return time.Duration(500*math.Pow(1.15, float64(tenacity-10))) * time.Microsecond
	}
	return time.Duration(math.MaxInt64)
}

// oomCheck is processCommand's maxmemory step, run before each command
// while maxmemory is set: it evicts as needed and refuses, with the OOM
// error, a command that may grow memory when nothing more can be freed.
// It reports whether the command may go on.
func (c *Client) oomCheck(cmd *Command, args [][]byte) bool {
	srv := c.srv
	if srv.lua.busySince.Load() != 0 {
		return true // inside a long script: no eviction (isInsideYieldingLongCommand)
	}
	oom := srv.performEvictions(c.slot, c) == evictFail
	// Keys this client tracked that were evicted for its command: it is
	// told before the command's reply, as Redis does.
	c.trackSendPending(c)
	c.preOOM = oom
	if !oom {
		return true
	}
	reject := cmd.Flags&cmdspec.DenyOOM != 0
	switch cmd.Name {
	case "eval", "evalsha":
		reject = c.srv.scriptDenyOOM(cmd.Name, args)
	case "exec":
		reject = c.txQueued(cmdspec.DenyOOM)
	case "discard", "quit", "reset":
	default:
		if c.tx != nil {
			// Queueing in MULTI takes memory too.
			reject = true
		}
	}
	if reject {
		c.rejectCmd(cmd, errOOM)
		return false
	}
	return true
}

// scriptDenyOOM reports whether EVAL or EVALSHA runs a script whose
// shebang flags make it deny-oom (neither no-writes nor allow-oom), as
// Redis's evalGetCommandFlags. Scripts without a shebang are checked per
// command (scriptVerifyOOM).
func (s *Server) scriptDenyOOM(name string, args [][]byte) bool {
	if len(args) < 2 {
		return false
	}
	flags := lua.Compat
	if name == "eval" {
		flags, _ = lua.ParseShebang(string(args[1]))
	} else if sc := s.lua.eng.Script(args[1]); sc != nil {
		flags = sc.Flags
	}
	return flags&(lua.Compat|lua.NoWrites|lua.AllowOOM) == 0
}

// performEvictions frees memory by the policy until used memory is under
// maxmemory (Redis's performEvictions).
func (s *Server) performEvictions(slot int, by *Client) int {
	ev := s.ev
	mm := s.cfg.maxMemory.Load()
	if mm == 0 || s.evictUsed() <= mm {
		return evictOK
	}
	if s.pause.typ.Load() != pauseOff {
		return evictOK // the dataset stays static while clients are paused
	}
	pol := ev.policy.Load()
	if pol&polNoEviction != 0 {
		return s.evictFailed(mm)
	}
	ev.mu.Lock()
	used := s.evictUsed()
	if used <= mm {
		ev.mu.Unlock()
		return evictOK
	}
	tofree := used - mm
	ev.evictor = by
	limit := evictionTimeLimit(s.cfg.evictTenacity.Load())
	start := time.Now()
	ks := s.ks
	ks.Lock.RLock(slot)
	ev.freed = 0
	keys := 0
	result := evictOK
	for ev.freed < tofree {
		dbi, key, ok := s.evictOne(pol)
		if !ok {
			result = evictFail
			break
		}
		if key == "" {
			continue // the victim had just expired (counted as freed)
		}
		keys++
		ev.evicted.Add(1)
		if flags := s.cfg.notifyFlags.Load(); flags&NotifyEvicted != 0 {
			s.notifyDB(nil, dbi, NotifyEvicted, flags, "evicted", []byte(key))
		}
		if keys%16 == 0 && time.Since(start) > limit {
			if s.evictUsed() > mm {
				result = evictRunning
			}
			break
		}
	}
	ks.Lock.RUnlock(slot)
	ev.evictor = nil
	ev.mu.Unlock()
	switch result {
	case evictRunning:
		s.startBackgroundEviction()
	case evictFail:
		result = s.evictFailed(mm)
	}
	return result
}

// evictFailed is the case where nothing more can be evicted: unless
// memory was freed meanwhile, the command is out of memory.
func (s *Server) evictFailed(mm int64) int {
	if s.evictUsed() <= mm {
		return evictOK
	}
	return evictFail
}

// startBackgroundEviction goes on evicting outside the command path when
// the tenacity time limit cut an eviction short (Redis's evictionTimeProc).
func (s *Server) startBackgroundEviction() {
	ev := s.ev
	if !ev.running.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer ev.running.Store(false)
		for !ev.stopped.Load() {
			if s.performEvictions(s.goSlot, nil) != evictRunning {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
}

// evictOne picks the best victim by the policy and deletes it. It returns
// ok=false when there is nothing to evict, and key "" when the pick turned
// out to be gone or expired. The caller holds the keyspace reader lock and
// ev.mu.
func (s *Server) evictOne(pol int64) (dbi int, key string, ok bool) {
	ev := s.ev
	ks := s.ks
	n := ks.NumDBs()
	volatile := pol&polAllKeys == 0
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
	if pol&polRandom != 0 {
		for i := 0; i < n; i++ {
			ev.nextDB++
			j := ev.nextDB % n
			if ev.emptyDB[j] {
				continue
			}
			var pick string
			if ks.DB(j).Sample(volatile, 1, func(k string, _ *store.Entry, _ int64) { pick = k }) == 0 {
				ev.markEmpty(j, ks.DB(j))
				continue
			}
			ev.nothingLeft = false
			return j, s.deleteVictim(j, pick, volatile), true
		}
		ev.nothingLeft = true
		return 0, "", false
	}
	samples := int(max(1, s.cfg.evictSamples.Load()))
	for {
		total := 0
		for i := 0; i < n; i++ {
			if ev.emptyDB[i] {
				continue
			}
			db := ks.DB(i)
			got := db.Sample(volatile, samples, func(k string, e *store.Entry, exp int64) {
				ev.poolInsert(i, k, s.evictScore(pol, e, exp))
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
		for k := evpoolSize - 1; k >= 0; k-- {
			p := ev.pool[k]
			if p.key == "" {
				continue
			}
			ev.pool[k] = poolEntry{}
			if key := s.deleteVictim(p.dbi, p.key, volatile); key != "" {
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
func (ev *evictState) markEmpty(i int, db *store.DB) {
	ev.emptyDB[i], ev.emptyChanges[i] = true, db.Changes()
}

// evictScore is evictionPoolPopulate's "idle": higher evicts first.
func (s *Server) evictScore(pol int64, e *store.Entry, exp int64) uint64 {
	switch {
	case pol&polLRU != 0:
		now, lru := s.ks.LRUClock(), e.LRU()
		if now >= lru {
			return uint64(now - lru)
		}
		return 0
	case pol&polLFU != 0:
		return uint64(255 - s.ks.LFUDecr(e.LRU()))
	default: // volatile-ttl: the sooner the expiry the better
		return math.MaxUint64 - uint64(exp)
	}
}

// poolInsert adds a sampled key to the eviction pool, kept sorted by
// ascending score, as Redis's evictionPoolPopulate.
func (ev *evictState) poolInsert(dbi int, key string, score uint64) {
	pool := &ev.pool
	k := 0
	for k < evpoolSize && pool[k].key != "" && pool[k].score < score {
		k++
	}
	if k == 0 && pool[evpoolSize-1].key != "" {
		return // worse than every candidate of a full pool
	}
	for j := 0; j < evpoolSize; j++ {
		if pool[j].key == key && pool[j].dbi == dbi {
			return // already a candidate
		}
	}
	if k < evpoolSize && pool[k].key == "" {
		// An empty slot.
	} else if pool[evpoolSize-1].key == "" {
		copy(pool[k+1:], pool[k:evpoolSize-1])
	} else {
		k--
		copy(pool[:k], pool[1:k+1])
	}
	pool[k] = poolEntry{score: score, dbi: dbi, key: key}
}

// deleteVictim deletes key from database dbi if it is still there (with
// an expiry, for the volatile policies). It returns key, or "" when it was
// missing or expired (an expired key is removed as such).
func (s *Server) deleteVictim(dbi int, key string, volatile bool) string {
	db := s.ks.DB(dbi)
	i := store.ShardOfString(key)
	db.LockShard(i)
	defer db.UnlockShard(i)
	e := db.EntryOf(key)
	if e == nil || (volatile && !e.Volatile()) {
		return ""
	}
	s.ev.victimsBuf = append(s.ev.victimsBuf[:0], key...)
	// Deleted or found expired, the key frees what it was counted for.
	s.ev.freed += store.Cost(s.ev.victimsBuf, e)
	if by := s.ev.evictor; by != nil && by.trk.Load() != nil {
		// The evicting client's own change, for client tracking: an
		// invalidation of this key for it is queued on its goroutine (we
		// hold the key's lock, so no one else changes it meanwhile) and
		// sent before its command's reply (oomCheck).
		trk := by.trk.Load()
		trk.Exec.Store(&tracking.Exec{Keys: []string{key}})
		defer trk.Exec.Store(nil)
	}
	if !db.Delete(s.ev.victimsBuf) {
		return ""
	}
	if s.repl.flags.Load()&replFeed != 0 {
		s.replFeedDel(dbi, s.ev.victimsBuf, "lazyfree-lazy-eviction")
	}
	return key
}

// isLFUPolicy reports whether an LFU maxmemory policy is selected.
func (s *Server) isLFUPolicy() bool { return s.ev.policy.Load()&polLFU != 0 }
