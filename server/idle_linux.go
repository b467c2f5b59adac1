//go:build linux

package server

import (
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Waiting while idle.
//
// A loop waits for its next event in a system call (epoll_wait or
// io_uring_enter) that keeps its thread and its processor (P) of Go's
// scheduler. When that wait lasts 10 ms, the scheduler's monitor thread
// (sysmon) takes the processor back and, with every processor idle,
// sleeps until the next timer. The thread's return from the system call
// wakes it, and a monitor woken that way polls every 20 µs for a
// millisecond before it backs off: some 65 wake-ups for each such wait.
// An idle loop waits 100 ms at a time (its cron), so an idle
// sluice-server spent 16-21 ms of CPU a second and woke 750-1,000 times a
// second, where redis-server spends 1.6-1.8 ms and wakes 10 times, and a
// client sending a PING every 20 ms cost 1.3-1.5 ms of CPU a request
// (redis-server 74-78 µs). See scripts/bench-idle.sh and
// docs/benchmarks.md.
//
// So a loop whose last wait lasted idleSleepAfter or more waits the next
// time in Go's poller instead (idleWaiter): it blocks in the scheduler,
// its processor goes back, and with every loop idle the monitor sleeps
// until the next timer. Nothing on that path may be a system call made
// through the scheduler (syscall.Syscall, os.File.Read): its entry would
// wake the monitor the same way; the loop's own calls there are raw. A
// wake-up from the poller costs a hand-off or two of threads more than
// one from a system call (the poller's thread wakes the loop's), which is
// why a loop that is busy waits as before.
const idleSleepAfter = 10 * time.Millisecond

// idleFor is how long a wait in Go's poller lasts at most: until the
// loop's next cron, or, with no connection for the cron to look after, a
// second (what else the loop does on its own, giving back big buffers
// kept for reuse, can wait that long).
func (l *loop) idleFor() time.Duration {
	if len(l.conns) == 0 {
		return idleWaitEmpty
	}
	return idleWaitCron
}

// The two limits of idleFor (variables for the tests, which make them
// long: a wake-up that did not come would show as the whole wait).
var (
	idleWaitCron  = 100 * time.Millisecond
	idleWaitEmpty = time.Second
)

// idleWaiter waits in Go's poller for a descriptor to signal: the eventfd
// a loop's ring signals, or, for an epoll loop, a second epoll descriptor
// that holds the loop's while it waits.
//
// A ring's waiter is also signalled directly by a goroutine that wakes
// the loop (kick): the ring's own signal for that wake-up does not come.
// The wake-up is a write to the loop's wake-up eventfd, which the ring
// polls; the poll's completion is queued inside that write, and inside
// one eventfd's signal the kernel signals no other (eventfd_signal_allowed),
// so io_uring defers the ring's signal to an RCU callback
// (io_eventfd_signal). On Linux 6.18 it came some 10 ms late the first
// time and not at all after that: work posted to a loop idle in the
// poller (a replica's output, a timer's task) waited out the wait's
// limit, and a full sync's image streamed at a third of its speed
// (integration/replication's "diskless loading short read" failed).
type idleWaiter struct {
	f    *os.File
	rc   syscall.RawConn
	fd   int
	kick bool        // wakers write to fd while a wait is under way
	in   atomic.Bool // a wait is under way, from just before its last look for work
}

// newIdleWaiter takes fd over; it returns nil (and closes fd) when Go's
// poller cannot watch it. kick: fd is an eventfd that wakers may signal
// (see idleWaiter).
func newIdleWaiter(fd int, kick bool) *idleWaiter {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil
	}
	f := os.NewFile(uintptr(fd), "loop-idle")
	rc, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil { // not in the poller
		f.Close()
		return nil
	}
	return &idleWaiter{f: f, rc: rc, fd: fd, kick: kick}
}

// wait returns at once when ready reports work, else once the poller
// reports the descriptor readable (an edge: it became readable, or was
// signalled again, since the last wait), or after d. It reads nothing: a
// read would be a system call through the scheduler, which wakes the
// monitor as described above, and a read that empties an eventfd makes
// it writable, one more wake-up of the poller.
//
// The wait is under way (in) before ready looks: a waker that adds work
// and then finds no wait under way (kicked) added it before ready looked.
func (w *idleWaiter) wait(d time.Duration, ready func() bool) {
	w.in.Store(true)
	defer w.in.Store(false)
	if ready() {
		return
	}
	w.f.SetReadDeadline(time.Now().Add(d))
	waited := false
	w.rc.Read(func(uintptr) bool {
		done := waited
		waited = true
		return done
	})
}

// kicked signals a ring's waiter whose wait is under way, and reports
// whether it did (the wake-up needs nothing else then). Any goroutine may
// call it, on a nil waiter too.
func (w *idleWaiter) kicked() bool {
	if w == nil || !w.kick || !w.in.Load() {
		return false
	}
	var one = [8]byte{1}
	unix.Write(w.fd, one[:])
	return true
}

func (w *idleWaiter) close() {
	if w != nil {
		w.f.Close()
	}
}
