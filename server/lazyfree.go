package server

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/store"
)

// bigFree is the estimated size of the values a DEL or UNLINK drops from
// which the memory is collected in the background.
const bigFree = 1 << 20

// collectState: 0 idle, 1 a collection is scheduled or running, 2 another
// one was asked for meanwhile.
var collectState atomic.Int32

// collectSoon runs a garbage collection in the background shortly after a
// command dropped big values (UNLINK, DEL, FLUSHDB, FLUSHALL), the way
// Redis's lazyfree thread frees them. used_memory falls at once (the
// keyspace counts what it holds), but without it an idle server keeps the
// dropped values' memory (its RSS) until some later allocation triggers a
// cycle. At most one collection a second.
func collectSoon() {
	for {
		switch collectState.Load() {
		case 0:
			if !collectState.CompareAndSwap(0, 1) {
				continue
			}
			go func() {
				for {
					time.Sleep(20 * time.Millisecond)
					runtime.GC()
					time.Sleep(time.Second)
					if collectState.CompareAndSwap(1, 0) {
						return
					}
					collectState.Store(1) // asked again meanwhile: once more
				}
			}()
			return
		case 1:
			if collectState.CompareAndSwap(1, 2) {
				return
			}
		default:
			return
		}
	}
}

// lazyfreeThreshold is Redis's LAZYFREE_THRESHOLD: a value whose free
// effort passes it is freed in the background by UNLINK (and DEL with
// lazyfree-lazy-user-del), and counted in INFO's lazyfreed_objects.
const lazyfreeThreshold = 64

// freeEffort is Redis's lazyfreeGetFreeEffort: about how many
// allocations freeing e takes in Redis's encodings (1 for a string or a
// compact collection).
func freeEffort(e *store.Entry, listFill int) int {
	switch e.Kind() {
	case store.KindList:
		n := e.AsList().Len()
		per := listFill // elements per quicklist node
		if per <= 0 {
			per = (4096 << min(-listFill-1, 4)) / 16 // size-limited nodes of small elements
		}
		return max(1, (n+per-1)/per)
	case store.KindSet:
		if s := e.AsSet(); !s.IsIntset() && objectEncodingOf(e) == "hashtable" {
			return s.Len()
		}
	case store.KindHash:
		if h := e.AsHash(); !h.IsListpack() {
			return h.Len()
		}
	case store.KindZSet:
		if z := e.AsZSet(); !z.Compact() {
			return z.Len()
		}
	case store.KindStream:
		s := e.AsStream()
		effort := int(raxNodes(s))
		if g := s.Groups(); len(g) > 0 {
			effort += len(g) * (1 + len(g[0].PEL()))
		}
		return effort
	}
	return 1
}

// freedSize estimates the memory that deleting e releases: a string's
// length, or some 64 bytes an element of a collection (0 for small
// strings, the fast path). Only its order of magnitude matters.
func freedSize(e *store.Entry) int64 {
	var n int
	switch e.Kind() {
	case store.KindString:
		if e.Len() < bigFree {
			return 0
		}
		return int64(e.Len())
	case store.KindList:
		n = e.AsList().Len()
	case store.KindZSet:
		n = e.AsZSet().Len()
	case store.KindSet:
		n = e.AsSet().Len()
	case store.KindHash:
		n = e.AsHash().Len()
	case store.KindStream:
		n = int(e.AsStream().Len())
	}
	return int64(n) * 64
}
