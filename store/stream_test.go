package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func streamIDs(s *Stream, start, end StreamID, rev bool) []StreamID {
	var out []StreamID
	s.Range(start, end, rev, func(e StreamEntry) bool {
		out = append(out, e.ID())
		return true
	})
	return out
}

// TestStreamModel checks appends, deletes, ranges and trimming against a
// plain sorted slice.
func TestStreamModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := NewStream()
	var model []StreamID
	vals := map[StreamID]string{}
	next := StreamID{1, 0}
	for step := 0; step < 5000; step++ {
		switch op := r.IntN(10); {
		case op < 6:
			next.Seq += uint64(r.IntN(3))
			if r.IntN(4) == 0 {
				next.Ms++
			}
			id := next
			next.Seq++
			v := fmt.Sprint(step)
			kv := [][]byte{[]byte("f"), []byte(v)}
			if r.IntN(3) == 0 {
				kv = [][]byte{[]byte("g"), []byte(v), []byte("h"), []byte("x")}
			}
			s.Append(id, kv, int64(1+r.IntN(8)), 4096)
			model = append(model, id)
			vals[id] = v
		case op < 8 && len(model) > 0:
			i := r.IntN(len(model))
			if !s.Delete(model[i]) {
				t.Fatalf("delete %v failed", model[i])
			}
			if s.Delete(model[i]) {
				t.Fatalf("deleted %v twice", model[i])
			}
			model = append(model[:i], model[i+1:]...)
		case op == 8:
			maxLen := int64(r.IntN(len(model) + 1))
			n := s.Trim(TrimArgs{MaxLen: maxLen})
			if int64(len(model))-maxLen > 0 {
				if n != int64(len(model))-maxLen {
					t.Fatalf("trim removed %d, want %d", n, int64(len(model))-maxLen)
				}
				model = model[len(model)-int(maxLen):]
			} else if n != 0 {
				t.Fatalf("trim removed %d", n)
			}
		default:
			if len(model) > 0 {
				min := model[r.IntN(len(model))]
				n := s.Trim(TrimArgs{ByID: true, MinID: min, Approx: true})
				// Approximate: whole nodes only, never past min.
				k := 0
				for k < len(model) && model[k].Less(min) {
					k++
				}
				if n > int64(k) {
					t.Fatalf("approx minid trim removed %d > %d", n, k)
				}
				model = model[n:]
			}
		}
		if s.Len() != uint64(len(model)) {
			t.Fatalf("step %d: len %d, model %d", step, s.Len(), len(model))
		}
	}
	got := streamIDs(s, StreamID{}, MaxStreamID, false)
	if fmt.Sprint(got) != fmt.Sprint(model) && !(len(got) == 0 && len(model) == 0) {
		t.Fatalf("range differs:\n%v\n%v", got, model)
	}
	rev := streamIDs(s, StreamID{}, MaxStreamID, true)
	for i := range rev {
		if rev[i] != model[len(model)-1-i] {
			t.Fatal("reverse range differs")
		}
	}
	for _, id := range model {
		e, ok := s.Get(id)
		if !ok {
			t.Fatalf("get %v", id)
		}
		var last []byte
		e.Fields(func(f, v []byte) {
			if last == nil {
				last = v
			}
		})
		if string(last) != vals[id] {
			t.Fatalf("value of %v: %s want %s", id, last, vals[id])
		}
	}
	if len(model) > 2 {
		sub := streamIDs(s, model[1], model[len(model)-2], false)
		if len(sub) != len(model)-2 {
			t.Fatalf("sub range %d", len(sub))
		}
	}
}

func TestStreamNodes(t *testing.T) {
	s := NewStream()
	for i := 0; i < 25; i++ {
		s.Append(StreamID{1, uint64(i)}, [][]byte{[]byte("f"), []byte("v")}, 10, 4096)
	}
	if s.NumNodes() != 3 {
		t.Fatalf("nodes %d, want 3", s.NumNodes())
	}
	// Approximate MAXLEN trims whole nodes only.
	if n := s.Trim(TrimArgs{MaxLen: 12, Approx: true}); n != 10 || s.Len() != 15 {
		t.Fatalf("approx trim: %d, len %d", n, s.Len())
	}
	// A node whose last live entry is deleted goes away.
	for i := 20; i < 25; i++ {
		s.Delete(StreamID{1, uint64(i)})
	}
	if s.NumNodes() != 1 {
		t.Fatalf("nodes after deletes %d", s.NumNodes())
	}
	// Byte limit: big values start new nodes.
	b := NewStream()
	big := make([]byte, 3000)
	for i := 0; i < 4; i++ {
		b.Append(StreamID{1, uint64(i)}, [][]byte{[]byte("f"), big}, 100, 4096)
	}
	if b.NumNodes() != 4 {
		t.Fatalf("byte-limited nodes %d", b.NumNodes())
	}
	d := s.Dup()
	d.Append(StreamID{9, 9}, [][]byte{[]byte("a"), []byte("b")}, 10, 4096)
	if d.Len() == s.Len() {
		t.Fatal("Dup shares state")
	}
}

func TestStreamGroupPEL(t *testing.T) {
	s := NewStream()
	g := s.CreateGroup([]byte("g"), StreamID{}, 0)
	if s.CreateGroup([]byte("g"), StreamID{}, 0) != nil {
		t.Fatal("duplicate group")
	}
	a := g.CreateConsumer([]byte("a"), 1)
	b := g.CreateConsumer([]byte("b"), 1)
	for _, seq := range []uint64{5, 1, 3} {
		g.AddPending(&StreamNACK{ID: StreamID{1, seq}, Consumer: a, DeliveryCount: 1})
	}
	if p := g.PEL(); len(p) != 3 || p[0].ID.Seq != 1 || p[2].ID.Seq != 5 {
		t.Fatalf("pel order %v", p)
	}
	g.Assign(g.Pending(StreamID{1, 3}), b)
	if len(a.PEL()) != 2 || len(b.PEL()) != 1 {
		t.Fatal("assign")
	}
	if !g.Ack(StreamID{1, 3}) || g.Ack(StreamID{1, 3}) || len(b.PEL()) != 0 {
		t.Fatal("ack")
	}
	if n := g.DeleteConsumer(a); n != 2 || len(g.PEL()) != 0 || g.Consumer([]byte("a")) != nil {
		t.Fatal("delete consumer")
	}
}
