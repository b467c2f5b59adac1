package server

import (
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// The query buffer as the memory accounting sees it.
//
// Redis 7.0 reads a client's input into a buffer of its own: it reserves
// 16 KiB (PROTO_IOBUF_LEN) the first time the client sends something,
// keeps it while the client stays active, sizes it exactly for a big
// argument (and keeps one that size after the argument is taken), and its
// client cron frees the spare room once the client has been idle for more
// than 2 seconds, or trims a buffer over 32 KiB to what the client used
// since the last look (clientsCronResizeQueryBuffer). CLIENT LIST's qbuf
// and qbuf-free, tot-mem and used_memory count that buffer.
//
// Sluice's event loops read into one buffer per loop and give a client a
// buffer of its own only for input that is not a complete command yet
// (c.qbuf). What it counts is the larger of that buffer and Redis's
// figure (c.qbAlloc), kept by Redis's rules, so that maxmemory and
// maxmemory-clients weigh active clients as Redis does.

const (
	ioBufLen        = 16 << 10 // PROTO_IOBUF_LEN: what a read reserves
	resizeThreshold = 32 << 10 // PROTO_RESIZE_THRESHOLD
)

// bigArgEnd is where, counted from the start of c's command, the bulk
// argument being read ends when it is a big one (resp.BigArg bytes or
// more, which gets a query buffer of exactly its size), else 0.
func bigArgEnd(c *Client) int {
	if n := c.p.Need(); n-c.p.Parsed() >= resp.BigArg {
		return n
	}
	return 0
}

// noteQueryRead applies a read to the modelled buffer: held is the
// client's unprocessed input including the n bytes just read.
func (c *Client) noteQueryRead(held, n int) {
	before := int64(held - n)
	switch {
	case bigArgEnd(c) > 0:
		// Within a big argument Redis's buffer is exactly the
		// argument's size, as Sluice's own is (c.qbuf).
	case c.qbAlloc < ioBufLen:
		// The first reservation is exact (sdsMakeRoomForNonGreedy).
		c.qbAlloc = store.AllocSize(int(before) + ioBufLen)
	case c.qbAlloc-before < ioBufLen:
		// Later ones grow greedily, as sdsMakeRoomFor: double up to
		// 1 MiB, then 1 MiB more.
		need := before + ioBufLen
		if need < 1<<20 {
			need *= 2
		} else {
			need += 1 << 20
		}
		c.qbAlloc = store.AllocSize(int(need))
	}
	c.qbAlloc = max(c.qbAlloc, int64(held))
	c.qbufPeak = max(c.qbufPeak, held)
}

// keepQueryBuf notes that Sluice gave back a client's buffer of size
// bytes once its input was served. Redis keeps its buffer until the cron
// trims it (after a big argument it hands the buffer to the argument and
// gives the client a new one of the same size), so the figure stays.
func (c *Client) keepQueryBuf(size int) {
	c.qbAlloc = max(c.qbAlloc, int64(size))
}

// queryBufAlloc is the query buffer's allocation as counted: the larger of
// Sluice's own buffer and Redis's figure.
func (c *Client) queryBufAlloc() int64 {
	return max(store.AllocSize(cap(c.qbuf)), c.qbAlloc)
}

// resizeQueryBuf is clientsCronResizeQueryBuffer for the modelled buffer,
// run by the client's loop's cron at now (unix ms); held is the client's
// unprocessed input. It reports whether the figure changed.
func (c *Client) resizeQueryBuf(now int64, held int) bool {
	old := c.qbAlloc
	if c.qbAlloc-int64(held) > 4<<10 {
		// Redis counts idle time in whole seconds: more than 2 means 3.
		if (now-c.lastIO.Load())/1000 > 2 {
			c.qbAlloc = int64(held)
		} else if c.qbAlloc > resizeThreshold && c.qbAlloc/2 > int64(c.qbufPeak) {
			c.qbAlloc = int64(max(held, c.qbufPeak, c.p.Need()-c.p.Parsed()))
		}
	}
	return c.qbAlloc != old
}
