//go:build linux

package server

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicedb/sluice/internal/spin"

	"github.com/sluicedb/sluice/internal/uring"
)

// The event loops on io_uring.
//
// Where the kernel allows it, each loop has a ring, and a plain
// connection's input reaches the loop through it: one receive request per
// connection, armed once (multishot), completes each time data arrives,
// into a buffer the kernel takes from the loop's provided buffers. The
// loop's wake-up descriptor and its listeners are polled through the ring
// as well, and so is its epoll descriptor, which keeps what the ring does
// not carry (TLS connections). The replies of an iteration's batches are
// held to its end and sent through the ring together, in one
// io_uring_enter (sendHeld; with one client to answer, one write does as
// well). So where an epoll loop makes an epoll_wait, then a read and a
// write per connection with input, a ring loop makes one io_uring_enter
// to send and one to wait, and the receives are done by the kernel on the
// loop's thread when it enters the ring. Before a loop serves the
// receives it has, it prefetches the keys their commands name, many
// connections' at once (prefetchRing).
//
// The ring is single-issuer with deferred task work: the kernel queues a
// connection's receive when its data arrives and wakes the loop only when
// enough are queued for the wait it asked for. A loop that many clients
// (batchMinActive or more) send to sleeps until half of them (up to
// batchMax) have sent, or one has and the batch wait has passed (as many
// µs as the loop received inputs in the last millisecond, up to
// batchWaitMaxUs), and serves them in one wake-up: on a virtual machine a
// wake-up costs more than the work of a request. A loop with fewer
// clients sleeps until one has sent. A loop with one or two clients
// sending polls instead while polling pays (spin.Gate): their requests
// come one at a time, and each sleep would cost a wake-up per request.
// Only the loop's thread may enter the ring, so a stand-in serving the
// loop during a long script uses epoll (lend).
//
// A loop falls back to epoll alone when the ring cannot be set up (a
// kernel before 6.1, io_uring disabled by sysctl or refused by a seccomp
// filter), when its goroutine is not locked to its thread
// (SLUICE_LOCK_THREADS=0: the receives' work runs on the thread that set
// the ring up), or when SLUICE_IO_URING=0 says so; SLUICE_RING_SEND=0 keeps
// the ring for input and writes replies with write(2).

// Kinds of request, in a completion's user data (top byte); the rest is
// the connection's generation (24 bits) and descriptor (32 bits), so that
// a completion meant for a closed connection is not taken for that of a
// new one that got the same descriptor.
const (
	ukRecv    = 1
	ukPollOut = 2
	ukWake    = 3
	ukEpoll   = 5
	ukCancel  = 6
	ukSend    = 7
)

func ringData(kind uint64, gen uint32, fd int) uint64 {
	return kind<<56 | uint64(gen&0xffffff)<<32 | uint64(uint32(fd))
}

const (
	ringEntries = 1024
	ringBufSize = 16 << 10
)

// ringBufs is how many buffers of ringBufSize each ring provides (a
// variable so that tests can make them run out).
var ringBufs = 256

// useRing is SLUICE_IO_URING: "0" turns the rings off.
var useRing = os.Getenv("SLUICE_IO_URING") != "0"

// ringSendsOn is SLUICE_RING_SEND: "0" writes replies with write(2)
// instead of sending them through the ring.
var ringSendsOn = os.Getenv("SLUICE_RING_SEND") != "0"

type loopRing struct {
	l    *loop
	r    *uring.Ring
	bufs *uring.BufRing
	gen  uint32

	// deferred are completions for the client a script holds, taken by a
	// stand-in: the loop serves them, in order, when it has the client back.
	deferred []uring.CQE
	// sends: batches' replies are sent through the ring, all of an
	// iteration's in one io_uring_enter (sendHeld), instead of one write
	// each.
	sends bool

	// epollAgain: the loop's epoll had events last time it looked; it is
	// asked again before the loop waits (the ring reports new events only).
	epollAgain bool
	events     []unix.EpollEvent

	// lent: a stand-in serves the loop while a script holds its goroutine
	// (lend). Only the loop's thread may enter the ring, so meanwhile the
	// connections are served through the loop's epoll descriptor, and
	// what they would ask of the ring waits in later for takeBack.
	lent  bool
	later []ringOp

	// The clients whose input the ring delivered in the current and the
	// previous period of 2^20 ns (about a millisecond): see runRing.
	period, activeNow, activeBefore int64
	// recvNow and recvBefore count the inputs received in the same two
	// periods (batchWait).
	recvNow, recvBefore int64
}

