//go:build linux

package server

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicedb/sluice/internal/spin"

	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

const eventLoopsSupported = true

// loop is one event loop: a goroutine locked to its thread that owns a
// set of connections and serves them with epoll: one read, every complete
// command parsed and executed, one write.
type loop struct {
	srv   *Server
	id    int
	epfd  int
	evfd  int // eventfd to wake the loop
	lfds  map[int]bool
	conns map[int]*Client
	rbuf  []byte
	wbuf  []byte

	// tlsLFDs are the listeners on TLS ports, tlsBuf the ciphertext read
	// for a TLS connection (loop_tls_linux.go).
	tlsLFDs  map[int]bool
	tlsBuf   []byte
	tlsConns int // TLS connections served: while there are any the loop does not spin

	mu       sync.Mutex
	tasks    []func()
	ready    []*Client // clients signalled by other goroutines (output, unblock)
	sleeping atomic.Bool
	// standingIn is set while a stand-in serves the loop during a long
	// script: its commands must not wait for the keyspace lock.
	standingIn atomic.Bool

	// held are the clients whose replies wait for this iteration's AOF
	// commit (see holdOrWrite).
	held []*Client

	// ring is the loop's io_uring (loop_uring_linux.go), nil when the loop
	// runs on epoll alone.
	ring *loopRing
	// idle waits in Go's poller once the loop has been idle a while
	// (idle_linux.go); nil when that is not possible.
	idle *idleWaiter

	tid       atomic.Int32 // the loop's thread, when locked to one (tests read its CPU time)
	spinHits  atomic.Int64 // idle spells that spinning ended with work
	sleepCost atomic.Int64 // what one sleep costs the loop's thread, in ns CPU, as its spin.Gate measured it
	// aliveAt is when (nanotime) the loop last began an iteration or woke
	// up, goid its goroutine, and watchdogFired the aliveAt of the stall
	// the watchdog last logged (crash.go).
	aliveAt       atomic.Int64
	goid          atomic.Int64
	watchdogFired int64
	spareTasks    []func()
	spareReady    []*Client
	lastYield     int64         // nanotime of the loop's last yield (yieldIfDue)
	started       chan struct{} // closed once run has set up the loop's ring (or found none)
	heldBufs      [][]byte

	// spareQbuf is the big query buffer the loop keeps for its next big
	// argument (since spareQbufAt, ms on the monotonic clock), and
	// releasedQbuf the one that becomes the spare at the next iteration
	// (bigqbuf_linux.go).
	spareQbuf    []byte
	spareQbufAt  int64
	releasedQbuf []byte
	// wbufBigAt is when (ms on the monotonic clock) the loop's write
	// buffer last held more than keptWbuf bytes, and wbufBig says that
	// it did during this iteration (keepWbuf).
	wbufBigAt int64
	wbufBig   bool

	// pf gathers the keys of the input an iteration serves, to fetch
	// their lines of the keyspace together (prefetchInput).
	pf store.Prefetcher
}

const readSize = 64 * 1024

// startLoops registers every listener with every loop (EPOLLEXCLUSIVE: one
// loop wakes per new connection) and starts the loops.
func (s *Server) startLoops(lns []net.Listener) error {
	var fds []int
	for _, ln := range lns {
		sc, ok := ln.(syscall.Conn)
		if !ok {
			s.wg.Add(1)
			go s.acceptLoop(ln)
			continue
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return err
		}
		rc.Control(func(fd uintptr) { fds = append(fds, int(fd)) })
	}
	for _, l := range s.loops {
		if err := l.init(fds); err != nil {
			return err
		}
		l.tlsLFDs = tlsListenerFDs(lns)
	}
	for _, l := range s.loops {
		s.wg.Add(1)
		l.started = make(chan struct{})
		go l.run()
	}
	for _, l := range s.loops {
		<-l.started // its ring (or none) is set up
	}
	return nil
}

// listenerFDs returns the descriptors of lns.
func listenerFDs(lns []net.Listener) []int {
	var fds []int
	for _, ln := range lns {
		if sc, ok := ln.(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				rc.Control(func(fd uintptr) { fds = append(fds, int(fd)) })
			}
		}
	}
	return fds
}

// shutdownListeners stops lns listening, leaving their descriptors open
// for the loops that watch them.
func shutdownListeners(lns []net.Listener) {
	for _, fd := range listenerFDs(lns) {
		unix.Shutdown(fd, unix.SHUT_RDWR)
	}
}

// swapLoopListeners has every loop watch fresh instead of old; the old
// listeners close once no loop watches them.
func (s *Server) swapLoopListeners(old, fresh []net.Listener) {
	oldFDs, freshFDs, freshTLS := listenerFDs(old), listenerFDs(fresh), tlsListenerFDs(fresh)
	// Stop listening now, as Redis's close does; the descriptors stay
	// open (their numbers taken) until no loop watches them.
	shutdownListeners(old)
	sw := &listenerSwap{old: old}
	sw.left.Store(int32(len(s.loops)))
	for _, l := range s.loops {
		l.post(func() {
			for _, fd := range freshFDs {
				if l.watchListener(fd) == nil && freshTLS[fd] {
					l.tlsLFDs[fd] = true
				}
			}
			for _, fd := range oldFDs {
				l.unwatchListener(fd)
				delete(l.tlsLFDs, fd)
			}
			sw.done()
		})
	}
}

