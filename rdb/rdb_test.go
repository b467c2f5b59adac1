package rdb

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestCRC64(t *testing.T) {
	// The check value of CRC-64/Jones as Redis's crc64.c tests it.
	if got := crc64(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64 = %#x", got)
	}
	// A payload redis-server 7.0 wrote for DUMP of "bar".
	if err := Verify([]byte("\x00\x03bar\n\x00\xe6\xbeI`\xeef\xfd\x17")); err != nil {
		t.Fatal(err)
	}
	if got := EncodeString([]byte("bar")); string(got) != "\x00\x03bar\n\x00\xe6\xbeI`\xeef\xfd\x17" {
		t.Fatalf("EncodeString(bar) = %q", got)
	}
}

// crc64 eight bytes at a time agrees with the polynomial's definition
// computed bit by bit, at every length and alignment, and in pieces.
func TestCRC64Slicing(t *testing.T) {
	bitwise := func(crc uint64, p []byte) uint64 {
		for _, b := range p {
			crc ^= uint64(b)
			for range 8 {
				if crc&1 != 0 {
					crc = crc>>1 ^ crcPolyReflected
				} else {
					crc >>= 1
				}
			}
		}
		return crc
	}
	r := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 600)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for off := 0; off < 9; off++ {
		for n := 0; n+off <= len(buf); n += 1 + n/8 {
			p := buf[off : off+n]
			want := bitwise(0, p)
			if got := crc64(0, p); got != want {
				t.Fatalf("crc64 of %d bytes at %d = %#x, want %#x", n, off, got, want)
			}
			cut := r.IntN(n + 1)
			if got := crc64(crc64(0, p[:cut]), p[cut:]); got != want {
				t.Fatalf("crc64 of %d bytes cut at %d = %#x, want %#x", n, cut, got, want)
			}
		}
	}
}

func BenchmarkCRC64(b *testing.B) {
	p := make([]byte, 64<<10)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		crc64(0, p)
	}
}

func TestLZFRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		n := r.IntN(5000)
		alpha := 1 + r.IntN(30)
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + r.IntN(alpha))
		}
		c := lzfCompress(b, len(b)+len(b)/16+64)
		if n == 0 {
			if c != nil {
				t.Fatal("compressed empty input")
			}
			continue
		}
		d, err := lzfDecompress(c, n)
		if err != nil || !bytes.Equal(d, b) {
			t.Fatalf("round trip of %d bytes (alphabet %d): %v", n, alpha, err)
		}
		if _, err := lzfDecompress(c, n+1); err == nil {
			t.Fatal("wrong length accepted")
		}
		if n > 1 {
			if _, err := lzfDecompress(c[:len(c)-1], n); err == nil {
				t.Fatal("truncated stream accepted")
			}
		}
	}
	// Too small an output buffer: no result.
	if c := lzfCompress([]byte("abcdefghijklmnopqrstuvwxyz"), 22); c != nil {
		t.Fatalf("incompressible input compressed to %q", c)
	}
	// A back reference before the start of the output is invalid.
	if _, err := lzfDecompress([]byte{0x20, 0x05}, 3); err == nil {
		t.Fatal("reference before start accepted")
	}
}

