//go:build linux

// Package uring is the small part of Linux's io_uring that Sluice's event
// loops use: a ring (submission and completion queues in memory shared
// with the kernel), the few operations a network server needs (receive
// with a provided buffer, many times over one request; send; poll;
// cancel), and a ring of provided buffers that receives fill.
//
// One loop owns one ring and enters it only from the thread that set it
// up (the loops' rings are single-issuer, with the completions' work
// deferred until that thread asks for it: see SubmitAndWaitBatch); one
// goroutine at a time uses it, and nothing here locks. The memory the
// kernel reads or writes (the rings, the submission entries, the provided
// buffers) is mapped outside the Go heap, so the collector neither scans
// nor frees it.
package uring

import (
	"errors"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Setup flags (io_uring_setup(2)).
const (
	SetupTaskrunFlag  = 1 << 9
	SetupSingleIssuer = 1 << 12
	SetupDeferTaskrun = 1 << 13
	setupCQSize       = 1 << 3
	setupSubmitAll    = 1 << 7
)

// Operations.
const (
	opNop         = 0
	opPollAdd     = 6
	opAsyncCancel = 14
	opSend        = 26
	opRecv        = 27
)

// SQE flags.
const (
	sqeBufferSelect   = 1 << 5
	sqeCQESkipSuccess = 1 << 6
)

// CQE flags.
const (
	// CQEFBuffer says the completion used a provided buffer, whose id is
	// in the upper 16 bits of the flags.
	CQEFBuffer = 1 << 0
	// CQEFMore says the request stays armed and will complete again.
	CQEFMore = 1 << 1
)

const (
	pollAddMulti     = 1 << 0
	recvMultishot    = 1 << 1
	enterGetEvents   = 1 << 0
	enterExtArg      = 1 << 3
	registerPbufRing = 22
	registerEventfd  = 4
	cqEventfdOff     = 1 << 0 // IORING_CQ_EVENTFD_DISABLED, in the completion queue's flags
	featNoDrop       = 1 << 1
	featExtArg       = 1 << 8
	featMinTimeout   = 1 << 15
	offSQRing        = 0
	offCQRing        = 0x8000000
	offSQEs          = 0x10000000
	sysSetup         = 425
	sysEnter         = 426
	sysRegister      = 427
	sqNeedWakeup     = 1 << 0
	sqCQOverflow     = 1 << 1
	sqTaskrun        = 1 << 2
)

// SQE is a submission queue entry, laid out as struct io_uring_sqe.
type SQE struct {
	Opcode      uint8
	Flags       uint8
	Ioprio      uint16
	Fd          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	OpFlags     uint32
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	SpliceFdIn  int32
	Addr3       uint64
	_pad2       uint64
}

// CQE is a completion queue entry, laid out as struct io_uring_cqe.
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// BufID is the provided buffer a completion filled.
func (c *CQE) BufID() uint16 { return uint16(c.Flags >> 16) }

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWaitUs uint32 // 0 before Linux 6.12 (IORING_FEAT_MIN_TIMEOUT)
	ts        uint64
}

// Ring is one io_uring instance.
type Ring struct {
	fd int

	sqRing []byte
	cqRing []byte // the same mapping as sqRing when the kernel has one mmap
	sqeMem []byte

	sqHead  *uint32
	sqTail  *uint32
	sqFlags *uint32
	sqMask  uint32
	sqArray []uint32
	sqes    []SQE
	tail    uint32 // next entry to fill; published to *sqTail by flush

	cqHead  *uint32
	cqTail  *uint32
	cqFlags *uint32
	cqMask  uint32
	cqes    []CQE

	// waitTS and waitArg are SubmitAndWait's timeout, kept here so that
	// the memory the kernel reads is the ring's own.
	waitTS  unix.Timespec
	waitArg getEventsArg

	// minTimeout: the kernel takes a batch wait's shorter time limit.
	minTimeout bool

	// Enters counts io_uring_enter calls (for tests and benchmarks).
	Enters atomic.Int64
}

// ErrUnsupported is returned when the kernel (or a seccomp filter in
// front of it) refuses io_uring or a feature the loops need.
var ErrUnsupported = errors.New("io_uring not available")

