package server

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/lua"
	"github.com/sluicedb/sluice/store"
)

// maxmemory: eviction as Redis 7.0's evict.c, on a memory figure that a Go
// server has to estimate.
//
// Memory accounting. Redis counts every malloc, so its used_memory drops
// the moment a key is freed. Go's heap figures only drop once a garbage
// collection has run and swept, so Sluice keeps a running estimate:
//
//	used = heap + reflected - freed
//
//   - heap is /memory/classes/heap/objects:bytes (live objects plus
//     garbage not yet swept: it grows as soon as anything is allocated).
//     While maxmemory is set a sampler goroutine reads it every
//     millisecond; INFO reads it afresh.
//   - freed is the running total of the sizes of the keys deleted, expired
//     or evicted while maxmemory is set, each estimated as MEMORY USAGE
//     does, so an eviction lowers the estimate at once, as in Redis.
//   - reflected is the part of freed that a finished collection has
//     already taken out of heap. A finalizer on a sentinel object runs
//     after each collection: frees counted before the previous sentinel
//     was allocated happened before this cycle began, so they are
//     reflected now. A forced collection (runtime.GC returns swept)
//     reflects everything freed before it started.
//
// base = heap + reflected is published as one atomic, so the check made
// before each command is two atomic loads and a compare, and only when
// maxmemory is set: with maxmemory 0 (the default) it is one load of the
// limit. INFO used_memory reports the same estimate.
//
// Garbage (replies, overwritten values, temporary buffers) counts as used
// memory until a collection, as it occupies the process's memory. So that
// it never stands for a large share of the limit (which would make the
// server evict live keys to make room for garbage), the Go runtime's soft
// memory limit is set to maxmemory plus an eighth plus the runtime's
// non-heap overhead (unless GOMEMLIMIT was given): the collector then runs
// before garbage grows past about an eighth of maxmemory. When nothing can
// be evicted, or the policy is noeviction, and memory may have been freed
// since the last forced collection (a flush, or allocations of more than
// a sixteenth of maxmemory), a collection is forced before replying OOM,
// much as Redis waits briefly for its lazyfree thread.

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
	sampleEvery   = time.Millisecond
	errOOM        = "OOM command not allowed when used memory > 'maxmemory'."
	emptyDBRecent = 100 * time.Millisecond
)

type poolEntry struct {
	score uint64 // higher is a better candidate
	dbi   int
	key   string // "" when the slot is empty
}

// evictState is the server's eviction and memory accounting state. It is
// allocated on its own so the GC hook and sampler keep only it alive.
type evictState struct {
	policy    atomic.Int64
	evicted   atomic.Int64 // evicted_keys
	running   atomic.Bool  // background eviction (tenacity time limit reached)
	base      atomic.Int64 // heap + reflected, at the last sample
	freed     atomic.Int64 // sizes of keys deleted while maxmemory is set
	flushed   atomic.Bool  // a database was flushed since the last forced GC
	active    atomic.Bool  // maxmemory is set: sampler and GC hook run
	hookArmed atomic.Bool
	stopped   atomic.Bool
	gcPending atomic.Bool // a forced GC after a flush is on its way

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

	amu          sync.Mutex // guards the accounting below and sampling
	snap         int64      // freed when the last GC hook ran
	reflected    int64
	gcAllocs     uint64 // /gc/heap/allocs:bytes after the last forced GC
	goLimit      int64  // memory limit Sluice set (0: none)
	samplerOn    bool
	samples      []metrics.Sample
	limitCounter int
}

func newEvictState() *evictState {
	ev := &evictState{samples: []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}}
	ev.policy.Store(polNoEviction)
	return ev
}

func metricU64(s metrics.Sample) int64 {
	if s.Value.Kind() == metrics.KindUint64 {
		return int64(s.Value.Uint64())
	}
	return 0
}

// sample reads the heap and publishes base; it returns the heap figure.
// Caller holds amu.
func (ev *evictState) sampleLocked() int64 {
	metrics.Read(ev.samples[:2])
	heap := metricU64(ev.samples[0])
	ev.base.Store(heap + ev.reflected)
	return heap
}

func (ev *evictState) sample() {
	ev.amu.Lock()
	ev.sampleLocked()
	ev.amu.Unlock()
}

