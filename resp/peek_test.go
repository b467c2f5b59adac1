package resp

import (
	"bytes"
	"testing"
)

func TestPeek(t *testing.T) {
	cases := []struct {
		in   string
		arg  string // "-": nil
		n    int
		desc string
	}{
		{"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", "key", 22, "a whole command"},
		{"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n*1\r\n", "key", 22, "followed by the next"},
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n", "k", 31, "three arguments"},
		{"*1\r\n$4\r\nPING\r\n", "-", 14, "one argument"},
		{"*2\r\n$3\r\nGET\r\n$0\r\n\r\n", "", 19, "an empty key"},
		{"*2\r\n$3\r\nGET\r\n$3\r\nke", "-", 0, "incomplete"},
		{"*2\r\n$3\r\nGET\r\n$3\r\nkey\r", "-", 0, "no final LF"},
		{"*2\r\n$3\r\nGET\r\n", "-", 0, "an argument missing"},
		{"GET key\r\n", "-", 0, "inline"},
		{"*0\r\n", "-", 0, "no arguments"},
		{"*-1\r\n", "-", 0, "negative count"},
		{"*2\r\n+3\r\nGET\r\n$3\r\nkey\r\n", "-", 0, "not a bulk"},
		{"*2\r\n$-3\r\nGET\r\n$3\r\nkey\r\n", "-", 0, "negative length"},
		{"*2\r\n$99999999999999\r\nGET\r\n", "-", 0, "length too long to read"},
		{"*2\n$3\nGET\n$3\nkey\n", "-", 0, "LF alone"},
		{"", "-", 0, "nothing"},
	}
	for _, tc := range cases {
		arg, n := Peek([]byte(tc.in))
		if n != tc.n || (tc.arg == "-") != (arg == nil) || (arg != nil && string(arg) != tc.arg) {
			t.Errorf("%s: Peek(%q) = %q, %d; want %q, %d", tc.desc, tc.in, arg, n, tc.arg, tc.n)
		}
	}
}

// checkPeek walks data with Peek and checks every command it reports
// against the parser's reading of the same bytes: the same length, and
// the same second argument.
func checkPeek(t *testing.T, data []byte) {
	for off := 0; off < len(data); {
		arg, n := Peek(data[off:])
		if n == 0 {
			return
		}
		var p Parser
		pn, args, err := p.Next(data[off:])
		if err != nil || pn != n {
			t.Fatalf("at %d, Peek took %d bytes (second argument %q); the parser: %d bytes, %v", off, n, arg, pn, err)
		}
		if len(args) < 2 {
			if arg != nil {
				t.Fatalf("at %d, Peek found %q in a command of %d arguments", off, arg, len(args))
			}
		} else if arg == nil || !bytes.Equal(arg, args[1]) {
			t.Fatalf("at %d, Peek found %q, the parser %q", off, arg, args[1])
		}
		off += n
	}
}

func TestPeekAgreesWithParser(t *testing.T) {
	var in []byte
	for _, c := range [][]string{{"GET", "a"}, {"PING"}, {"SET", "key:1", "v"}, {"MSET", "a", "1", "b", "2"}, {"GET", ""}} {
		in = append(in, encode(c...)...)
	}
	checkPeek(t, in)
	for _, tc := range parseCases {
		checkPeek(t, []byte(tc.in))
	}
}
