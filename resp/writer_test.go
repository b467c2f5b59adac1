package resp

import (
	"bufio"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The expected bytes follow the RESP2/RESP3 specifications and Redis
// 7.0.15's networking.c (addReplyDouble, addReplyNull, addReplyBool, ...).

func TestWriterTypes(t *testing.T) {
	type tc struct {
		name   string
		write  func(w *Writer)
		r2, r3 string
	}
	cases := []tc{
		{"ok", func(w *Writer) { w.OK() }, "+OK\r\n", "+OK\r\n"},
		{"simple", func(w *Writer) { w.Simple("PONG") }, "+PONG\r\n", "+PONG\r\n"},
		{"error", func(w *Writer) { w.Error("ERR syntax error") }, "-ERR syntax error\r\n", "-ERR syntax error\r\n"},
		{"error code", func(w *Writer) { w.Error("WRONGTYPE Operation against a key holding the wrong kind of value") },
			"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
			"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		// Newlines would break the protocol: Redis turns them into spaces.
		{"error newlines", func(w *Writer) { w.Error("ERR a\r\nb\nc") }, "-ERR a  b c\r\n", "-ERR a  b c\r\n"},
		// Documented: a missing leading '-' is added, a present one kept.
		{"error with dash", func(w *Writer) { w.Error("-NOSCRIPT No matching script") }, "-NOSCRIPT No matching script\r\n", "-NOSCRIPT No matching script\r\n"},
		{"int", func(w *Writer) { w.Int(42) }, ":42\r\n", ":42\r\n"},
		{"int negative", func(w *Writer) { w.Int(-1) }, ":-1\r\n", ":-1\r\n"},
		{"int min", func(w *Writer) { w.Int(math.MinInt64) }, ":-9223372036854775808\r\n", ":-9223372036854775808\r\n"},
		{"int max", func(w *Writer) { w.Int(math.MaxInt64) }, ":9223372036854775807\r\n", ":9223372036854775807\r\n"},
		{"bulk", func(w *Writer) { w.Bulk([]byte("hello")) }, "$5\r\nhello\r\n", "$5\r\nhello\r\n"},
		{"bulk empty", func(w *Writer) { w.Bulk(nil) }, "$0\r\n\r\n", "$0\r\n\r\n"},
		{"bulk binary", func(w *Writer) { w.Bulk([]byte("a\r\n\x00")) }, "$4\r\na\r\n\x00\r\n", "$4\r\na\r\n\x00\r\n"},
		{"bulk string", func(w *Writer) { w.BulkString("héllo") }, "$6\r\nhéllo\r\n", "$6\r\nhéllo\r\n"},
		{"bulk int", func(w *Writer) { w.BulkInt(-1234) }, "$5\r\n-1234\r\n", "$5\r\n-1234\r\n"},
		{"null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"null array", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
		{"array", func(w *Writer) { w.Array(2); w.Int(1); w.Null() }, "*2\r\n:1\r\n$-1\r\n", "*2\r\n:1\r\n_\r\n"},
		{"empty array", func(w *Writer) { w.Array(0) }, "*0\r\n", "*0\r\n"},
		{"map", func(w *Writer) { w.Map(1); w.BulkString("k"); w.Int(1) }, "*2\r\n$1\r\nk\r\n:1\r\n", "%1\r\n$1\r\nk\r\n:1\r\n"},
		{"set", func(w *Writer) { w.Set(1); w.BulkString("m") }, "*1\r\n$1\r\nm\r\n", "~1\r\n$1\r\nm\r\n"},
		{"push", func(w *Writer) { w.Push(3); w.BulkString("message"); w.BulkString("ch"); w.BulkString("hi") },
			"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"},
		{"bool true", func(w *Writer) { w.Bool(true) }, ":1\r\n", "#t\r\n"},
		{"bool false", func(w *Writer) { w.Bool(false) }, ":0\r\n", "#f\r\n"},
		{"verbatim", func(w *Writer) { w.Verbatim("txt", "a\nb") }, "$3\r\na\nb\r\n", "=7\r\ntxt:a\nb\r\n"},
		{"double", func(w *Writer) { w.Double(1.5) }, "$3\r\n1.5\r\n", ",1.5\r\n"},
		{"double inf", func(w *Writer) { w.Double(math.Inf(1)) }, "$3\r\ninf\r\n", ",inf\r\n"},
		{"double -inf", func(w *Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"double 1e17", func(w *Writer) { w.Double(1e17) }, "$5\r\n1e+17\r\n", ",1e+17\r\n"},
		{"double below 1e17", func(w *Writer) { w.Double(99999999999999984) }, "$17\r\n99999999999999984\r\n", ",99999999999999984\r\n"},
		{"double 0.1", func(w *Writer) { w.Double(0.1) }, "$19\r\n0.10000000000000001\r\n", ",0.10000000000000001\r\n"},
		{"double -0", func(w *Writer) { w.Double(math.Copysign(0, -1)) }, "$2\r\n-0\r\n", ",-0\r\n"},
		{"raw", func(w *Writer) { w.Raw([]byte("+x\r\n")) }, "+x\r\n", "+x\r\n"},
	}
	for _, c := range cases {
		for _, proto := range []int{2, 3} {
			w := &Writer{Proto: proto}
			c.write(w)
			want := c.r2
			if proto == 3 {
				want = c.r3
			}
			if string(w.Buf) != want {
				t.Errorf("%s RESP%d: got %q, want %q", c.name, proto, w.Buf, want)
			}
		}
	}
	// The zero Writer speaks RESP2.
	var w Writer
	w.Null()
	if string(w.Buf) != "$-1\r\n" || w.Resp3() {
		t.Errorf("zero Writer: %q", w.Buf)
	}
}

func TestWriterErrorCount(t *testing.T) {
	var w Writer
	w.OK()
	w.Error("ERR a")
	w.Int(1)
	w.Error("ERR b")
	if w.Errors != 2 {
		t.Fatalf("Errors = %d, want 2", w.Errors)
	}
}

// readGolden loads resp/testdata/doubles.golden: bit patterns and their
// C printf("%.17g") formatting, written by scripts/double-golden.c.
func readGolden(t *testing.T) (vals []float64, want []string) {
	f, err := os.Open("testdata/doubles.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		hex, s, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("bad golden line %q", sc.Text())
		}
		bits, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, math.Float64frombits(bits))
		want = append(want, s)
	}
	if len(vals) < 100 {
		t.Fatalf("only %d golden values", len(vals))
	}
	return vals, want
}

// TestAppendDoubleGolden compares with the C library's %.17g.
func TestAppendDoubleGolden(t *testing.T) {
	vals, want := readGolden(t)
	for i, v := range vals {
		if got := string(AppendDouble(nil, v)); got != want[i] {
			t.Errorf("AppendDouble(%x = %v) = %q, C printf %%.17g gives %q", math.Float64bits(v), v, got, want[i])
		}
		// The RESP framing Redis's addReplyDouble writes around it.
		w := Writer{Proto: 2}
		w.Double(v)
		if exp := "$" + strconv.Itoa(len(want[i])) + "\r\n" + want[i] + "\r\n"; string(w.Buf) != exp {
			t.Errorf("RESP2 Double(%v) = %q, want %q", v, w.Buf, exp)
		}
		w = Writer{Proto: 3}
		w.Double(v)
		if exp := "," + want[i] + "\r\n"; string(w.Buf) != exp {
			t.Errorf("RESP3 Double(%v) = %q, want %q", v, w.Buf, exp)
		}
	}
}

// printfG17 is C's "%.17g" for finite values, computed with Go's fmt (whose
// %g with a precision follows the same rules: exponent form when the
// exponent is < -4 or >= 17, trailing zeros removed, at least two exponent
// digits), with inf spelled as C does.
func printfG17(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.17g", f)
}

func TestPrintfG17MatchesC(t *testing.T) {
	// The reference used by the randomized test agrees with C on the golden set.
	vals, want := readGolden(t)
	for i, v := range vals {
		if got := printfG17(v); got != want[i] {
			t.Fatalf("fmt %%.17g of %v = %q, C gives %q", v, got, want[i])
		}
	}
}

func TestAppendDoubleRandom(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	check := func(v float64) {
		t.Helper()
		if math.IsNaN(v) {
			return
		}
		if got, want := string(AppendDouble(nil, v)), printfG17(v); got != want {
			t.Fatalf("AppendDouble(%x = %v) = %q, want %q", math.Float64bits(v), v, got, want)
		}
	}
	for i := 0; i < 100000; i++ {
		check(math.Float64frombits(r.Uint64()))                                      // any bit pattern
		check(float64(r.Int63n(1<<54)-1<<53) * math.Pow(10, float64(r.Intn(50)-25))) // decimal-ish
		check(math.Round(r.Float64()*1e6) / 100)                                     // money-like
		check(float64(r.Int63n(1<<56) - 1<<55))                                      // integers, past 2^53 too
		check(float64(r.Int63n(1 << 20)))                                            // small integers
	}
	// Around the fixed/exponent switch points (1e17 and 1e-4) and powers of
	// ten, one ulp either side.
	for e := -30; e <= 30; e++ {
		p := math.Pow(10, float64(e))
		for _, v := range []float64{p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1))} {
			check(v)
			check(-v)
		}
	}
	for _, v := range []float64{0, math.Copysign(0, -1), math.MaxFloat64, math.SmallestNonzeroFloat64,
		-math.MaxFloat64, 2.2250738585072014e-308, 1 << 53, 1<<53 + 2, 1<<53 - 1, -(1<<53 - 1), -1 << 53,
		1e15, 1e16, 1e17, 99999999999999990, math.Inf(1), math.Inf(-1)} {
		check(v)
	}
}

