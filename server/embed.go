package server

import (
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/persist"
)

// What the embedded mode (sluicetest and its miniredis-compatible API)
// asks of a server beyond what a client can do: moving its clock, a reply
// forced on every command, logging connections out, carrying the dataset
// over a restart, and counters.

// AdvanceClock moves the keyspace's clock forward by d and removes the
// keys whose time is then up (unless DEBUG SET-ACTIVE-EXPIRE turned
// active expiry off), as if d had passed: keyspace notifications and
// client-side caching invalidations follow as for any expiry.
func (s *Server) AdvanceClock(d time.Duration) {
	s.ks.Clock().Advance(d)
	s.expireMovedClock()
}

// SetClock stops the keyspace's clock at t (the zero time gives it back to
// the wall clock) and removes the keys whose time is then up.
func (s *Server) SetClock(t time.Time) {
	s.ks.Clock().Set(t)
	s.expireMovedClock()
}

func (s *Server) expireMovedClock() {
	if !s.activeExpireOff.Load() {
		s.ks.ExpireAll(s.goSlot)
	}
}

// embedState is the embedded mode's per-server state.
type embedState struct {
	errReply atomic.Pointer[string] // SetErrorReply
}

// SetErrorReply makes every command a connection sends fail with msg (an
// error reply such as "LOADING Redis is loading the dataset in memory")
// until it is called with "" (miniredis's SetError). Commands run through
// Direct are not affected.
func (s *Server) SetErrorReply(msg string) {
	if msg == "" {
		s.embed.errReply.Store(nil)
		return
	}
	s.embed.errReply.Store(&msg)
}

// RequireAuthAgain logs out the connections that were logged in without
// AUTH, because the default user needed no password when they connected
// or reset: their next command must authenticate if a password is now
// required. (redis-server keeps such connections logged in; miniredis's
// RequireAuth applies to them, and the embedded mode follows it.)
func (s *Server) RequireAuthAgain() {
	for _, c := range s.clientsSnapshot() {
		c.reauth.Store(true)
	}
}

// applyReauth runs at the start of each batch of a client's input.
func (c *Client) applyReauth() {
	c.reauth.Store(false)
	if c.implicitAuth {
		c.authed = false
		c.implicitAuth = false
	}
}

// DumpDataset returns the whole dataset (every database, function
// libraries included) as the bytes of an RDB file.
func (s *Server) DumpDataset() []byte {
	s.ks.Lock.Lock()
	defer s.ks.Lock.Unlock()
	return persist.EncodeRDB(s.lockedImage(), persist.RDBOptions{Version: Version, Checksum: s.cfg.Get("rdbchecksum") != "no"})
}

// LoadDataset loads the bytes of an RDB file into the server's empty
// keyspace; keys whose expiry has passed on the keyspace's clock are
// skipped.
func (s *Server) LoadDataset(b []byte) error { return s.loadRDB(b) }

// CommandsProcessed is the number of commands run so far
// (total_commands_processed).
func (s *Server) CommandsProcessed() int64 { return s.statTotals().commands }

// TotalConnections is the number of connections accepted so far
// (total_connections_received).
func (s *Server) TotalConnections() int64 { return s.statTotals().connections }

// ConnectedClients is the number of open connections (connected_clients).
func (s *Server) ConnectedClients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}