func (l *loop) init(lfds []int) error {
	var err error
	if l.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return err
	}
	if l.evfd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return err
	}
	l.lfds = map[int]bool{}
	l.conns = map[int]*Client{}
	if err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, l.evfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.evfd)}); err != nil {
		return err
	}
	for _, fd := range lfds {
		if err = l.watchListener(fd); err != nil {
			return err
		}
	}
	l.rbuf = make([]byte, readSize)
	return nil
}

// wake interrupts the loop's wait: its epoll_wait or io_uring_enter, or
// a ring's wait in Go's poller (idleWaiter.kicked).
func (l *loop) wake() {
	if l.evfd == 0 || l.idle.kicked() {
		return
	}
	var one = [8]byte{1}
	unix.Write(l.evfd, one[:])
}

// wakeIfSleeping wakes the loop only when it is (about to be) blocked in
// epoll_wait: a loop that is running drains its ready list before it
// sleeps again, so most signals cost no system call. The loop publishes
// sleeping before it last checks the list, and a signaller checks sleeping
// after it appended, so one of the two always sees the other.
func (l *loop) wakeIfSleeping() {
	if l.sleeping.Load() {
		l.wake()
	}
}

// signalClient queues c to have its delivered output written and its
// input resumed (see onSignal). Safe from any goroutine; cheap when c is
// already queued.
func (l *loop) signalClient(c *Client) {
	if !c.sigPending.CompareAndSwap(false, true) {
		return
	}
	l.mu.Lock()
	l.ready = append(l.ready, c)
	l.mu.Unlock()
	l.wakeIfSleeping()
}

// hasWork reports whether tasks or signalled clients are waiting.
func (l *loop) hasWork() bool {
	l.mu.Lock()
	n := len(l.tasks) + len(l.ready)
	l.mu.Unlock()
	return n > 0
}

// post runs fn on the loop's goroutine.
func (l *loop) post(fn func()) {
	l.mu.Lock()
	l.tasks = append(l.tasks, fn)
	l.mu.Unlock()
	l.wakeIfSleeping()
}

// lockThreads pins each loop to its OS thread (SLUICE_LOCK_THREADS=0 turns
// it off, e.g. for CPU profiles, which miss locked threads).
var lockThreads = os.Getenv("SLUICE_LOCK_THREADS") != "0"

func (l *loop) run() {
	if lockThreads {
		runtime.LockOSThread()
		l.tid.Store(int32(unix.Gettid()))
	}
	defer l.srv.wg.Done()
	defer l.shutdown()
	l.goid.Store(goroutineID())
	// The ring is set up here, on the loop's own thread: the receives'
	// work runs on the thread that submits them.
	l.ring = newLoopRing(l)
	bridge := -1
	if l.ring == nil {
		// Waits that follow a long one are made in Go's poller
		// (idleWaiter), through a second epoll descriptor that holds the
		// loop's only while the loop waits there: were the poller
		// watching the loop's epoll descriptor itself, every event would
		// wake it.
		if fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC); err == nil {
			if l.idle = newIdleWaiter(fd, false); l.idle != nil {
				bridge = fd
			}
		}
	}
	close(l.started)
	if l.ring != nil {
		l.runRing()
		return
	}
	events := make([]unix.EpollEvent, 512)
	lastCron := time.Now()
	gate := spin.NewGate(l.srv.spinFor)
	clockCost := threadClockCost()
	var lastIdle int64 // how long the loop waited for work last time, in ns
	for {
		l.runTasks()
		n := 0
		var err error
		idleFrom := nanotime()
		l.yieldIfDue(idleFrom)
		l.promoteQbuf(idleFrom / 1e6)
		l.keepWbuf(idleFrom / 1e6)
		if gate.Spinning() && l.tlsConns == 0 {
			n = l.spin(events, idleFrom+gate.Window())
		}
		woke := n > 0
		if !woke {
			l.sleeping.Store(true)
			timeout := 100
			if l.hasWork() {
				timeout = 0 // work arrived meanwhile: poll, don't sleep
				woke = true
			}
			if timeout > 0 && l.idle != nil && lastIdle >= int64(idleSleepAfter) {
				// What is ready now is taken without waiting; with
				// nothing, anything that becomes ready is an edge
				// for the poller.
				if n = rawEpollPoll(l.epfd, events); n == 0 && !l.hasWork() {
					if rawEpollCtl(bridge, unix.EPOLL_CTL_ADD, l.epfd, unix.EPOLLIN) == nil {
						l.idle.wait(l.idleFor(), func() bool { return false })
						rawEpollCtl(bridge, unix.EPOLL_CTL_DEL, l.epfd, 0)
					}
					n = rawEpollPoll(l.epfd, events)
				}
				n = max(n, 0)
			} else {
				var cpu0, wall0 int64
				sample := timeout > 0 && gate.SampleSleep()
				if sample {
					cpu0, wall0 = threadCPUTime(), nanotime()
				}
				n, err = unix.EpollWait(l.epfd, events, timeout)
				if sample {
					wall := nanotime() - wall0
					gate.SleptFor(threadCPUTime()-cpu0-clockCost, wall)
					l.sleepCost.Store(gate.Wake())
				}
			}
			l.sleeping.Store(false)
			l.aliveAt.Store(nanotime())
			woke = woke || n > 0
		}
		lastIdle = nanotime() - idleFrom
		gate.Observe(lastIdle, woke)
		if err != nil && err != unix.EINTR {
			return
		}
		select {
		case <-l.srv.stopCh:
			return
		default:
		}
		for i := 0; i < n; i++ {
			ev := &events[i]
			fd := int(ev.Fd)
			switch {
			case fd == l.evfd:
				var buf [8]byte
				unix.Read(l.evfd, buf[:])
				l.runTasks()
			case l.lfds[fd]:
				l.accept(fd)
			default:
				c := l.conns[fd]
				if c == nil {
					continue
				}
				l.onEvents(c, ev.Events)
			}
		}
		l.releaseHeld()
		if now := time.Now(); now.Sub(lastCron) >= 100*time.Millisecond {
			lastCron = now
			l.cron(now)
		}
	}
}