// ringOp is a request a stand-in leaves to the loop: arm c's receive
// again, or (c nil) cancel the request with user data cancel.
type ringOp struct {
	c      *Client
	cancel uint64
}

// Batching: while more than spinMaxActive clients send, a loop does not
// poll. While batchMinActive or more do, a sleep waits for up to batchMax
// of their requests (half the clients that sent lately), or, once one is
// there, until the batch wait has passed since it began: no request waits
// longer than that for the wake-up. The wait follows the loop's input
// rate: as many µs as it received inputs in the last period (about a
// millisecond), up to batchWaitMaxUs. Under redis-benchmark -P 1 -c 50
// (about 60 inputs a millisecond) a loop so waits 40 µs and sleeps about
// 0.07 times a request, where a fixed 20 µs slept 0.08-0.10 times; at a
// tenth of that rate it waits 6 µs, since few requests would arrive in a
// longer wait. (A cap of 60 µs slept less still, but redis-benchmark -P 1
// GET got fewer replies a second from it than from the fixed 20 µs in 7
// rounds of 10: its connections ran out of replies to read. A fixed 50 µs
// made it slower than Redis in some rounds.)
//
// With fewer clients the wait starves them: each waits for its reply
// while the loop waits for the others' requests, and a short timer costs
// some 20 µs more than it asks for on a virtual machine. Waiting for half
// of 10 or 16 clients cost 0.6-0.8x Redis's requests a second under
// redis-benchmark -P 1, and more CPU per request, not less; from 32
// clients on it saves 15% of the CPU at 1.08x Redis's rate.
const (
	spinMaxActive  = 2
	batchMinActive = 32
	batchMax       = 16
	batchWaitMaxUs = 40
)

// seen counts an input from c, and c as a client that sent in this
// period.
func (rg *loopRing) seen(c *Client) {
	rg.recvNow++
	if c.ringPeriod != rg.period {
		c.ringPeriod = rg.period
		rg.activeNow++
	}
}

// active is how many clients sent in this period or the one before, at
// now (nanotime).
func (rg *loopRing) active(now int64) int64 {
	if p := now >> 20; p != rg.period {
		if p == rg.period+1 {
			rg.activeBefore, rg.recvBefore = rg.activeNow, rg.recvNow
		} else {
			rg.activeBefore, rg.recvBefore = 0, 0
		}
		rg.period, rg.activeNow, rg.recvNow = p, 0, 0
	}
	return max(rg.activeNow, rg.activeBefore)
}

// batchWait is how long, in µs, a sleep that waits for a batch waits for
// more once one request is there: as many µs as the loop received inputs
// in the current period or the one before, whichever is more (the periods
// as of active's last call), up to batchWaitMaxUs.
func (rg *loopRing) batchWait() uint32 {
	return uint32(min(batchWaitMaxUs, max(rg.recvNow, rg.recvBefore)))
}

// newLoopRing sets up l's ring, on the loop's thread as it starts, or
// returns nil when the loop is to run on epoll alone.
func newLoopRing(l *loop) *loopRing {
	if !useRing || !lockThreads {
		return nil
	}
	r, err := uring.New(ringEntries, uring.SetupDeferTaskrun|uring.SetupSingleIssuer|uring.SetupTaskrunFlag)
	if err != nil {
		return nil
	}
	bufs, err := r.RegisterBufRing(0, ringBufs, ringBufSize)
	if err != nil {
		r.Close()
		return nil
	}
	rg := &loopRing{l: l, r: r, bufs: bufs, events: make([]unix.EpollEvent, 128), sends: ringSendsOn}
	if efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err == nil {
		if r.RegisterEventfd(efd) == nil {
			l.idle = newIdleWaiter(efd, true)
		} else {
			unix.Close(efd)
		}
	}
	// The wake-up descriptor moves from the loop's epoll to the ring, and
	// the ring watches the epoll: TLS connections, and the listeners. A
	// request in the ring holds its descriptor's file, and after kill -9
	// the kernel tears a ring down some 5-10 ms after the process is
	// gone: a listener the ring polled went on listening that long, so a
	// server restarted at once on its port failed to bind it (16 times in
	// 20). An epoll descriptor holds no file it watches.
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, l.evfd, nil)
	r.Poll(l.evfd, unix.POLLIN, true, ringData(ukWake, 0, l.evfd))
	r.Poll(l.epfd, unix.POLLIN, true, ringData(ukEpoll, 0, l.epfd))
	return rg
}

