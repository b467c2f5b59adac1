package server

import (
	"errors"
	"os"
	"strings"
)

// Shared error replies, so the same text is never typed twice.
const (
	errWrongType     = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNotInt        = "ERR value is not an integer or out of range"
	errNotFloat      = "ERR value is not a valid float"
	errSyntax        = "ERR syntax error"
	errOverflow      = "ERR increment or decrement would overflow"
	errNoSuchKey     = "ERR no such key"
	errDBIndex       = "ERR DB index is out of range"
	errNoAuth        = "NOAUTH Authentication required."
	errWrongPass     = "WRONGPASS invalid username-password pair or user is disabled."
	errNoPassSet     = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errMaxClients    = "ERR max number of clients reached"
	errSameObject    = "ERR source and destination objects are the same"
	errOffsetRange   = "ERR offset is out of range"
	errStringTooLong = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	errTimeoutNeg    = "ERR timeout is negative"
	errNaNInf        = "ERR increment would produce NaN or Infinity"
	errPositive      = "ERR value is out of range, must be positive"
)

func errArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

func errInvalidExpire(name string) string {
	return "ERR invalid expire time in '" + name + "' command"
}

// strerror returns the C library's text for a system call error.
func strerror(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
