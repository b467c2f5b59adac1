package repl

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestBufferOffsetsAndBacklog(t *testing.T) {
	b := NewBuffer(100, MinBacklog)
	if b.Offset() != 100 || b.First() != 101 || b.Histlen() != 0 {
		t.Fatalf("empty: offset %d first %d histlen %d", b.Offset(), b.First(), b.Histlen())
	}
	if !b.Covers(101) || b.Covers(100) || b.Covers(102) {
		t.Fatal("an empty backlog covers exactly offset+1")
	}
	var all []byte
	for i := 0; i < 1000; i++ {
		p := bytes.Repeat([]byte{byte(i)}, 1+i%300)
		all = append(all, p...)
		b.Write(p)
	}
	if b.Offset() != 100+int64(len(all)) {
		t.Fatalf("offset %d want %d", b.Offset(), 100+len(all))
	}
	h := b.Histlen()
	if h < MinBacklog || h > MinBacklog+BlockMin {
		t.Fatalf("histlen %d: want the backlog size and at most a block more", h)
	}
	first := b.First()
	if first != b.Offset()-h+1 {
		t.Fatalf("first %d", first)
	}
	if b.Covers(first-1) || !b.Covers(first) {
		t.Fatal("covers")
	}
	got := b.Bytes(first)
	want := all[first-101:]
	if !bytes.Equal(got, want) {
		t.Fatalf("backlog bytes differ (%d vs %d)", len(got), len(want))
	}
	if b.ReaderAt(first-1) != nil {
		t.Fatal("reader before the backlog")
	}
}

// A reader that stands still keeps everything after it, beyond the
// backlog size; once it moves or closes the backlog shrinks back.
func TestBufferSlowReaderKeepsHistory(t *testing.T) {
	b := NewBuffer(0, MinBacklog)
	r := b.Reader()
	chunk := bytes.Repeat([]byte("x"), 1000)
	for i := 0; i < 200; i++ {
		b.Write(chunk)
	}
	if b.Histlen() != 200*1000 {
		t.Fatalf("histlen %d: the reader's bytes must be kept", b.Histlen())
	}
	if r.Pending() != 200*1000 {
		t.Fatalf("pending %d", r.Pending())
	}
	if m := r.Mem(); m < 200*1000 {
		t.Fatalf("reader mem %d", m)
	}
	memBefore := b.Mem()
	out := make([]byte, 150*1000)
	if n := r.Read(out); n != len(out) {
		t.Fatalf("read %d", n)
	}
	if b.Mem() >= memBefore {
		t.Fatalf("mem %d did not shrink from %d after the reader moved", b.Mem(), memBefore)
	}
	r.Close()
	if h := b.Histlen(); h > MinBacklog+BlockMin {
		t.Fatalf("histlen %d after the reader left", h)
	}
}

// Two readers share the blocks: memory does not double.
func TestBufferSharedByReaders(t *testing.T) {
	b := NewBuffer(0, MinBacklog)
	r1, r2 := b.Reader(), b.Reader()
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(rand.IntN(256))
	}
	b.Write(data)
	if m := b.Mem(); m > int64(len(data))+int64(len(data))/8 {
		t.Fatalf("mem %d for %d bytes and two readers", m, len(data))
	}
	for _, r := range []*Reader{r1, r2} {
		var got []byte
		buf := make([]byte, 7000)
		for {
			n := r.Read(buf)
			if n == 0 {
				break
			}
			got = append(got, buf[:n]...)
		}
		if !bytes.Equal(got, data) {
			t.Fatal("reader got other bytes")
		}
	}
	r1.Close()
	r2.Close()
	if m := b.Mem(); m > MinBacklog*3 {
		t.Fatalf("mem %d after readers left", m)
	}
}

// Big writes are split into blocks of at most max(16 KB, size/16), so a
// replica that read everything holds little (Redis's #11905).
func TestBufferBigWriteSplit(t *testing.T) {
	b := NewBuffer(0, MinBacklog)
	r := b.Reader()
	b.Write(make([]byte, 256*1024))
	buf := make([]byte, 300*1024)
	if n := r.Read(buf); n != 256*1024 {
		t.Fatalf("read %d", n)
	}
	if m := r.Mem(); m > BlockMin+blockOverhead {
		t.Fatalf("reader mem %d after reading everything", m)
	}
}

// A reader made at the end of a full block, or of an empty buffer, gets
// the next bytes written.
func TestBufferReaderAtEnd(t *testing.T) {
	b := NewBuffer(5, MinBacklog)
	r0 := b.Reader()
	b.Write(make([]byte, BlockMin)) // exactly one full block
	r1 := b.Reader()
	if r1.Offset() != 5+BlockMin+1 {
		t.Fatalf("offset %d", r1.Offset())
	}
	b.Write([]byte("hello"))
	buf := make([]byte, 100)
	if n := r1.Read(buf); string(buf[:n]) != "hello" {
		t.Fatalf("r1 read %q", buf[:n])
	}
	if r0.Pending() != BlockMin+5 {
		t.Fatalf("r0 pending %d", r0.Pending())
	}
	r0.Close()
	r1.Close()
}

// Random writes, readers coming and going, psync positions: every reader
// reads exactly the stream from its offset.
func TestBufferRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := NewBuffer(0, 20000)
	var all []byte
	type rd struct {
		r    *Reader
		from int64
		got  []byte
	}
	var rs []*rd
	for step := 0; step < 5000; step++ {
		switch rng.IntN(10) {
		case 0, 1, 2, 3, 4:
			p := make([]byte, rng.IntN(3000))
			for i := range p {
				p[i] = byte(rng.IntN(256))
			}
			all = append(all, p...)
			b.Write(p)
		case 5:
			off := b.First() + int64(rng.IntN(int(b.Histlen()+1)))
			if r := b.ReaderAt(off); r != nil {
				rs = append(rs, &rd{r: r, from: off})
			}
		case 6, 7, 8:
			if len(rs) > 0 {
				x := rs[rng.IntN(len(rs))]
				buf := make([]byte, rng.IntN(9000))
				n := x.r.Read(buf)
				x.got = append(x.got, buf[:n]...)
			}
		case 9:
			if len(rs) > 0 {
				i := rng.IntN(len(rs))
				x := rs[i]
				if !bytes.Equal(x.got, all[x.from-1:x.from-1+int64(len(x.got))]) {
					t.Fatalf("reader from %d got other bytes", x.from)
				}
				x.r.Close()
				rs = append(rs[:i], rs[i+1:]...)
			}
		}
		if b.Histlen() > int64(len(all)) || b.Offset() != int64(len(all)) {
			t.Fatalf("histlen %d offset %d written %d", b.Histlen(), b.Offset(), len(all))
		}
	}
	for _, x := range rs {
		if !bytes.Equal(x.got, all[x.from-1:x.from-1+int64(len(x.got))]) {
			t.Fatalf("reader from %d got other bytes", x.from)
		}
	}
}