func (rg *loopRing) close() {
	rg.r.Close()
	rg.bufs.Free()
}

// watchConn arms c's receive. Its generation is never 0: 0 marks a
// connection the ring has not armed.
func (rg *loopRing) watchConn(c *Client) {
	if rg.gen++; rg.gen&0xffffff == 0 {
		rg.gen++
	}
	c.ringGen = rg.gen & 0xffffff
	rg.armRecv(c)
}

func (rg *loopRing) armRecv(c *Client) {
	if rg.lent {
		rg.later = append(rg.later, ringOp{c: c})
		return
	}
	rg.r.RecvMultishot(c.fd, rg.bufs.Group(), ringData(ukRecv, c.ringGen, c.fd))
}

// unwatchConn cancels c's requests; its socket closes for good once they
// are gone (the kernel holds it meanwhile).
func (rg *loopRing) unwatchConn(c *Client) {
	rg.cancel(ringData(ukRecv, c.ringGen, c.fd))
	if c.ringPollOut {
		c.ringPollOut = false
		rg.cancel(ringData(ukPollOut, c.ringGen, c.fd))
	}
}

func (rg *loopRing) cancel(userData uint64) {
	if rg.lent {
		rg.later = append(rg.later, ringOp{cancel: userData})
		return
	}
	rg.r.Cancel(userData, ringData(ukCancel, 0, 0))
}

// pollOut has the ring say when c's socket takes output again.
func (rg *loopRing) pollOut(c *Client) {
	if c.ringPollOut || rg.lent {
		return
	}
	c.ringPollOut = true
	rg.r.Poll(c.fd, unix.POLLOUT, false, ringData(ukPollOut, c.ringGen, c.fd))
}

// runRing is run's loop for a loop with a ring: wait for completions (a
// batch of them when many clients send; with one or two, poll for them
// while polling pays, see spin.Gate), serve them, run the posted work,
// commit and write what was held, and the cron.
func (l *loop) runRing() {
	rg := l.ring
	r := rg.r
	lastCron := time.Now()
	gate := spin.NewGate(l.srv.spinFor)
	clockCost := threadClockCost()
	var lastIdle int64 // how long the loop waited for work last time, in ns
	for {
		l.runTasks()
		if rg.epollAgain {
			l.ringEpoll()
		}
		idleFrom := nanotime()
		l.yieldIfDue(idleFrom)
		l.promoteQbuf(idleFrom / 1e6)
		l.keepWbuf(idleFrom / 1e6)
		active := rg.active(idleFrom)
		woke := r.Ready()
		want, batchUs := uint32(1), uint32(0)
		if active >= batchMinActive {
			want, batchUs = uint32(min(active/2, batchMax)), rg.batchWait()
		}
		timeout := int64(100 * time.Millisecond)
		// Completions sendHeld set aside are input already there: while
		// many clients send, the loop waits for others to join them for
		// the batch wait, as it does once one request is there, and no
		// longer; otherwise it serves them at once.
		if !woke && len(rg.deferred) > 0 {
			if batchUs == 0 {
				woke = true
			} else {
				timeout = int64(batchUs) * 1000
			}
		}
		if !woke && active <= spinMaxActive && gate.Spinning() && l.tlsConns == 0 {
			woke = l.spinRing(idleFrom + gate.Window())
		}
		if woke {
			if r.Pending() > 0 || r.NeedsEnter() {
				r.Submit(0)
			}
		} else {
			l.sleeping.Store(true)
			if l.hasWork() {
				// Work arrived meanwhile: submit, don't sleep.
				r.Submit(0)
				woke = true
			} else if l.idle != nil && lastIdle >= int64(idleSleepAfter) && want == 1 && timeout == int64(100*time.Millisecond) {
				rg.idleSleep(l.idleFor())
				woke = r.Ready()
			} else {
				sample := gate.SampleSleep()
				var cpu0, wall0 int64
				if sample {
					cpu0, wall0 = threadCPUTime(), nanotime()
				}
				r.SubmitAndWaitBatch(timeout, want, batchUs)
				if sample {
					wall := nanotime() - wall0
					gate.SleptFor(threadCPUTime()-cpu0-clockCost, wall)
					l.sleepCost.Store(gate.Wake())
				}
				woke = r.Ready() || len(rg.deferred) > 0
			}
			l.sleeping.Store(false)
			l.aliveAt.Store(nanotime())
		}
		lastIdle = nanotime() - idleFrom
		gate.Observe(lastIdle, woke)
		select {
		case <-l.srv.stopCh:
			return
		default:
		}
		l.reapRing()
		l.releaseHeld()
		if now := time.Now(); now.Sub(lastCron) >= 100*time.Millisecond {
			lastCron = now
			l.cron(now)
		}
	}
}

