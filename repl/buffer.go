package repl

import "sync"

// Buffer is the replication stream as Redis 7.0 keeps it: one list of
// blocks that the backlog and every replica read, so the stream is held
// once however many replicas there are.
//
// Offsets are Redis's: the first byte ever written after the buffer was
// made at offset o has offset o+1, and Offset is the offset of the last
// byte written (master_repl_offset). The backlog is the history from
// First to Offset; it keeps at least repl-backlog-size bytes once that
// many were written, and it keeps more while a replica still has older
// bytes to send: blocks are freed from the head only when no reader
// stands on them (Redis's incrementalTrimReplicationBacklog).
//
// A Reader is a replica's position in the stream. Its bytes are the
// replica's output buffer: Mem is what client-output-buffer-limit is
// checked against, and Buffer.Mem (mem_total_replication_buffers) counts
// them once.
//
// Buffer is safe for concurrent use: the effects stream writes while the
// replicas' connections read.
type Buffer struct {
	mu      sync.Mutex
	size    int64 // repl-backlog-size
	offset  int64 // offset of the last byte written
	histlen int64 // bytes from head's first byte to offset
	head    *block
	tail    *block
	mem     int64
	nblocks int64
	nextID  int64
	// waiting readers stand at the end of an empty buffer: they take a
	// reference on the first block written.
	waiting []*Reader
}

type block struct {
	id   int64
	off  int64 // offset of buf[0]
	buf  []byte
	refs int // the backlog (on head) and readers standing on this block
	next *block
}

// BlockMin is the smallest block (Redis's PROTO_REPLY_CHUNK_BYTES).
const BlockMin = 16 * 1024

// blockOverhead is counted for each block in Mem, as Redis counts its
// list node and block header.
const blockOverhead = 64

// MinBacklog is the smallest repl-backlog-size (CONFIG_REPL_BACKLOG_MIN_SIZE).
const MinBacklog = 16 * 1024

// NewBuffer makes an empty buffer whose next byte has offset offset+1,
// keeping size bytes of backlog.
func NewBuffer(offset, size int64) *Buffer {
	return &Buffer{offset: offset, size: max(size, MinBacklog)}
}

// blockLimit is the largest block made: big writes are split so a
// block's bytes can be freed once the backlog no longer needs them
// (Redis 7.0.x: max(PROTO_REPLY_CHUNK_BYTES, repl-backlog-size/16)).
func (b *Buffer) blockLimit() int {
	return int(max(int64(BlockMin), b.size/16))
}

// Write appends p to the stream. It reports whether a new block was made,
// which is when replicas' output limits are worth checking.
func (b *Buffer) Write(p []byte) (grew bool) {
	if len(p) == 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n := int64(len(p))
	start, startPos := b.tail, 0
	if t := b.tail; t != nil && len(t.buf) < cap(t.buf) {
		startPos = len(t.buf)
		k := min(cap(t.buf)-len(t.buf), len(p))
		t.buf = append(t.buf, p[:k]...)
		p = p[k:]
	} else {
		start = nil
	}
	for len(p) > 0 {
		size := min(max(len(p), BlockMin), b.blockLimit())
		nb := &block{id: b.nextID, off: b.offset + n - int64(len(p)) + 1, buf: make([]byte, 0, size)}
		b.nextID++
		k := min(size, len(p))
		nb.buf = append(nb.buf, p[:k]...)
		p = p[k:]
		if b.tail == nil {
			b.head = nb
			nb.refs++ // the backlog's
		} else {
			b.tail.next = nb
		}
		b.tail = nb
		b.mem += int64(size) + blockOverhead
		b.nblocks++
		grew = true
		if start == nil {
			start = nb
		}
	}
	for _, r := range b.waiting {
		r.blk, r.pos = start, startPos
		start.refs++
	}
	b.waiting = b.waiting[:0]
	b.offset += n
	b.histlen += n
	if grew {
		b.trimLocked()
	}
	return grew
}

// trimLocked frees blocks from the head while the backlog holds more
// than its size without them and nobody else stands on them.
func (b *Buffer) trimLocked() {
	for b.histlen > b.size {
		h := b.head
		if h == nil || h.next == nil || h.refs != 1 {
			return
		}
		if b.histlen-int64(len(h.buf)) <= b.size {
			return
		}
		b.histlen -= int64(len(h.buf))
		b.mem -= int64(cap(h.buf)) + blockOverhead
		b.nblocks--
		b.head = h.next
		b.head.refs++
		h.refs, h.next = 0, nil
	}
}

// Trim frees what the backlog no longer needs now (a replica moved on or
// left).
func (b *Buffer) Trim() {
	b.mu.Lock()
	b.trimLocked()
	b.mu.Unlock()
}

// SetSize changes repl-backlog-size.
func (b *Buffer) SetSize(size int64) {
	b.mu.Lock()
	b.size = max(size, MinBacklog)
	b.trimLocked()
	b.mu.Unlock()
}