// yieldEvery is how often a loop gives its thread back to Go's
// scheduler. Go's system monitor treats a goroutine that has run on the
// same scheduling tick for 10 ms as one to preempt, and when such a loop
// is blocked in a system call at that moment, it takes its processor
// away; each time, the monitor goes back to waking every 20 µs, and the
// loop's next wake-up takes the slow path back. A loop that never yields
// kept the monitor busy for good: on 2 cores its wake-ups were a tenth of
// the server's CPU under redis-benchmark. A yield every few milliseconds
// starts a new tick (one hand-off of the locked thread, tens of µs), so
// the monitor finds nothing to do and sleeps 10 ms at a time.
const yieldEvery = 8 * time.Millisecond

// yieldIfDue yields when the last yield is yieldEvery old (now: nanotime),
// and notes that an iteration begins (for the watchdog).
func (l *loop) yieldIfDue(now int64) {
	l.aliveAt.Store(now)
	if now-l.lastYield >= int64(yieldEvery) {
		l.lastYield = now
		runtime.Gosched()
	}
}

// spin polls for events until deadline (nanotime) and returns how many
// arrived; 0 when none did or other goroutines posted work meanwhile (see
// spin.Gate).
func (l *loop) spin(events []unix.EpollEvent, deadline int64) int {
	for {
		if n := rawEpollPoll(l.epfd, events); n != 0 {
			if n > 0 {
				l.spinHits.Add(1)
			}
			return n
		}
		if l.hasWork() || nanotime() > deadline {
			return 0
		}
	}
}

// runTasks runs posted functions and serves signalled clients.
func (l *loop) runTasks() {
	l.mu.Lock()
	tasks, ready := l.tasks, l.ready
	l.tasks, l.ready = l.spareTasks[:0], l.spareReady[:0]
	l.mu.Unlock()
	for _, t := range tasks {
		t()
	}
	for _, c := range ready {
		c.sigPending.Store(false)
		l.onSignal(c)
	}
	l.releaseHeld()
	clear(tasks)
	clear(ready)
	l.spareTasks, l.spareReady = tasks[:0], ready[:0]
}

// accept takes up to 64 connections waiting on listener lfd; it reports
// whether more may wait.
func (l *loop) accept(lfd int) bool {
	isTLS := l.tlsLFDs[lfd]
	for i := 0; i < 64; i++ {
		fd, sa, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return false
		}
		addr, laddr, isUnix := "", "", false
		switch a := sa.(type) {
		case *unix.SockaddrInet4:
			addr = net.JoinHostPort(net.IP(a.Addr[:]).String(), itoa(int64(a.Port)))
			unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		case *unix.SockaddrInet6:
			addr = net.JoinHostPort(net.IP(a.Addr[:]).String(), itoa(int64(a.Port)))
			unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		default:
			isUnix = true
			addr = "/unixsocket:0"
		}
		if ls, err := unix.Getsockname(fd); err == nil {
			switch a := ls.(type) {
			case *unix.SockaddrInet4:
				laddr = net.JoinHostPort(net.IP(a.Addr[:]).String(), itoa(int64(a.Port)))
			case *unix.SockaddrInet6:
				laddr = net.JoinHostPort(net.IP(a.Addr[:]).String(), itoa(int64(a.Port)))
			case *unix.SockaddrUnix:
				laddr = a.Name
			}
		}
		if !isTLS && l.srv.protectedModeRefuses(l.id, addr, isUnix) {
			unix.Write(fd, []byte(errProtectedMode))
			unix.Close(fd)
			continue
		}
		c := l.srv.newClient(l.id, addr, laddr, isUnix, func(c *Client) {
			c.fd = fd
			c.sockFd = fd
			c.killHook = func() { l.post(func() { l.close(c) }) }
			c.shutdownHook = func() {
				c.sockMu.Lock()
				if c.sockFd >= 0 {
					unix.Shutdown(c.sockFd, unix.SHUT_RDWR)
				}
				c.sockMu.Unlock()
			}
			c.signal = func() { l.signalClient(c) }
		})
		if c == nil {
			if !isTLS { // before a handshake there is no way to say it
				unix.Write(fd, []byte("-"+errMaxClients+"\r\n"))
			}
			unix.Close(fd)
			continue
		}
		l.conns[fd] = c
		if isTLS {
			l.startTLS(c)
			continue
		}
		if err := l.watchConn(c); err != nil {
			l.close(c)
		}
	}
	return true
}

