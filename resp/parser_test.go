package resp

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// The expectations below follow Redis 7.0.15 (networking.c
// processInlineBuffer/processMultibulkBuffer and sds.c sdssplitargs); the
// same inputs are replayed against a real redis-server side by side with
// Sluice in server/protocol_test.go.

// outcome is what a server sees when it feeds a byte stream to the parser:
// the commands it would run (empty requests skipped), the first protocol
// error, and, when there was no error, how many bytes were left
// unconsumed (a partial command).
type outcome struct {
	Cmds [][]string
	Err  string
	Rest int
}

func (o outcome) String() string {
	return fmt.Sprintf("cmds=%q err=%q rest=%d", o.Cmds, o.Err, o.Rest)
}

// feed appends the chunks one by one to a query buffer and parses it the
// way the server drivers do: consumed bytes are dropped, an incomplete
// command stays at the front of the buffer until more bytes arrive.
func feed(tb testing.TB, p *Parser, chunks [][]byte) outcome {
	tb.Helper()
	var out outcome
	var buf []byte
	for _, ch := range chunks {
		// A fresh buffer each time, as a driver that compacts or grows its
		// query buffer would: the parser must keep no pointers into it.
		nb := make([]byte, len(buf), len(buf)+len(ch))
		copy(nb, buf)
		buf = append(nb, ch...)
		for {
			n, args, err := p.Next(buf)
			if err == ErrIncomplete {
				if n != 0 || args != nil {
					tb.Fatalf("incomplete with n=%d args=%q", n, args)
				}
				break
			}
			if err != nil {
				if _, ok := err.(*ProtocolError); !ok {
					tb.Fatalf("error %v is not a *ProtocolError", err)
				}
				if n != 0 {
					tb.Fatalf("error with n=%d", n)
				}
				// Rest is left 0: how much input was buffered when the
				// error was seen depends on how the bytes arrived.
				out.Err = err.Error()
				return out
			}
			if n <= 0 || n > len(buf) {
				tb.Fatalf("consumed %d of %d bytes", n, len(buf))
			}
			if p.InProgress() {
				tb.Fatal("parser still in progress after a complete command")
			}
			if len(args) > 0 {
				cmd := make([]string, len(args))
				for i, a := range args {
					cmd[i] = string(a)
				}
				out.Cmds = append(out.Cmds, cmd)
			}
			buf = buf[n:]
		}
	}
	out.Rest = len(buf)
	return out
}

func oneShot(in []byte) [][]byte { return [][]byte{in} }

func byteByByte(in []byte) [][]byte {
	chunks := make([][]byte, len(in))
	for i := range in {
		chunks[i] = in[i : i+1]
	}
	return chunks
}

func randomChunks(r *rand.Rand, in []byte, max int) [][]byte {
	var chunks [][]byte
	for len(in) > 0 {
		n := 1 + r.Intn(max)
		if n > len(in) {
			n = len(in)
		}
		chunks = append(chunks, in[:n])
		in = in[n:]
	}
	return chunks
}

// checkSplits parses in with every way of splitting it that is cheap
// enough and requires the same outcome each time.
func checkSplits(t *testing.T, newParser func() *Parser, in []byte) outcome {
	t.Helper()
	want := feed(t, newParser(), oneShot(in))
	check := func(how string, chunks [][]byte) {
		t.Helper()
		if got := feed(t, newParser(), chunks); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %v, one-shot gave %v", how, got, want)
		}
	}
	if len(in) <= 4096 {
		check("byte by byte", byteByByte(in))
		for i := 1; i < len(in); i++ {
			check("split at "+strconv.Itoa(i), [][]byte{in[:i], in[i:]})
		}
	}
	if len(in) <= 48 {
		for i := 1; i < len(in); i++ {
			for j := i + 1; j < len(in); j++ {
				check(fmt.Sprintf("split at %d,%d", i, j), [][]byte{in[:i], in[i:j], in[j:]})
			}
		}
	}
	r := rand.New(rand.NewSource(int64(len(in))))
	for k := 0; k < 20; k++ {
		max := 1 + r.Intn(64)
		if len(in) > 4096 {
			max = 1 + r.Intn(8192)
		}
		check("random chunks", randomChunks(r, in, max))
	}
	// The same parser reused for the stream fed twice must give the
	// commands twice (state is fully reset after each command), unless the
	// first copy ends in an error or a partial command.
	if want.Err == "" && want.Rest == 0 {
		twice := feed(t, newParser(), randomChunks(r, append(append([]byte{}, in...), in...), 7))
		if len(twice.Cmds) != 2*len(want.Cmds) || twice.Err != "" || twice.Rest != 0 {
			t.Fatalf("stream fed twice: got %v, want the commands of %v twice", twice, want)
		}
	}
	return want
}

