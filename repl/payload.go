package repl

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"strconv"
	"strings"
)

// A full sync's payload comes after +FULLRESYNC in one of two framings:
//
//	$<length>\r\n<length bytes of RDB>
//	$EOF:<40 random bytes>\r\n<RDB><the same 40 bytes>
//
// the second when the master streams an RDB it does not know the length
// of (diskless sync) to a replica that announced "capa eof". Before it the
// master may send newlines to keep the link alive.

// EOFMarkLen is the length of an $EOF: mark (RDB_EOF_MARK_SIZE).
const EOFMarkLen = 40

// NewEOFMark returns a random mark.
func NewEOFMark() []byte {
	const digits = "0123456789abcdef"
	var b [EOFMarkLen]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = digits[b[i]%16]
	}
	return b[:]
}

// PayloadHeader is the line before a payload.
type PayloadHeader struct {
	Size int64  // the length, -1 with a mark
	Mark []byte // the $EOF: mark, nil with a length
}

// ErrPayloadError is returned for an error reply in place of a payload.
var ErrPayloadError = errors.New("MASTER aborted replication with an error")

// ParsePayloadHeader reads the header line (without its \r\n).
func ParsePayloadHeader(line string) (PayloadHeader, error) {
	if line == "" {
		return PayloadHeader{}, errors.New("empty payload header")
	}
	switch line[0] {
	case '-':
		return PayloadHeader{}, ErrPayloadError
	case '$':
	default:
		return PayloadHeader{}, errors.New("Bad protocol from MASTER, the first byte is not '$' (we received '" + line + "'), are you sure the host and port are right?")
	}
	if strings.HasPrefix(line, "$EOF:") && len(line) >= 5+EOFMarkLen {
		return PayloadHeader{Size: -1, Mark: []byte(line[5 : 5+EOFMarkLen])}, nil
	}
	n, err := strconv.ParseInt(line[1:], 10, 64)
	if err != nil || n < 0 {
		return PayloadHeader{}, errors.New("bad payload length: " + line)
	}
	return PayloadHeader{Size: n}, nil
}

// PayloadReader reads a payload's bytes from br, and nothing after them.
type PayloadReader struct {
	br   *bufio.Reader
	h    PayloadHeader
	left int64  // with a length: bytes still to read
	hold []byte // with a mark: the last bytes read, not returned yet
	eof  bool
	read int64
	// OnRead is called with the count of bytes taken from the socket
	// (progress, the link's last I/O).
	OnRead func(n int)
}

// NewPayloadReader reads the payload h announced.
func NewPayloadReader(br *bufio.Reader, h PayloadHeader) *PayloadReader {
	return &PayloadReader{br: br, h: h, left: h.Size}
}

// Read implements io.Reader. With a mark, the payload ends when the last
// bytes received are the mark: the master sends nothing after it until
// the replica acknowledges.
func (p *PayloadReader) Read(b []byte) (int, error) {
	if p.eof {
		return 0, io.EOF
	}
	if p.h.Mark == nil {
		if p.left == 0 {
			p.eof = true
			return 0, io.EOF
		}
		if int64(len(b)) > p.left {
			b = b[:p.left]
		}
		n, err := p.br.Read(b)
		p.left -= int64(n)
		p.read += int64(n)
		if n > 0 && p.OnRead != nil {
			p.OnRead(n)
		}
		if err == io.EOF && p.left > 0 {
			err = io.ErrUnexpectedEOF
		}
		if err == nil && p.left == 0 {
			p.eof = true
			err = io.EOF
			if n == 0 {
				return 0, err
			}
			return n, nil
		}
		return n, err
	}
	for {
		// Bytes beyond the mark's length in hold can be returned.
		if len(p.hold) > EOFMarkLen {
			n := copy(b, p.hold[:len(p.hold)-EOFMarkLen])
			p.hold = p.hold[:copy(p.hold, p.hold[n:])]
			return n, nil
		}
		if len(p.hold) == EOFMarkLen && bytes.Equal(p.hold, p.h.Mark) {
			p.eof = true
			return 0, io.EOF
		}
		var chunk [32 * 1024]byte
		n, err := p.br.Read(chunk[:])
		if n > 0 {
			p.read += int64(n)
			if p.OnRead != nil {
				p.OnRead(n)
			}
			p.hold = append(p.hold, chunk[:n]...)
			continue
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
}

// Total is how many bytes were taken from the socket so far.
func (p *PayloadReader) Total() int64 { return p.read }

// AppendPayloadHeader appends the header line for a payload of size bytes (-1:
// streamed with mark).
func AppendPayloadHeader(b []byte, size int64, mark []byte) []byte {
	if size < 0 {
		b = append(b, "$EOF:"...)
		b = append(b, mark...)
		return append(b, '\r', '\n')
	}
	b = append(b, '$')
	b = strconv.AppendInt(b, size, 10)
	return append(b, '\r', '\n')
}
