package server

import (
	"strings"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/lua"
	"github.com/sluicedb/sluice/store"
	"github.com/sluicedb/sluice/watch"
)

func multiCommand(c *Client, args [][]byte) {
	if c.tx != nil {
		c.w.Error("ERR MULTI calls can not be nested")
		return
	}
	if c.tx = c.txSpare; c.tx == nil {
		c.tx = &txState{}
	}
	c.txSpare = nil
	c.w.OK()
}

func discardCommand(c *Client, args [][]byte) {
	if c.tx == nil {
		c.w.Error("ERR DISCARD without MULTI")
		return
	}
	c.discardTx()
	c.w.OK()
}

// discardTx leaves MULTI and forgets watched keys (and their verdict).
func (c *Client) discardTx() {
	if c.tx != nil {
		c.tx.reset()
		c.txSpare = c.tx
		c.tx = nil
	}
	c.srv.watches.UnwatchAll(&c.watch)
}

// execCommand runs the queued commands with no other client's command
// interleaved. It locks the shards of every key the transaction reads,
// writes or watches, so clients on other keys go on meanwhile; a
// transaction holding a command that needs the whole keyspace (KEYS,
// FLUSHALL, SORT, EVAL...) or that changes database takes the keyspace
// exclusively instead.
func execCommand(c *Client, args [][]byte) {
	tx := c.tx
	if tx == nil {
		c.w.Error("ERR EXEC without MULTI")
		return
	}
	if tx.dirty {
		// Bound to abort: no lock needed (a loading server answers at
		// once, not after its loader's next pause).
		c.w.Error("EXECABORT Transaction discarded because of previous errors.")
		c.discardTx()
		return
	}
	ks := c.srv.ks
	if c.txNeedsAll() {
		ks.Lock.Lock()
		c.execLocked(tx)
		ks.Lock.Unlock()
		return
	}
	var set store.ShardSet
	for i, cmd := range tx.names {
		c.keys = cmd.Keys(tx.cmds[i], c.keys[:0], cmdspec.Access)
		for _, k := range c.keys {
			set.Add(tx.cmds[i][k.Pos])
		}
	}
	c.watch.AddShards(&set)
	ks.Lock.RLock(c.slot)
	db := c.DB()
	set.Lock(db)
	c.execLocked(tx)
	set.Unlock(db)
	ks.Lock.RUnlock(c.slot)
}

// txQueued reports whether a command queued in c's transaction has flag
// f (Redis's mstate.cmd_flags): EXEC is refused for what it would run.
func (c *Client) txQueued(f cmdspec.Flags) bool {
	return c.tx != nil && c.tx.flags&f != 0
}

// txQueuedWithout reports whether a queued command lacks flag f.
func (c *Client) txQueuedWithout(f cmdspec.Flags) bool {
	return c.tx != nil && c.tx.invFlags&f != 0
}

// queuedFlags is a command's flags as queued (Redis's getCommandFlags): a
// script that declares flags (a shebang, a function) has those of its
// flags (scriptFlagsToCmdFlags) rather than EVAL's or FCALL's own.
func (c *Client) queuedFlags(cmd *Command, args [][]byte) cmdspec.Flags {
	name := cmd.Name
	switch name {
	case "eval", "evalsha", "fcall":
	case "eval_ro", "evalsha_ro", "fcall_ro":
		name = strings.TrimSuffix(name, "_ro")
	default:
		return cmd.Flags
	}
	sf, ok := c.srv.scriptFlags(c.slot, name, args)
	if !ok || sf&lua.Compat != 0 {
		return cmd.Flags
	}
	f := cmd.Flags &^ (cmdspec.Stale | cmdspec.DenyOOM | cmdspec.Write | cmdspec.MayReplicate)
	if sf&(lua.AllowOOM|lua.NoWrites) == 0 {
		f |= cmdspec.DenyOOM
	}
	if sf&lua.NoWrites == 0 {
		f |= cmdspec.Write
	}
	if sf&lua.AllowStale != 0 {
		f |= cmdspec.Stale
	}
	return f
}

// txNeedsAll reports whether the queued transaction must run with the
// keyspace exclusively locked.
func (c *Client) txNeedsAll() bool {
	for _, cmd := range c.tx.names {
		// DEBUG (SLEEP, RELOAD...) holds the whole server, as in Redis.
		if cmd.Flags&cmdspec.LockAll != 0 || cmd.Name == "select" || cmd.Name == "debug" {
			return true
		}
	}
	return !c.watch.OnlyIn(c.dbi)
}

// execLocked is EXEC once the transaction's locks are held. Its commands
// see their keys' expiry as at its start, as in Redis.
func (c *Client) execLocked(tx *txState) {
	defer c.srv.ks.HoldNow()()
	if c.srv.watches.Expired(&c.watch, c.srv.ks) {
		c.watch.MarkDirty()
	}
	if tx.dirty {
		c.w.Error("EXECABORT Transaction discarded because of previous errors.")
		c.discardTx()
		return
	}
	if c.watch.Dirty() {
		c.w.NullArray()
		c.discardTx()
		return
	}
	c.tx = nil
	c.execTx = tx
	c.srv.watches.UnwatchAll(&c.watch)
	c.inExec = true
	c.srv.execDepth.Add(1)
	c.w.Array(len(tx.cmds))
	for i, cmd := range tx.names {
		c.call(cmd, tx.cmds[i])
	}
	c.srv.execDepth.Add(-1)
	c.inExec = false
	c.execTx = nil
	if c.rpend != nil && len(c.rpend.ops) > 0 {
		c.srv.replFlush(c) // still under the transaction's locks
	}
	tx.reset()
	c.txSpare = tx
}

func watchCommand(c *Client, args [][]byte) {
	if c.tx != nil {
		c.w.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	if c.watch.Dirty() {
		c.w.OK()
		return
	}
	db := c.DB()
	for _, k := range args[1:] {
		c.srv.watches.Watch(&c.watch, db, k)
	}
	c.w.OK()
}

func unwatchCommand(c *Client, args [][]byte) {
	c.srv.watches.UnwatchAll(&c.watch)
	c.w.OK()
}

// watchState is a client's WATCHed keys and verdict, watchRegistry the
// server's map of them.
type (
	watchState    = watch.State
	watchRegistry = watch.Registry
)

// wireWatches connects the keyspace's hooks to the registry.
func (s *Server) wireWatches() {
	s.OnReset(func(c *Client) { c.discardTx() })
	s.ks.OnModified = func(db *store.DB, key []byte) {
		s.watches.Touch(db, key)
		s.trackingInvalidate(db, key)
	}
	s.ks.OnModifiedByExpiry = func(db *store.DB, key []byte) {
		s.watches.Touch(db, key)
		s.trackingExpired(db, key)
	}
	s.OnReset(func(c *Client) { s.tracking.Disable(c, c.trk.Load()) })
	s.ks.OnFlush = func(db *store.DB) { s.watches.TouchDB(db.ID, db, nil) }
	s.ks.OnSwap = func(a, b *store.DB) {
		// After the swap a and b hold each other's data: the watchers of
		// a's index had their data (now b) replaced by a's, and the other
		// way round; clients blocked on a key that now exists may be
		// served.
		s.watches.TouchDB(a.ID, b, a)
		s.watches.TouchDB(b.ID, a, b)
		s.signalSwapped(a, b)
	}
}
