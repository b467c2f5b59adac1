package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/monitor"
)

// MONITOR: clients that receive every command the server executes, in
// the lines package monitor writes.

type monitorRegistry struct {
	n  atomic.Int32 // len(m), read without the lock on every command
	mu sync.RWMutex
	m  map[*Client]struct{}
}

func (r *monitorRegistry) add(c *Client) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[c]; ok {
		return false
	}
	if r.m == nil {
		r.m = map[*Client]struct{}{}
	}
	r.m[c] = struct{}{}
	r.n.Store(int32(len(r.m)))
	return true
}

func (r *monitorRegistry) remove(c *Client) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	delete(r.m, c)
	r.n.Store(int32(len(r.m)))
	r.mu.Unlock()
}

func (r *monitorRegistry) has(c *Client) bool {
	if r.n.Load() == 0 {
		return false
	}
	r.mu.RLock()
	_, ok := r.m[c]
	r.mu.RUnlock()
	return ok
}

// wireMonitors makes RESET leave monitor mode.
func (s *Server) wireMonitors() {
	s.OnReset(func(c *Client) { s.monitors.remove(c) })
}

func monitorCommand(c *Client, args [][]byte) {
	if c.inExec {
		// A client that expects one reply per command cannot monitor.
		c.w.Error("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	if !c.srv.monitors.add(c) {
		return // already monitoring: no reply, as Redis
	}
	c.w.OK()
}

// monitored reports whether cmd is shown to monitors (not admin commands,
// nor those flagged skip_monitor, which feed themselves).
func monitored(cmd *Command) bool {
	return cmd.Flags&(cmdspec.Admin|cmdspec.SkipMonitor) == 0
}

// feedMonitors sends a command executed by c in database dbi to every
// monitor. fromScript marks commands run by a script ("[0 lua]").
func (s *Server) feedMonitors(c *Client, dbi int, args [][]byte, fromScript bool) {
	if s.monitors.n.Load() == 0 {
		return
	}
	source := c.addr
	switch {
	case fromScript:
		source = "lua"
	case c.unixSock:
		source = "unix:" + s.cfg.Get("unixsocket")
	}
	b := monitor.AppendLine(make([]byte, 0, 64), time.Now(), dbi, source, args)
	s.monitors.mu.RLock()
	for m := range s.monitors.m {
		if m == c {
			c.w.Raw(b)
		} else {
			m.deliverPubSub(b)
		}
	}
	s.monitors.mu.RUnlock()
}
