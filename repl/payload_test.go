package repl

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// oneByteReader hands out its data in small random pieces.
type pieceReader struct {
	data []byte
	rng  *rand.Rand
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), 1+r.rng.IntN(100), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func TestPayloadWithMark(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{0, 1, 39, 40, 41, 1000, 100000} {
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = byte(rng.IntN(256))
		}
		mark := NewEOFMark()
		head := AppendPayloadHeader(nil, -1, mark)
		stream := append(append(append([]byte{'\n'}, head...), payload...), mark...)
		br := bufio.NewReader(&pieceReader{data: stream, rng: rng})
		br.ReadString('\n')
		line, _ := br.ReadString('\n')
		h, err := ParsePayloadHeader(line[:len(line)-2])
		if err != nil || h.Size != -1 || !bytes.Equal(h.Mark, mark) {
			t.Fatalf("header %+v %v", h, err)
		}
		got, err := io.ReadAll(NewPayloadReader(br, h))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("size %d: got %d bytes", size, len(got))
		}
	}
}

func TestPayloadWithLength(t *testing.T) {
	payload := bytes.Repeat([]byte("abc"), 5000)
	stream := append(AppendPayloadHeader(nil, int64(len(payload)), nil), payload...)
	stream = append(stream, "*1\r\n$4\r\nPING\r\n"...)
	br := bufio.NewReader(&pieceReader{data: stream, rng: rand.New(rand.NewPCG(1, 1))})
	line, _ := br.ReadString('\n')
	h, err := ParsePayloadHeader(line[:len(line)-2])
	if err != nil || h.Size != int64(len(payload)) {
		t.Fatalf("header %+v %v", h, err)
	}
	got, err := io.ReadAll(NewPayloadReader(br, h))
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("got %d bytes, %v", len(got), err)
	}
	rest, _ := io.ReadAll(br)
	if string(rest) != "*1\r\n$4\r\nPING\r\n" {
		t.Fatalf("rest %q", rest)
	}
}

func TestPayloadShort(t *testing.T) {
	br := bufio.NewReader(bytes.NewReader([]byte("abc")))
	_, err := io.ReadAll(NewPayloadReader(br, PayloadHeader{Size: 10}))
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("err %v", err)
	}
	br = bufio.NewReader(bytes.NewReader([]byte("abcdef")))
	_, err = io.ReadAll(NewPayloadReader(br, PayloadHeader{Size: -1, Mark: NewEOFMark()}))
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("err %v", err)
	}
}

func TestPayloadHeaderErrors(t *testing.T) {
	if _, err := ParsePayloadHeader("-ERR no"); err != ErrPayloadError {
		t.Fatal(err)
	}
	if _, err := ParsePayloadHeader("+OK"); err == nil {
		t.Fatal("accepted +OK")
	}
	if _, err := ParsePayloadHeader("$x"); err == nil {
		t.Fatal("accepted $x")
	}
}

type covers struct{ lo, hi int64 }

func (c covers) Covers(off int64) bool { return off >= c.lo && off <= c.hi }

func TestPsyncDecision(t *testing.T) {
	h := History{ID: "a", ID2: "b", Offset2: 100, Backlog: covers{50, 200}, Offset: 199}
	cases := []struct {
		id   string
		off  int64
		cont bool
	}{
		{"a", 50, true}, {"a", 200, true}, {"a", 49, false}, {"a", 201, false},
		{"b", 100, true}, {"b", 101, false}, {"c", 60, false}, {"?", -1, false},
	}
	for _, c := range cases {
		if d := Psync(h, c.id, c.off, "r"); d.Continue != c.cont {
			t.Errorf("%s %d: continue=%v (%s)", c.id, c.off, d.Continue, d.Log)
		}
	}
	h.Backlog = nil
	if Psync(h, "a", 60, "r").Continue {
		t.Error("continued without a backlog")
	}
	if d := Psync(History{ID: "a", Backlog: covers{1, 10}, Offset: 9}, "a", 20, "r"); d.Warn == "" {
		t.Error("no warning for an offset past the master's")
	}
}

func TestParsePsyncReply(t *testing.T) {
	id := NewID()
	r := ParsePsyncReply("+FULLRESYNC " + id + " 1234")
	if r.Kind != PsyncFull || r.ID != id || r.Offset != 1234 {
		t.Fatalf("%+v", r)
	}
	if r := ParsePsyncReply("+CONTINUE " + id); r.Kind != PsyncContinue || r.ID != id {
		t.Fatalf("%+v", r)
	}
	if r := ParsePsyncReply("+CONTINUE"); r.Kind != PsyncContinue || r.ID != "" {
		t.Fatalf("%+v", r)
	}
	if r := ParsePsyncReply("-NOMASTERLINK Can't SYNC"); r.Kind != PsyncTryLater {
		t.Fatalf("%+v", r)
	}
	if r := ParsePsyncReply("-ERR unknown command"); r.Kind != PsyncError {
		t.Fatalf("%+v", r)
	}
}
