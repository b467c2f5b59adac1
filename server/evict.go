package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/config"
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
// memory is refused with OOM. The policy's rules and the choice of
// victims are the store's (store.Evictor); here are the gate before
// commands, the loop that evicts until memory is under the limit, and
// what an eviction does besides deleting the key.

// performEvictions results.
const (
	evictOK      = iota // under the limit (or freed enough)
	evictRunning        // still over, eviction goes on in the background
	evictFail           // over the limit and nothing can be evicted
)

const errOOM = "OOM command not allowed when used memory > 'maxmemory'."

// evictState is the server's key eviction state.
type evictState struct {
	policy  atomic.Int64
	evicted atomic.Int64 // evicted_keys
	running atomic.Bool  // background eviction (tenacity time limit reached)
	stopped atomic.Bool

	mu         sync.Mutex    // one eviction at a time; guards the rest
	pick       store.Evictor // the pool of candidates
	evictor    *Client       // the client whose command is evicting (nil: background)
	victimsBuf []byte
	freed      int64 // what the victims deleted by this eviction were counted for
}

func newEvictState() *evictState {
	ev := &evictState{}
	ev.policy.Store(store.PolicyNoEviction)
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
	pol := store.ParsePolicy(*s.cfg.MaxmemoryPolicy.Load())
	ev.policy.Store(pol)
	s.ks.SetLFU(pol&store.PolicyLFU != 0)
	s.ks.SetLFUParams(s.cfg.LFULogFactor.Load(), s.cfg.LFUDecayTime.Load())
	if ev.stopped.Load() {
		return
	}
	// A lower maxmemory-clients (or maxmemory, for a percentage) evicts
	// clients at once, as Redis's applyClientMaxMemoryUsage, which
	// first brings every evictable client's part up to date.
	if s.cfg.MaxmemClients.Load() != 0 {
		s.enterEvictViews(false)
	}
	s.evictClients()
}

// evictAfterConfig is CONFIG SET maxmemory's performEvictions, run once
// the command is done (its locks released); in a transaction, once EXEC
// is.
func (c *Client) evictAfterConfig() {
	s := c.srv
	if mm := s.cfg.MaxMemory.Load(); mm == 0 || s.evictUsed() <= mm || s.ev.policy.Load()&store.PolicyNoEviction != 0 {
		return
	}
	if s.performEvictions(c.slot, nil) == evictRunning {
		s.startBackgroundEviction()
	}
}

// wireEviction connects the configuration hook.
func (s *Server) wireEviction() {
	s.ev = newEvictState()
	s.cfg.Hooks.Maxmemory = s.maxmemoryChanged
	s.maxmemoryChanged()
}

// infoUsedMemory is INFO's used_memory. Redis evicts before every command,
// INFO included, so it never reports more than maxmemory while something
// can be evicted; the check before the command may have raced with other
// clients' writes, so INFO evicts again when it finds itself over (outside
// a transaction or script, which hold keyspace locks).
func (s *Server) infoUsedMemory(c *Client) int64 {
	if mm := s.cfg.MaxMemory.Load(); mm != 0 && s.evictUsed() > mm && c != nil && !c.inExec && !c.fromScript &&
		s.lua.busySince.Load() == 0 {
		s.performEvictions(c.slot, nil)
	}
	return s.usedMemory()
}

// overMaxmemory reports whether used memory is above maxmemory.
func (s *Server) overMaxmemory() bool {
	mm := s.cfg.MaxMemory.Load()
	return mm != 0 && s.evictUsed() > mm
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
	mm := s.cfg.MaxMemory.Load()
	if mm == 0 || s.evictUsed() <= mm {
		return evictOK
	}
	if s.pause.typ.Load() != pauseOff {
		return evictOK // the dataset stays static while clients are paused
	}
	pol := ev.policy.Load()
	if pol&store.PolicyNoEviction != 0 {
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
	limit := store.EvictionTimeLimit(s.cfg.EvictTenacity.Load())
	start := time.Now()
	ks := s.ks
	ks.Lock.RLock(slot)
	ev.freed = 0
	keys := 0
	result := evictOK
	for ev.freed < tofree {
		dbi, key, ok := ev.pick.Next(ks, pol, int(s.cfg.EvictSamples.Load()), s.deleteVictim)
		if !ok {
			result = evictFail
			break
		}
		if key == "" {
			continue // the victim had just expired (counted as freed)
		}
		keys++
		ev.evicted.Add(1)
		if flags := s.cfg.NotifyFlags.Load(); flags&config.NotifyEvicted != 0 {
			s.notifyDB(nil, dbi, config.NotifyEvicted, flags, "evicted", []byte(key))
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
func (s *Server) isLFUPolicy() bool { return s.ev.policy.Load()&store.PolicyLFU != 0 }
