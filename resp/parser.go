package resp

import "errors"

// Limits and protocol errors, with Redis's exact texts.
const (
	// InlineMax is the largest inline request (and header line) accepted.
	InlineMax = 64 * 1024
	// BigArg is the size from which a bulk argument gets a buffer of its own size.
	BigArg = 32 * 1024
	// DefaultMaxBulkLen is proto-max-bulk-len's default (512 MB).
	DefaultMaxBulkLen = 512 * 1024 * 1024
)

// ProtocolError is a request the server cannot parse. The connection is
// closed after its text is sent, as Redis does.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return e.Msg }

var (
	ErrTooBigInline    = &ProtocolError{"ERR Protocol error: too big inline request"}
	ErrUnbalanced      = &ProtocolError{"ERR Protocol error: unbalanced quotes in request"}
	ErrTooBigMbulk     = &ProtocolError{"ERR Protocol error: too big mbulk count string"}
	ErrInvalidMbulk    = &ProtocolError{"ERR Protocol error: invalid multibulk length"}
	ErrUnauthMbulk     = &ProtocolError{"ERR Protocol error: unauthenticated multibulk length"}
	ErrTooBigBulkCount = &ProtocolError{"ERR Protocol error: too big bulk count string"}
	ErrInvalidBulk     = &ProtocolError{"ERR Protocol error: invalid bulk length"}
	ErrUnauthBulk      = &ProtocolError{"ERR Protocol error: unauthenticated bulk length"}
)

// maxKeptArgs is the argument count up to which a parser keeps its
// argument arrays for the next command.
const maxKeptArgs = 4096

// ErrIncomplete is returned by Next when the buffer holds no complete command.
var ErrIncomplete = errors.New("incomplete command")

// Parser extracts commands from a query buffer. It keeps the state of a
// partly received multibulk command, so bytes may arrive in any split and a
// large command is scanned only once. Argument slices point into the buffer
// passed to Next (or, for inline commands, into the parser's own scratch
// space) and are valid until the next call.
type Parser struct {
	MaxBulkLen int64 // proto-max-bulk-len; 0 means the default
	// AuthRequired limits the sizes an unauthenticated client may send.
	AuthRequired bool

	args    [][]byte
	offs    []int  // start,end pairs relative to the command start
	pending int    // arguments still expected; 0 when no multibulk is in progress
	bulk    int64  // length of the bulk being read, -1 when its header is still unread
	pos     int    // parse position relative to the command start
	started bool   // a multibulk header has been consumed
	inline  []byte // scratch for unescaped inline arguments
	ioffs   []int  // inline argument offsets into inline
}

// Reset forgets any partly parsed command.
func (p *Parser) Reset() {
	p.pending, p.bulk, p.pos, p.started = 0, -1, 0, false
	p.offs = p.offs[:0]
}

// Parsed returns how many bytes of a partly received command the parser
// has already consumed (its header and complete arguments): the query
// buffer's unparsed part starts there.
func (p *Parser) Parsed() int {
	if p.started {
		return p.pos
	}
	return 0
}

// InProgress reports whether a multibulk command has been partly consumed.
func (p *Parser) InProgress() bool { return p.started }

// Need returns how many bytes, counted from the command start, the parser
// knows it needs before the current command can complete (0 if unknown).
// Callers use it to size the query buffer for big arguments.
func (p *Parser) Need() int {
	if p.started && p.bulk >= 0 {
		return p.pos + int(p.bulk) + 2
	}
	return 0
}

// Next parses one command from buf, which must start at the command the
// previous call left off at (the caller drops consumed bytes or advances
// its slice by the returned count). It returns the number of bytes
// consumed and the arguments. An empty argument list with n > 0 is an empty
// request (a blank inline line, or "*0"), which callers skip. When buf holds
// no complete command, err is ErrIncomplete and n is 0: the caller keeps buf
// and calls again with more bytes appended.
func (p *Parser) Next(buf []byte) (n int, args [][]byte, err error) {
	if !p.started {
		if len(buf) == 0 {
			return 0, nil, ErrIncomplete
		}
		if buf[0] != '*' {
			return p.parseInline(buf)
		}
		nl := indexByte(buf, '\r')
		if nl < 0 {
			if len(buf) > InlineMax {
				return 0, nil, ErrTooBigMbulk
			}
			return 0, nil, ErrIncomplete
		}
		if nl+1 >= len(buf) {
			return 0, nil, ErrIncomplete
		}
		ll, ok := parseLen(buf[1:nl])
		if !ok || ll > 1<<31-1 {
			return 0, nil, ErrInvalidMbulk
		}
		if ll > 10 && p.AuthRequired {
			return 0, nil, ErrUnauthMbulk
		}
		if ll <= 0 {
			return nl + 2, p.args[:0], nil
		}
		p.started = true
		p.pending = int(ll)
		p.pos = nl + 2
		p.bulk = -1
		p.offs = p.offs[:0]
		if cap(p.args) > maxKeptArgs {
			// A huge command grew the argument arrays: drop them rather
			// than keep them (and, through their stale slices, the query
			// buffer they pointed into) for the connection's lifetime.
			p.args, p.offs = nil, nil
		}
	}
	maxBulk := p.MaxBulkLen
	if maxBulk <= 0 {
		maxBulk = DefaultMaxBulkLen
	}
	for p.pending > 0 {
		if p.bulk < 0 {
			rest := buf[p.pos:]
			nl := indexByte(rest, '\r')
			if nl < 0 {
				if len(rest) > InlineMax {
					return 0, nil, ErrTooBigBulkCount
				}
				return 0, nil, ErrIncomplete
			}
			if nl+1 >= len(rest) {
				return 0, nil, ErrIncomplete
			}
			if rest[0] != '$' {
				return 0, nil, &ProtocolError{"ERR Protocol error: expected '$', got '" + string(rest[:1]) + "'"}
			}
			ll, ok := parseLen(rest[1:nl])
			if !ok || ll < 0 || ll > maxBulk {
				return 0, nil, ErrInvalidBulk
			}
			if ll > 16384 && p.AuthRequired {
				return 0, nil, ErrUnauthBulk
			}
			p.pos += nl + 2
			p.bulk = ll
		}
		if int64(len(buf)-p.pos) < p.bulk+2 {
			return 0, nil, ErrIncomplete
		}
		end := p.pos + int(p.bulk)
		p.offs = append(p.offs, p.pos, end)
		p.pos = end + 2 // Redis does not check the trailing CRLF either
		p.bulk = -1
		p.pending--
	}
	args = p.args[:0]
	for i := 0; i < len(p.offs); i += 2 {
		args = append(args, buf[p.offs[i]:p.offs[i+1]:p.offs[i+1]])
	}
	p.args = args
	n = p.pos
	p.Reset()
	return n, args, nil
}

