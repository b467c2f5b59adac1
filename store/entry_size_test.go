package store

import (
	"testing"
	"unsafe"
)

// Every key pays for one Entry: 1,000,000 keys of 64-byte values must stay
// within 1.2x of Redis's RSS, so the entry keeps to Go's 24-byte
// size class. The expiry lives in the shard's vol map, as Redis keeps it in
// its expires dict.
func TestEntrySize(t *testing.T) {
	if got := unsafe.Sizeof(Entry{}); got != 24 {
		t.Fatalf("Entry is %d bytes, want 24", got)
	}
}