func cmds(c ...[]string) [][]string { return c }
func cmd(a ...string) []string      { return a }

const (
	errInvalidMbulk = "ERR Protocol error: invalid multibulk length"
	errInvalidBulk  = "ERR Protocol error: invalid bulk length"
	errTooBigInline = "ERR Protocol error: too big inline request"
	errTooBigMbulk  = "ERR Protocol error: too big mbulk count string"
	errTooBigBulk   = "ERR Protocol error: too big bulk count string"
	errUnbalanced   = "ERR Protocol error: unbalanced quotes in request"
	errUnauthMbulk  = "ERR Protocol error: unauthenticated multibulk length"
	errUnauthBulk   = "ERR Protocol error: unauthenticated bulk length"
)

func errExpected(c byte) string {
	return "ERR Protocol error: expected '$', got '" + string([]byte{c}) + "'"
}

// all stands for "the whole input" in a case's Rest.
const all = -1

type parseCase struct {
	name string
	in   string
	want outcome
	// parser settings
	maxBulk int64
	auth    bool
}

var parseCases = []parseCase{
	// Multibulk.
	{name: "ping", in: "*1\r\n$4\r\nPING\r\n", want: outcome{Cmds: cmds(cmd("PING"))}},
	{name: "set", in: "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nhello\r\n", want: outcome{Cmds: cmds(cmd("SET", "key", "hello"))}},
	{name: "empty bulk", in: "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", want: outcome{Cmds: cmds(cmd("ECHO", ""))}},
	{name: "binary bulk", in: "*2\r\n$4\r\nECHO\r\n$8\r\na\r\n\x00b\n*$\r\n", want: outcome{Cmds: cmds(cmd("ECHO", "a\r\n\x00b\n*$"))}},
	{name: "pipeline", in: "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n",
		want: outcome{Cmds: cmds(cmd("PING"), cmd("GET", "k"), cmd("PING"))}},
	{name: "zero and negative counts skipped", in: "*0\r\n*-1\r\n*-5\r\n*1\r\n$4\r\nPING\r\n*0\r\n",
		want: outcome{Cmds: cmds(cmd("PING"))}},
	{name: "mbulk max int is accepted", in: "*2147483647\r\n$1\r\na\r\n", want: outcome{Rest: all}},
	{name: "large min int skipped", in: "*-9223372036854775808\r\nPING\r\n", want: outcome{Cmds: cmds(cmd("PING"))}},
	// Redis does not check the byte after '\r' in a header, nor the CRLF
	// that ends a bulk.
	{name: "header cr then any byte", in: "*1\rX$4\r\nPING\r\n", want: outcome{Cmds: cmds(cmd("PING"))}},
	{name: "bulk trailer unchecked", in: "*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n", want: outcome{Cmds: cmds(cmd("PING"), cmd("PING"))}},
	{name: "header missing lf", in: "*1\r$4\r\nPING\r\n", want: outcome{Err: errExpected('4')}},
	{name: "partial header", in: "*1\r", want: outcome{Rest: all}},
	{name: "partial bulk", in: "*2\r\n$3\r\nGET\r\n$5\r\nab", want: outcome{Rest: all}},
	{name: "partial bulk trailer", in: "*1\r\n$4\r\nPING\r", want: outcome{Rest: all}},

	// Multibulk errors.
	{name: "mbulk not a number", in: "*x\r\n", want: outcome{Err: errInvalidMbulk}},
	{name: "mbulk empty", in: "*\r\n", want: outcome{Err: errInvalidMbulk}},
	{name: "mbulk leading zero", in: "*01\r\n$4\r\nPING\r\n", want: outcome{Err: errInvalidMbulk}},
	{name: "mbulk plus sign", in: "*+1\r\n", want: outcome{Err: errInvalidMbulk}},
	{name: "mbulk space", in: "*1 \r\n", want: outcome{Err: errInvalidMbulk}},
	{name: "mbulk minus zero", in: "*-0\r\n", want: outcome{Err: errInvalidMbulk}},
	{name: "mbulk over int max", in: "*2147483648\r\n", want: outcome{Err: errInvalidMbulk}},
	{name: "mbulk over int64", in: "*9223372036854775808\r\n", want: outcome{Err: errInvalidMbulk}},
	{name: "error after commands", in: "PING\r\n*1\r\n$4\r\nPING\r\n*x\r\n*1\r\n$4\r\nPING\r\n",
		want: outcome{Cmds: cmds(cmd("PING"), cmd("PING")), Err: errInvalidMbulk}},
	{name: "bulk negative", in: "*1\r\n$-1\r\n", want: outcome{Err: errInvalidBulk}},
	{name: "bulk empty", in: "*1\r\n$\r\n", want: outcome{Err: errInvalidBulk}},
	{name: "bulk leading zero", in: "*1\r\n$04\r\nPING\r\n", want: outcome{Err: errInvalidBulk}},
	{name: "bulk over default max", in: "*1\r\n$536870913\r\n", want: outcome{Err: errInvalidBulk}},
	{name: "bulk at default max", in: "*1\r\n$536870912\r\n", want: outcome{Rest: all}},
	{name: "bulk over configured max", in: "*1\r\n$1025\r\n", maxBulk: 1024, want: outcome{Err: errInvalidBulk}},
	{name: "bulk at configured max", in: "*1\r\n$1024\r\n", maxBulk: 1024, want: outcome{Rest: all}},
	{name: "expected dollar plus", in: "*1\r\n+4\r\n", want: outcome{Err: errExpected('+')}},
	{name: "expected dollar star", in: "*2\r\n$3\r\nGET\r\n*1\r\n", want: outcome{Err: errExpected('*')}},
	// Redis prints the byte with %c: one raw byte, not its UTF-8 encoding.
	{name: "expected dollar high byte", in: "*1\r\n\xf7\r\n", want: outcome{Err: "ERR Protocol error: expected '$', got '\xf7'"}},
	{name: "expected dollar x", in: "*1\r\nx\r\n\x00", want: outcome{Err: errExpected('x')}},

	// Sizes: a line without '\r' (or '\n' for inline) is an error only once
	// more than 64 KB of it are buffered.
	{name: "inline at limit", in: strings.Repeat("x", InlineMax), want: outcome{Rest: all}},
	{name: "too big inline", in: strings.Repeat("x", InlineMax+1), want: outcome{Err: errTooBigInline}},
	{name: "mbulk count at limit", in: "*" + strings.Repeat("1", InlineMax-1), want: outcome{Rest: all}},
	{name: "too big mbulk count", in: "*" + strings.Repeat("1", InlineMax), want: outcome{Err: errTooBigMbulk}},
	{name: "too big bulk count", in: "*1\r\n$" + strings.Repeat("1", InlineMax), want: outcome{Err: errTooBigBulk}},
	{name: "bulk count at limit", in: "*1\r\n$" + strings.Repeat("1", InlineMax-1), want: outcome{Rest: all}},

	// Redis finds line ends with strchr, which stops at a NUL byte: a
	// header or inline line with a NUL before its end is never complete
	// (until the 64 KB limit turns it into an error).
	{name: "nul in inline", in: "PING\x00\r\nPING\r\n", want: outcome{Rest: all}},
	{name: "nul first", in: "\x00PING\r\n", want: outcome{Rest: all}},
	{name: "nul in mbulk count", in: "*1\x00\r\n$4\r\nPING\r\n", want: outcome{Rest: all}},
	{name: "nul in bulk count", in: "*1\r\n$4\x00\r\nPING\r\n", want: outcome{Rest: all}},
	{name: "nul bulk header", in: "*1\r\n\x00\r\n", want: outcome{Rest: all}},
	{name: "nul in inline then too big", in: "PING\x00\r\n" + strings.Repeat("x", InlineMax), want: outcome{Err: errTooBigInline}},
	{name: "nul in bulk count then too big", in: "*1\r\n$4\x00\r\n" + strings.Repeat("x", InlineMax), want: outcome{Err: errTooBigBulk}},
	{name: "nul in mbulk count then too big", in: "*1\x00\r\n" + strings.Repeat("x", InlineMax), want: outcome{Err: errTooBigMbulk}},

	// Authentication limits.
	{name: "unauth mbulk", in: "*11\r\n", auth: true, want: outcome{Err: errUnauthMbulk}},
	{name: "unauth mbulk at limit", in: "*10\r\n", auth: true, want: outcome{Rest: all}},
	{name: "unauth bulk", in: "*1\r\n$16385\r\n", auth: true, want: outcome{Err: errUnauthBulk}},
	{name: "unauth bulk at limit", in: "*1\r\n$16384\r\n", auth: true, want: outcome{Rest: all}},
	{name: "unauth invalid mbulk first", in: "*2147483648\r\n", auth: true, want: outcome{Err: errInvalidMbulk}},

	// Inline commands, split as sdssplitargs does.
	{name: "inline crlf", in: "PING\r\nPING\r\n", want: outcome{Cmds: cmds(cmd("PING"), cmd("PING"))}},
	{name: "inline lf", in: "PING\nECHO x\n", want: outcome{Cmds: cmds(cmd("PING"), cmd("ECHO", "x"))}},
	{name: "inline partial", in: "PING\r\nECH", want: outcome{Cmds: cmds(cmd("PING")), Rest: 3}},
	{name: "inline blanks", in: "  \t get \t  k  \r\n", want: outcome{Cmds: cmds(cmd("get", "k"))}},
	{name: "empty lines skipped", in: "\r\n\n   \r\n\t\r\n\v\f\nPING\r\n\r\n", want: outcome{Cmds: cmds(cmd("PING"))}},
	{name: "inline double quotes", in: "set a \"b c\"\r\n", want: outcome{Cmds: cmds(cmd("set", "a", "b c"))}},
	{name: "inline single quotes", in: "set a 'b c'\r\n", want: outcome{Cmds: cmds(cmd("set", "a", "b c"))}},
	{name: "inline empty quoted", in: "set k \"\" ''\r\n", want: outcome{Cmds: cmds(cmd("set", "k", "", ""))}},
	{name: "inline escapes", in: `echo "\x41\x4g\n\r\t\b\a\"\\\z\xfF"` + "\r\n",
		want: outcome{Cmds: cmds(cmd("echo", "Ax4g\n\r\t\b\a\"\\z\xff"))}},
	{name: "inline single quote escapes", in: `echo 'it\'s' 'a\nb' 'c\\d' '\x41'` + "\n",
		want: outcome{Cmds: cmds(cmd("echo", "it's", `a\nb`, `c\\d`, `\x41`))}},
	{name: "escaped closing single quote", in: `echo 'a\\'` + "\r\n", want: outcome{Err: errUnbalanced}},
	{name: "inline quote inside token", in: "echo a\"b c\" d'e f'\r\n", want: outcome{Cmds: cmds(cmd("echo", "ab c", "de f"))}},
	{name: "inline quote followed by vtab", in: "echo \"a\"\vb\n", want: outcome{Cmds: cmds(cmd("echo", "a", "b"))}},
	{name: "inline vtab inside token", in: "echo a\vb\r\n", want: outcome{Cmds: cmds(cmd("echo", "a\vb"))}},
	{name: "inline cr inside line", in: "get a\rb\r\n", want: outcome{Cmds: cmds(cmd("get", "a", "b"))}},
	{name: "inline high bytes", in: "echo \xff\xfe\x80\n", want: outcome{Cmds: cmds(cmd("echo", "\xff\xfe\x80"))}},
	{name: "inline trailing quote space", in: "echo \"a\" \r\n", want: outcome{Cmds: cmds(cmd("echo", "a"))}},
	{name: "inline then mbulk", in: "PING\r\n*1\r\n$4\r\nPING\r\nPING\n", want: outcome{Cmds: cmds(cmd("PING"), cmd("PING"), cmd("PING"))}},
	{name: "unbalanced double", in: "set a \"b\r\n", want: outcome{Err: errUnbalanced}},
	{name: "unbalanced single", in: "set a 'b\r\n", want: outcome{Err: errUnbalanced}},
	{name: "closing quote then letter", in: "set a \"b\"c\r\n", want: outcome{Err: errUnbalanced}},
	{name: "closing single quote then letter", in: "set a 'b'c\n", want: outcome{Err: errUnbalanced}},
	{name: "backslash at end of quote", in: "echo \"abc\\\r\n", want: outcome{Err: errUnbalanced}},
	{name: "unbalanced after commands", in: "PING\r\nPING\r\n\"\r\nPING\r\n", want: outcome{Cmds: cmds(cmd("PING"), cmd("PING")), Err: errUnbalanced}},
}