// indexByte returns the index of the first c in b, or -1 when b has none
// before its end or before a NUL byte: Redis looks for line ends with
// strchr, which stops at a NUL, so a header or inline line holding a NUL
// never completes (the 64 KB limits then apply).
func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
		if x == 0 {
			return -1
		}
	}
	return -1
}

// parseInline splits one inline request line as Redis's sdssplitargs does.
func (p *Parser) parseInline(buf []byte) (int, [][]byte, error) {
	nl := indexByte(buf, '\n')
	if nl < 0 {
		if len(buf) > InlineMax {
			return 0, nil, ErrTooBigInline
		}
		return 0, nil, ErrIncomplete
	}
	line := buf[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	// indexByte stopped at any NUL, so the line holds none: splitInline
	// may treat the end of line as the C string's terminator.
	if !p.splitInline(line) {
		return 0, nil, ErrUnbalanced
	}
	args := p.args[:0]
	for i := 0; i < len(p.ioffs); i += 2 {
		args = append(args, p.inline[p.ioffs[i]:p.ioffs[i+1]:p.ioffs[i+1]])
	}
	p.args = args
	return nl + 1, args, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func (p *Parser) splitInline(line []byte) bool {
	out := p.inline[:0]
	offs := p.ioffs[:0]
	i := 0
	at := func(j int) byte {
		if j < len(line) {
			return line[j]
		}
		return 0
	}
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			break
		}
		start := len(out)
		inq, insq, done := false, false, false
		for !done {
			c := at(i)
			switch {
			case inq:
				if c == '\\' && at(i+1) == 'x' && isHex(at(i+2)) && isHex(at(i+3)) {
					out = append(out, hexVal(at(i+2))*16+hexVal(at(i+3)))
					i += 3
				} else if c == '\\' && at(i+1) != 0 {
					i++
					e := line[i]
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					out = append(out, e)
				} else if c == '"' {
					if n := at(i + 1); n != 0 && !isSpace(n) {
						p.inline, p.ioffs = out, offs
						return false
					}
					done = true
				} else if c == 0 {
					p.inline, p.ioffs = out, offs
					return false
				} else {
					out = append(out, c)
				}
			case insq:
				if c == '\\' && at(i+1) == '\'' {
					i++
					out = append(out, '\'')
				} else if c == '\'' {
					if n := at(i + 1); n != 0 && !isSpace(n) {
						p.inline, p.ioffs = out, offs
						return false
					}
					done = true
				} else if c == 0 {
					p.inline, p.ioffs = out, offs
					return false
				} else {
					out = append(out, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					out = append(out, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		offs = append(offs, start, len(out))
	}
	p.inline, p.ioffs = out, offs
	return true
}

// parseLen is ParseInt for a header's count or length, with the one and
// two digits that most of them have read inline.
func parseLen(b []byte) (int64, bool) {
	switch len(b) {
	case 1:
		if d := b[0] - '0'; d <= 9 {
			return int64(d), true
		}
	case 2:
		if d0, d1 := b[0]-'1', b[1]-'0'; d0 <= 8 && d1 <= 9 {
			return int64(d0+1)*10 + int64(d1), true
		}
	}
	return ParseInt(b)
}

// ParseInt parses a decimal integer exactly as Redis's string2ll does: an
// optional minus sign, no plus sign, no leading zeros, no spaces, and it
// must fit in an int64.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	i := 0
	if b[0] == '-' {
		neg = true
		i = 1
		if len(b) == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	if len(b)-i > 19 {
		return 0, false // 20 digits are past the int64 range
	}
	var v uint64 // 19 digits fit: no overflow below
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + uint64(c)
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}
