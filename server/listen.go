package server

import (
	"errors"
	"net"
	"sync/atomic"

	"github.com/sluicedb/sluice/config"
)

// Moving the TCP listeners at run time: CONFIG SET port and CONFIG SET
// bind open the new listeners first and give up the old ones only when
// all of them opened, as Redis does, so a failed change leaves the server
// listening where it was. Connections already open stay.

// relisten replaces the TCP listeners of one kind (plain, or the TLS
// port's when tlsPort) with ones on bind (addresses, "-" marking an
// optional one) and port ("0": none of that kind).
func (s *Server) relisten(bind []string, port string, tlsPort bool) error {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	select {
	case <-s.stopCh:
		return errors.New("server is stopping")
	default:
	}
	// A listener already on one of the wanted addresses stays as it is.
	ofKind := func(ln net.Listener) bool {
		if tlsPort {
			return isTLSListener(ln)
		}
		_, ok := ln.(*net.TCPListener)
		return ok
	}
	current := map[string]net.Listener{}
	for _, ln := range s.lns {
		if ofKind(ln) {
			current[ln.Addr().String()] = ln
		}
	}
	stay := map[net.Listener]bool{}
	var fresh, listening []net.Listener
	if port != "0" {
		for _, entry := range bind {
			network, host, optional := config.BindAddr(entry)
			if a, err := net.ResolveTCPAddr(network, net.JoinHostPort(host, port)); err == nil {
				if ln := current[a.String()]; ln != nil && !stay[ln] {
					stay[ln] = true
					listening = append(listening, ln)
					continue
				}
			}
			ln, err := net.Listen(network, net.JoinHostPort(host, port))
			if err != nil {
				if optional {
					continue
				}
				s.Warnf("Warning: Could not create server TCP listening socket %s: %v", net.JoinHostPort(host, port), err)
				closeAll(fresh)
				return err
			}
			if tlsPort {
				ln = &tlsListener{TCPListener: ln.(*net.TCPListener), srv: s}
			}
			fresh = append(fresh, ln)
			listening = append(listening, ln)
		}
	}
	var old, kept []net.Listener
	for _, ln := range s.lns {
		if ok := ofKind(ln); ok && !stay[ln] {
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
	s.lns = orderListeners(append(listening, kept...))
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

// orderListeners puts the plain TCP listeners first, then the TLS ones,
// then the rest (the unix socket): Addrs()[0] is the port a client or a
// replica announcement names first, as Redis's port, else tls-port.
func orderListeners(lns []net.Listener) []net.Listener {
	rank := func(ln net.Listener) int {
		switch ln.(type) {
		case *net.TCPListener:
			return 0
		case *tlsListener:
			return 1
		}
		return 2
	}
	out := make([]net.Listener, 0, len(lns))
	for r := 0; r < 3; r++ {
		for _, ln := range lns {
			if rank(ln) == r {
				out = append(out, ln)
			}
		}
	}
	return out
}

// applyListen is the hook CONFIG SET port and bind call while running:
// the plain listeners move to bind and port, and the TLS ones to bind.
func (s *Server) applyListen(bind []string, port string) error {
	if err := s.relisten(bind, port, false); err != nil {
		return err
	}
	if tp := s.cfg.Get("tls-port"); tp != "0" {
		return s.relisten(bind, tp, true)
	}
	return nil
}
