package store

import (
	"sync"
	"testing"
	"time"
)

// lockSpin must exclude like Lock, both when the spin wins the lock and
// when the holder keeps it past lockSpinFor and the waiter parks.
func TestLockSpinExcludes(t *testing.T) {
	for _, hold := range []time.Duration{0, 2 * lockSpinFor} {
		var mu sync.Mutex
		inside, count := 0, 0
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					lockSpin(&mu)
					inside++
					if inside != 1 {
						t.Errorf("hold %v: %d goroutines inside the lock", hold, inside)
					}
					if hold > 0 && i%20 == 0 {
						time.Sleep(hold)
					}
					count++
					inside--
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if count != 800 {
			t.Fatalf("hold %v: count %d, want 800", hold, count)
		}
	}
}
