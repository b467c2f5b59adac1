package server

import (
	"testing"
	"unsafe"
)

// A loop's spare big query buffer: released buffers become the spare only
// at the next iteration, the spare serves an argument it fits within an
// eighth, with the argument's exact capacity, and goes after
// spareQbufKeep unused.
func TestSpareQueryBuffer(t *testing.T) {
	l := &loop{}
	same := func(a, b []byte) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }
	small := make([]byte, 1000)
	l.releaseQbuf(small)
	if l.releasedQbuf != nil {
		t.Fatal("a small buffer was kept")
	}
	big := make([]byte, 10, 40000)
	l.releaseQbuf(big)
	if b := l.bigQueryBuf(40000); same(b, big) {
		t.Fatal("a buffer released in this iteration was reused")
	}
	l.promoteQbuf(1000)
	if b := l.bigQueryBuf(30000); same(b, big) || l.spareQbuf == nil {
		t.Fatal("the spare served an argument a quarter smaller")
	}
	b := l.bigQueryBuf(36000)
	if !same(b, big) || len(b) != 0 || cap(b) != 36000 || l.spareQbuf != nil {
		t.Fatalf("the spare did not serve an argument it fits: len %d cap %d", len(b), cap(b))
	}
	if b := l.bigQueryBuf(36000); same(b, big) {
		t.Fatal("the spare served twice")
	}
	l.releaseQbuf(b)
	l.promoteQbuf(2000)
	l.promoteQbuf(2000 + spareQbufKeep)
	if l.spareQbuf == nil {
		t.Fatal("the spare went before spareQbufKeep")
	}
	l.promoteQbuf(2001 + spareQbufKeep)
	if l.spareQbuf != nil {
		t.Fatal("the spare stayed after spareQbufKeep unused")
	}
}

// A loop's write buffer grown by a big reply stays for the next one, and
// goes after spareQbufKeep without one; one of keptWbuf bytes or less
// stays.
func TestKeptWriteBuffer(t *testing.T) {
	l := &loop{}
	l.wbuf = make([]byte, 0, keptWbuf)
	l.keepWbuf(1000)
	l.keepWbuf(1000 + 10*spareQbufKeep)
	if cap(l.wbuf) != keptWbuf {
		t.Fatal("a write buffer of keptWbuf bytes was dropped")
	}
	l.wbuf, l.wbufBig = make([]byte, 0, 1<<20), true
	l.keepWbuf(2000)
	l.keepWbuf(2000 + spareQbufKeep)
	if cap(l.wbuf) != 1<<20 {
		t.Fatal("a big write buffer went before spareQbufKeep")
	}
	l.wbufBig = true // another big reply
	l.keepWbuf(3000 + spareQbufKeep)
	l.keepWbuf(3000 + 2*spareQbufKeep)
	if cap(l.wbuf) != 1<<20 {
		t.Fatal("a big write buffer went though a big reply used it")
	}
	l.keepWbuf(3001 + 2*spareQbufKeep)
	if l.wbuf != nil {
		t.Fatal("a big write buffer stayed after spareQbufKeep without a big reply")
	}
}