// growString is e.MutableRaw(n) for commands that grow a string in place
// (SETBIT, SETRANGE, APPEND, BITFIELD). While maxmemory is set, a large
// growth is added to the estimate at once rather than at the next sample,
// so the next command already evicts for it, as in Redis.
func (c *Client) growString(e *store.Entry, n int) []byte {
	before := e.RawCap()
	buf := e.MutableRaw(n)
	if grown := cap(buf) - before; grown >= 16<<10 {
		if ev := c.srv.ev; ev.active.Load() {
			ev.base.Add(int64(grown))
		}
	}
	return buf
}

// used is the memory estimate eviction works on.
func (ev *evictState) used() int64 { return ev.base.Load() - ev.freed.Load() }

// onGC runs after each garbage collection (the sentinel's finalizer).
func (ev *evictState) onGC() {
	ev.amu.Lock()
	ev.reflected = max(ev.reflected, ev.snap)
	ev.snap = ev.freed.Load()
	ev.sampleLocked()
	ev.amu.Unlock()
}

type gcSentinel struct{ _ [2]int64 }

// armGCHook sets a finalizer on a fresh garbage object: it runs after the
// next collection, calls onGC and re-arms while maxmemory is set.
func (ev *evictState) armGCHook() {
	if !ev.hookArmed.CompareAndSwap(false, true) {
		return
	}
	ev.newSentinel()
}

func (ev *evictState) newSentinel() {
	s := new(gcSentinel)
	runtime.SetFinalizer(s, func(*gcSentinel) {
		ev.onGC()
		if ev.active.Load() && !ev.stopped.Load() {
			ev.newSentinel()
		} else {
			ev.hookArmed.Store(false)
		}
	})
}

// forceGC collects garbage and reflects every free counted before it.
func (ev *evictState) forceGC() {
	f0 := ev.freed.Load()
	ev.flushed.Store(false)
	runtime.GC()
	ev.amu.Lock()
	ev.reflected = max(ev.reflected, f0)
	ev.snap = max(ev.snap, f0)
	ev.sampleLocked()
	ev.gcAllocs = uint64(metricU64(ev.samples[1]))
	ev.amu.Unlock()
}

// mayReclaim reports whether a forced collection could free memory: a
// flush happened, or much was allocated since the last forced one.
func (ev *evictState) mayReclaim(maxmem int64) bool {
	if ev.flushed.Load() {
		return true
	}
	ev.amu.Lock()
	defer ev.amu.Unlock()
	ev.sampleLocked()
	allocs := uint64(metricU64(ev.samples[1]))
	return allocs-ev.gcAllocs > uint64(maxmem/16)
}

// updateGoLimit keeps the Go runtime's soft memory limit at maxmemory plus
// an eighth plus the runtime's own overhead. Caller holds amu.
func (ev *evictState) updateGoLimitLocked(maxmem int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if maxmem == 0 {
		if ev.goLimit != 0 {
			debug.SetMemoryLimit(math.MaxInt64)
			ev.goLimit = 0
		}
		return
	}
	metrics.Read(ev.samples)
	total, objects := metricU64(ev.samples[2]), metricU64(ev.samples[0])
	free, released := metricU64(ev.samples[3]), metricU64(ev.samples[4])
	overhead := max(0, total-objects-free-released)
	want := maxmem + maxmem/8 + overhead + 4<<20
	if d := want - ev.goLimit; d > 1<<20 || d < -1<<20 {
		debug.SetMemoryLimit(want)
		ev.goLimit = want
	}
}

// sampler refreshes base every millisecond while maxmemory is set.
func (s *Server) sampler() {
	ev := s.ev
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stopCh:
			ev.stopped.Store(true)
		case <-t.C:
		}
		ev.amu.Lock()
		mm := s.cfg.maxMemory.Load()
		if mm == 0 || ev.stopped.Load() {
			ev.samplerOn = false
			ev.active.Store(false)
			ev.updateGoLimitLocked(0)
			ev.amu.Unlock()
			return
		}
		ev.sampleLocked()
		if ev.limitCounter++; ev.limitCounter%100 == 1 {
			ev.updateGoLimitLocked(mm)
		}
		ev.amu.Unlock()
	}
}

