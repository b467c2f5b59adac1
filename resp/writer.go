package resp

import (
	"math"
	"strconv"
)

// Writer appends RESP replies to Buf. Proto selects RESP2 (2) or RESP3 (3)
// for the types that differ between them (null, maps, sets, doubles,
// booleans, push). The zero value writes RESP2.
type Writer struct {
	Buf    []byte
	Proto  int
	Errors int // error replies written, for statistics
	// OnError, when set, is called with every error reply's text (INFO
	// errorstats counts them by code).
	OnError func(msg string)
}

// Resp3 reports whether replies are written in RESP3.
func (w *Writer) Resp3() bool { return w.Proto == 3 }

// Raw appends bytes that are already RESP-encoded.
func (w *Writer) Raw(b []byte) { w.Buf = append(w.Buf, b...) }

// OK appends +OK.
func (w *Writer) OK() { w.Buf = append(w.Buf, "+OK\r\n"...) }

// Simple appends a simple string (+s).
func (w *Writer) Simple(s string) {
	w.Buf = append(w.Buf, '+')
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// Error appends an error reply. msg must already carry its code
// ("ERR ...", "WRONGTYPE ..."); a missing leading '-' is added.
func (w *Writer) Error(msg string) {
	w.Errors++
	if w.OnError != nil {
		w.OnError(msg)
	}
	if len(msg) == 0 || msg[0] != '-' {
		w.Buf = append(w.Buf, '-')
	}
	w.Buf = appendSanitized(w.Buf, msg)
	w.Buf = append(w.Buf, '\r', '\n')
}

// appendSanitized replaces newlines in error texts with spaces, as Redis does,
// so an error never breaks the protocol.
func appendSanitized(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// Int appends an integer reply.
func (w *Writer) Int(n int64) {
	w.Buf = append(w.Buf, ':')
	w.Buf = strconv.AppendInt(w.Buf, n, 10)
	w.Buf = append(w.Buf, '\r', '\n')
}

func (w *Writer) header(c byte, n int) {
	w.Buf = append(w.Buf, c)
	w.Buf = strconv.AppendInt(w.Buf, int64(n), 10)
	w.Buf = append(w.Buf, '\r', '\n')
}

// Bulk appends a bulk string.
func (w *Writer) Bulk(b []byte) {
	n := len(b)
	if n >= 100 {
		w.header('$', n)
		w.Buf = append(w.Buf, b...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	// Short strings (list elements, members, small values): one capacity
	// check and the header's digits written directly.
	l := len(w.Buf)
	if cap(w.Buf)-l < n+7 {
		w.Buf = append(w.Buf[:l:l], make([]byte, n+7)...)[:l]
	}
	buf := w.Buf[l : l+n+7]
	buf[0] = '$'
	i := 1
	if n >= 10 {
		buf[1] = byte('0' + n/10)
		i = 2
	}
	buf[i] = byte('0' + n%10)
	buf[i+1], buf[i+2] = '\r', '\n'
	i += 3
	i += copy(buf[i:], b)
	buf[i], buf[i+1] = '\r', '\n'
	w.Buf = w.Buf[:l+i+2]
}

// BulkString appends a bulk string.
func (w *Writer) BulkString(s string) {
	w.header('$', len(s))
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// BulkInt appends an integer formatted as a bulk string.
func (w *Writer) BulkInt(n int64) {
	var tmp [24]byte
	w.Bulk(strconv.AppendInt(tmp[:0], n, 10))
}

// Null appends the null bulk string ($-1 in RESP2, _ in RESP3).
func (w *Writer) Null() {
	if w.Proto == 3 {
		w.Buf = append(w.Buf, "_\r\n"...)
	} else {
		w.Buf = append(w.Buf, "$-1\r\n"...)
	}
}

// NullArray appends the null array (*-1 in RESP2, _ in RESP3).
func (w *Writer) NullArray() {
	if w.Proto == 3 {
		w.Buf = append(w.Buf, "_\r\n"...)
	} else {
		w.Buf = append(w.Buf, "*-1\r\n"...)
	}
}

// Array appends an array header for n elements.
func (w *Writer) Array(n int) { w.header('*', n) }

// Map appends a map header for n key/value pairs (a flat array of 2n in RESP2).
func (w *Writer) Map(n int) {
	if w.Proto == 3 {
		w.header('%', n)
	} else {
		w.header('*', 2*n)
	}
}

// Set appends a set header (an array in RESP2).
func (w *Writer) Set(n int) {
	if w.Proto == 3 {
		w.header('~', n)
	} else {
		w.header('*', n)
	}
}

// Push appends a push header (an array in RESP2).
func (w *Writer) Push(n int) {
	if w.Proto == 3 {
		w.header('>', n)
	} else {
		w.header('*', n)
	}
}

// Bool appends a boolean (the integer 1 or 0 in RESP2).
func (w *Writer) Bool(v bool) {
	if w.Proto == 3 {
		if v {
			w.Buf = append(w.Buf, "#t\r\n"...)
		} else {
			w.Buf = append(w.Buf, "#f\r\n"...)
		}
		return
	}
	if v {
		w.Int(1)
	} else {
		w.Int(0)
	}
}

// Double appends a double (a bulk string in RESP2), formatted as Redis does.
func (w *Writer) Double(f float64) {
	var tmp [40]byte
	s := AppendDouble(tmp[:0], f)
	if w.Proto == 3 {
		w.Buf = append(w.Buf, ',')
		w.Buf = append(w.Buf, s...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.Bulk(s)
}

// Verbatim appends a verbatim string (a bulk string in RESP2).
func (w *Writer) Verbatim(format, s string) {
	if w.Proto == 3 {
		w.header('=', len(s)+4)
		w.Buf = append(w.Buf, format...)
		w.Buf = append(w.Buf, ':')
		w.Buf = append(w.Buf, s...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.BulkString(s)
}

// AppendDouble formats f as Redis replies do: "%.17g", with "inf" and "-inf".
func AppendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	return appendG17(b, f)
}

// appendG17 is C's printf("%.17g"). strconv's 'g' format with a
// precision follows the same rules: the exponent form when the exponent is
// below -4 or at least the precision, trailing zeros removed, and at least
// two exponent digits.
func appendG17(b []byte, f float64) []byte {
	if f == math.Trunc(f) && f > -1<<53 && f < 1<<53 {
		// An integer (the usual score: a count, a timestamp) has at most
		// 16 digits here, all exact, which %.17g prints as they are.
		if f == 0 && math.Signbit(f) {
			return append(b, "-0"...)
		}
		return strconv.AppendInt(b, int64(f), 10)
	}
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}

// AppendCommand appends args to b as a command is sent: an array of bulk
// strings (what clients write, and what the replication stream and
// MIGRATE carry).
func AppendCommand(b []byte, args ...[]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