// watchListener has the loop accept connections on listener fd.
func (l *loop) watchListener(fd int) error {
	// Through the loop's epoll descriptor, with a ring too (newLoopRing
	// says why).
	ev := &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, ev); err != nil {
		return err
	}
	l.lfds[fd] = true
	return nil
}

// unwatchListener stops the loop accepting on fd.
func (l *loop) unwatchListener(fd int) {
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	delete(l.lfds, fd)
}

// watchConn starts reading an accepted plain connection: its input
// arrives through the ring when the loop has one, else epoll says when
// to read. (TLS connections use epoll either way: handshakeDone.)
func (l *loop) watchConn(c *Client) error {
	if l.ring != nil && !l.ring.lent {
		l.ring.watchConn(c)
		return nil
	}
	return unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c.fd)})
}

// ringConn reports whether c's input comes through the loop's ring (not
// while a stand-in serves the loop: lend).
func (l *loop) ringConn(c *Client) bool { return l.ring != nil && !l.ring.lent && c.tls == nil }

// waitWritable has the loop call onWritable once c's socket takes output
// again. again says the loop asked before and the socket was still full.
func (l *loop) waitWritable(c *Client, again bool) {
	if l.ringConn(c) {
		l.ring.pollOut(c)
		return
	}
	if !again {
		unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT, Fd: int32(c.fd)})
	}
}

// writable is onWritable's end: the socket took all the output.
func (l *loop) writable(c *Client) {
	if !l.ringConn(c) {
		unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c.fd)})
	}
}

// readConn reads what c sent: from the socket, or the plaintext of a TLS
// connection (tlsRead).
func (l *loop) readConn(c *Client, p []byte) (int, error) {
	if c.tls != nil {
		return l.tlsRead(c, p)
	}
	return rawRead(c.fd, p)
}

// onSignal writes output delivered from other goroutines and resumes a
// client whose block ended.
//
// A killed client (closeASAP) gets nothing more, as in Redis, whose
// CLIENT KILL frees the client at once: in particular no replication
// stream fed after the kill reaches a killed replica, whose PSYNC would
// then continue from where the master stood after it. The stream is
// checked after it was read: the killer marks the client before it feeds
// anything more.
func (l *loop) onSignal(c *Client) {
	if c.fd < 0 {
		return
	}
	if c.closeASAP.Load() {
		l.close(c)
		return
	}
	if c.blocked && !c.blockedFlag.Load() {
		c.blocked = false
	}
	// While the socket is full the output stays in the async buffer: the
	// EPOLLOUT handler comes back here once the pending bytes are gone, so
	// the same bytes are never held twice.
	if len(c.pending) == 0 && len(c.held) == 0 {
		for {
			out := c.swapAsync()
			replica := c.replica.Load() != nil
			if replica {
				// A replica's output goes on with the replication stream
				// from its position, as long as the socket takes it.
				out = c.streamOut(out)
				if c.closeASAP.Load() {
					c.returnAsync(out)
					l.close(c)
					return
				}
			}
			if len(out) == 0 {
				c.returnAsync(out)
				break
			}
			// A served blocked command's effects were fed by another
			// client: they reach the AOF before its reply goes out.
			l.srv.commitIfPending()
			c.w.Buf = out
			ok := l.write(c)
			c.w.Buf = nil
			c.returnAsync(out)
			c.updateMem()
			if !ok || !replica {
				break
			}
		}
	}
	if c.fd >= 0 && !c.blocked && len(c.qbuf) > 0 {
		l.serve(c, c.qbuf, true)
	}
}

// onEvents handles a connection's epoll events: output drains first,
// then input is read (a client whose output waits for the socket keeps
// sending commands, and their replies queue behind it, as in Redis).
func (l *loop) onEvents(c *Client, events uint32) {
	if events&unix.EPOLLOUT != 0 {
		l.onWritable(c)
		if c.fd < 0 {
			return
		}
	}
	if events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		l.onReadable(c)
	}
}