func TestStringEncodings(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"0", "\xc0\x00"},
		{"-1", "\xc0\xff"},
		{"128", "\xc1\x80\x00"},
		{"-32769", "\xc2\xff\x7f\xff\xff"},
		{"2147483648", "\x0a2147483648"},
		{"007", "\x03007"},
		{"", "\x00"},
		{strings.Repeat("x", 64), "\x40\x40" + strings.Repeat("x", 64)[:0]},
	} {
		got := AppendString(nil, []byte(tc.in))
		if tc.in == strings.Repeat("x", 64) {
			// compressible: LZF form
			if got[0] != 0xC3 {
				t.Errorf("%q not compressed: %q", tc.in, got)
			}
			continue
		}
		if string(got) != tc.want {
			t.Errorf("AppendString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, n := range []uint64{0, 63, 64, 16383, 16384, math.MaxUint32, math.MaxUint32 + 1} {
		r := reader{b: AppendLen(nil, n)}
		got, enc, ok := r.length()
		if !ok || enc || got != n || r.left() != 0 {
			t.Errorf("length %d: got %d %v %v", n, got, enc, ok)
		}
	}
}

func TestRoundTrips(t *testing.T) {
	seq := func(vals ...string) func(func([]byte) bool) {
		return func(yield func([]byte) bool) {
			for _, v := range vals {
				if !yield([]byte(v)) {
					return
				}
			}
		}
	}
	var long []string
	for i := range 5000 {
		long = append(long, strconv.Itoa(i*37-900), strings.Repeat("v", i%300))
	}
	check := func(name string, p []byte, kind Kind, want []string) {
		t.Helper()
		v, err := Decode(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v.Kind() != kind {
			t.Fatalf("%s: kind %d", name, v.Kind())
		}
		var got []string
		switch {
		case v.Ints != nil:
			for _, n := range v.Ints {
				got = append(got, strconv.FormatInt(n, 10))
			}
		case v.Fields != nil:
			for i := range v.Fields {
				got = append(got, string(v.Fields[i]), string(v.Values[i]))
			}
		case v.Scores != nil:
			for i := range v.Elems {
				got = append(got, string(v.Elems[i]), strconv.FormatFloat(v.Scores[i], 'g', -1, 64))
			}
		case kind == KindString:
			got = []string{string(v.Str)}
		default:
			for _, e := range v.Elems {
				got = append(got, string(e))
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: got %d items %.200q, want %d %.200q", name, len(got), got, len(want), want)
		}
	}
	check("string", EncodeString([]byte(strings.Repeat("abc", 100))), KindString, []string{strings.Repeat("abc", 100)})
	check("int", EncodeInt(-1<<40), KindString, []string{"-1099511627776"})
	check("list", EncodeList(-2, seq(long...)), KindList, long)
	check("list fill 3", EncodeList(3, seq(long[:100]...)), KindList, long[:100])
	check("set", EncodeSet(len(long), seq(long...)), KindSet, long)
	check("intset", EncodeIntset([]int64{-5, 1, 1 << 40}), KindSet, []string{"-5", "1", "1099511627776"})
	pairs := func(kv []string) func(func([]byte, []byte) bool) {
		return func(yield func([]byte, []byte) bool) {
			for i := 0; i < len(kv); i += 2 {
				if !yield([]byte(kv[i]), []byte(kv[i+1])) {
					return
				}
			}
		}
	}
	check("hash listpack", EncodeHashListpack(pairs(long[:200])), KindHash, long[:200])
	check("hash", EncodeHash(len(long)/2, pairs(long)), KindHash, long)
	scores := []string{"a", "1", "b", "2.5", "c", "-inf", "d", "+Inf", "e", "1e+300", "f", "-4096", "g", "4611686018427387904"}
	zitems := func(yield func([]byte, float64) bool) {
		for i := 0; i < len(scores); i += 2 {
			f, _ := strconv.ParseFloat(scores[i+1], 64)
			if !yield([]byte(scores[i]), f) {
				return
			}
		}
	}
	var want []string
	for i := 0; i < len(scores); i += 2 {
		f, _ := strconv.ParseFloat(scores[i+1], 64)
		want = append(want, scores[i], strconv.FormatFloat(f, 'g', -1, 64))
	}
	check("zset listpack", EncodeZSetListpack(zitems), KindZSet, want)
	check("zset", EncodeZSet(len(scores)/2, zitems), KindZSet, want)
}

func TestListpackIntegers(t *testing.T) {
	vals := []int64{0, 127, 128, -1, -4096, 4095, 4096, -4097, 32767, -32768, 32768, 1<<23 - 1, -1 << 23, 1 << 23,
		math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MaxInt64, math.MinInt64}
	var lp Listpack
	for _, v := range vals {
		lp.AppendInt(v)
	}
	lp.Append([]byte("-0"))
	lp.Append(bytes.Repeat([]byte("s"), 5000))
	elems, err := parseListpack(lp.Bytes(), false)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if !elems[i].isInt || elems[i].v != v {
			t.Fatalf("entry %d: %+v, want %d", i, elems[i], v)
		}
	}
	if string(elems[len(vals)].bytes()) != "-0" || len(elems[len(vals)+1].s) != 5000 {
		t.Fatal("string entries")
	}
}

// Every prefix and every single-byte change of valid payloads is either
// decoded or refused with an error.
func TestDecodeCorrupt(t *testing.T) {
	payloads := corpus()
	for _, p := range payloads {
		body := p[:len(p)-10]
		for i := range len(body) {
			// A truncated value may still parse when the footer bytes
			// complete it (as in Redis); it must never panic.
			decodeEveryWay(t, Finish(append([]byte(nil), body[:i]...)))
		}
		for i := range len(body) {
			for _, x := range []byte{0x00, 0xFF, 0x80, 0x01, body[i] ^ 0x40} {
				b := append([]byte(nil), body...)
				b[i] = x
				decodeEveryWay(t, Finish(b))
			}
		}
	}
	if _, err := Decode([]byte("\x00\x03bar\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")); !errors.Is(err, ErrChecksum) {
		t.Fatalf("bad checksum: %v", err)
	}
}

// decodeEveryWay decodes p with each set of options; what decodes must
// build an entry (or be refused by it) and dump again without panicking,
// and what is refused must say why as RESTORE reports it.
func decodeEveryWay(t *testing.T, p []byte) {
	for _, o := range []DecodeOptions{{}, {Shallow: true}, {Sanitize: true}} {
		v, err := DecodeWith(p, o)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrEmptyKey) {
				t.Fatalf("%+v: error %v is none of RESTORE's", o, err)
			}
			continue
		}
		if e := NewEntry(v, Limits{ListFill: -2, SetMaxIntset: 512, ZSetMaxEntries: 128, ZSetMaxValue: 64, HashMaxEntries: 128, HashMaxValue: 64}); e != nil {
			Dump(e, -2)
		}
	}
}

