package store

import (
	"runtime"
	"sync"
	"time"
)

// lockSpin locks mu, first trying for a short while without sleeping.
//
// The event loops are goroutines locked to their own threads, and a
// command holds a shard's lock for a microsecond or so. When every loop's
// clients hit one hot key, a sync.Mutex that finds the lock taken spins
// only briefly, then parks the goroutine, which puts the loop's thread to
// sleep in the kernel, and unlocking wakes it again: tens of microseconds
// of wake-up for a wait of about one. So the loops try for up to
// lockSpinFor first and park only after that. With one processor the
// holder cannot run while another goroutine spins, so there it parks at
// once.
func lockSpin(mu *sync.Mutex) {
	if mu.TryLock() {
		return
	}
	if runtime.GOMAXPROCS(0) == 1 {
		mu.Lock()
		return
	}
	var start time.Time
	for i := 1; ; i++ {
		for range 32 {
			if mu.TryLock() {
				return
			}
		}
		if i&15 == 0 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > lockSpinFor {
				mu.Lock()
				return
			}
		}
	}
}

const lockSpinFor = 20 * time.Microsecond
