package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/cmdspec"
)

// MONITOR: clients that receive every command the server executes, as
// Redis's replicationFeedMonitors formats them:
//
//	+1700000000.123456 [0 127.0.0.1:5000] "set" "key" "value"

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
	now := time.Now()
	b := make([]byte, 0, 64)
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := strconv.AppendInt(nil, int64(now.Nanosecond()/1000), 10)
	for i := len(us); i < 6; i++ {
		b = append(b, '0')
	}
	b = append(b, us...)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(dbi), 10)
	b = append(b, ' ')
	switch {
	case fromScript:
		b = append(b, "lua"...)
	case c.unixSock:
		b = append(b, "unix:"...)
		b = append(b, s.cfg.Get("unixsocket")...)
	default:
		b = append(b, c.addr...)
	}
	b = append(b, "] "...)
	redact := redactedArgs(args)
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		if redact(i) {
			a = []byte("(redacted)")
		}
		b = appendRepr(b, a)
	}
	b = append(b, "\r\n"...)
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

// redactedArgs returns which arguments Redis hides from monitors: the
// credentials of AUTH and of HELLO ... AUTH.
func redactedArgs(args [][]byte) func(i int) bool {
	switch {
	case eq(args[0], "auth"):
		return func(i int) bool { return i >= 1 }
	case eq(args[0], "hello"):
		for j := 2; j+2 < len(args); j++ {
			if eq(args[j], "auth") {
				return func(i int) bool { return i == j+1 || i == j+2 }
			}
		}
	}
	return func(int) bool { return false }
}

// appendRepr appends s quoted and escaped as Redis's sdscatrepr.
func appendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}
