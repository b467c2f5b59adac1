package persist

import (
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The AOF writer: the effects of write commands are appended to a buffer
// (Feed) and written to the current incremental file by Commit, which the
// server calls before it sends the replies of a batch of commands, as
// Redis's flushAppendOnlyFile runs before its event loop writes replies:
//
//   - appendfsync always: one write and one fsync for everything fed so
//     far, then the replies. Callers that find an fsync in progress wait
//     for it and usually find their bytes covered (group commit). A write
//     or fsync error stops the server, as Redis's does: the replies were
//     not sent, so no acknowledged write is lost.
//   - appendfsync everysec: one write; an fsync in the background at most
//     once a second. While that fsync is still running, the write is
//     postponed up to 2 seconds (a slow disk), then done anyway and
//     counted in aof_delayed_fsync.
//   - appendfsync no: the write only.
//
// A failed write under everysec or no keeps the data in the buffer,
// marks aof_last_write_status err (writes are refused with MISCONF) and is
// retried; a short write is cut from the file.

// Fsync policies (appendfsync).
type Fsync int32

const (
	FsyncEverysec Fsync = iota
	FsyncAlways
	FsyncNo
)

// ParseFsync parses an appendfsync value.
func ParseFsync(v string) Fsync {
	switch v {
	case "always":
		return FsyncAlways
	case "no":
		return FsyncNo
	}
	return FsyncEverysec
}

// writer is the file side of the AOF.
type writer struct {
	log     Logger
	fatal   func() // the server cannot go on (always: a write failed)
	changed func() // an error state changed

	policy       atomic.Int32 // Fsync
	timestamps   atomic.Bool
	noFsyncChild atomic.Bool  // no-appendfsync-on-rewrite and a child is running
	flushSleep   atomic.Int64 // DEBUG AOF-FLUSH-SLEEP, microseconds

	// Feed side.
	mu        sync.Mutex
	accepting bool // the stream is recorded
	buf       []byte
	selDB     int
	lastTS    int64
	fed       atomic.Int64 // bytes fed, ever

	// Commit side.
	wmu        sync.Mutex
	f          *os.File
	wpend      []byte
	incrSize   int64 // aof_last_incr_size
	incrSynced int64 // aof_last_incr_fsync_offset
	lastFsync  int64 // unix seconds of the last fsync started
	postponed  int64 // unix seconds the first postponed write was
	lastErrLog int64
	written    atomic.Int64 // stream bytes written
	synced     atomic.Int64 // stream bytes fsynced (always)
	curSize    atomic.Int64 // aof_current_size
	bufLen     atomic.Int64 // aof_buffer_length
	delayed    atomic.Int64 // aof_delayed_fsync
	writeErrno atomic.Int32 // errno of the last failed write, 0 when ok
	bioErrno   atomic.Int32 // errno of the last failed background fsync
	bioPending atomic.Int32
	bio        chan bioJob
	bioStop    chan struct{}
}

// changed tells the engine that an error state changed.
func (w *writer) setWriteErrno(v int32) {
	if w.writeErrno.Swap(v) != v && w.changed != nil {
		w.changed()
	}
}

func (w *writer) setBioErrno(v int32) {
	if w.bioErrno.Swap(v) != v && w.changed != nil {
		w.changed()
	}
}

type bioJob struct {
	f     *os.File
	close bool
}

func (w *writer) init(log Logger) {
	w.log = log
	w.selDB = -1
	w.bio = make(chan bioJob, 64)
	w.bioStop = make(chan struct{})
	go w.bioLoop()
}

// bioLoop is Redis's BIO_AOF_FSYNC thread: fsyncs (and closes) files in
// the background, one job after another.
func (w *writer) bioLoop() {
	for {
		select {
		case j := <-w.bio:
			err := fdatasync(j.f)
			if j.close {
				j.f.Close()
			}
			if err != nil && err != syscall.EBADF && err != syscall.EINVAL {
				w.setBioErrno(int32(errnoOf(err)))
				w.log.Warnf("Fail to fsync the AOF file: %s", Strerror(err))
			} else if err == nil && !j.close {
				w.setBioErrno(0)
			}
			w.bioPending.Add(-1)
		case <-w.bioStop:
			return
		}
	}
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if pe, ok := err.(*os.PathError); ok {
		err = pe.Err
	}
	if errno, ok := err.(syscall.Errno); ok {
		return errno
	}
	return e
}

// feed appends one RESP command run in database db (-1: no SELECT).
func (w *writer) feed(db int, cmd []byte) {
	w.mu.Lock()
	if !w.accepting {
		w.mu.Unlock()
		return
	}
	n := len(w.buf)
	if w.timestamps.Load() {
		if now := time.Now().Unix(); now > w.lastTS {
			w.lastTS = now
			w.buf = append(w.buf, "#TS:"...)
			w.buf = strconv.AppendInt(w.buf, now, 10)
			w.buf = append(w.buf, '\r', '\n')
		}
	}
	if db >= 0 && db != w.selDB {
		w.selDB = db
		s := strconv.Itoa(db)
		w.buf = append(w.buf, "*2\r\n$6\r\nSELECT\r\n$"...)
		w.buf = strconv.AppendInt(w.buf, int64(len(s)), 10)
		w.buf = append(w.buf, '\r', '\n')
		w.buf = append(w.buf, s...)
		w.buf = append(w.buf, '\r', '\n')
	}
	w.buf = append(w.buf, cmd...)
	w.fed.Add(int64(len(w.buf) - n))
	w.bufLen.Store(int64(len(w.buf)))
	w.mu.Unlock()
}

// pending reports whether fed bytes wait for what the policy promises
// before replies go out.
func (w *writer) pending() bool {
	fed := w.fed.Load()
	if Fsync(w.policy.Load()) == FsyncAlways {
		return fed != w.synced.Load()
	}
	return fed != w.written.Load()
}

// take moves the fed buffer behind what is still to write. wmu is held.
func (w *writer) take() (end int64) {
	w.mu.Lock()
	if len(w.wpend) == 0 {
		w.wpend, w.buf = w.buf, w.wpend[:0]
	} else {
		w.wpend = append(w.wpend, w.buf...)
		w.buf = w.buf[:0]
	}
	end = w.fed.Load()
	w.bufLen.Store(int64(len(w.wpend)))
	w.mu.Unlock()
	return end
}

// commit writes what was fed (and fsyncs it, as the policy says).
// force: write even while a background fsync runs (everysec).
func (w *writer) commit(force bool) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.commitLocked(force)
}