func TestParser(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			newParser := func() *Parser { return &Parser{MaxBulkLen: tc.maxBulk, AuthRequired: tc.auth} }
			got := checkSplits(t, newParser, []byte(tc.in))
			want := tc.want
			if want.Rest == all {
				want.Rest = len(tc.in)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %v\nwant %v", got, want)
			}
		})
	}
}

// TestParserAllCasesConcatenated feeds every successful case as one stream.
func TestParserAllCasesConcatenated(t *testing.T) {
	var stream []byte
	var want [][]string
	for _, tc := range parseCases {
		if tc.want.Err != "" || tc.want.Rest != 0 || tc.maxBulk != 0 || tc.auth {
			continue
		}
		stream = append(stream, tc.in...)
		want = append(want, tc.want.Cmds...)
	}
	got := checkSplits(t, func() *Parser { return new(Parser) }, stream)
	if !reflect.DeepEqual(got, outcome{Cmds: want}) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// TestParserRandomCommands encodes random commands with random binary
// arguments and checks they come back intact under random splits.
func TestParserRandomCommands(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var stream []byte
	var want [][]string
	for i := 0; i < 300; i++ {
		n := 1 + r.Intn(6)
		c := make([]string, n)
		for j := range c {
			b := make([]byte, r.Intn(40))
			if r.Intn(20) == 0 {
				b = make([]byte, BigArg+r.Intn(1000))
			}
			r.Read(b)
			c[j] = string(b)
		}
		want = append(want, c)
		stream = append(stream, encode(c...)...)
		if r.Intn(5) == 0 {
			stream = append(stream, "\r\n*0\r\n"...) // empty requests in between
		}
	}
	p := new(Parser)
	one := feed(t, p, oneShot(stream))
	if !reflect.DeepEqual(one, outcome{Cmds: want}) {
		t.Fatal("one-shot parse does not match the encoded commands")
	}
	for k := 0; k < 5; k++ {
		if got := feed(t, p, randomChunks(r, stream, 1+r.Intn(3000))); !reflect.DeepEqual(got, one) {
			t.Fatal("random chunks differ from one-shot")
		}
	}
}

func encode(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// TestParserNeed checks the size hint drivers use to grow the query buffer
// for a big argument, and Reset.
func TestParserNeed(t *testing.T) {
	var p Parser
	in := []byte("*2\r\n$3\r\nSET\r\n$100000\r\nabc")
	if _, _, err := p.Next(in); err != ErrIncomplete {
		t.Fatalf("err = %v", err)
	}
	if !p.InProgress() {
		t.Fatal("not in progress")
	}
	// 4 (*2) + 9 ($3 SET) + 9 ($100000\r\n) + 100000 + 2
	if got, want := p.Need(), 4+9+9+100000+2; got != want {
		t.Fatalf("Need() = %d, want %d", got, want)
	}
	p.Reset()
	if p.InProgress() || p.Need() != 0 {
		t.Fatal("Reset did not forget the command")
	}
	n, args, err := p.Next([]byte("*1\r\n$4\r\nPING\r\n"))
	if err != nil || n != 14 || len(args) != 1 || string(args[0]) != "PING" {
		t.Fatalf("after Reset: %d %q %v", n, args, err)
	}
	if p.Need() != 0 {
		t.Fatal("Need after a complete command")
	}
}

// TestParserArgsAliasBuffer checks that multibulk arguments are slices of
// the caller's buffer (no copies) whose capacity ends at the argument, so
// an append by a handler cannot overwrite the next argument.
func TestParserArgsAliasBuffer(t *testing.T) {
	var p Parser
	buf := encode("SET", "key", "value")
	_, args, err := p.Next(buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range args {
		if !within(a, buf) {
			t.Fatalf("argument %q is not inside the buffer", a)
		}
		if cap(a) != len(a) {
			t.Fatalf("argument %q has spare capacity %d", a, cap(a)-len(a))
		}
	}
	_ = append(args[1], 'X')
	if !bytes.Equal(buf, encode("SET", "key", "value")) {
		t.Fatal("append to an argument changed the buffer")
	}
}

// within reports whether a's bytes lie inside buf.
func within(a, buf []byte) bool {
	if len(a) == 0 {
		return true
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	return p >= start && p+uintptr(len(a)) <= start+uintptr(len(buf))
}

func TestParseInt(t *testing.T) {
	// string2ll: optional '-', no '+', no leading zeros, no spaces, int64 range.
	good := map[string]int64{
		"0": 0, "1": 1, "-1": -1, "10": 10, "123456789": 123456789,
		"9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63,
	}
	for s, want := range good {
		if got, ok := ParseInt([]byte(s)); !ok || got != want {
			t.Errorf("ParseInt(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	bad := []string{"", "-", "+1", "01", "-0", "00", " 1", "1 ", "1a", "0x1", "1.0",
		"9223372036854775808", "-9223372036854775809", "18446744073709551616",
		"99999999999999999999", "123456789012345678901", "\x001",
		"9999999999999999999", "10000000000000000000", "-9999999999999999999", "1:", "1/"}
	for _, s := range bad {
		if got, ok := ParseInt([]byte(s)); ok {
			t.Errorf("ParseInt(%q) = %d, want failure", s, got)
		}
	}
	// Cross-check with strconv on the values string2ll accepts.
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 10000; i++ {
		v := int64(r.Uint64()) >> r.Intn(64)
		s := strconv.FormatInt(v, 10)
		if got, ok := ParseInt([]byte(s)); !ok || got != v {
			t.Fatalf("ParseInt(%q) = %d, %v", s, got, ok)
		}
	}
}

func TestParserNoAllocs(t *testing.T) {
	batch := pipelineBatch(50)
	inline := []byte("SET key:1 \"some value\"\r\nGET key:1\r\n")
	var p Parser
	parseAll := func(buf []byte) {
		for len(buf) > 0 {
			n, _, err := p.Next(buf)
			if err != nil {
				t.Fatal(err)
			}
			buf = buf[n:]
		}
	}
	parseAll(batch)
	parseAll(inline)
	if a := testing.AllocsPerRun(100, func() { parseAll(batch) }); a != 0 {
		t.Errorf("multibulk pipeline: %v allocs per run, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { parseAll(inline) }); a != 0 {
		t.Errorf("inline commands: %v allocs per run, want 0", a)
	}
}

// pipelineBatch returns n SET and n GET commands, as redis-benchmark -P sends.
func pipelineBatch(n int) []byte {
	var b []byte
	val := strings.Repeat("x", 3)
	for i := 0; i < n; i++ {
		k := "key:" + strconv.Itoa(100000+i)
		b = append(b, encode("SET", k, val)...)
		b = append(b, encode("GET", k)...)
	}
	return b
}

func BenchmarkParse(b *testing.B) {
	batch := pipelineBatch(8) // 16 commands, like redis-benchmark -P 16
	var p Parser
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf := batch
		for len(buf) > 0 {
			n, args, err := p.Next(buf)
			if err != nil || len(args) == 0 {
				b.Fatal(err)
			}
			buf = buf[n:]
		}
	}
}

func BenchmarkParseInline(b *testing.B) {
	batch := []byte("SET key:100000 xxx\r\nGET key:100000\r\n")
	var p Parser
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf := batch
		for len(buf) > 0 {
			n, _, err := p.Next(buf)
			if err != nil {
				b.Fatal(err)
			}
			buf = buf[n:]
		}
	}
}

func BenchmarkParseBigArg(b *testing.B) {
	batch := encode("SET", "key", strings.Repeat("v", 1<<20))
	var p Parser
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := p.Next(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseLen checks the inline reading of short lengths against
// ParseInt, for every string of up to three bytes drawn from digits, a
// minus sign and two other bytes.
func TestParseLen(t *testing.T) {
	alphabet := []byte("0123456789-+ ")
	var check func(b []byte)
	check = func(b []byte) {
		v, ok := parseLen(b)
		wv, wok := ParseInt(b)
		if v != wv || ok != wok {
			t.Fatalf("parseLen(%q) = %d, %v; ParseInt: %d, %v", b, v, ok, wv, wok)
		}
		if len(b) == 3 {
			return
		}
		for _, c := range alphabet {
			check(append(b[:len(b):len(b)], c))
		}
	}
	check(nil)
}