// idleSleep waits, up to timeout, for the ring to have completions or
// work to run, in Go's poller (see idleWaiter): the ring signals its
// eventfd while the wait lasts.
func (rg *loopRing) idleSleep(timeout time.Duration) {
	r := rg.r
	if r.Pending() > 0 || r.NeedsEnter() {
		r.Submit(0)
	}
	r.Notify(true)
	rg.l.idle.wait(timeout, func() bool {
		return r.Ready() || r.NeedsEnter() || rg.l.hasWork()
	})
	r.Notify(false)
	if r.NeedsEnter() {
		r.Submit(0) // run the receives whose arrival woke the loop
	}
}

// spinRing polls the completion queue until deadline (nanotime): it
// reports whether completions arrived (false also when other goroutines
// posted work meanwhile).
func (l *loop) spinRing(deadline int64) bool {
	r := l.ring.r
	if r.Pending() > 0 {
		r.Submit(0)
	}
	for {
		if r.Ready() {
			l.spinHits.Add(1)
			return true
		}
		if r.NeedsEnter() {
			r.Submit(0) // run the receives the kernel queued for this thread
			continue
		}
		if l.hasWork() || nanotime() > deadline {
			return false
		}
	}
}

// queuedFor reports whether a completion with userData waits to be
// served: in the queue, set aside, or (the queue overflowed) in the
// kernel.
func (rg *loopRing) queuedFor(userData uint64) bool {
	if rg.r.Overflowed() {
		return true
	}
	for i := range rg.deferred {
		if rg.deferred[i].UserData == userData {
			return true
		}
	}
	for i := uint32(0); ; i++ {
		cqe := rg.r.PeekAt(i)
		if cqe == nil {
			return false
		}
		if cqe.UserData == userData {
			return true
		}
	}
}

// reapRing serves the completions that are there: first those a stand-in
// or sendHeld set aside, then the queue's, one at a time, each consumed
// before it is served (a stand-in that starts meanwhile goes on from the
// next one).
func (l *loop) reapRing() {
	rg := l.ring
	fetched := 0 // completions ahead whose keys were prefetched
	for len(rg.deferred) > 0 {
		if fetched == 0 {
			fetched = l.prefetchRing(len(rg.deferred), func(i int) *uring.CQE { return &rg.deferred[i] })
		}
		fetched--
		cqe := rg.deferred[0]
		rg.deferred = rg.deferred[1:]
		l.onCompletion(cqe, nil)
	}
	rg.deferred = nil
	r := rg.r
	// Only what is there now: completions keep coming while these are
	// served (a write runs the receives the kernel queued), and work
	// posted meanwhile (CLIENT KILL closing a client, say) must run
	// before input that arrived after it.
	fetched = 0
	for n := r.Count(); n > 0; n-- {
		if fetched == 0 {
			fetched = l.prefetchRing(int(n), func(i int) *uring.CQE { return r.PeekAt(uint32(i)) })
		}
		fetched--
		c := r.Peek()
		if c == nil {
			break
		}
		cqe := *c
		r.Advance()
		l.onCompletion(cqe, nil)
	}
	if r.NeedsEnter() {
		// Completions the queue had no room for wait in the kernel.
		r.Submit(0)
	}
}

// prefetchRing has the keys of the commands that the next completions
// carry fetched together before they are served (see store.Prefetcher):
// the n completions at(0)...at(n-1), or as many as fill a batch. It
// returns how many completions it looked at. Completions come from the
// queue, or from those sendHeld set aside while it waited for its sends.
func (l *loop) prefetchRing(n int, at func(i int) *uring.CQE) int {
	i := 0
	for i < n {
		cqe := at(i)
		if cqe == nil {
			break
		}
		i++
		ud := cqe.UserData
		if ud>>56 != ukRecv || cqe.Res <= 0 || cqe.Flags&uring.CQEFBuffer == 0 {
			continue
		}
		c := l.ringClient(ud)
		if c == nil {
			continue
		}
		if !l.prefetchInput(c, l.ring.bufs.Buf(cqe.BufID(), int(cqe.Res))) {
			if i > 1 {
				i-- // not all its keys fit: it starts the next batch
			}
			break
		}
	}
	l.runPrefetch()
	return max(i, 1)
}