// Offset is the offset of the last byte written (master_repl_offset).
func (b *Buffer) Offset() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.offset
}

// First is the offset of the backlog's first byte
// (repl_backlog_first_byte_offset).
func (b *Buffer) First() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.offset - b.histlen + 1
}

// Histlen is the bytes of history the backlog holds (repl_backlog_histlen).
func (b *Buffer) Histlen() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.histlen
}

// Mem is the memory the buffer holds (mem_total_replication_buffers).
func (b *Buffer) Mem() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mem
}

// Size is repl-backlog-size as the buffer applies it.
func (b *Buffer) Size() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size
}

// Covers reports whether a replica may continue from offset off: the
// backlog holds every byte from off on (off may be Offset+1: nothing to
// send).
func (b *Buffer) Covers(off int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return off >= b.offset-b.histlen+1 && off <= b.offset+1
}

// Bytes copies the stream from off to the end (tests, DEBUG).
func (b *Buffer) Bytes(off int64) []byte {
	r := b.ReaderAt(off)
	if r == nil {
		return nil
	}
	defer r.Close()
	out := make([]byte, r.Pending())
	n := r.Read(out)
	return out[:n]
}

// Reader is a replica's position in the stream.
type Reader struct {
	b      *Buffer
	blk    *block // nil: waiting for the first block
	pos    int    // next byte in blk.buf
	closed bool
}

// ReaderAt returns a reader whose next byte has offset off, or nil when
// the backlog does not cover off.
func (b *Buffer) ReaderAt(off int64) *Reader {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := b.offset - b.histlen + 1
	if off < first || off > b.offset+1 {
		return nil
	}
	r := &Reader{b: b}
	if b.head == nil {
		b.waiting = append(b.waiting, r)
		return r
	}
	blk := b.head
	for blk.next != nil && off >= blk.next.off {
		blk = blk.next
	}
	if off == b.offset+1 && len(blk.buf) == cap(blk.buf) {
		// At the end of a full block: the next write starts a block.
		b.waiting = append(b.waiting, r)
		return r
	}
	r.blk, r.pos = blk, int(off-blk.off)
	blk.refs++
	return r
}

// Reader returns a reader at the end of the stream: it gets what is
// written from now on.
func (b *Buffer) Reader() *Reader {
	b.mu.Lock()
	off := b.offset + 1
	b.mu.Unlock()
	return b.ReaderAt(off)
}

// offLocked is the offset of the reader's next byte.
func (r *Reader) offLocked() int64 {
	if r.blk == nil {
		return r.b.offset + 1
	}
	return r.blk.off + int64(r.pos)
}

// Offset is the offset of the next byte the reader will read.
func (r *Reader) Offset() int64 {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return r.offLocked()
}

// Pending is how many bytes the reader has not read yet.
func (r *Reader) Pending() int64 {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if r.closed {
		return 0
	}
	return r.b.offset + 1 - r.offLocked()
}

// Mem is the replica's output buffer as Redis counts it for
// client-output-buffer-limit and CLIENT LIST: every block from the one it
// stands on to the last.
func (r *Reader) Mem() int64 {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if r.blk == nil || r.closed {
		return 0
	}
	t := r.b.tail
	return t.off + int64(len(t.buf)) - r.blk.off + (t.id-r.blk.id+1)*blockOverhead
}

// Read copies the next bytes into p and moves past them. It returns how
// many it copied (0: nothing pending).
func (r *Reader) Read(p []byte) int {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.closed {
		return 0
	}
	n := 0
	moved := false
	for n < len(p) && r.blk != nil {
		if r.pos < len(r.blk.buf) {
			k := copy(p[n:], r.blk.buf[r.pos:])
			r.pos += k
			n += k
			continue
		}
		next := r.blk.next
		if next == nil {
			break
		}
		r.blk.refs--
		next.refs++
		r.blk, r.pos = next, 0
		moved = true
	}
	// Standing at the end of a full block that has a successor, move on
	// so the block can be freed.
	if r.blk != nil && r.pos == len(r.blk.buf) && r.blk.next != nil {
		r.blk.refs--
		r.blk = r.blk.next
		r.blk.refs++
		r.pos = 0
		moved = true
	}
	if moved {
		b.trimLocked()
	}
	return n
}

// Close lets the buffer free what the reader stood on.
func (r *Reader) Close() {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	if r.blk != nil {
		r.blk.refs--
		r.blk = nil
		b.trimLocked()
		return
	}
	for i, w := range b.waiting {
		if w == r {
			b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
			break
		}
	}
}

// Clone returns a reader at r's position (a replica that shares another's
// full sync).
func (r *Reader) Clone() *Reader {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	n := &Reader{b: b, blk: r.blk, pos: r.pos, closed: r.closed}
	switch {
	case r.closed:
	case r.blk != nil:
		r.blk.refs++
	default:
		b.waiting = append(b.waiting, n)
	}
	return n
}
