package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/lua"
)

// CLIENT PAUSE, after Redis 7.0's pauseClients.
//
// While a pause is on, a client whose next command is held back by it
// (every command with ALL; with WRITE, commands that may write or
// replicate: EXEC and scripts are judged by what they would run) is
// postponed: the command is left unconsumed in its query buffer and the
// client is blocked, counting in blocked_clients. When the pause ends
// (CLIENT UNPAUSE, its timeout, or a less restrictive pause) every
// postponed client resumes and parses that command again, so it may be
// postponed once more. Keys are neither expired nor evicted while paused.

// Pause types, ordered by restrictiveness as Redis's pause_type.
const (
	pauseOff int32 = iota
	pauseWrite
	pauseAll
)

type pauseState struct {
	typ atomic.Int32 // the pause in force (pauseOff: none): dispatch's fast path

	mu        sync.Mutex
	end       int64 // unix ms CLIENT PAUSE ends
	client    int32 // CLIENT PAUSE's type
	failover  int32 // FAILOVER's pause (writes, until it ends)
	timer     *time.Timer
	postponed map[*Client]struct{}
}

// pauseClients starts a pause of type typ until end (unix ms), or extends
// the one in force: the more restrictive type and the later end win. A
// pause whose end has passed ends at once.
func (s *Server) pauseClients(typ int32, end int64) {
	p := &s.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur := p.client; cur != pauseOff {
		typ = max(typ, cur)
		end = max(end, p.end)
	}
	if end < wallMs() {
		p.client = pauseOff
		s.updatePauseLocked() // over already
		return
	}
	p.end = end
	p.client = typ
	s.updatePauseLocked()
	if p.timer != nil {
		p.timer.Stop()
	}
	d := time.Duration(end-wallMs()+1) * time.Millisecond
	p.timer = time.AfterFunc(max(d, 0), s.checkPauseTimeout)
}

// unpauseClients ends CLIENT PAUSE and resumes the postponed clients
// (unless another pause holds them).
func (s *Server) unpauseClients() {
	p := &s.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	s.unpauseLocked()
}

// pauseForFailover holds writes while FAILOVER waits for a replica to
// catch up and hands over (PAUSE_DURING_FAILOVER), or stops holding them.
func (s *Server) pauseForFailover(on bool) {
	p := &s.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failover = pauseOff
	if on {
		p.failover = pauseWrite
	}
	s.updatePauseLocked()
}

func (s *Server) unpauseLocked() {
	p := &s.pause
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.client = pauseOff
	s.updatePauseLocked()
}

// updatePauseLocked puts the most restrictive pause in force, and resumes
// the postponed clients when it got less restrictive.
func (s *Server) updatePauseLocked() {
	p := &s.pause
	typ := max(p.client, p.failover)
	old := p.typ.Swap(typ)
	if typ != pauseOff {
		s.ks.ExpiryPaused.Store(true)
	} else if s.repl.flags.Load()&replReadOnly == 0 {
		s.ks.ExpiryPaused.Store(false)
	}
	if typ >= old {
		return
	}
	for c := range p.postponed {
		delete(p.postponed, c)
		c.unblock()
	}
}

// checkPauseTimeout ends the pause once its time has passed.
func (s *Server) checkPauseTimeout() {
	p := &s.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != pauseOff && p.end < wallMs() {
		s.unpauseLocked()
	}
}

// postponeIfPaused blocks c, leaving cmd to run again after the pause,
// when the pause in force holds cmd back.
func (c *Client) postponeIfPaused(cmd *Command, args [][]byte) bool {
	if c.signal == nil {
		return false // no driver to resume it (Direct)
	}
	s := c.srv
	p := &s.pause
	// Judged before taking the lock: scriptFlags may wait for the keyspace.
	held := p.typ.Load() == pauseAll || c.mayReplicate(cmd, args)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch cur := p.typ.Load(); {
	case cur == pauseOff:
		return false
	case p.client != pauseOff && p.end < wallMs():
		s.unpauseLocked()
		if p.typ.Load() == pauseOff || p.typ.Load() == pauseWrite && !held {
			return false
		}
	case cur == pauseWrite && !held:
		return false
	}
	if p.postponed == nil {
		p.postponed = map[*Client]struct{}{}
	}
	p.postponed[c] = struct{}{}
	c.postponed = true
	c.setBlocked()
	return true
}

// pauseHolds reports whether the pause in force holds back cmd of the
// master's stream on a replica: Redis postpones its master client as any
// other, so a replica paused for writes reads its master's writes but
// applies them (and moves its offset) only once the pause ends.
func (s *Server) pauseHolds(mc *Client, cmd *Command, args [][]byte) bool {
	switch s.pause.typ.Load() {
	case pauseOff:
		return false
	case pauseAll:
		return true
	}
	return mc.mayReplicate(cmd, args)
}

// pauseClientClosed forgets a postponed client that disconnected.
func (s *Server) pauseClientClosed(c *Client) {
	p := &s.pause
	if p.typ.Load() == pauseOff {
		return
	}
	p.mu.Lock()
	delete(p.postponed, c)
	p.mu.Unlock()
}

// mayReplicate reports whether a command may write or be replicated
// (CMD_WRITE or CMD_MAY_REPLICATE, as processCommand computes them):
// EXEC by the commands it queued, scripts by their declared flags.
func (c *Client) mayReplicate(cmd *Command, args [][]byte) bool {
	switch cmd.Name {
	case "exec":
		if c.tx == nil {
			return false
		}
		for i, q := range c.tx.names {
			if c.mayReplicate(q, c.tx.cmds[i]) {
				return true
			}
		}
		return false
	case "eval", "evalsha", "fcall":
		if flags, ok := c.srv.scriptFlags(c.slot, cmd.Name, args); ok && flags&lua.Compat == 0 {
			return flags&lua.NoWrites == 0
		}
	}
	return cmd.Flags&(cmdspec.Write|cmdspec.MayReplicate) != 0
}

// scriptFlags returns the declared flags of the script or function that
// EVAL, EVALSHA or FCALL would run; ok is false when it is not known (an
// EVALSHA of an unknown script, a missing function).
func (s *Server) scriptFlags(slot int, name string, args [][]byte) (flags lua.Flags, ok bool) {
	if len(args) < 2 {
		return 0, false
	}
	eng := s.lua.eng
	switch name {
	case "eval":
		flags, err := lua.ParseShebang(string(args[1]))
		return flags, err == nil
	case "evalsha":
		if sc := eng.Script(args[1]); sc != nil {
			return sc.Flags, true
		}
		return 0, false
	}
	// Functions change under the exclusive keyspace lock.
	if !s.ks.Lock.TryRLock(slot) {
		return 0, false
	}
	defer s.ks.Lock.RUnlock(slot)
	if f := eng.Function(args[1]); f != nil {
		return f.Flags, true
	}
	return 0, false
}