func TestAppendDoubleAppends(t *testing.T) {
	b := AppendDouble([]byte("x="), 2.5)
	if string(b) != "x=2.5" {
		t.Fatalf("got %q", b)
	}
}

func TestWriterNoAllocs(t *testing.T) {
	w := Writer{Buf: make([]byte, 0, 4096)}
	val := []byte("some value")
	a := testing.AllocsPerRun(1000, func() {
		w.Buf = w.Buf[:0]
		w.OK()
		w.Bulk(val)
		w.Null()
		w.Int(12345)
		w.Array(2)
		w.BulkInt(-7)
		w.Simple("QUEUED")
	})
	if a != 0 {
		t.Errorf("%v allocs per run, want 0", a)
	}
	a = testing.AllocsPerRun(1000, func() {
		w.Buf = w.Buf[:0]
		w.Double(3.14159)
		w.Double(1.5e300)
	})
	if a != 0 {
		t.Errorf("Double: %v allocs per run, want 0", a)
	}
}

func BenchmarkWriterBulk(b *testing.B) {
	w := Writer{Buf: make([]byte, 0, 4096)}
	val := []byte("xxx")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Buf = w.Buf[:0]
		for j := 0; j < 16; j++ {
			w.Bulk(val)
		}
	}
}

func BenchmarkAppendDouble(b *testing.B) {
	for _, bc := range []struct {
		name string
		v    float64
	}{{"fraction", 3.141592653589793}, {"integer", 1732406400}} {
		b.Run(bc.name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				buf = AppendDouble(buf[:0], bc.v)
			}
		})
	}
}

// TestAppendCommand: a command encoded by AppendCommand reads back through
// the Parser as the same arguments.
func TestAppendCommand(t *testing.T) {
	b := AppendCommand([]byte("x"), []byte("SET"), []byte(""), []byte("a\r\nb"))
	if want := "x*3\r\n$3\r\nSET\r\n$0\r\n\r\n$4\r\na\r\nb\r\n"; string(b) != want {
		t.Fatalf("AppendCommand = %q, want %q", b, want)
	}
	if got := string(AppendCommand(nil)); got != "*0\r\n" {
		t.Fatalf("no arguments: %q", got)
	}
}