// ringClient returns the connection a completion's user data names, or
// nil when it is gone (closed, or its descriptor now a newer
// connection's).
func (l *loop) ringClient(ud uint64) *Client {
	c := l.conns[int(int32(uint32(ud)))]
	if c == nil || c.ringGen != uint32(ud>>32)&0xffffff {
		return nil
	}
	return c
}

// onCompletion serves one completion. A stand-in passes the client it
// must leave alone (the script's caller): its completions are set aside.
func (l *loop) onCompletion(cqe uring.CQE, caller *Client) {
	rg := l.ring
	ud := cqe.UserData
	switch ud >> 56 {
	case ukRecv:
		c := l.ringClient(ud)
		if c == nil || c.fd < 0 {
			if cqe.Flags&uring.CQEFBuffer != 0 {
				rg.bufs.Recycle(cqe.BufID())
			}
			return
		}
		if c == caller {
			rg.deferred = append(rg.deferred, cqe)
			return
		}
		if cqe.Res > 0 {
			rg.seen(c)
			id := cqe.BufID()
			l.onData(c, rg.bufs.Buf(id, int(cqe.Res)))
			rg.bufs.Recycle(id)
			if c.fd >= 0 && !rg.lent && inBigArg(c) && !rg.queuedFor(ud) {
				l.readBigArg(c)
			}
			if cqe.Flags&uring.CQEFMore == 0 && c.fd >= 0 {
				rg.armRecv(c)
			}
			return
		}
		if cqe.Flags&uring.CQEFBuffer != 0 {
			rg.bufs.Recycle(cqe.BufID())
		}
		switch -cqe.Res {
		case 0:
			l.close(c) // the peer closed
		case int32(unix.ENOBUFS), int32(unix.EINTR), int32(unix.EAGAIN):
			// Every buffer was in use: they are back now, receive again.
			if cqe.Flags&uring.CQEFMore == 0 {
				rg.armRecv(c)
			}
		case int32(unix.ECANCELED):
		default:
			l.close(c)
		}
	case ukPollOut:
		c := l.ringClient(ud)
		if c == nil || c.fd < 0 {
			return
		}
		c.ringPollOut = false
		if c == caller {
			rg.deferred = append(rg.deferred, cqe)
			return
		}
		if len(c.pending) > 0 {
			l.onWritable(c)
		}
	case ukWake:
		var buf [8]byte
		unix.Read(l.evfd, buf[:])
		if caller == nil {
			l.runTasks()
		}
	case ukEpoll:
		if !rg.lent { // a stand-in waits on the epoll descriptor itself
			l.ringEpoll()
		}
	}
}

// acceptAll accepts every connection waiting on listener fd.
func (l *loop) acceptAll(fd int) {
	for i := 0; i < 16; i++ {
		if !l.accept(fd) {
			return
		}
	}
	l.post(func() {
		if l.lfds[fd] {
			l.acceptAll(fd)
		}
	})
}

// ringEpoll serves the events of the loop's epoll descriptor (TLS
// connections, listeners) without waiting.
func (l *loop) ringEpoll() {
	rg := l.ring
	n := rawEpollPoll(l.epfd, rg.events)
	rg.epollAgain = n > 0
	for i := 0; i < n; i++ {
		ev := &rg.events[i]
		fd := int(ev.Fd)
		if c := l.conns[fd]; c != nil {
			l.onEvents(c, ev.Events)
		} else if l.lfds[fd] {
			l.acceptAll(fd)
		}
	}
}

// onData serves what arrived for c in a provided buffer, as read(2)s of
// the sizes an epoll loop would have asked for would have returned it
// (so a big argument's buffer is still exactly its size).
func (l *loop) onData(c *Client, data []byte) {
	for len(data) > 0 && c.fd >= 0 {
		if len(c.qbuf) == 0 && !c.blocked {
			l.received(c, data, len(data), false)
			return
		}
		if !l.growQbuf(c) {
			return
		}
		n := copy(c.qbuf[len(c.qbuf):cap(c.qbuf)], data)
		data = data[n:]
		l.received(c, l.queued(c, n), n, true)
	}
}