// onReadable reads what c sent and serves it. It reports whether it read
// input (false: the socket had none, or c is closed).
func (l *loop) onReadable(c *Client) bool {
	var buf []byte
	own := len(c.qbuf) > 0 || c.blocked
	n := 0
	if !own {
		var err error
		n, err = l.readConn(c, l.rbuf)
		if n <= 0 {
			if err != unix.EAGAIN && err != unix.EINTR {
				l.close(c)
			}
			return false
		}
		buf = l.rbuf[:n]
		l.prefetchInput(c, buf)
		l.runPrefetch()
	} else {
		if !l.growQbuf(c) {
			return false
		}
		var err error
		n, err = l.readConn(c, c.qbuf[len(c.qbuf):cap(c.qbuf)])
		if n <= 0 {
			if err != unix.EAGAIN && err != unix.EINTR {
				l.close(c)
			}
			return false
		}
		buf = l.queued(c, n)
	}
	l.received(c, buf, n, own)
	return true
}

// growQbuf makes room in c's query buffer for what comes next: a read's
// worth, or exactly the rest of a big argument. It reports false when the
// growth closed the client (maxmemory-clients).
func (l *loop) growQbuf(c *Client) bool {
	need := len(c.qbuf) + readSize
	if n := c.p.Need(); n > need || bigArgEnd(c) > len(c.qbuf) {
		// A big argument's buffer is exactly its size (and what
		// follows it is read once it is complete), as Redis's.
		need = n
	}
	if cap(c.qbuf) < need {
		nb := l.bigQueryBuf(need)[:len(c.qbuf)]
		if need == bigArgEnd(c) {
			quickAck(c)
		}
		copy(nb, c.qbuf)
		c.qbuf = nb
		// A big argument's buffer is sized for it at once: it counts
		// (and maxmemory-clients applies) before the bytes arrive,
		// as Redis's does.
		if !c.memChanged() {
			l.close(c)
			return false
		}
	}
	return true
}

// queued takes n bytes just placed after c's query buffer into it and
// returns the buffer.
func (l *loop) queued(c *Client, n int) []byte {
	c.qbuf = c.qbuf[:len(c.qbuf)+n]
	c.qbufLen.Store(int64(len(c.qbuf) - c.p.Parsed()))
	return c.qbuf
}

// received serves what c sent: buf holds the input (n bytes of it new),
// in c's query buffer when own, else in a buffer of the loop's.
func (l *loop) received(c *Client, buf []byte, n int, own bool) {
	l.srv.stats[l.id].netIn.Add(int64(n))
	c.noteQueryRead(len(buf), n)
	c.lastIO.Store(time.Now().UnixMilli())
	if c.blocked {
		// Input is held until the block ends; only the limit applies.
		if int64(len(c.qbuf)) > l.srv.cfg.QbufLimit.Load() {
			l.close(c)
		}
		return
	}
	l.serve(c, buf, own)
}

// serve runs the commands in buf and writes the replies. own reports
// whether buf is the client's query buffer (else the loop's read buffer).
func (l *loop) serve(c *Client, buf []byte, own bool) {
	c.w.Buf = l.wbuf[:0]
	off := 0
	blocked := false
	for {
		k := c.process(buf[off:])
		off += k
		if len(c.w.Buf) < flushAt || c.closeAfterReply {
			break
		}
		if len(c.w.Buf) > keptWbuf {
			l.wbufBig = true
		}
		if c.repliesOverLimit() {
			break
		}
		if lim := l.srv.cfg.OutLimitHard.Load(); lim > 0 && c.countedOutput(int64(len(c.w.Buf))) <= lim && k > 0 && c.ps.Total() == 0 {
			// With a normal-class limit, a batch's replies go out together
			// once the batch is done, as in Redis, so that a batch whose
			// replies pass the limit sends none of them.
			continue
		}
		l.srv.commitIfPending()
		if len(c.held) > 0 {
			l.hold(c)
		} else {
			l.write(c)
		}
		if c.fd < 0 || c.closeASAP.Load() {
			blocked = true
			break
		}
		if k == 0 {
			break
		}
	}
	// Keep what was not consumed (a partial command, or commands held back
	// by a full socket) in the client's own buffer.
	rest := buf[off:]
	if own {
		n := copy(c.qbuf, rest)
		c.qbuf = c.qbuf[:n]
		if n == 0 && cap(c.qbuf) > 4*readSize {
			c.keepQueryBuf(cap(c.qbuf))
			l.releaseQbuf(c.qbuf)
			c.qbuf = nil
		}
	} else if len(rest) > 0 {
		if n := bigArgEnd(c); n > cap(c.qbuf) {
			// A big argument's buffer is allocated whole as soon as its
			// header is read, as Redis's is.
			c.qbuf = l.bigQueryBuf(n)
			quickAck(c)
		}
		c.qbuf = append(c.qbuf[:0], rest...)
	}
	c.qbufLen.Store(int64(len(c.qbuf) - c.p.Parsed()))
	if int64(len(c.qbuf)) > l.srv.cfg.QbufLimit.Load() {
		l.srv.Warnf("Closing client that reached max query buffer length (qbuf=%d)", len(c.qbuf))
		l.close(c)
		return
	}
	if !c.memChanged() {
		// Evicted by maxmemory-clients after its commands ran: as in
		// Redis, whose beforeSleep writes replies before it evicts,
		// what the socket takes of their replies goes out first (with
		// a plain write: the ring's sends would come after the close).
		if !blocked && len(c.held) == 0 && !l.srv.effectsPending() && !c.repliesOverLimit() {
			l.write(c)
		}
		l.close(c)
		return
	}
	if !blocked && !c.repliesOverLimit() {
		l.holdOrWrite(c)
	}
	if cap(c.w.Buf) <= keptWbuf || cap(c.w.Buf) <= maxKeptWbuf && l.wbufBig {
		l.wbuf = c.w.Buf[:0]
	}
	c.w.Buf = nil
	if (c.closeAfterReply || c.closeASAP.Load()) && len(c.pending) == 0 && len(c.held) == 0 {
		l.close(c)
	}
}

