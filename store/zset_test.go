package store

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestZSetAgainstModel runs random inserts, deletes, score changes, pops
// from either end and range deletions (spanning many leaves) on a ZSet and
// on a sorted slice, and checks order, ranks, scores and the leaf index
// after each step.
func TestZSetAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	z := NewZSet()
	var model []ZItem // sorted by (score, member)
	less := func(a, b ZItem) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		case a.Member < b.Member:
			return -1
		case a.Member > b.Member:
			return 1
		}
		return 0
	}
	find := func(m string) int {
		for i, it := range model {
			if it.Member == m {
				return i
			}
		}
		return -1
	}
	check := func(step int, op string) {
		t.Helper()
		if z.Len() != len(model) {
			t.Fatalf("step %d (%s): Len %d, model %d", step, op, z.Len(), len(model))
		}
		i := 0
		z.Iter(0, false, func(it ZItem) bool {
			if it != model[i] {
				t.Fatalf("step %d (%s): rank %d is %v, model %v", step, op, i, it, model[i])
			}
			i++
			return true
		})
		if i != len(model) {
			t.Fatalf("step %d (%s): iterated %d of %d", step, op, i, len(model))
		}
		for k := 0; k < 5 && len(model) > 0; k++ {
			r := rng.IntN(len(model))
			if got := z.At(r); got != model[r] {
				t.Fatalf("step %d (%s): At(%d) = %v, model %v", step, op, r, got, model[r])
			}
			if got, ok := z.Rank([]byte(model[r].Member)); !ok || got != r {
				t.Fatalf("step %d (%s): Rank(%s) = %d %v, want %d", step, op, model[r].Member, got, ok, r)
			}
		}
	}
	maxLeaves := 0
	for step := 0; step < 6000; step++ {
		var op string
		burst := 1
		if len(model) < 300 {
			burst = 1500 // grow past many leaves again
		}
		switch p := rng.IntN(100); {
		case p < 70 || len(model) < 10:
			op = "insert"
			for range burst - 1 {
				m := "m" + strconv.Itoa(rng.IntN(50000))
				if find(m) < 0 {
					score := float64(rng.IntN(300))
					z.Insert([]byte(m), score)
					it := ZItem{m, score}
					pos, _ := slices.BinarySearchFunc(model, it, less)
					model = slices.Insert(model, pos, it)
				}
			}
			m := "m" + strconv.Itoa(rng.IntN(50000))
			score := float64(rng.IntN(300))
			if i := find(m); i >= 0 {
				z.SetScore([]byte(m), model[i].Score, score)
				model = slices.Delete(model, i, i+1)
			} else {
				z.Insert([]byte(m), score)
			}
			it := ZItem{m, score}
			pos, _ := slices.BinarySearchFunc(model, it, less)
			model = slices.Insert(model, pos, it)
			if len(model) > 200 && z.Compact() {
				z.Convert()
			}
		case p < 80:
			op = "delete"
			i := rng.IntN(len(model))
			if !z.Delete([]byte(model[i].Member)) {
				t.Fatalf("step %d: Delete(%s) found nothing", step, model[i].Member)
			}
			model = slices.Delete(model, i, i+1)
		case p < 88:
			op = "pop min"
			z.DeleteRange(0, 0, nil)
			model = model[1:]
		case p < 96:
			op = "pop max"
			z.DeleteRange(len(model)-1, len(model)-1, nil)
			model = model[:len(model)-1]
		default:
			op = "delete range"
			a := rng.IntN(len(model))
			b := a + rng.IntN(min(len(model)-a, 700))
			var got []ZItem
			z.DeleteRange(a, b, func(it ZItem) { got = append(got, it) })
			if !slices.Equal(got, model[a:b+1]) {
				t.Fatalf("step %d: DeleteRange(%d, %d) removed %d items, not the model's %d", step, a, b, len(got), b-a+1)
			}
			model = slices.Delete(model, a, b+1)
			for _, it := range got {
				if _, ok := z.Score([]byte(it.Member)); ok {
					t.Fatalf("step %d: %s still has a score after DeleteRange", step, it.Member)
				}
			}
		}
		check(step, op)
		maxLeaves = max(maxLeaves, len(z.leaves))
	}
	if maxLeaves < 8 {
		t.Fatalf("the set never grew past %d leaves: the test does not exercise multi-leaf ranges", maxLeaves)
	}
}