func corpus() [][]byte {
	seq := func(vals ...string) func(func([]byte) bool) {
		return func(yield func([]byte) bool) {
			for _, v := range vals {
				if !yield([]byte(v)) {
					return
				}
			}
		}
	}
	kv := func(yield func([]byte, []byte) bool) {
		yield([]byte("f"), []byte("v"))
		yield([]byte("1"), []byte(strings.Repeat("long value ", 10)))
	}
	z := func(yield func([]byte, float64) bool) {
		yield([]byte("a"), 1.5)
		yield([]byte("b"), 2)
	}
	return [][]byte{
		Dump(sampleStream(), -2),
		EncodeString([]byte("hello")),
		EncodeString([]byte(strings.Repeat("compress me ", 20))),
		EncodeInt(1 << 33),
		EncodeList(-2, seq("a", "1", strings.Repeat("x", 100))),
		EncodeSet(2, seq("a", "b")),
		EncodeIntset([]int64{1, 2, 70000}),
		EncodeHashListpack(kv),
		EncodeHash(2, kv),
		EncodeZSetListpack(z),
		EncodeZSet(2, z),
		// A ziplist list ("a", 5, 1000) and a zipmap hash (f => v).
		Finish(AppendString([]byte{TypeListZiplist}, []byte("\x14\x00\x00\x00\x0f\x00\x00\x00\x03\x00\x00\x01a\x03\xf6\x02\xc0\xe8\x03\xff"))),
		Finish(AppendString([]byte{TypeHashZipmap}, []byte("\x01\x01f\x01\x00v\xff"))),
	}
}

func TestOldEncodings(t *testing.T) {
	c := corpus()
	v, err := Decode(c[len(c)-2])
	if err != nil || len(v.Elems) != 3 || string(v.Elems[0]) != "a" || string(v.Elems[1]) != "5" || string(v.Elems[2]) != "1000" {
		t.Fatalf("ziplist: %v %+v", err, v)
	}
	v, err = Decode(c[len(c)-1])
	if err != nil || len(v.Fields) != 1 || string(v.Fields[0]) != "f" || string(v.Values[0]) != "v" {
		t.Fatalf("zipmap: %v %+v", err, v)
	}
}

func FuzzDecode(f *testing.F) {
	for _, p := range corpus() {
		f.Add(p[:len(p)-10])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p := Finish(append([]byte(nil), body...))
		decodeEveryWay(t, p)
		v, err := Decode(p)
		if err != nil {
			return
		}
		// Anything decoded must hold no more than the payload can expand to.
		total := 0
		for _, e := range v.Elems {
			total += len(e)
		}
		for i := range v.Fields {
			total += len(v.Fields[i]) + len(v.Values[i])
		}
		if total+len(v.Str) > len(p)*lzfMaxRatio+64*(v.Len()+1) {
			t.Fatalf("decoded %d bytes from a %d-byte payload", total, len(p))
		}
	})
}
