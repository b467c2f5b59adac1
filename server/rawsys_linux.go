//go:build linux

package server

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The event loops' sockets are non-blocking, so read and write return at
// once and need none of the scheduler bookkeeping (entersyscall and
// exitsyscall) that unix.Read and unix.Write do around each call: these
// raw forms save it on every request. Only epoll_wait may block, and it
// keeps the scheduler-aware path (unix.EpollWait); rawEpollPoll is the
// non-blocking poll (timeout 0) of a spinning loop.

func rawRead(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

func rawWrite(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

func rawEpollPoll(epfd int, events []unix.EpollEvent) int {
	n, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return -1
	}
	return int(n)
}

// rawEpollCtl is epoll_ctl(epfd, op, fd) for events, as a raw system
// call: it does not pass through Go's scheduler (see idle_linux.go).
func rawEpollCtl(epfd, op, fd int, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	_, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(&ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// threadCPUTime returns the CPU time the calling thread has used, in ns
// (clock_gettime(CLOCK_THREAD_CPUTIME_ID), which the vDSO does not serve:
// a system call).
func threadCPUTime() int64 {
	var ts unix.Timespec
	syscall.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// threadClockCost is what one threadCPUTime call adds to the CPU time
// measured between two of them: the least of a few back-to-back pairs.
func threadClockCost() int64 {
	best := int64(-1)
	for i := 0; i < 5; i++ {
		a := threadCPUTime()
		if d := threadCPUTime() - a; best < 0 || d < best {
			best = d
		}
	}
	return max(best, 0)
}
