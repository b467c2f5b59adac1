// Package monitor is the line MONITOR shows for each command the server
// runs, as Redis's replicationFeedMonitors writes it:
//
//	+1700000000.123456 [0 127.0.0.1:5000] "set" "key" "value"
//
// the time in seconds and microseconds, the database, where the command
// came from (a client's address, "unix:" and the socket's path, or "lua"
// for a script's commands), and the arguments quoted as sdscatrepr does,
// with the credentials of AUTH and HELLO ... AUTH redacted. The server
// keeps the monitors and decides which commands they see.
package monitor

import (
	"bytes"
	"strconv"
	"time"
)

// AppendLine appends to b the line for the command args run at now in
// database dbi, from source, "\r\n" included.
func AppendLine(b []byte, now time.Time, dbi int, source string, args [][]byte) []byte {
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := strconv.AppendInt(nil, int64(now.Nanosecond()/1000), 10)
	for i := len(us); i < 6; i++ {
		b = append(b, '0')
	}
	b = append(b, us...)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(dbi), 10)
	b = append(b, ' ')
	b = append(b, source...)
	b = append(b, "] "...)
	redact := redacted(args)
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		if redact(i) {
			a = []byte("(redacted)")
		}
		b = AppendRepr(b, a)
	}
	return append(b, "\r\n"...)
}

// redacted returns which arguments Redis hides from monitors: the
// credentials of AUTH and of HELLO ... AUTH.
func redacted(args [][]byte) func(i int) bool {
	switch {
	case bytes.EqualFold(args[0], []byte("auth")):
		return func(i int) bool { return i >= 1 }
	case bytes.EqualFold(args[0], []byte("hello")):
		for j := 2; j+2 < len(args); j++ {
			if bytes.EqualFold(args[j], []byte("auth")) {
				return func(i int) bool { return i == j+1 || i == j+2 }
			}
		}
	}
	return func(int) bool { return false }
}

// AppendRepr appends s quoted and escaped as Redis's sdscatrepr.
func AppendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}