// holdOrWrite writes a batch's replies, or, when the batch fed the AOF
// (or read what a not yet committed batch fed), holds them until the
// iteration's commit: every client served in one iteration shares one
// write (and, under appendfsync always, one fsync), and no reply goes out
// before the effects it acknowledges or shows are on disk as promised.
func (l *loop) holdOrWrite(c *Client) {
	if len(c.held) == 0 && !l.srv.effectsPending() && !l.ringSends(c) {
		l.write(c)
		return
	}
	l.hold(c)
}

// hold keeps c's replies for releaseHeld.
func (l *loop) hold(c *Client) {
	if len(c.w.Buf) == 0 {
		return
	}
	if len(c.held) == 0 {
		l.held = append(l.held, c)
		if c.held == nil && len(l.heldBufs) > 0 {
			c.held = l.heldBufs[len(l.heldBufs)-1]
			l.heldBufs = l.heldBufs[:len(l.heldBufs)-1]
		}
	}
	c.held = append(c.held, c.w.Buf...)
	c.w.Buf = c.w.Buf[:0]
}

// releaseHeld commits the AOF once and writes the held replies.
func (l *loop) releaseHeld() {
	if len(l.held) == 0 {
		return
	}
	l.srv.commitIfPending()
	if l.ring != nil && l.ring.sends {
		l.sendHeld()
	}
	for i, c := range l.held {
		l.held[i] = nil
		if c.ringSent {
			// Sent through the ring (sendHeld) with the others.
			c.ringSent = false
			l.releaseHeldBuf(c)
			if c.fd >= 0 && (c.closeAfterReply || c.closeASAP.Load()) && len(c.pending) == 0 {
				l.close(c)
			}
			continue
		}
		out := c.held
		c.held = nil
		if c.fd < 0 {
			continue
		}
		c.w.Buf = out
		l.write(c)
		c.held = c.w.Buf
		c.w.Buf = nil
		l.releaseHeldBuf(c)
		if (c.closeAfterReply || c.closeASAP.Load()) && len(c.pending) == 0 {
			l.close(c)
		}
	}
	l.held = l.held[:0]
}

// releaseHeldBuf gives c's held buffer, now sent, back to the loop's
// spares: a client does not keep one between batches.
func (l *loop) releaseHeldBuf(c *Client) {
	if b := c.held; b != nil && cap(b) <= 4*flushAt && len(l.heldBufs) < 64 {
		l.heldBufs = append(l.heldBufs, b[:0])
	}
	c.held = nil
}

// write sends c.w.Buf; what the socket does not take is kept in
// c.pending and the loop waits for EPOLLOUT while it goes on reading the
// client's commands, whose replies queue behind (Redis's reply list). It
// reports whether everything was written.
func (l *loop) write(c *Client) bool {
	if len(c.pending) > 0 && c.asyncLen.Load() > 0 {
		// Behind output the socket has not taken yet, what other
		// goroutines delivered meanwhile queues first (it came first).
		out := c.swapAsync()
		sealed := out
		if c.tls != nil {
			sealed = l.sealTLS(c, out)
		}
		c.pending = append(c.pending, sealed...)
		c.returnAsync(out)
	}
	data := c.w.Buf
	if c.tls != nil {
		data = l.sealTLS(c, data)
	}
	if len(c.pending) > 0 {
		// Behind output the socket has not taken yet: queue.
		c.pending = append(c.pending, data...)
		c.outLen.Store(int64(len(c.pending)))
		c.w.Buf = c.w.Buf[:0]
		if c.outputOverLimit(int64(len(c.pending))) {
			l.close(c)
		} else if !c.memChanged() {
			l.close(c)
		}
		return false
	}
	for len(data) > 0 {
		n, err := rawWrite(c.fd, data)
		if n > 0 {
			l.srv.stats[l.id].netOut.Add(int64(n))
			data = data[n:]
			continue
		}
		if err == unix.EAGAIN {
			return l.queueRest(c, data)
		}
		if err == unix.EINTR {
			continue
		}
		c.closeASAP.Store(true)
		c.w.Buf = c.w.Buf[:0]
		return false
	}
	c.w.Buf = c.w.Buf[:0]
	return true
}