// New sets up a ring with entries submission entries and twice as many
// completion entries, with flags (Setup*). Any failure, including a
// kernel without the features the loops rely on (no dropped
// completions, a wait with a timeout), returns an error wrapping
// ErrUnsupported or the system call's error.
func New(entries uint32, flags uint32) (*Ring, error) {
	var p params
	p.flags = flags | setupCQSize | setupSubmitAll
	p.cqEntries = entries * 4
	fd, _, e := syscall.RawSyscall(sysSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, e
	}
	r := &Ring{fd: int(fd), minTimeout: p.features&featMinTimeout != 0}
	if p.features&featNoDrop == 0 || p.features&featExtArg == 0 || p.features&1 == 0 {
		unix.Close(r.fd)
		return nil, ErrUnsupported
	}
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*int(unsafe.Sizeof(CQE{}))
	size := max(sqSize, cqSize)
	var err error
	r.sqRing, err = unix.Mmap(r.fd, offSQRing, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Close(r.fd)
		return nil, err
	}
	r.cqRing = r.sqRing
	r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(SQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Munmap(r.sqRing)
		unix.Close(r.fd)
		return nil, err
	}
	base := unsafe.Pointer(&r.sqRing[0])
	r.sqHead = (*uint32)(unsafe.Add(base, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(base, p.sqOff.tail))
	r.sqFlags = (*uint32)(unsafe.Add(base, p.sqOff.flags))
	r.sqMask = *(*uint32)(unsafe.Add(base, p.sqOff.ringMask))
	r.sqArray = unsafe.Slice((*uint32)(unsafe.Add(base, p.sqOff.array)), p.sqEntries)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	// The array maps ring slots to entries one to one, once and for all.
	for i := range r.sqArray {
		r.sqArray[i] = uint32(i)
	}
	r.tail = atomic.LoadUint32(r.sqTail)
	r.cqHead = (*uint32)(unsafe.Add(base, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(base, p.cqOff.tail))
	r.cqFlags = (*uint32)(unsafe.Add(base, p.cqOff.flags))
	r.cqMask = *(*uint32)(unsafe.Add(base, p.cqOff.ringMask))
	r.cqes = unsafe.Slice((*CQE)(unsafe.Add(base, p.cqOff.cqes)), p.cqEntries)
	return r, nil
}

// Fd is the ring's descriptor.
func (r *Ring) Fd() int { return r.fd }

// Close releases the ring; requests still in flight are cancelled by
// the kernel.
func (r *Ring) Close() {
	if r.fd < 0 {
		return
	}
	unix.Munmap(r.sqeMem)
	unix.Munmap(r.sqRing)
	unix.Close(r.fd)
	r.fd = -1
}

// Pending is the number of entries filled but not yet submitted.
func (r *Ring) Pending() uint32 { return r.tail - atomic.LoadUint32(r.sqHead) }

// get returns the next free submission entry, cleared; when the queue is
// full it submits what is queued first (without waiting).
func (r *Ring) get() *SQE {
	for r.tail-atomic.LoadUint32(r.sqHead) >= uint32(len(r.sqes)) {
		if _, err := r.Submit(0); err != nil && err != unix.EINTR && err != unix.EBUSY && err != unix.EAGAIN {
			return nil
		}
	}
	sqe := &r.sqes[r.tail&r.sqMask]
	*sqe = SQE{}
	r.tail++
	return sqe
}

// flush publishes the filled entries to the kernel.
func (r *Ring) flush() uint32 {
	atomic.StoreUint32(r.sqTail, r.tail)
	return r.tail - atomic.LoadUint32(r.sqHead)
}

// Submit hands the queued entries to the kernel and, when wait > 0,
// waits until at least wait completions are there. It never blocks when
// wait is 0 (a raw system call, no scheduler hand-off).
func (r *Ring) Submit(wait uint32) (int, error) {
	n := r.flush()
	var flags uintptr
	if wait > 0 || atomic.LoadUint32(r.sqFlags)&(sqCQOverflow|sqTaskrun) != 0 {
		flags = enterGetEvents
	}
	if n == 0 && flags == 0 {
		return 0, nil
	}
	r.Enters.Add(1)
	var (
		got uintptr
		e   syscall.Errno
	)
	if wait == 0 {
		got, _, e = syscall.RawSyscall6(sysEnter, uintptr(r.fd), uintptr(n), 0, flags, 0, 0)
	} else {
		got, _, e = syscall.Syscall6(sysEnter, uintptr(r.fd), uintptr(n), uintptr(wait), flags, 0, 0)
	}
	if e != 0 {
		return int(got), e
	}
	return int(got), nil
}

// SubmitAndWait submits the queued entries and waits for at least one
// completion, at most timeout nanoseconds (0: no limit). It returns how
// many entries it submitted; when it submitted none, a timeout returns
// ETIME and a signal EINTR (neither loses anything). The caller looks at
// the completion queue either way.
func (r *Ring) SubmitAndWait(timeoutNs int64) (int, error) {
	return r.SubmitAndWaitBatch(timeoutNs, 1, 0)
}

// BatchWaits reports whether the kernel can wait for a batch of
// completions with a time limit on the batch (Linux 6.12 and later).
func (r *Ring) BatchWaits() bool { return r.minTimeout }

// SubmitAndWaitBatch is SubmitAndWait for a batch: it returns once want
// completions are there, or once batchUs microseconds have passed and at
// least one is, or at timeout. On a ring with deferred task work (Setup
// DeferTaskrun) the thread is not woken before that: the receives wait,
// queued, until it runs them as it returns, so a loop serving many
// clients pays one wake-up for several requests instead of one each.
// Without BatchWaits it waits for one completion.
func (r *Ring) SubmitAndWaitBatch(timeoutNs int64, want uint32, batchUs uint32) (int, error) {
	if want <= 1 || !r.minTimeout || batchUs == 0 {
		want, batchUs = 1, 0
	}
	n := r.flush()
	r.Enters.Add(1)
	r.waitArg = getEventsArg{minWaitUs: batchUs}
	if timeoutNs > 0 {
		r.waitTS = unix.NsecToTimespec(timeoutNs)
		r.waitArg.ts = uint64(uintptr(unsafe.Pointer(&r.waitTS)))
	}
	got, _, e := syscall.Syscall6(sysEnter, uintptr(r.fd), uintptr(n), uintptr(want), enterGetEvents|enterExtArg, uintptr(unsafe.Pointer(&r.waitArg)), unsafe.Sizeof(r.waitArg))
	if e != 0 {
		return int(got), e
	}
	return int(got), nil
}

// Peek returns the oldest completion not yet consumed, or nil. The entry
// stays valid until Advance.
func (r *Ring) Peek() *CQE {
	head := atomic.LoadUint32(r.cqHead)
	if head == atomic.LoadUint32(r.cqTail) {
		return nil
	}
	return &r.cqes[head&r.cqMask]
}

// PeekAt returns the i-th completion waiting to be consumed (0 is Peek's),
// or nil when fewer are waiting.
func (r *Ring) PeekAt(i uint32) *CQE {
	head := atomic.LoadUint32(r.cqHead)
	if atomic.LoadUint32(r.cqTail)-head <= i {
		return nil
	}
	return &r.cqes[(head+i)&r.cqMask]
}

// Advance consumes the completion Peek returned.
func (r *Ring) Advance() {
	atomic.StoreUint32(r.cqHead, atomic.LoadUint32(r.cqHead)+1)
}

// Count is the number of completions waiting to be consumed.
func (r *Ring) Count() uint32 {
	return atomic.LoadUint32(r.cqTail) - atomic.LoadUint32(r.cqHead)
}

// Ready reports whether completions wait to be consumed.
func (r *Ring) Ready() bool {
	return atomic.LoadUint32(r.cqHead) != atomic.LoadUint32(r.cqTail)
}

// NeedsEnter reports whether the kernel holds completions (overflowed)
// or work that only an io_uring_enter runs.
func (r *Ring) NeedsEnter() bool {
	return atomic.LoadUint32(r.sqFlags)&(sqCQOverflow|sqTaskrun) != 0
}

// Overflowed reports whether completions the queue had no room for wait
// in the kernel (an io_uring_enter moves them to the queue).
func (r *Ring) Overflowed() bool {
	return atomic.LoadUint32(r.sqFlags)&sqCQOverflow != 0
}

// RecvMultishot arms a receive on fd that completes once for each chunk
// of data that arrives, each in a buffer taken from group, until it ends
// (an error, end of file, no free buffer: a completion without CQEFMore).
func (r *Ring) RecvMultishot(fd int, group uint16, userData uint64) bool {
	sqe := r.get()
	if sqe == nil {
		return false
	}
	sqe.Opcode = opRecv
	sqe.Fd = int32(fd)
	sqe.Ioprio = recvMultishot
	sqe.Flags = sqeBufferSelect
	sqe.BufIndex = group
	sqe.UserData = userData
	return true
}

// Send queues a send of p on fd. p must stay untouched until the
// completion arrives.
func (r *Ring) Send(fd int, p []byte, userData uint64) bool {
	sqe := r.get()
	if sqe == nil {
		return false
	}
	sqe.Opcode = opSend
	sqe.Fd = int32(fd)
	if len(p) > 0 {
		sqe.Addr = uint64(uintptr(unsafe.Pointer(&p[0])))
	}
	sqe.Len = uint32(len(p))
	sqe.OpFlags = unix.MSG_NOSIGNAL
	sqe.UserData = userData
	return true
}

// SendNow queues a send of p on fd that does not wait for room in the
// socket: it completes as it is submitted, with what the socket took
// (possibly less than len(p)) or EAGAIN. p must stay untouched until the
// completion is consumed.
func (r *Ring) SendNow(fd int, p []byte, userData uint64) bool {
	if !r.Send(fd, p, userData) {
		return false
	}
	r.sqes[(r.tail-1)&r.sqMask].OpFlags |= unix.MSG_DONTWAIT
	return true
}

// Poll arms a poll of fd for events (POLLIN, POLLOUT...); multi keeps it
// armed, completing on every wake-up.
func (r *Ring) Poll(fd int, events uint32, multi bool, userData uint64) bool {
	sqe := r.get()
	if sqe == nil {
		return false
	}
	sqe.Opcode = opPollAdd
	sqe.Fd = int32(fd)
	sqe.OpFlags = events
	if multi {
		sqe.Len = pollAddMulti
	}
	sqe.UserData = userData
	return true
}

// Cancel asks the kernel to cancel the request submitted with target;
// its own completion is skipped when it succeeds (the cancelled request
// completes with ECANCELED).
func (r *Ring) Cancel(target uint64, userData uint64) bool {
	sqe := r.get()
	if sqe == nil {
		return false
	}
	sqe.Opcode = opAsyncCancel
	sqe.Fd = -1
	sqe.Addr = target
	sqe.UserData = userData
	sqe.Flags = sqeCQESkipSuccess
	return true
}

// BufRing is a ring of provided buffers (IORING_REGISTER_PBUF_RING):
// receives take buffers from it, and the program gives each back with
// Recycle once it has used what the buffer holds.
type BufRing struct {
	group uint16
	size  int
	mask  uint16
	ring  []byte // count io_uring_buf entries; the tail overlays the first's resv
	mem   []byte // count*size bytes of buffers
	tail  uint16
}

type bufEntry struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16
}

// RegisterEventfd has the kernel signal fd, an eventfd, when the ring
// gets a completion, or (SetupDeferTaskrun) work that an io_uring_enter
// would run, while notifications are on (Notify). They start off, so
// that a ring whose thread waits in io_uring_enter pays nothing for them.
func (r *Ring) RegisterEventfd(fd int) error {
	r.Notify(false)
	efd := int32(fd)
	if _, _, e := syscall.RawSyscall6(sysRegister, uintptr(r.fd), registerEventfd, uintptr(unsafe.Pointer(&efd)), 1, 0, 0); e != 0 {
		return e
	}
	return nil
}

// Notify turns the eventfd's notifications (RegisterEventfd) on or off.
// Turning them on is a full memory barrier: a caller that then finds
// neither completions (Ready) nor work to run (NeedsEnter) is signalled
// for any that come after.
func (r *Ring) Notify(on bool) {
	if on {
		atomic.AndUint32(r.cqFlags, ^uint32(cqEventfdOff))
	} else {
		atomic.OrUint32(r.cqFlags, cqEventfdOff)
	}
}

type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// RegisterBufRing registers count (a power of two) buffers of size bytes
// as group.
func (r *Ring) RegisterBufRing(group uint16, count int, size int) (*BufRing, error) {
	if count <= 0 || count&(count-1) != 0 || count > 1<<15 {
		return nil, errors.New("uring: buffer count must be a power of two")
	}
	b := &BufRing{group: group, size: size, mask: uint16(count - 1)}
	var err error
	ringBytes := (count*int(unsafe.Sizeof(bufEntry{})) + 4095) &^ 4095
	if b.ring, err = unix.Mmap(-1, 0, ringBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE); err != nil {
		return nil, err
	}
	if b.mem, err = unix.Mmap(-1, 0, count*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE); err != nil {
		unix.Munmap(b.ring)
		return nil, err
	}
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&b.ring[0]))), ringEntries: uint32(count), bgid: group}
	if _, _, e := syscall.RawSyscall6(sysRegister, uintptr(r.fd), registerPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0); e != 0 {
		unix.Munmap(b.ring)
		unix.Munmap(b.mem)
		return nil, e
	}
	for i := 0; i < count; i++ {
		b.add(uint16(i))
	}
	b.publish()
	return b, nil
}