func (w *writer) commitLocked(force bool) {
	policy := Fsync(w.policy.Load())
	if policy == FsyncAlways && w.synced.Load() == w.fed.Load() && w.incrSynced == w.incrSize {
		return // someone else's fsync covered it
	}
	end := w.take()
	now := time.Now().Unix()
	if len(w.wpend) == 0 {
		w.written.Store(end)
		// Nothing to write: an fsync may still be owed (everysec: data
		// written less than a second ago; always: after a policy change).
		switch {
		case policy == FsyncEverysec && w.incrSynced != w.incrSize && now > w.lastFsync && w.bioPending.Load() == 0:
		case policy == FsyncAlways && w.incrSynced != w.incrSize:
		default:
			if policy == FsyncAlways {
				w.synced.Store(end)
			}
			return
		}
		w.fsync(policy, now, end, false)
		return
	}
	syncing := policy == FsyncEverysec && w.bioPending.Load() > 0
	if policy == FsyncEverysec && !force && syncing {
		if w.postponed == 0 {
			w.postponed = now
			return
		} else if now-w.postponed < 2 {
			return
		}
		w.delayed.Add(1)
		w.log.Logf("Asynchronous AOF fsync is taking too long (disk is busy?). Writing the AOF buffer without waiting for fsync to complete, this may slow down Redis.")
	}
	if d := w.flushSleep.Load(); d > 0 {
		time.Sleep(time.Duration(d) * time.Microsecond)
	}
	w.postponed = 0
	if w.f == nil {
		return
	}
	n, err := w.f.Write(w.wpend)
	if err != nil {
		canLog := now-w.lastErrLog > 30
		if canLog {
			w.lastErrLog = now
		}
		errno := errnoOf(err)
		if n == 0 {
			if canLog {
				w.log.Warnf("Error writing to the AOF file: %s", Strerror(err))
			}
		} else {
			if canLog {
				w.log.Warnf("Short write while writing to the AOF file: (nwritten=%d, expected=%d)", n, len(w.wpend))
			}
			if terr := w.f.Truncate(w.incrSize); terr != nil {
				if canLog {
					w.log.Warnf("Could not remove short write from the append-only file.  Redis may refuse to load the AOF the next time it starts.  ftruncate: %s", Strerror(terr))
				}
			} else {
				w.f.Seek(w.incrSize, 0)
				n = 0
			}
			if errno == 0 {
				errno = syscall.ENOSPC
			}
		}
		if errno == 0 {
			errno = syscall.EIO
		}
		w.setWriteErrno(int32(errno))
		if policy == FsyncAlways {
			w.log.Warnf("Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...")
			w.fatal()
			return
		}
		if n > 0 {
			w.curSize.Add(int64(n))
			w.incrSize += int64(n)
			w.wpend = append(w.wpend[:0], w.wpend[n:]...)
		}
		w.bufLen.Store(int64(len(w.wpend)))
		return
	}
	if w.writeErrno.Load() != 0 {
		w.log.Warnf("AOF write error looks solved, Redis can write again.")
		w.setWriteErrno(0)
	}
	w.curSize.Add(int64(n))
	w.incrSize += int64(n)
	if cap(w.wpend) > 1<<20 {
		w.wpend = nil
	} else {
		w.wpend = w.wpend[:0]
	}
	w.bufLen.Store(0)
	w.written.Store(end)
	w.fsync(policy, now, end, syncing)
}

