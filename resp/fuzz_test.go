package resp

import (
	"hash/fnv"
	"math/rand"
	"reflect"
	"testing"
)

// FuzzParser feeds arbitrary bytes to the parser and checks its
// invariants: it never panics, never consumes more than it was given,
// multibulk arguments point into the caller's buffer, the outcome does not
// depend on how the bytes are split, and the commands it returns survive a
// round trip through the multibulk encoding; Peek agrees with it on every
// command Peek reads. The seed corpus is in
// testdata/fuzz/FuzzParser, plus every case of TestParser.
//
//	go test -run '^$' -fuzz FuzzParser -fuzztime 60s ./resp/
func FuzzParser(f *testing.F) {
	for _, tc := range parseCases {
		if len(tc.in) <= 1024 {
			f.Add([]byte(tc.in))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPeek(t, data)
		parsers := []func() *Parser{
			func() *Parser { return new(Parser) },
			func() *Parser { return &Parser{MaxBulkLen: 100, AuthRequired: true} },
		}
		for _, newParser := range parsers {
			checkCalls(t, newParser(), data)
			want := feed(t, newParser(), oneShot(data))
			// Splitting changes the outcome only through the 64 KB
			// "too big" limits, which depend on how much is buffered.
			if len(data) <= InlineMax {
				h := fnv.New64a()
				h.Write(data)
				r := rand.New(rand.NewSource(int64(h.Sum64())))
				// Keep each run cheap (feed copies the buffer for every
				// chunk, and the fuzzer's minimizer runs this thousands of
				// times): byte by byte only for small inputs, and about
				// 4-16 random chunks otherwise.
				if len(data) <= 128 {
					if got := feed(t, newParser(), byteByByte(data)); !reflect.DeepEqual(got, want) {
						t.Fatalf("byte by byte: %v\none-shot: %v", got, want)
					}
				}
				for k := 0; k < 3; k++ {
					chunk := 1 + len(data)/(4+r.Intn(13))
					if got := feed(t, newParser(), randomChunks(r, data, chunk)); !reflect.DeepEqual(got, want) {
						t.Fatalf("random chunks: %v\none-shot: %v", got, want)
					}
				}
			}
			// Every command parsed must come back the same when encoded as
			// multibulk (what a client library would have sent).
			var enc []byte
			for _, c := range want.Cmds {
				enc = append(enc, encode(c...)...)
			}
			p := newParser()
			p.MaxBulkLen, p.AuthRequired = 0, false
			if got := feed(t, p, oneShot(enc)); !reflect.DeepEqual(got, outcome{Cmds: want.Cmds}) {
				t.Fatalf("round trip: %v\nwant %q", got, want.Cmds)
			}
		}
	})
}

// checkCalls runs Next over data the way a driver with one read does and
// checks each call's result against the buffer it was given.
func checkCalls(t *testing.T, p *Parser, data []byte) {
	buf := data
	for calls := 0; ; calls++ {
		if calls > len(data)+1 {
			t.Fatal("parser makes no progress")
		}
		n, args, err := p.Next(buf)
		if err != nil {
			if n != 0 || args != nil {
				t.Fatalf("error %v with n=%d args=%q", err, n, args)
			}
			if err == ErrIncomplete && len(buf) > 0 && p.Need() < 0 {
				t.Fatalf("Need() = %d", p.Need())
			}
			return
		}
		if n <= 0 || n > len(buf) {
			t.Fatalf("consumed %d of %d bytes", n, len(buf))
		}
		if buf[0] == '*' {
			for _, a := range args {
				if !within(a, buf[:n]) {
					t.Fatalf("argument %q is outside the command's bytes", a)
				}
				if cap(a) != len(a) {
					t.Fatalf("argument %q has spare capacity", a)
				}
			}
		}
		buf = buf[n:]
	}
}
