//go:build !linux

package server

import "net"

const eventLoopsSupported = false

type loop struct {
	srv *Server
	id  int
}

func (l *loop) wake()                                 {}
func (l *loop) post(fn func())                        { fn() }
func (s *Server) startLoops(lns []net.Listener) error { return nil }
