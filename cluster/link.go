package cluster

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"
)

// link is one TCP connection of the bus (Redis's clusterLink): outbound
// to a node, or accepted from one. A reader goroutine hands each whole
// message to the cluster under its lock; a writer goroutine drains the
// send buffer, which senders fill without waiting for the network.
type link struct {
	c       *Cluster
	ctime   int64
	conn    net.Conn
	node    *Node
	inbound bool
	freed   bool // guarded by the cluster's lock

	mu      sync.Mutex
	sndbuf  []byte
	wake    chan struct{}
	closed  bool
	rcvSize int // the receive buffer in use, for CLUSTER LINKS memory
}

func newLink(c *Cluster, n *Node) *link {
	l := &link{c: c, ctime: mstime(), node: n, inbound: n == nil, wake: make(chan struct{}, 1), rcvSize: 1024}
	c.links[l] = struct{}{}
	if n != nil {
		n.link = l
	}
	return l
}

// send queues a message (statistics are counted by the caller).
func (l *link) send(b []byte) {
	l.mu.Lock()
	if !l.closed {
		l.sndbuf = append(l.sndbuf, b...)
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	l.mu.Unlock()
}

func (l *link) bufSizes() (alloc, used int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cap(l.sndbuf), len(l.sndbuf)
}

// close shuts the connection; the goroutines end.
func (l *link) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		if l.conn != nil {
			l.conn.Close()
		}
		close(l.wake)
	}
	l.mu.Unlock()
}

func (l *link) writer() {
	defer l.c.wg.Done()
	var spare []byte
	for range l.wake {
		for {
			l.mu.Lock()
			buf := l.sndbuf
			l.sndbuf = spare[:0]
			conn := l.conn
			l.mu.Unlock()
			if len(buf) == 0 {
				spare = buf
				break
			}
			conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := conn.Write(buf); err != nil {
				l.c.log(LogDebug, "I/O error writing to node link: %v", err)
				conn.Close()
				break
			}
			if cap(buf) > 64<<10 {
				buf = nil // a burst's buffer is not kept (send-buffer-allocated)
			}
			spare = buf
		}
	}
}

// reader reads whole messages and processes them.
func (l *link) reader() {
	defer l.c.wg.Done()
	c := l.c
	br := bufio.NewReaderSize(l.conn, 16*1024)
	head := make([]byte, 8)
	buf := make([]byte, 0, 4096)
	for {
		_, err := io.ReadFull(br, head)
		if err == nil {
			n, ok := MessageLen(head)
			if !ok {
				c.log(LogWarning, "Bad message length or signature received from Cluster bus.")
				err = io.ErrUnexpectedEOF
			} else {
				if cap(buf) < n {
					buf = make([]byte, n)
				}
				buf = buf[:n]
				copy(buf, head)
				_, err = io.ReadFull(br, buf[8:])
				l.mu.Lock()
				l.rcvSize = max(1024, 2*n)
				l.mu.Unlock()
			}
		}
		c.mu.Lock()
		if l.freed {
			c.mu.Unlock()
			return
		}
		if err != nil {
			c.log(LogDebug, "I/O error reading from node link: %v", err)
			c.freeLink(l)
			c.unlock()
			return
		}
		c.processPacket(l, buf)
		c.unlock()
		if cap(buf) > 64*1024 {
			buf = make([]byte, 0, 4096)
		}
	}
}

// freeLink closes a link and detaches it from its node. Lock held.
func (c *Cluster) freeLink(l *link) {
	if l.freed {
		return
	}
	l.freed = true
	delete(c.links, l)
	l.close()
	if n := l.node; n != nil {
		if n.link == l {
			n.link = nil
		} else if n.inLink == l {
			n.inLink = nil
		}
	}
}

// setInbound ties an accepted link to the node that sent on it.
func (c *Cluster) setInbound(n *Node, l *link) {
	if n.inLink != nil {
		c.log(LogDebug, "Replacing inbound link from node %s", n.name)
		c.freeLink(n.inLink)
	}
	n.inLink = l
	l.node = n
}

func (c *Cluster) tlsConfigs() (srv, cli *tls.Config) {
	if c.opts.TLS == nil || !c.configBool("tls-cluster") {
		return nil, nil
	}
	return c.opts.TLS()
}

func (c *Cluster) acceptLoop(ln net.Listener) {
	defer c.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			select {
			case <-c.stopCh:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			if isClosed(err) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if srv, _ := c.tlsConfigs(); srv != nil {
			conn = tls.Server(conn, srv)
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetKeepAlive(true)
		}
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			conn.Close()
			return
		}
		c.log(LogVerbose, "Accepting cluster node connection from %s", conn.RemoteAddr())
		l := newLink(c, nil)
		l.conn = conn
		c.startLink(l)
		c.unlock()
	}
}

func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

func (c *Cluster) startLink(l *link) {
	c.wg.Add(2)
	go l.reader()
	go l.writer()
}

// connect dials a node's bus port for its outbound link (made by cron).
func (c *Cluster) connect(n *Node, l *link) {
	addr := net.JoinHostPort(n.ip, strconv.Itoa(n.cport))
	name := n.name
	timeout := time.Duration(max(c.nodeTimeout(), 1000)) * time.Millisecond
	d := net.Dialer{Timeout: timeout, KeepAlive: time.Duration(max(c.nodeTimeout()/1000*2, 1)) * time.Second}
	if src := c.host.Config("bind-source-addr"); src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	_, cli := c.tlsConfigs()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		conn, err := d.Dial("tcp", addr)
		if err == nil && cli != nil {
			tc := tls.Client(conn, cli)
			if err = tc.Handshake(); err == nil {
				conn = tc
			} else {
				conn.Close()
			}
		}
		c.mu.Lock()
		if l.freed || c.stopped {
			c.mu.Unlock()
			if err == nil {
				conn.Close()
			}
			return
		}
		if err != nil {
			c.log(LogVerbose, "Connection with Node %s at %s failed: %v", name, addr, err)
			if n.pingSent == 0 {
				n.pingSent = mstime()
			}
			c.freeLink(l)
			c.unlock()
			return
		}
		l.mu.Lock()
		l.conn = conn
		l.mu.Unlock()
		c.startLink(l)
		// Ping at once (MEET for a node we were asked to meet): crucial
		// against false failure detection.
		old := n.pingSent
		typ := uint16(MsgPing)
		if n.flags&FlagMeet != 0 {
			typ = MsgMeet
		}
		c.sendPing(l, typ)
		if old != 0 {
			n.pingSent = old
		}
		n.flags &^= FlagMeet
		c.log(LogDebug, "Connecting with Node %s at %s", name, addr)
		c.unlock()
	}()
}

// sortedNodes returns the nodes by name (a stable order for output).
func (c *Cluster) sortedNodes() []*Node {
	out := make([]*Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
