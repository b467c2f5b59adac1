package server

import (
	"golang.org/x/sys/unix"

	"github.com/sluicedb/sluice/resp"
)

// Big arguments' query buffers, and the write buffer big replies grow.
//
// A bulk argument of resp.BigArg bytes or more gets a query buffer of
// exactly its size as soon as its header is read, as in Redis (growQbuf).
// Two things made such an argument go in at half the speed Redis takes it
// in:
//
//   - Fresh memory. Go's heap gives a large buffer that was freed back to
//     the OS, so every page of a new 3 MB buffer faulted on its first
//     write; Redis's allocator keeps freed pages for a while, and its next
//     big argument reuses them. A loop keeps the last big buffer its
//     clients gave back (spareQbuf), for its next big argument, and lets it
//     go after spareQbufKeep unused.
//   - The ring's receives (loop_uring_linux.go) deliver input in provided
//     buffers of ringBufSize, each copied once more into the query buffer:
//     a 3 MB argument came as about 190 of them. readBigArg reads the rest
//     of a big argument with read(2) straight into its buffer, as the epoll
//     loop does.
//
// A closed client's buffer, or a served one's, is not reused at once: it
// goes to releasedQbuf and becomes the spare at the top of the loop's
// next iteration, when no command of the loop runs any more (a script's
// stand-in serves other clients while the script's own command, whose
// arguments may lie in its client's buffer, is still running).

// spareQbufKeep is how long (ms) a loop keeps a spare big query buffer
// that no argument took (jemalloc's dirty_decay_ms default, with which
// Redis's allocator gives back freed pages).
const spareQbufKeep = 10_000

// bigQueryBuf returns an empty buffer with room for exactly n bytes: the
// loop's spare when it has room for them and is no more than an eighth
// bigger, else a new one.
func (l *loop) bigQueryBuf(n int) []byte {
	if s := l.spareQbuf; cap(s) >= n && cap(s)-n <= n/8 {
		l.spareQbuf = nil
		return s[:0:n]
	}
	return make([]byte, 0, n)
}

// releaseQbuf takes a query buffer its client no longer uses; one of
// resp.BigArg bytes or more becomes the spare at the next iteration
// (promoteQbuf).
func (l *loop) releaseQbuf(b []byte) {
	if cap(b) >= resp.BigArg {
		l.releasedQbuf = b[:0]
	}
}

// promoteQbuf makes the buffer released last the spare, at the top of a
// loop iteration, and lets a spare go that stayed unused
// for spareQbufKeep (now: ms on the monotonic clock).
func (l *loop) promoteQbuf(now int64) {
	if l.releasedQbuf != nil {
		l.spareQbuf, l.spareQbufAt = l.releasedQbuf, now
		l.releasedQbuf = nil
	} else if l.spareQbuf != nil && now-l.spareQbufAt > spareQbufKeep {
		l.spareQbuf = nil
	}
}

// inBigArg reports whether c's query buffer is a big argument's, sized for
// it whole, with the argument not yet all there.
func inBigArg(c *Client) bool {
	return len(c.qbuf) > 0 && bigArgEnd(c) > len(c.qbuf)
}

// readBigArg reads the rest of c's big argument from its socket straight
// into the query buffer, as the epoll loop reads (onReadable): a read(2)
// takes what the socket holds, up to the argument's end (what follows it
// comes through the ring). The caller makes sure that no completion of
// c's waits to be served, so nothing read here overtakes input the ring
// delivered already; the ring's receives run only on the loop's thread,
// inside its ring system calls, so none runs meanwhile.
func (l *loop) readBigArg(c *Client) {
	for c.fd >= 0 && !c.blocked && inBigArg(c) && l.onReadable(c) {
	}
}

// quickAck is called when a big argument begins to come in: it takes the
// client's socket out of the kernel's interactive mode, in which it
// delays the acknowledgement of a small segment by up to 40 ms. A client
// that leaves Nagle's algorithm on (Tcl's, Python's plain sockets) and
// writes a big argument in pieces holds each piece below a full segment
// until what it sent is acknowledged; on loopback, whose segments are
// 64 KB, that made a 3 MB argument take 70 ms, in stalls of up to 40 ms,
// to Redis as to Sluice. The server sends the client nothing until the
// argument is in, so the socket stays out of that mode until then. It
// also keeps a stall from slowing the client's congestion control
// (BBR's pacing) so far that its next segment, its FIN included, leaves
// milliseconds late.
func quickAck(c *Client) {
	if !c.unixSock && c.fd >= 0 {
		unix.SetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
	}
}

// The loop's write buffer is kept between batches up to keptWbuf bytes.
// One that a big reply grew (up to maxKeptWbuf) is kept too, for the next
// big reply, until spareQbufKeep passes without one: a 500 KB GET then
// writes into memory already there instead of a new buffer each time,
// which the garbage collector had to reclaim.
const (
	keptWbuf    = 4 * flushAt
	maxKeptWbuf = 4 << 20
)

// keepWbuf, at the top of a loop iteration, notes that the write buffer
// served a big reply in the last one, or drops a big one that served none
// for spareQbufKeep.
func (l *loop) keepWbuf(now int64) {
	if l.wbufBig {
		l.wbufBig = false
		l.wbufBigAt = now
	} else if cap(l.wbuf) > keptWbuf && now-l.wbufBigAt > spareQbufKeep {
		l.wbuf = nil
	}
}