// lend hands the loop to a stand-in (standIn) until takeBack. The ring
// is single-issuer with deferred task work: only the loop's thread, held
// by the script, may enter it, and nothing arrives through it until that
// thread runs the receives it queued. So the stand-in serves what the
// ring delivered already, in order (the caller's completions go aside
// for the loop), and then watches the connections, the listeners and the
// wake-up descriptor through the loop's epoll descriptor, reading and
// writing as an epoll loop does (the replies to what the ring delivered
// are written at once). When completions wait in the kernel
// (the queue overflowed), the ring's connections are left to the loop:
// their input there must be served before what their sockets hold.
func (rg *loopRing) lend(caller *Client) {
	l := rg.l
	rg.lent = true
	watch := func(fd int, events uint32) {
		unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: events, Fd: int32(fd)})
	}
	watch(l.evfd, unix.EPOLLIN) // the listeners are there already
	if !rg.r.Overflowed() {
		for fd, c := range l.conns {
			if c.ringGen != 0 && c != caller {
				ev := uint32(unix.EPOLLIN)
				if len(c.pending) > 0 {
					ev |= unix.EPOLLOUT
				}
				watch(fd, ev)
			}
		}
	}
	d := rg.deferred
	rg.deferred = nil
	for _, cqe := range d {
		l.onCompletion(cqe, caller)
	}
	for c := rg.r.Peek(); c != nil; c = rg.r.Peek() {
		cqe := *c
		rg.r.Advance()
		l.onCompletion(cqe, caller)
	}
	l.releaseHeld()
}

// takeBack ends lend, on the loop's goroutine: the connections leave the
// epoll descriptor, and the ring gets what the stand-in left for it:
// receives to arm again (those that ended meanwhile, and the connections
// accepted meanwhile), requests of closed connections to cancel, and a
// wait for room where output is pending.
func (rg *loopRing) takeBack(caller *Client) {
	l := rg.l
	unwatch := func(fd int) { unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil) }
	unwatch(l.evfd)
	rg.lent = false
	for _, op := range rg.later {
		if op.c == nil {
			rg.r.Cancel(op.cancel, ringData(ukCancel, 0, 0))
		} else if op.c.fd >= 0 {
			rg.armRecv(op.c)
		}
	}
	rg.later = nil
	for fd, c := range l.conns {
		if c.tls != nil || c == caller {
			continue
		}
		unwatch(fd)
		if c.ringGen == 0 {
			rg.watchConn(c)
		}
		if len(c.pending) > 0 {
			rg.pollOut(c)
		}
	}
	rg.epollAgain = true // what the stand-in left ready there
}

// ringSends reports whether c's replies go out through the ring: held
// until the end of the loop's iteration, then sent with every other
// client's (sendHeld).
func (l *loop) ringSends(c *Client) bool {
	return l.ring != nil && l.ring.sends && !l.ring.lent && c.tls == nil && len(c.pending) == 0
}

// sendHeld sends the held replies of the plain connections whose output
// is not waiting for their socket, in one io_uring_enter, and handles
// each send's result as write does a write's: the sends do not wait for
// room (MSG_DONTWAIT), so each completes as it is submitted, and what a
// socket did not take waits in the client's pending output. Other
// completions that come meanwhile are kept, in order, for reapRing.
func (l *loop) sendHeld() {
	rg := l.ring
	n := 0
	for _, c := range l.held {
		if c.fd >= 0 && len(c.held) > 0 && l.ringSends(c) {
			n++
		}
	}
	if n < 2 {
		return // one write costs what one io_uring_enter does
	}
	n = 0
	for _, c := range l.held {
		if c.fd < 0 || len(c.held) == 0 || !l.ringSends(c) {
			continue
		}
		rg.r.SendNow(c.fd, c.held, ringData(ukSend, c.ringGen, c.fd))
		c.ringSent = true
		n++
	}
	rg.r.Submit(0)
	for n > 0 {
		cqe := rg.r.Peek()
		if cqe == nil {
			if rg.r.NeedsEnter() {
				rg.r.Submit(0)
			} else {
				rg.r.SubmitAndWait(int64(10 * time.Millisecond))
			}
			continue
		}
		v := *cqe
		rg.r.Advance()
		if v.UserData>>56 != ukSend {
			rg.deferred = append(rg.deferred, v)
			continue
		}
		n--
		c := l.ringClient(v.UserData)
		if c == nil || !c.ringSent {
			continue
		}
		data := c.held
		switch {
		case v.Res >= 0:
			l.srv.stats[l.id].netOut.Add(int64(v.Res))
			if int(v.Res) < len(data) {
				l.queueRest(c, data[v.Res:])
			}
		case -v.Res == int32(unix.EAGAIN) || -v.Res == int32(unix.EINTR):
			l.queueRest(c, data)
		default:
			c.closeASAP.Store(true)
		}
	}
}
