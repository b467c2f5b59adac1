//go:build linux

package uring

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newRing(t *testing.T) *Ring {
	t.Helper()
	r, err := New(64, 0)
	if err != nil {
		t.Skipf("io_uring not available here: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

func socketPair(t *testing.T) (int, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// next waits for one completion and consumes it.
func next(t *testing.T, r *Ring) CQE {
	t.Helper()
	for i := 0; i < 100; i++ {
		if c := r.Peek(); c != nil {
			v := *c
			r.Advance()
			return v
		}
		if _, err := r.SubmitAndWait(100e6); err != nil && err != unix.ETIME && err != unix.EINTR {
			t.Fatalf("io_uring_enter: %v", err)
		}
	}
	t.Fatal("no completion")
	return CQE{}
}

func TestRecvMultishotFillsProvidedBuffers(t *testing.T) {
	r := newRing(t)
	br, err := r.RegisterBufRing(1, 4, 64)
	if err != nil {
		t.Skipf("provided buffer rings not available: %v", err)
	}
	defer br.Free()
	a, b := socketPair(t)
	if !r.RecvMultishot(a, br.Group(), 7) {
		t.Fatal("no submission entry")
	}
	r.Submit(0)
	for _, msg := range []string{"PING\r\n", "SET k v\r\n", "GET k\r\n"} {
		unix.Write(b, []byte(msg))
		c := next(t, r)
		if c.UserData != 7 || c.Res != int32(len(msg)) || c.Flags&CQEFBuffer == 0 || c.Flags&CQEFMore == 0 {
			t.Fatalf("completion %+v for %q", c, msg)
		}
		if got := br.Buf(c.BufID(), int(c.Res)); string(got) != msg {
			t.Fatalf("buffer holds %q, want %q", got, msg)
		}
		br.Recycle(c.BufID())
	}
	// The peer closing ends the receive: a completion of 0 without MORE.
	unix.Close(b)
	c := next(t, r)
	if c.Res != 0 || c.Flags&CQEFMore != 0 {
		t.Fatalf("end of stream completion %+v", c)
	}
}

func TestRecvMultishotEndsWhenBuffersRunOut(t *testing.T) {
	r := newRing(t)
	br, err := r.RegisterBufRing(2, 2, 8)
	if err != nil {
		t.Skipf("provided buffer rings not available: %v", err)
	}
	defer br.Free()
	a, b := socketPair(t)
	r.RecvMultishot(a, br.Group(), 9)
	r.Submit(0)
	var got []byte
	ended := false
	unix.Write(b, []byte("0123456789abcdefXYZ"))
	for !ended {
		c := next(t, r)
		if c.Res < 0 {
			if -c.Res != int32(unix.ENOBUFS) || c.Flags&CQEFMore != 0 {
				t.Fatalf("completion %+v, want ENOBUFS ending the receive", c)
			}
			ended = true
			break
		}
		got = append(got, br.Buf(c.BufID(), int(c.Res))...)
		if c.Flags&CQEFMore == 0 {
			ended = true
		}
	}
	if string(got) != "0123456789abcdef" {
		t.Fatalf("received %q before the buffers ran out", got)
	}
	// Buffers back, the receive armed again: the rest arrives.
	br.Recycle(0)
	br.Recycle(1)
	r.RecvMultishot(a, br.Group(), 9)
	c := next(t, r)
	if string(br.Buf(c.BufID(), int(c.Res))) != "XYZ" {
		t.Fatalf("after re-arming: %+v %q", c, br.Buf(c.BufID(), int(max(c.Res, 0))))
	}
}

func TestSendAndCancel(t *testing.T) {
	r := newRing(t)
	br, err := r.RegisterBufRing(3, 2, 64)
	if err != nil {
		t.Skipf("provided buffer rings not available: %v", err)
	}
	defer br.Free()
	a, b := socketPair(t)
	msg := []byte("+OK\r\n$3\r\nbar\r\n")
	r.Send(a, msg, 11)
	c := next(t, r)
	if c.UserData != 11 || c.Res != int32(len(msg)) {
		t.Fatalf("send completion %+v", c)
	}
	buf := make([]byte, 64)
	n, _ := unix.Read(b, buf)
	if !bytes.Equal(buf[:n], msg) {
		t.Fatalf("peer read %q", buf[:n])
	}
	// A receive that is cancelled completes with ECANCELED; the cancel
	// itself posts nothing when it succeeds.
	r.RecvMultishot(a, br.Group(), 12)
	r.Submit(0)
	r.Cancel(12, 13)
	c = next(t, r)
	if c.UserData != 12 || -c.Res != int32(unix.ECANCELED) || c.Flags&CQEFMore != 0 {
		t.Fatalf("cancelled receive %+v", c)
	}
	if r.Peek() != nil {
		t.Fatalf("unexpected completion %+v", *r.Peek())
	}
	// Cancelling what is gone: the cancel's own completion says ENOENT.
	r.Cancel(12, 14)
	c = next(t, r)
	if c.UserData != 14 || -c.Res != int32(unix.ENOENT) {
		t.Fatalf("cancel of nothing %+v", c)
	}
}

func TestPollMultishotAndTimeout(t *testing.T) {
	r := newRing(t)
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	r.Poll(efd, unix.POLLIN, true, 21)
	r.Submit(0)
	// Nothing ready: the wait ends at its timeout (a call that also
	// submits reports how many it submitted instead).
	if _, err := r.SubmitAndWait(5e6); !errors.Is(err, unix.ETIME) {
		t.Fatalf("wait with nothing to do: %v", err)
	}
	var one = [8]byte{1}
	var sink [8]byte
	for i := 0; i < 3; i++ {
		unix.Write(efd, one[:])
		c := next(t, r)
		if c.UserData != 21 || c.Res&unix.POLLIN == 0 || c.Flags&CQEFMore == 0 {
			t.Fatalf("poll completion %+v", c)
		}
		unix.Read(efd, sink[:])
	}
	if r.Enters.Load() == 0 {
		t.Fatal("Enters not counted")
	}
}

func TestManySubmissionsBeyondTheQueue(t *testing.T) {
	r := newRing(t)
	a, b := socketPair(t)
	// More sends than the queue has entries: get submits when full.
	want := 0
	for i := 0; i < 200; i++ {
		if !r.Send(a, []byte("x"), uint64(100+i)) {
			t.Fatal("no submission entry")
		}
		want++
	}
	seen := 0
	for seen < want {
		next(t, r)
		seen++
	}
	buf := make([]byte, 1024)
	n, _ := unix.Read(b, buf)
	if n != want {
		t.Fatalf("peer read %d bytes, want %d", n, want)
	}
}

// This kernel (6.x) has everything the loops need; Check says so.
func TestCheck(t *testing.T) {
	if _, err := New(8, 0); err != nil {
		t.Skipf("io_uring not available here: %v", err)
	}
	if err := Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

// A ring with deferred task work, as the loops set it up, waiting for a
// batch: with data on one of four sockets the wait holds out for the
// batch's time limit and then returns with that one receive; with data on
// all four it returns with the four, long before its limit. The receives'
// work is run by the waiting thread, so the test stays on its thread.
func TestSubmitAndWaitBatch(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(64, SetupDeferTaskrun|SetupSingleIssuer|SetupTaskrunFlag)
	if err != nil {
		t.Skipf("deferred task work not available here: %v", err)
	}
	defer r.Close()
	if !r.BatchWaits() {
		t.Skip("no batch waits before Linux 6.12")
	}
	br, err := r.RegisterBufRing(1, 16, 64)
	if err != nil {
		t.Skipf("provided buffer rings not available: %v", err)
	}
	defer br.Free()
	var peers []int
	for i := 0; i < 4; i++ {
		a, b := socketPair(t)
		r.RecvMultishot(a, br.Group(), uint64(i))
		peers = append(peers, b)
	}
	if _, err := r.Submit(0); err != nil {
		t.Fatal(err)
	}
	drain := func() int {
		n := 0
		for c := r.Peek(); c != nil; c = r.Peek() {
			if c.Flags&CQEFBuffer != 0 {
				br.Recycle(c.BufID())
			}
			r.Advance()
			n++
		}
		return n
	}
	unix.Write(peers[0], []byte("x"))
	start := time.Now()
	if _, err := r.SubmitAndWaitBatch(int64(5*time.Second), 4, 200000); err != nil && err != unix.ETIME && err != unix.EINTR {
		t.Fatal(err)
	}
	if waited, n := time.Since(start), drain(); n != 1 || waited < 200*time.Millisecond || waited >= 5*time.Second {
		t.Fatalf("one receive of a batch of four: %d completions after %v, want 1 after the batch's 200ms", n, waited)
	}
	for _, p := range peers {
		unix.Write(p, []byte("y"))
	}
	start = time.Now()
	if _, err := r.SubmitAndWaitBatch(int64(5*time.Second), 4, 4000000); err != nil && err != unix.ETIME && err != unix.EINTR {
		t.Fatal(err)
	}
	if waited, n := time.Since(start), drain(); n != 4 || waited >= 4*time.Second {
		t.Fatalf("a full batch: %d completions after %v, want 4 at once", n, waited)
	}
}

// The eventfd registered with a ring with deferred task work is signalled
// for a receive that arrives while notifications are on, and not while
// they are off: what a loop waiting in Go's poller relies on.
func TestEventfdNotify(t *testing.T) {
	runtime.LockOSThread() // a single-issuer ring is entered by one thread
	defer runtime.UnlockOSThread()
	r, err := New(64, SetupDeferTaskrun|SetupSingleIssuer|SetupTaskrunFlag)
	if err != nil {
		t.Skipf("io_uring with deferred task work not available here: %v", err)
	}
	defer r.Close()
	br, err := r.RegisterBufRing(1, 4, 64)
	if err != nil {
		t.Skipf("provided buffer rings not available: %v", err)
	}
	defer br.Free()
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	if err := r.RegisterEventfd(efd); err != nil {
		t.Skipf("IORING_REGISTER_EVENTFD refused: %v", err)
	}
	count := func() uint64 {
		var b [8]byte
		if n, _ := unix.Read(efd, b[:]); n != 8 {
			return 0
		}
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
	}
	a, b := socketPair(t)
	r.RecvMultishot(a, br.Group(), 9)
	r.Submit(0)
	recv := func(msg string) {
		t.Helper()
		for i := 0; i < 100 && !r.NeedsEnter(); i++ {
			time.Sleep(time.Millisecond)
		}
		c := next(t, r)
		if c.UserData != 9 || string(br.Buf(c.BufID(), int(c.Res))) != msg {
			t.Fatalf("completion %+v", c)
		}
		br.Recycle(c.BufID())
	}

	// Off (the start): the receive is queued as work for this thread
	// (NeedsEnter), and the eventfd stays quiet.
	unix.Write(b, []byte("one"))
	recv("one")
	if n := count(); n != 0 {
		t.Fatalf("eventfd signalled %d times with notifications off", n)
	}
	// On: the receive's arrival signals it, before the thread enters
	// the ring.
	r.Notify(true)
	unix.Write(b, []byte("two"))
	var n uint64
	for i := 0; i < 1000 && n == 0; i++ {
		if n = count(); n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if n == 0 {
		t.Fatal("eventfd not signalled for a receive with notifications on")
	}
	r.Notify(false)
	recv("two")
	unix.Write(b, []byte("three"))
	recv("three")
	if n := count(); n != 0 {
		t.Fatalf("eventfd signalled %d times after notifications were turned off", n)
	}
}