func (b *BufRing) entries() []bufEntry {
	return unsafe.Slice((*bufEntry)(unsafe.Pointer(&b.ring[0])), int(b.mask)+1)
}

func (b *BufRing) add(id uint16) {
	e := &b.entries()[b.tail&b.mask]
	e.addr = uint64(uintptr(unsafe.Pointer(&b.mem[int(id)*b.size])))
	e.len = uint32(b.size)
	e.bid = id
	b.tail++
}

func (b *BufRing) publish() {
	// The tail is the resv field of the first entry (offset 14).
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b.ring[12])), uint32(b.tail)<<16|uint32(*(*uint16)(unsafe.Pointer(&b.ring[12]))))
}

// Group is the buffer group id to pass to RecvMultishot.
func (b *BufRing) Group() uint16 { return b.group }

// Size is each buffer's size.
func (b *BufRing) Size() int { return b.size }

// Buf is the first n bytes of buffer id.
func (b *BufRing) Buf(id uint16, n int) []byte {
	off := int(id) * b.size
	return b.mem[off : off+n : off+b.size]
}

// Recycle gives buffer id back to the kernel.
func (b *BufRing) Recycle(id uint16) {
	b.add(id)
	b.publish()
}

// Free releases the buffers' memory; the ring they were registered with
// must be closed first.
func (b *BufRing) Free() {
	unix.Munmap(b.ring)
	unix.Munmap(b.mem)
}

