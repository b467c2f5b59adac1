package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// TestTableModel drives the hashtable encoding with random inserts,
// updates and deletes (through several grows and shrinks) against a Go map.
func TestTableModel(t *testing.T) {
	h := NewHash()
	h.Convert()
	model := map[string]string{}
	r := rand.New(rand.NewPCG(1, 2))
	for step := 0; step < 60000; step++ {
		k := strconv.Itoa(r.IntN(3000))
		if step > 40000 {
			k = strconv.Itoa(r.IntN(200)) // shrink phase: few live keys
		}
		switch op := r.IntN(10); {
		case op < 5 && step <= 40000:
			v := fmt.Sprint(r.IntN(1 << uint(r.IntN(40))))
			_, had := model[k]
			if added := h.Set([]byte(k), []byte(v), 0, 0); added == had {
				t.Fatalf("step %d: Set(%s) added=%v, model had=%v", step, k, added, had)
			}
			model[k] = v
		default:
			_, had := model[k]
			if h.Delete([]byte(k)) != had {
				t.Fatalf("step %d: Delete(%s) != %v", step, k, had)
			}
			delete(model, k)
		}
		if h.Len() != len(model) {
			t.Fatalf("step %d: len %d, model %d", step, h.Len(), len(model))
		}
		if step%5000 == 0 || step == 59999 {
			for k, v := range model {
				got, ok := h.Get([]byte(k))
				if !ok || string(got) != v {
					t.Fatalf("step %d: Get(%s) = %q,%v want %q", step, k, got, ok, v)
				}
			}
			n := 0
			h.ForEach(func(f, v []byte) bool {
				n++
				if model[string(f)] != string(v) {
					t.Fatalf("ForEach gave %s=%s", f, v)
				}
				return true
			})
			if n != len(model) {
				t.Fatalf("ForEach saw %d of %d", n, len(model))
			}
		}
	}
	if h.Encoding() != "hashtable" {
		t.Fatal(h.Encoding())
	}
	// The table shrank with the population.
	if len(h.tab.slots) > 8*len(model)+tableMinSize {
		t.Fatalf("table of %d slots for %d elements", len(h.tab.slots), len(model))
	}
}

// TestScanGuarantee checks SCAN's contract on the table: every element
// present from the start to the end of a full iteration is returned, while
// other elements are added and removed between steps, forcing the table
// to grow and shrink.
func TestScanGuarantee(t *testing.T) {
	for round := 0; round < 20; round++ {
		r := rand.New(rand.NewPCG(uint64(round), 7))
		s := NewSetFor([]byte("x"))
		for i := 0; i < 500; i++ {
			s.Add([]byte("stable"+strconv.Itoa(i)), 512)
		}
		seen := map[string]int{}
		var cursor uint64
		var live []string
		next := 0
		for steps := 0; ; steps++ {
			cursor = s.Scan(cursor, func(m []byte) { seen[string(m)]++ })
			// Churn: grow by thousands of extra members (the table grows
			// several times), then remove them in random order (it shrinks).
			for j := 0; j < 100; j++ {
				if steps < 30+round {
					m := "churn" + strconv.Itoa(next)
					next++
					s.Add([]byte(m), 512)
					live = append(live, m)
				} else if len(live) > 0 {
					i := r.IntN(len(live))
					s.Remove([]byte(live[i]))
					live[i] = live[len(live)-1]
					live = live[:len(live)-1]
				}
			}
			if cursor == 0 {
				break
			}
			if steps > 1<<16 {
				t.Fatal("scan does not terminate")
			}
		}
		for i := 0; i < 500; i++ {
			if seen["stable"+strconv.Itoa(i)] == 0 {
				t.Fatalf("round %d: stable%d never returned", round, i)
			}
		}
	}
}

// TestScanNoChurnExact checks that without changes a full scan returns
// every element exactly once.
func TestScanNoChurnExact(t *testing.T) {
	h := NewHash()
	for i := 0; i < 5000; i++ {
		h.Set([]byte("f"+strconv.Itoa(i)), []byte("v"), 128, 64)
	}
	seen := map[string]int{}
	var cursor uint64
	for {
		cursor = h.Scan(cursor, func(f, v []byte) { seen[string(f)]++ })
		if cursor == 0 {
			break
		}
	}
	if len(seen) != 5000 {
		t.Fatalf("saw %d", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s seen %d times", k, n)
		}
	}
}