// queueRest keeps data, what the socket did not take of a write, for when
// it takes output again.
func (l *loop) queueRest(c *Client, data []byte) bool {
	c.pending = append(c.pending[:0], data...)
	c.outLen.Store(int64(len(c.pending)))
	c.w.Buf = c.w.Buf[:0]
	l.waitWritable(c, false)
	if c.outputOverLimit(int64(len(c.pending))) {
		l.close(c)
	} else if !c.memChanged() {
		l.close(c)
	}
	return false
}

func (l *loop) onWritable(c *Client) {
	for len(c.pending) > 0 {
		n, err := rawWrite(c.fd, c.pending)
		if n > 0 {
			l.srv.stats[l.id].netOut.Add(int64(n))
			c.pending = c.pending[n:]
			continue
		}
		if err == unix.EAGAIN {
			c.outLen.Store(int64(len(c.pending)))
			c.updateMem()
			l.waitWritable(c, true)
			return
		}
		if err == unix.EINTR {
			continue
		}
		l.close(c)
		return
	}
	c.pending = nil
	c.outLen.Store(0)
	c.updateMem()
	l.writable(c)
	if c.closeAfterReply || c.closeASAP.Load() {
		l.close(c)
		return
	}
	// Write what other goroutines delivered meanwhile, then resume the
	// commands held back while the socket was full.
	l.onSignal(c)
}

func (l *loop) close(c *Client) {
	if c.fd < 0 || l.conns[c.fd] != c {
		return
	}
	if c.tls != nil {
		l.closeTLS(c)
	}
	if l.ring != nil && c.ringGen != 0 {
		l.ring.unwatchConn(c)
	}
	if !l.ringConn(c) {
		unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	}
	c.sockMu.Lock() // no shutdown from a kill on a descriptor reused meanwhile
	unix.Close(c.fd)
	c.sockFd = -1
	c.sockMu.Unlock()
	delete(l.conns, c.fd)
	c.fd = -1
	l.srv.removeClient(c)
	l.releaseQbuf(c.qbuf)
	c.qbuf = nil
}

func (l *loop) cron(now time.Time) {
	if l.srv.pauseCron.Load() {
		return
	}
	// An empty query buffer is given back when its client has been idle
	// for a couple of seconds, or when it is big and more than twice what
	// the client used since the last look (Redis's
	// clientsCronResizeQueryBuffer).
	ms := now.UnixMilli()
	for _, c := range l.conns {
		changed := false
		if len(c.qbuf) == 0 && cap(c.qbuf) > 4<<10 &&
			(ms-c.lastIO.Load() > 2000 || cap(c.qbuf) > resp.BigArg && cap(c.qbuf)/2 > c.qbufPeak) {
			c.qbuf = nil
			changed = true
		}
		changed = c.resizeQueryBuf(ms, len(c.qbuf)) || changed
		c.qbufPeak = len(c.qbuf)
		if c.resizeReplyBuf(ms) || changed {
			c.refreshOwnMemory()
			c.updateMem()
		}
	}
	// A client over a soft output limit is closed once it stayed over for
	// the limit's seconds, even when no new output arrives to check it.
	for _, c := range l.conns {
		if c.softSince.Load() != 0 && c.outputOverLimit(c.outputMem()) {
			l.srv.Logf("Client id=%d closed for overcoming of output buffer limits.", c.ID)
			l.close(c)
		}
	}
	timeout := l.srv.cfg.TimeoutSec.Load()
	if timeout <= 0 {
		return
	}
	for _, c := range l.conns {
		if !c.blocked && ms-c.lastIO.Load() > timeout*1000 && c.replica.Load() == nil {
			l.close(c)
		}
	}
}

func (l *loop) shutdown() {
	for _, c := range l.conns {
		l.close(c)
	}
	if l.ring != nil {
		l.ring.close()
	}
	l.idle.close()
	unix.Close(l.epfd)
	unix.Close(l.evfd)
}

// standIn serves the loop's other clients while the loop's own goroutine
// is held by a long script (past busy-reply-threshold), as Redis processes
// events while blocked: they get BUSY, and SCRIPT KILL, FUNCTION KILL and
// SHUTDOWN NOSAVE get through. It uses buffers of its own (the held
// goroutine is in the middle of a batch with the loop's), leaves the
// script's caller alone, and hands the loop back when stop is closed,
// before the held goroutine touches the loop again. A loop's ring cannot
// be entered from the stand-in's thread: its connections are served
// through the epoll descriptor meanwhile (loopRing.lend, takeBack).
func (l *loop) standIn(caller *Client, stop <-chan struct{}) {
	rbuf, wbuf := l.rbuf, l.wbuf
	l.rbuf, l.wbuf = make([]byte, readSize), nil
	l.standingIn.Store(true)
	callerEpoll := caller.fd >= 0 && !l.ringConn(caller)
	if callerEpoll {
		unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, caller.fd, &unix.EpollEvent{Events: 0, Fd: int32(caller.fd)})
	}
	if l.ring != nil {
		l.ring.lend(caller)
	}
	events := make([]unix.EpollEvent, 128)
	for {
		select {
		case <-stop:
			l.standingIn.Store(false)
			l.rbuf, l.wbuf = rbuf, wbuf
			if callerEpoll && caller.fd >= 0 {
				ev := uint32(unix.EPOLLIN)
				if len(caller.pending) > 0 {
					ev |= unix.EPOLLOUT // output still waits for the socket
				}
				unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, caller.fd, &unix.EpollEvent{Events: ev, Fd: int32(caller.fd)})
			}
			return
		default:
		}
		n, err := unix.EpollWait(l.epfd, events, 10)
		if err != nil && err != unix.EINTR {
			continue
		}
		for i := 0; i < n; i++ {
			ev := &events[i]
			fd := int(ev.Fd)
			switch {
			case fd == l.evfd:
				// Posted work waits for the loop's own goroutine (it may
				// concern the caller); it runs tasks at the top of its loop.
				var buf [8]byte
				unix.Read(l.evfd, buf[:])
			case l.lfds[fd]:
				l.accept(fd)
			default:
				c := l.conns[fd]
				if c == nil || c == caller {
					continue
				}
				l.onEvents(c, ev.Events)
			}
		}
		l.releaseHeld()
	}
}

