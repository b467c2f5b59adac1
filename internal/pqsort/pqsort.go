// Package pqsort is Redis's pqsort.c: Bentley and McIlroy's quicksort
// that skips the partitions outside the range asked for, so that
// GEOSEARCH and GEORADIUS with COUNT sort only what they return, and ties
// come out in the order Redis's do.
package pqsort

// Sort orders a so that positions lo..hi hold what a full sort
// would put there, exactly as Redis's pqsort (Bentley & McIlroy's
// quicksort that skips partitions outside lo..hi) leaves them, so that
// ties come out in the same order.
func Sort[T any](a []T, cmp func(a, b *T) int, lo, hi int) {
	pqsort(a, 0, len(a), cmp, lo, hi)
}

func med3[T any](a []T, i, j, k int, cmp func(a, b *T) int) int {
	if cmp(&a[i], &a[j]) < 0 {
		if cmp(&a[j], &a[k]) < 0 {
			return j
		}
		if cmp(&a[i], &a[k]) < 0 {
			return k
		}
		return i
	}
	if cmp(&a[j], &a[k]) > 0 {
		return j
	}
	if cmp(&a[i], &a[k]) < 0 {
		return i
	}
	return k
}

// vecswap swaps the n elements at i with the n at j.
func vecswap[T any](a []T, i, j, n int) {
	for ; n > 0; n-- {
		a[i], a[j] = a[j], a[i]
		i++
		j++
	}
}

// pqsort sorts the n elements starting at base, skipping sub-arrays that
// do not overlap [lr, rr].
func pqsort[T any](a []T, base, n int, cmp func(a, b *T) int, lr, rr int) {
	for {
		if n < 7 {
			for m := base + 1; m < base+n; m++ {
				for l := m; l > base && cmp(&a[l-1], &a[l]) > 0; l-- {
					a[l], a[l-1] = a[l-1], a[l]
				}
			}
			return
		}
		pm := base + n/2
		if n > 7 {
			pl := base
			pn := base + n - 1
			if n > 40 {
				d := n / 8
				pl = med3(a, pl, pl+d, pl+2*d, cmp)
				pm = med3(a, pm-d, pm, pm+d, cmp)
				pn = med3(a, pn-2*d, pn-d, pn, cmp)
			}
			pm = med3(a, pl, pm, pn, cmp)
		}
		a[base], a[pm] = a[pm], a[base]
		pa, pb := base+1, base+1
		pc, pd := base+n-1, base+n-1
		for {
			for pb <= pc {
				r := cmp(&a[pb], &a[base])
				if r > 0 {
					break
				}
				if r == 0 {
					a[pa], a[pb] = a[pb], a[pa]
					pa++
				}
				pb++
			}
			for pb <= pc {
				r := cmp(&a[pc], &a[base])
				if r < 0 {
					break
				}
				if r == 0 {
					a[pc], a[pd] = a[pd], a[pc]
					pd--
				}
				pc--
			}
			if pb > pc {
				break
			}
			a[pb], a[pc] = a[pc], a[pb]
			pb++
			pc--
		}
		pn := base + n
		r := min(pa-base, pb-pa)
		vecswap(a, base, pb-r, r)
		r = min(pd-pc, pn-pd-1)
		vecswap(a, pb, pn-r, r)
		if r = pb - pa; r > 1 {
			if overlaps(base, r, lr, rr) {
				pqsort(a, base, r, cmp, lr, rr)
			}
		}
		if r = pd - pc; r > 1 {
			base = pn - r
			n = r
			if overlaps(base, n, lr, rr) {
				continue
			}
		}
		return
	}
}

// overlaps reports whether elements [s, s+k) are not entirely before or
// entirely after [lr, rr].
func overlaps(s, k, lr, rr int) bool {
	return !((lr < s && rr < s) || (lr >= s+k && rr >= s+k))
}