// Check tells whether this kernel does what the event loops rely on,
// trying it on a socket pair: a multishot receive into provided buffers
// that stays armed, and a send that does not wait for room completing at
// once with EAGAIN on a full socket. Kernels before 6.0 lack the first;
// a seccomp filter may refuse io_uring altogether.
func Check() error {
	r, err := New(8, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	b, err := r.RegisterBufRing(0, 2, 4096)
	if err != nil {
		return err
	}
	defer b.Free()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	r.RecvMultishot(fds[0], 0, 1)
	if _, err := r.Submit(0); err != nil {
		return err
	}
	unix.Write(fds[1], []byte("x"))
	c, err := r.next()
	if err != nil {
		return err
	}
	if c.UserData != 1 || c.Res != 1 || c.Flags&CQEFMore == 0 || c.Flags&CQEFBuffer == 0 {
		return ErrUnsupported
	}
	// A full socket (of a second pair, nobody reading it), then a send
	// that must not wait.
	full, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(full[0])
	defer unix.Close(full[1])
	chunk := make([]byte, 64<<10)
	for {
		if n, err := unix.Write(full[1], chunk); n <= 0 || err != nil {
			break
		}
	}
	r.SendNow(full[1], chunk[:1], 2)
	if _, err := r.Submit(0); err != nil {
		return err
	}
	for {
		c := r.Peek()
		if c == nil {
			return ErrUnsupported // the send waits for room
		}
		v := *c
		r.Advance()
		if v.UserData == 2 {
			if v.Res != -int32(unix.EAGAIN) {
				return ErrUnsupported
			}
			return nil
		}
	}
}

// next waits up to a second for one completion and consumes it.
func (r *Ring) next() (CQE, error) {
	for i := 0; i < 10; i++ {
		if c := r.Peek(); c != nil {
			v := *c
			r.Advance()
			return v, nil
		}
		if _, err := r.SubmitAndWait(100e6); err != nil && err != unix.ETIME && err != unix.EINTR {
			return CQE{}, err
		}
	}
	return CQE{}, ErrUnsupported
}
