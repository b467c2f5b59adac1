package rdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// buildFile makes an RDB file with every kind of record.
func buildFile(t *testing.T) []byte {
	t.Helper()
	seq := func(n, size int) func(func([]byte) bool) {
		return func(yield func([]byte) bool) {
			for i := 0; i < n; i++ {
				if !yield([]byte(strconv.Itoa(i) + strings.Repeat("x", size))) {
					return
				}
			}
		}
	}
	b := AppendHeader(nil)
	b = AppendAux(b, "redis-ver", "7.0.15")
	b = AppendAuxInt(b, "repl-offset", 12345)
	b = AppendFunction(b, []byte("#!lua name=lib\nredis.register_function('f', function() return 1 end)"))
	payloads := [][]byte{
		EncodeString([]byte("small")),
		EncodeString(bytes.Repeat([]byte("big"), 100000)),
		EncodeInt(42),
		EncodeList(-2, seq(2000, 50)),
		EncodeSet(3000, seq(3000, 3)),
		EncodeIntset([]int64{1, 2, 3}),
	}
	for db := 0; db < 3; db++ {
		b = AppendSelectDB(b, db, uint64(len(payloads)), 1)
		for i, p := range payloads {
			if i == 1 {
				b = AppendExpireMs(b, 1<<40)
			}
			b = AppendKey(b, p[0], []byte(fmt.Sprintf("k%d:%d", db, i)))
			b = append(b, p[1:len(p)-10]...)
		}
	}
	b = append(b, OpEOF)
	return binary.LittleEndian.AppendUint64(b, CRC64(0, b))
}

type pieces struct {
	data []byte
	rng  *rand.Rand
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(b), 1+p.rng.IntN(5000), len(p.data))
	copy(b, p.data[:n])
	p.data = p.data[n:]
	return n, nil
}

func collect(read func(h *Handler) error) ([]string, error) {
	var out []string
	h := &Handler{
		Aux:      func(k, v []byte) { out = append(out, "aux "+string(k)+"="+string(v)) },
		Function: func(code []byte) error { out = append(out, "fn "+string(code)); return nil },
		Key: func(r *Record) error {
			out = append(out, fmt.Sprintf("key %d %s kind=%d len=%d exp=%d/%v", r.DB, r.Key, r.Value.Kind(), r.Value.Len(), r.Expire, r.HasExpire))
			return nil
		},
	}
	return out, read(h)
}

func TestReadStreamMatchesReadFile(t *testing.T) {
	file := buildFile(t)
	want, err := collect(func(h *Handler) error { return ReadFile(file, true, h) })
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(0); seed < 5; seed++ {
		got, err := collect(func(h *Handler) error {
			return ReadStream(&pieces{data: file, rng: rand.New(rand.NewPCG(seed, 9))}, true, h)
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("seed %d: got\n%s\nwant\n%s", seed, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestReadStreamTruncatedAndCorrupt(t *testing.T) {
	file := buildFile(t)
	for _, cut := range []int{5, 20, len(file) / 2, len(file) - 5} {
		_, err := collect(func(h *Handler) error { return ReadStream(bytes.NewReader(file[:cut]), true, h) })
		if err == nil || !strings.Contains(err.Error(), "Unexpected EOF") {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	bad := append([]byte(nil), file...)
	bad[len(bad)-1] ^= 0xff
	_, err := collect(func(h *Handler) error { return ReadStream(bytes.NewReader(bad), true, h) })
	if err == nil || !strings.Contains(err.Error(), "Wrong RDB checksum") {
		t.Fatalf("bad checksum: %v", err)
	}
}
