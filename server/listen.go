package server

import (
	"errors"
	"net"
	"strings"
	"sync/atomic"
)

// Moving the TCP listeners at run time: CONFIG SET port and CONFIG SET
// bind open the new listeners first and give up the old ones only when
// all of them opened, as Redis does, so a failed change leaves the server
// listening where it was. Connections already open stay.

// relisten replaces the TCP listeners with ones on bind (addresses, "-"
// marking an optional one) and port ("0": no TCP listener).
func (s *Server) relisten(bind []string, port string) error {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	select {
	case <-s.stopCh:
		return errors.New("server is stopping")
	default:
	}
	// A listener already on one of the wanted addresses stays as it is.
	current := map[string]net.Listener{}
	for _, ln := range s.lns {
		if _, ok := ln.(*net.TCPListener); ok {
			current[ln.Addr().String()] = ln
		}
	}
	stay := map[net.Listener]bool{}
	var fresh, listening []net.Listener
	if port != "0" {
		for _, host := range bind {
			optional := strings.HasPrefix(host, "-")
			host = strings.TrimPrefix(host, "-")
			if host == "*" {
				host = "0.0.0.0"
			}
			if a, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(host, port)); err == nil {
				if ln := current[a.String()]; ln != nil && !stay[ln] {
					stay[ln] = true
					listening = append(listening, ln)
					continue
				}
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
			if err != nil {
				if optional {
					continue
				}
				s.Warnf("Warning: Could not create server TCP listening socket %s: %v", net.JoinHostPort(host, port), err)
				closeAll(fresh)
				return err
			}
			fresh = append(fresh, ln)
			listening = append(listening, ln)
		}
	}
	var old, kept []net.Listener
	for _, ln := range s.lns {
		if _, ok := ln.(*net.TCPListener); ok && !stay[ln] {
			old = append(old, ln)
		} else if !ok {
			kept = append(kept, ln)
		}
	}
	if len(s.loops) > 0 {
		s.swapLoopListeners(old, fresh)
	} else {
		for _, ln := range fresh {
			s.wg.Add(1)
			go s.acceptLoop(ln)
		}
		closeAll(old)
	}
	s.lns = append(listening, kept...)
	addrs := make([]net.Addr, 0, len(s.lns))
	for _, ln := range s.lns {
		addrs = append(addrs, ln.Addr())
	}
	s.addrs = addrs
	return nil
}

// stopAccepting makes the listeners refuse new connections at once
// (SHUTDOWN: Redis exits before its reply would be read), while Stop,
// which closes them, runs on.
func (s *Server) stopAccepting() {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if len(s.loops) > 0 {
		shutdownListeners(s.lns)
	} else {
		closeAll(s.lns)
	}
}

// listenerSwap counts the loops that still watch the old listeners; the
// last one to let go closes them (closing earlier could hand a listener's
// descriptor number to a new connection a loop still takes for a
// listener).
type listenerSwap struct {
	left atomic.Int32
	old  []net.Listener
}

func (w *listenerSwap) done() {
	if w.left.Add(-1) == 0 {
		closeAll(w.old)
	}
}

// applyListen is the hook CONFIG SET port and bind call while running.
func (s *Server) applyListen(bind []string, port string) error {
	return s.relisten(bind, port)
}
