package server

import (
	"net"
	"time"
)

// ServeConn serves one connection on goroutines of its own until it
// closes. It is how in-memory connections (the embedded mode) and
// platforms without the event loops are served; the command engine is the
// same one the event loops use. A reader goroutine feeds the client's
// goroutine, which also wakes for output delivered by other clients.
func (s *Server) ServeConn(conn net.Conn) {
	laddr, raddr := "", ""
	if a := conn.LocalAddr(); a != nil {
		laddr = a.String()
	}
	if a := conn.RemoteAddr(); a != nil {
		raddr = a.String()
	}
	_, isUnix := conn.(*net.UnixConn)
	sig := make(chan struct{}, 1)
	c := s.newClient(s.goSlot, raddr, laddr, isUnix, func(c *Client) {
		c.killHook = func() { conn.Close() }
		c.signal = func() {
			select {
			case sig <- struct{}{}:
			default:
			}
		}
	})
	if c == nil {
		conn.Write([]byte("-" + errMaxClients + "\r\n"))
		conn.Close()
		return
	}
	defer func() {
		conn.Close()
		s.removeClient(c)
	}()

	type chunk struct {
		b   []byte
		err error
	}
	reads := make(chan chunk)
	free := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 16*1024)
		for {
			n, err := conn.Read(buf)
			reads <- chunk{buf[:n], err}
			if err != nil {
				return
			}
			buf = <-free // wait until the chunk was copied
		}
	}()
	defer func() {
		// Unblock the reader if it is waiting to hand over a chunk.
		go func() {
			for range reads {
				select {
				case free <- nil:
				default:
				}
			}
		}()
	}()

	st := &s.stats[s.goSlot]
	var qbuf []byte
	flush := func() bool {
		if len(c.w.Buf) > 0 {
			st.netOut.Add(int64(len(c.w.Buf)))
			if _, err := conn.Write(c.w.Buf); err != nil {
				return false
			}
			c.w.Buf = c.w.Buf[:0]
		}
		return true
	}
	run := func() bool {
		off := 0
		for !c.blocked {
			k := c.process(qbuf[off:])
			off += k
			if !flush() {
				return false
			}
			if c.closeAfterReply || c.closeASAP.Load() {
				return false
			}
			if k == 0 || off == len(qbuf) {
				break
			}
		}
		n := copy(qbuf, qbuf[off:])
		qbuf = qbuf[:n]
		c.qbufLen.Store(int64(len(qbuf)))
		if int64(len(qbuf)) > s.cfg.qbufLimit.Load() {
			s.Warnf("Closing client that reached max query buffer length (qbuf=%d)", len(qbuf))
			return false
		}
		return true
	}
	for {
		select {
		case ch := <-reads:
			if len(ch.b) > 0 {
				st.netIn.Add(int64(len(ch.b)))
				qbuf = append(qbuf, ch.b...)
				c.lastIO.Store(time.Now().UnixMilli())
			}
			if ch.err != nil {
				return
			}
			free <- ch.b[:cap(ch.b)]
			if !c.blocked && !run() {
				return
			}
		case <-sig:
			if c.blocked && !c.blockedFlag.Load() {
				c.blocked = false
			}
			c.w.Buf = c.takeAsync(c.w.Buf)
			if !flush() {
				return
			}
			if !c.blocked && len(qbuf) > 0 && !run() {
				return
			}
			if c.closeASAP.Load() {
				return
			}
		}
	}
}

// kill closes the client's connection from any goroutine.
func (c *Client) kill() {
	c.closeASAP.Store(true)
	if c.killHook != nil {
		c.killHook()
	}
}
