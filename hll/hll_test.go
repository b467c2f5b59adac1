package hll

import (
	"fmt"
	"math"
	"testing"
)

func TestValid(t *testing.T) {
	dense := make([]byte, DenseSize)
	copy(dense, "HYLL")
	cases := []struct {
		name string
		h    []byte
		want bool
	}{
		{"new sparse", New(), true},
		{"dense", dense, true},
		{"short", []byte("HYLL"), false},
		{"magic", append([]byte("HYLX"), New()[4:]...), false},
		{"encoding 2", append([]byte("HYLL\x02"), New()[5:]...), false},
		{"dense of the wrong size", dense[:DenseSize-1], false},
	}
	for _, c := range cases {
		if got := Valid(c.h); got != c.want {
			t.Errorf("%s: Valid = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestNewIsEmpty(t *testing.T) {
	h := New()
	if got := DecodeSparse(h); got != "Z:16384" {
		t.Errorf("DecodeSparse(New()) = %q", got)
	}
	var histo [64]int
	if Histogram(h, &histo) {
		t.Fatal("a new HLL is invalid")
	}
	if n := Estimate(&histo); n != 0 {
		t.Errorf("estimate of an empty HLL = %d", n)
	}
}

// Counts within Redis's standard error, sparse and dense agreeing, and
// the sparse form promoted to dense past maxBytes.
func TestAddEstimate(t *testing.T) {
	for _, n := range []int{10, 100, 1000, 20000} {
		sparse := New()
		dense := ToDense(New())
		if dense == nil || dense[4] != Dense || !Valid(dense) {
			t.Fatal("ToDense(New()) is not a valid dense HLL")
		}
		for i := range n {
			ele := []byte(fmt.Sprintf("element:%d", i))
			var r int
			sparse, r = Add(sparse, ele, 3000)
			if r < 0 {
				t.Fatalf("n=%d: Add reported a corrupt HLL", n)
			}
			dense, _ = Add(dense, ele, 3000)
		}
		var hs, hd [64]int
		if Histogram(sparse, &hs) || Histogram(dense, &hd) {
			t.Fatalf("n=%d: invalid histogram", n)
		}
		got, gotDense := Estimate(&hs), Estimate(&hd)
		if got != gotDense {
			t.Errorf("n=%d: sparse estimate %d, dense %d", n, got, gotDense)
		}
		if err := math.Abs(float64(got)-float64(n)) / float64(n); err > 0.05 {
			t.Errorf("n=%d: estimate %d (error %.3f)", n, got, err)
		}
		if n == 20000 && sparse[4] != Dense {
			t.Errorf("n=%d: still sparse at %d bytes (max 3000)", n, len(sparse))
		}
	}
}

func TestMerge(t *testing.T) {
	a, b := New(), New()
	for i := range 500 {
		a, _ = Add(a, []byte(fmt.Sprintf("a:%d", i)), 3000)
		b, _ = Add(b, []byte(fmt.Sprintf("b:%d", i)), 3000)
	}
	max := make([]uint8, Registers)
	if !Merge(max, a) || !Merge(max, b) {
		t.Fatal("Merge reported a corrupt HLL")
	}
	var histo [64]int
	for _, v := range max {
		histo[v]++
	}
	if n := Estimate(&histo); n < 950 || n > 1050 {
		t.Errorf("union of 500 and 500 distinct elements: %d", n)
	}
	if Merge(max, New()[:HdrSize+1]) {
		t.Error("Merge accepted a truncated sparse HLL")
	}
}

func TestSelfTest(t *testing.T) {
	if testing.Short() {
		t.Skip("ten million additions")
	}
	if err := SelfTest(3000); err != nil {
		t.Fatal(err)
	}
}
