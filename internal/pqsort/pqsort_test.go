package pqsort

import (
	"math/rand"
	"sort"
	"testing"
)

// Positions lo..hi hold what a full sort puts there, for every size around
// the insertion-sort and median-of-nine thresholds.
func TestSortRange(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cmp := func(a, b *int) int { return *a - *b }
	for _, n := range []int{0, 1, 2, 6, 7, 8, 40, 41, 100, 1000} {
		for trial := 0; trial < 20; trial++ {
			a := make([]int, n)
			for i := range a {
				a[i] = rng.Intn(n/2 + 1) // ties
			}
			want := append([]int(nil), a...)
			sort.Ints(want)
			if n == 0 {
				Sort(a, cmp, 0, -1)
				continue
			}
			lo := rng.Intn(n)
			hi := lo + rng.Intn(n-lo)
			Sort(a, cmp, lo, hi)
			for i := lo; i <= hi; i++ {
				if a[i] != want[i] {
					t.Fatalf("n=%d [%d,%d]: position %d holds %d, a full sort has %d", n, lo, hi, i, a[i], want[i])
				}
			}
			if lo == 0 && hi == n-1 && !sort.IntsAreSorted(a) {
				t.Fatalf("n=%d: the whole range is not sorted", n)
			}
		}
	}
}