// TestRandomUniform: chi-square check of random picks on both encodings.
func TestRandomUniform(t *testing.T) {
	check := func(name string, n int, pick func() string) {
		counts := map[string]int{}
		draws := n * 200
		for i := 0; i < draws; i++ {
			counts[pick()]++
		}
		if len(counts) != n {
			t.Fatalf("%s: %d distinct of %d", name, len(counts), n)
		}
		exp := float64(draws) / float64(n)
		chi := 0.0
		for _, c := range counts {
			d := float64(c) - exp
			chi += d * d / exp
		}
		// Mean n-1, sd sqrt(2(n-1)); allow 6 sd.
		if limit := float64(n-1) + 6*math.Sqrt(2*float64(n-1)); chi > limit {
			t.Fatalf("%s: chi-square %.1f > %.1f", name, chi, limit)
		}
	}
	small := NewHash()
	big := NewHash()
	for i := 0; i < 100; i++ {
		small.Set([]byte("f"+strconv.Itoa(i)), []byte("v"), 128, 64)
	}
	for i := 0; i < 1000; i++ {
		big.Set([]byte("f"+strconv.Itoa(i)), []byte("v"), 128, 64)
	}
	// Sparse table after deletes: still uniform.
	for i := 0; i < 800; i++ {
		big.Delete([]byte("f" + strconv.Itoa(i)))
	}
	check("listpack", 100, func() string { f, _ := small.Random(); return string(f) })
	check("hashtable", 200, func() string { f, _ := big.Random(); return string(f) })
	is := NewIntSet()
	for i := 0; i < 300; i++ {
		is.Add([]byte(strconv.Itoa(i*7)), 512)
	}
	var tmp [24]byte
	check("intset", 300, func() string { return string(is.Random(tmp[:0])) })
}

// TestListpackOrder: the small encoding keeps insertion order through
// updates (in place) and deletes, as Redis's listpack does.
func TestListpackOrder(t *testing.T) {
	h := NewHash()
	for _, kv := range [][2]string{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"b", "longer value"}, {"a", "9"}} {
		h.Set([]byte(kv[0]), []byte(kv[1]), 128, 64)
	}
	h.Delete([]byte("a"))
	h.Set([]byte("a"), []byte("x"), 128, 64)
	var got []string
	h.ForEach(func(f, v []byte) bool { got = append(got, string(f)+"="+string(v)); return true })
	want := "[b=longer value c=3 a=x]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v want %s", got, want)
	}
	if h.Encoding() != "listpack" || h.Len() != 3 {
		t.Fatal(h.Encoding(), h.Len())
	}
}

// TestHashConversionThresholds: entries past maxEnt or a field/value past
// maxVal convert for good.
func TestHashConversionThresholds(t *testing.T) {
	h := NewHash()
	for i := 0; i < 4; i++ {
		h.Set([]byte{byte('a' + i)}, []byte("v"), 4, 8)
	}
	if h.Encoding() != "listpack" {
		t.Fatal("converted too early")
	}
	h.Set([]byte("e"), []byte("v"), 4, 8)
	if h.Encoding() != "hashtable" {
		t.Fatal("not converted past entries")
	}
	h.Delete([]byte("e"))
	h.Delete([]byte("d"))
	if h.Encoding() != "hashtable" {
		t.Fatal("converted back")
	}
	h2 := NewHash()
	h2.Set([]byte("f"), []byte("12345678"), 4, 8)
	if h2.Encoding() != "listpack" {
		t.Fatal("value of maxVal converted")
	}
	h2.Set([]byte("f"), []byte("123456789"), 4, 8)
	if h2.Encoding() != "hashtable" {
		t.Fatal("value past maxVal did not convert")
	}
	if v, _ := h2.Get([]byte("f")); string(v) != "123456789" {
		t.Fatal(string(v))
	}
	d := h2.Dup()
	d.Set([]byte("f"), []byte("abcdefghi"), 4, 8) // same length: in place
	if v, _ := h2.Get([]byte("f")); string(v) != "123456789" {
		t.Fatal("Dup shares values:", string(v))
	}
}

// memPerElement measures heap bytes per element of a collection of n
// built by fill, with the GC settled before and after.
func memPerElement(n int, fill func() any) float64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	obj := fill()
	runtime.GC()
	runtime.ReadMemStats(&b)
	runtime.KeepAlive(obj)
	return float64(b.HeapAlloc-a.HeapAlloc) / float64(n)
}

// Redis 7.0.15 (jemalloc, 64-bit) bytes per element for the same data,
// from INFO used_memory before/after filling with redis-cli (see
// TestMemoryVsRedis in server for the live comparison): a 1,000,000-field
// hash "field:N" -> "value:N" and a 1,000,000-member set "member:N".
const (
	redisHashBytesPerField = 72.0
	redisSetBytesPerMember = 56.0
)

// TestMemoryFootprint keeps the hashtable encoding within 1.5x of Redis's
// bytes per element for 1M-element collections. Skipped with -short.
func TestMemoryFootprint(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 1M-element collections")
	}
	const n = 1000000
	hb := memPerElement(n, func() any {
		h := NewHash()
		for i := 0; i < n; i++ {
			h.Set([]byte("field:"+strconv.Itoa(i)), []byte("value:"+strconv.Itoa(i)), 128, 64)
		}
		return h
	})
	sb := memPerElement(n, func() any {
		s := NewSetFor([]byte("m"))
		for i := 0; i < n; i++ {
			s.Add([]byte("member:"+strconv.Itoa(i)), 512)
		}
		return s
	})
	t.Logf("hash: %.1f bytes/field (redis %.0f); set: %.1f bytes/member (redis %.0f)", hb, redisHashBytesPerField, sb, redisSetBytesPerMember)
	if hb > 1.5*redisHashBytesPerField {
		t.Errorf("hash uses %.1f bytes per field, over 1.5x Redis", hb)
	}
	if sb > 1.5*redisSetBytesPerMember {
		t.Errorf("set uses %.1f bytes per member, over 1.5x Redis", sb)
	}
}