// whileHeld runs fn (a script) on the loop's goroutine; if fn takes longer
// than after, a stand-in serves the loop's other clients until it ends.
// The check is done by one watchdog goroutine (every 10 ms), so a script
// call costs a mutex and a clock read, not a timer and channels. For
// clients of the goroutine driver it just runs fn.
func (s *Server) whileHeld(caller *Client, after time.Duration, fn func()) {
	if caller.slot >= len(s.loops) || after <= 0 {
		fn()
		return
	}
	h := &s.held
	h.once.Do(func() { go s.heldWatchdog() })
	h.mu.Lock()
	h.caller, h.since, h.after = caller, time.Now(), after
	h.mu.Unlock()
	fn()
	h.mu.Lock()
	stop, done := h.stop, h.done
	h.caller, h.stop, h.done = nil, nil, nil
	h.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
		if l := s.loops[caller.slot]; l.ring != nil {
			l.ring.takeBack(caller)
		}
	}
}

// heldState is the script whileHeld is running, watched by heldWatchdog.
type heldState struct {
	once   sync.Once
	mu     sync.Mutex
	caller *Client
	since  time.Time
	after  time.Duration
	stop   chan struct{} // non-nil once a stand-in serves the caller's loop
	done   chan struct{}
}

// heldWatchdog starts a stand-in for the loop of a script that has run
// past its threshold.
func (s *Server) heldWatchdog() {
	h := &s.held
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stopCh:
			return
		case <-t.C:
		}
		h.mu.Lock()
		if c := h.caller; c != nil && h.stop == nil && time.Since(h.since) >= h.after {
			stop, done := make(chan struct{}), make(chan struct{})
			h.stop, h.done = stop, done
			l := s.loops[c.slot]
			go func() {
				defer close(done)
				l.standIn(c, stop)
			}()
		}
		h.mu.Unlock()
	}
}

// heldByScript reports whether a stand-in is serving the loop (its own
// goroutine is held by a script that has the keyspace locked).
func (l *loop) heldByScript() bool { return l.standingIn.Load() }

// prefetchInput queues the keys of the commands in data, input that c's
// next process call starts with, for runPrefetch. It reports false once
// the batch is full. Input that continues a partly received command, or
// that waits behind a blocked client, is left alone.
func (l *loop) prefetchInput(c *Client, data []byte) bool {
	if len(c.qbuf) != 0 || c.blocked || c.fd < 0 || c.p.InProgress() {
		return true
	}
	db := c.DB()
	for len(data) > 0 {
		key, n := resp.Peek(data)
		if n == 0 {
			break
		}
		if key != nil && !l.pf.Add(db, key) {
			return false
		}
		data = data[n:]
	}
	return true
}

// runPrefetch fetches the lines of the keys prefetchInput queued, when
// there are several: the point is to overlap their cache misses.
func (l *loop) runPrefetch() {
	if l.pf.Len() < 2 {
		l.pf.Reset()
		return
	}
	l.pf.Run(l.srv.ks, l.id)
}

// watchdogCheck is the software watchdog, run by the server's cron: with
// watchdog-period set, a loop that has been busy (not waiting for input)
// without starting a new iteration for longer than the period has one
// command or script holding it, and the log gets that loop's stack, once
// per stall, as Redis logs its main thread's on SIGALRM.
func (s *Server) watchdogCheck(now int64) {
	period, _ := strconv.ParseInt(s.cfg.Get("watchdog-period"), 10, 64)
	if period <= 0 {
		return
	}
	for _, l := range s.loops {
		alive := l.aliveAt.Load()
		if l.sleeping.Load() || alive == 0 || now-alive < period*int64(time.Millisecond) || l.watchdogFired == alive {
			continue
		}
		l.watchdogFired = alive
		stack := goroutineStack(allStacks(), l.goid.Load())
		s.Warnf("\n--- WATCHDOG TIMER EXPIRED ---\n%s--------\n", stack)
	}
}