// fsync does what the policy says once bytes up to end are written.
func (w *writer) fsync(policy Fsync, now, end int64, syncing bool) {
	if w.noFsyncChild.Load() {
		if policy == FsyncAlways {
			w.synced.Store(end) // no-appendfsync-on-rewrite: Redis replies without it
		}
		return
	}
	switch policy {
	case FsyncAlways:
		if err := fdatasync(w.f); err != nil {
			w.log.Warnf("Can't persist AOF for fsync error when the AOF fsync policy is 'always': %s. Exiting...", Strerror(err))
			w.fatal()
			return
		}
		w.incrSynced = w.incrSize
		w.lastFsync = now
		w.synced.Store(end)
	case FsyncEverysec:
		if now > w.lastFsync {
			if !syncing && w.bioPending.Load() == 0 {
				w.bioPending.Add(1)
				w.bio <- bioJob{f: w.f}
				w.incrSynced = w.incrSize
			}
			w.lastFsync = now
		}
	}
}

// setFile makes f the file appended to from now on; what was fed before
// goes to the file it was fed for. The old file is fsynced and closed in
// the background. size is f's current size.
func (w *writer) setFile(f *os.File, size int64) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.f != nil {
		w.commitLocked(true)
		w.mu.Lock()
		w.selDB = -1 // the new file starts with a SELECT
		w.mu.Unlock()
		w.bioPending.Add(1)
		w.bio <- bioJob{f: w.f, close: true}
		w.lastFsync = time.Now().Unix()
	}
	w.f = f
	w.incrSize, w.incrSynced = size, size
	w.written.Store(w.fed.Load())
	w.synced.Store(w.fed.Load())
}

// switchAt switches the stream to f at the current point: everything fed
// before goes to the old file. Called at a snapshot's cut, when no
// command runs.
func (w *writer) switchAt(f *os.File) {
	w.wmu.Lock()
	w.mu.Lock()
	w.selDB = -1
	if len(w.wpend) == 0 {
		w.wpend, w.buf = w.buf, w.wpend[:0]
	} else {
		w.wpend = append(w.wpend, w.buf...)
		w.buf = w.buf[:0]
	}
	end := w.fed.Load()
	w.mu.Unlock()
	old := w.f
	// The old file's tail is written now; its fsync and close go to the
	// background (everysec may delay it, always already synced it).
	if old != nil && len(w.wpend) > 0 {
		n, err := old.Write(w.wpend)
		w.curSize.Add(int64(n))
		if err != nil {
			// The tail is in the rewrite's base; the old file misses it.
			w.log.Warnf("Error writing to the AOF file: %s", Strerror(err))
			w.setWriteErrno(int32(errnoOf(err)))
		}
		if Fsync(w.policy.Load()) == FsyncAlways && !w.noFsyncChild.Load() {
			fdatasync(old) // replies for that tail wait for it
		}
	}
	w.wpend = w.wpend[:0]
	w.bufLen.Store(0)
	if old != nil {
		w.bioPending.Add(1)
		w.bio <- bioJob{f: old, close: true}
	}
	w.f = f
	w.incrSize, w.incrSynced = 0, 0
	w.lastFsync = time.Now().Unix()
	w.written.Store(end)
	w.synced.Store(end)
	w.wmu.Unlock()
}

// stop writes and fsyncs what is buffered and closes the file (appendonly
// no, shutdown).
func (w *writer) stop() {
	w.mu.Lock()
	w.accepting = false
	w.mu.Unlock()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.f == nil {
		return
	}
	w.commitLocked(true)
	if err := fdatasync(w.f); err != nil {
		w.log.Warnf("Fail to fsync the AOF file: %s", Strerror(err))
	}
	// Closed by the background worker, after any fsync it has queued.
	w.bioPending.Add(1)
	w.bio <- bioJob{f: w.f, close: true}
	w.f = nil
	w.mu.Lock()
	w.buf = w.buf[:0]
	w.selDB = -1
	w.mu.Unlock()
	w.wpend = w.wpend[:0]
	w.bufLen.Store(0)
	w.incrSize, w.incrSynced = 0, 0
	w.written.Store(w.fed.Load())
	w.synced.Store(w.fed.Load())
	w.setWriteErrno(0)
}

// syncNow writes and fsyncs everything (shutdown).
func (w *writer) syncNow() {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.f == nil {
		return
	}
	w.commitLocked(true)
	if err := fdatasync(w.f); err != nil {
		w.log.Warnf("Fail to fsync the AOF file: %s.", Strerror(err))
	}
	w.incrSynced = w.incrSize
}

func (w *writer) setAccepting(on bool) {
	w.mu.Lock()
	w.accepting = on
	if !on {
		w.buf = w.buf[:0]
	}
	w.mu.Unlock()
}

// drop discards what is buffered (a failed first rewrite).
func (w *writer) drop() {
	w.wmu.Lock()
	w.mu.Lock()
	w.buf = w.buf[:0]
	w.wpend = w.wpend[:0]
	w.written.Store(w.fed.Load())
	w.synced.Store(w.fed.Load())
	w.bufLen.Store(0)
	w.mu.Unlock()
	w.wmu.Unlock()
}