// maxmemoryChanged applies maxmemory, maxmemory-policy and the LFU
// parameters (at start-up and after CONFIG SET).
func (s *Server) maxmemoryChanged() {
	ev := s.ev
	pol := s.cfg.mmPolicy.Load()
	ev.policy.Store(pol)
	s.ks.SetLFU(pol&polLFU != 0)
	s.ks.SetLFUParams(s.cfg.lfuLogFactor.Load(), s.cfg.lfuDecayTime.Load())
	mm := s.cfg.maxMemory.Load()
	ev.amu.Lock()
	defer ev.amu.Unlock()
	if mm == 0 || ev.stopped.Load() {
		return // the sampler winds down by itself
	}
	ev.sampleLocked()
	ev.updateGoLimitLocked(mm)
	if !ev.samplerOn {
		ev.samplerOn = true
		ev.active.Store(true)
		ev.armGCHook()
		go s.sampler()
	}
	if ev.used() > mm && pol&polNoEviction == 0 {
		// Redis starts evicting at once (startEvictionTimeProc).
		s.startBackgroundEviction()
	}
}

// wireEviction connects the keyspace hooks the accounting needs.
func (s *Server) wireEviction() {
	s.ev = newEvictState()
	s.cfg.mmHook = s.maxmemoryChanged
	prevDel := s.ks.OnDeleted
	s.ks.OnDeleted = func(db *store.DB, key []byte, e *store.Entry) {
		if s.cfg.maxMemory.Load() != 0 {
			s.ev.freed.Add(keySize(key, e))
		}
		if prevDel != nil {
			prevDel(db, key, e)
		}
	}
	prevFlush := s.ks.OnFlush
	s.ks.OnFlush = func(db *store.DB) {
		s.ev.flushed.Store(true)
		if s.cfg.maxMemory.Load() != 0 && s.ev.gcPending.CompareAndSwap(false, true) {
			// Let used memory drop soon after a flush, as in Redis.
			go func() {
				time.Sleep(time.Millisecond) // after the flush, not during it
				s.ev.forceGC()
				s.ev.gcPending.Store(false)
			}()
		}
		if prevFlush != nil {
			prevFlush(db)
		}
	}
	s.maxmemoryChanged()
}

// keySize estimates the memory of a key as MEMORY USAGE does.
func keySize(key []byte, e *store.Entry) int64 {
	return objectSize(e, 5) + sdsAllocSize(len(key)) + dictEntrySize
}

// usedMemory is the estimate of used memory (INFO used_memory), given a
// fresh heap reading.
func (s *Server) usedMemory(heap uint64) uint64 {
	ev := s.ev
	ev.amu.Lock()
	ev.base.Store(int64(heap) + ev.reflected)
	ev.amu.Unlock()
	return uint64(max(0, ev.used()))
}

// infoUsedMemory is INFO's used_memory. Redis evicts before every command,
// INFO included, so it never reports more than maxmemory while something
// can be evicted; the check before the command used the sampled figure, so
// with a fresh one over the limit INFO evicts first (when it runs outside
// a transaction or script, which hold keyspace locks).
func (s *Server) infoUsedMemory(c *Client, heap uint64) uint64 {
	used := s.usedMemory(heap)
	if mm := s.cfg.maxMemory.Load(); mm != 0 && int64(used) > mm && c != nil && !c.inExec && !c.fromScript &&
		s.lua.busySince.Load() == 0 {
		s.performEvictions(c.slot, nil)
		used = uint64(max(0, s.ev.used()))
	}
	return used
}

// overMaxmemory reports whether used memory is above maxmemory.
func (s *Server) overMaxmemory() bool {
	mm := s.cfg.maxMemory.Load()
	return mm != 0 && s.ev.used() > mm
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
	reject := cmd.flags&flagDenyOOM != 0
	switch cmd.Name {
	case "eval", "evalsha":
		reject = c.srv.scriptDenyOOM(cmd.Name, args)
	case "exec":
		reject = c.txQueued(flagDenyOOM)
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
	if mm == 0 || ev.used() <= mm {
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
	used := ev.used()
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
	freed0 := ev.freed.Load()
	keys := 0
	result := evictOK
	for ev.freed.Load()-freed0 < tofree {
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
			if ev.used() > mm {
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

// evictFailed is the case where nothing more can be evicted: if memory may
// have been freed since the last forced collection, collect and look again.
func (s *Server) evictFailed(mm int64) int {
	ev := s.ev
	if ev.used() <= mm {
		return evictOK
	}
	if ev.mayReclaim(mm) {
		ev.forceGC()
		if ev.used() <= mm {
			return evictOK
		}
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
	if by := s.ev.evictor; by != nil && by.trk != nil {
		// The evicting client's own change, for client tracking: an
		// invalidation of this key for it is queued on its goroutine (we
		// hold the key's lock, so no one else changes it meanwhile) and
		// sent before its command's reply (oomCheck).
		by.trk.exec.Store(&trackExec{keys: []string{key}})
		defer by.trk.exec.Store(nil)
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
