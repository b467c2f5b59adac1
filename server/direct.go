package server

import (
	"sync"
)

// Direct runs commands without a connection, for the embedded mode's
// helpers and for tools: the same dispatcher, locks and handlers as a
// network client, replies returned as raw RESP. It is safe for concurrent
// use (calls are serialized per Direct).
type Direct struct {
	mu sync.Mutex
	c  *Client
}

// NewDirect returns a connection-less client on database db.
func (s *Server) NewDirect(db int) *Direct {
	c := &Client{srv: s, slot: s.goSlot, fd: -1, authed: true, addr: "direct", dbi: db, direct: true}
	c.w.Proto = 2
	return &Direct{c: c}
}

// Do runs one command and returns its raw RESP reply. A command that would
// block returns whatever it replied before blocking (normally nothing).
func (d *Direct) Do(args ...[]byte) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.c.w.Buf = d.c.w.Buf[:0]
	d.c.exec(args)
	out := append([]byte(nil), d.c.w.Buf...)
	return out
}

// DoStrings is Do with string arguments.
func (d *Direct) DoStrings(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return d.Do(b...)
}
