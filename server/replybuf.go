package server

import (
	"strconv"
	"sync/atomic"

	"github.com/sluicedb/sluice/store"
)

// The reply buffer as the memory accounting sees it.
//
// Redis 7.0 gives each client a reply buffer (CLIENT LIST's rbs) that
// starts at 16 KiB and follows what the client uses: the client cron
// halves it, down to 1 KiB, while the most output it held at once since
// the last peak reset (rbp) is under half of it, and doubles it, up to
// 16 KiB, when that peak filled it (clientsCronResizeOutputBuffer). The
// buffer counts in the client's fixed memory (tot-mem, mem_clients_normal)
// and only output beyond it counts as output buffer memory (omem), which
// Redis keeps as a list of 16 KiB blocks counted at their allocated size.
//
// Sluice's event loops assemble replies in one buffer per loop, so an idle
// client holds no reply buffer at all; what it is counted for is Redis's
// figure, sized by Redis's rule from the client's own output, so that
// maxmemory and maxmemory-clients weigh a thousand idle connections (about
// 1 KiB each) and a busy one (16 KiB) as Redis does.
type replyBuf struct {
	size    atomic.Int32 // rbs; 0: not resized yet (replyBufSize)
	peak    atomic.Int32 // rbp: the most output held at once since the last reset, at most size
	resetAt int64        // unix ms of the last peak reset (the owner's cron)
}

// initReplyBuf starts a connection's buffer at 16 KiB with that as its
// peak, as Redis's createClient does. Its first peak reset comes at the
// first cron, as in Redis 7.0, whose start time for it is in seconds
// where the cron compares milliseconds.
func (c *Client) initReplyBuf() {
	c.rb.size.Store(replyBufSize)
	c.rb.peak.Store(replyBufSize)
}

const (
	replyBufMin = 1024 // PROTO_REPLY_MIN_BYTES: the smallest the buffer shrinks to

	// replyPeakResetDefault is the default of DEBUG REPLYBUFFER
	// PEAK-RESET-TIME, in ms (REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME).
	replyPeakResetDefault = 5000

	// replyNodeOverhead is what a reply-list block costs besides its
	// bytes: its list node and block header.
	replyNodeOverhead = 24 + 16
)

// replyNodeSize is the bytes a reply-list block holds: Redis asks for
// 16 KiB plus the block's header and takes over the rest of what the
// allocator gives (_addReplyProtoToList); Sluice's figure uses its own
// allocator's size classes, as the rest of its accounting does.
var replyNodeSize = store.AllocSize(replyBufSize+16) - 16

// replyBufLen is the client's reply buffer size (CLIENT LIST rbs).
func (c *Client) replyBufLen() int64 {
	if n := c.rb.size.Load(); n != 0 {
		return int64(n)
	}
	return replyBufSize
}

// replyPeak is CLIENT LIST's rbp.
func (c *Client) replyPeak() int64 {
	if c.rb.size.Load() == 0 {
		return replyBufSize // a client the cron does not resize
	}
	return int64(c.rb.peak.Load())
}

// noteReplyPeak records that the client held n bytes of output at once
// (a batch's replies before they are written): the buffer's peak is that,
// up to its size.
func (c *Client) noteReplyPeak(n int) {
	if int64(n) <= c.replyPeak() {
		return
	}
	c.rb.peak.Store(int32(min(int64(n), c.replyBufLen())))
}

// replyBlocks splits n bytes of pending output as Redis holds it: the
// bytes in the reply buffer (CLIENT LIST obl) and the number of
// reply-list blocks for the rest (oll).
func (c *Client) replyBlocks(n int64) (buffered, blocks int64) {
	size := c.replyBufLen()
	if n <= size {
		return max(n, 0), 0
	}
	return size, (n - size + replyNodeSize - 1) / replyNodeSize
}

// countedOutput is the output buffer memory Redis counts for n bytes of
// pending output: what overflows the reply buffer, in whole reply-list
// blocks (getClientOutputBufferMemoryUsage).
func (c *Client) countedOutput(n int64) int64 {
	_, blocks := c.replyBlocks(n)
	return blocks * (replyNodeSize + replyNodeOverhead)
}

// resizeReplyBuf is clientsCronResizeOutputBuffer, run by the client's
// own loop's cron at now (unix ms). It reports whether the size changed.
func (c *Client) resizeReplyBuf(now int64) bool {
	s := c.srv
	if s.replyResizeOff.Load() {
		return false
	}
	size, peak := c.replyBufLen(), c.replyPeak()
	var n int64
	switch {
	case size/2 >= replyBufMin && peak < size/2:
		n = max(replyBufMin, peak+1)
		s.replyShrinks.Add(1)
	case size*2 < 2*replyBufSize && peak == size:
		n = min(replyBufSize, size*2)
		s.replyExpands.Add(1)
	}
	if reset := s.replyPeakReset.Load(); reset >= 0 && now-c.rb.resetAt >= reset {
		// What the buffer holds now becomes the peak: the output not
		// written yet, up to the buffer.
		c.rb.peak.Store(int32(min(c.outputBytes(), size)))
		c.rb.resetAt = now
	}
	if n == 0 {
		return false
	}
	n = store.AllocSize(int(n))
	c.rb.size.Store(int32(n))
	if int64(c.rb.peak.Load()) > n {
		c.rb.peak.Store(int32(n))
	}
	return true
}

// debugReplyBuffer is DEBUG REPLYBUFFER PEAK-RESET-TIME <NEVER|RESET|ms>
// and DEBUG REPLYBUFFER RESIZING <0|1>.
func (c *Client) debugReplyBuffer(args [][]byte) {
	s := c.srv
	switch v := args[3]; {
	case eq(args[2], "peak-reset-time"):
		switch {
		case eq(v, "never"):
			s.replyPeakReset.Store(-1)
		case eq(v, "reset"):
			s.replyPeakReset.Store(replyPeakResetDefault)
		default:
			n, ok := parseIntArg(v)
			if !ok {
				c.w.Error("ERR value is not an integer or out of range")
				return
			}
			s.replyPeakReset.Store(n)
		}
	case eq(args[2], "resizing"):
		n, _ := strconv.Atoi(string(v))
		s.replyResizeOff.Store(n == 0)
	default:
		c.subcommandSyntaxError(args)
		return
	}
	c.w.OK()
}
