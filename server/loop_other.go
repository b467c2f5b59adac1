//go:build !linux

package server

import (
	"net"
	"time"
)

const eventLoopsSupported = false

type loop struct {
	srv *Server
	id  int
}

func (l *loop) wake()                                 {}
func (s *Server) watchdogCheck(now int64)             {}
func (l *loop) post(fn func())                        { fn() }
func (s *Server) startLoops(lns []net.Listener) error { return nil }

func (s *Server) swapLoopListeners(old, fresh []net.Listener) { closeAll(old) }

func shutdownListeners(lns []net.Listener) {}

// heldState is unused without event loops.
type heldState struct{}

// whileHeld runs fn: without event loops every client has its own goroutine.
func (s *Server) whileHeld(caller *Client, after time.Duration, fn func()) { fn() }

func (l *loop) heldByScript() bool { return false }
