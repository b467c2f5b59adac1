// Package monitor is the line MONITOR shows for each command the server
// runs, as Redis's replicationFeedMonitors writes it:
//
//	+1700000000.123456 [0 127.0.0.1:5000] "set" "key" "value"
//
// the time in seconds and microseconds, the database, where the command
// came from (a client's address, "unix:" and the socket's path, or "lua"
// for a script's commands), and the arguments quoted as sdscatrepr does,
// with credentials redacted (see Redacted, which the slow log uses too).
// The server keeps the monitors and decides which commands they see.
package monitor

import (
	"bytes"
	"strconv"
	"time"

	"github.com/sluicedb/sluice/internal/sdsargs"
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
	redact := Redacted(args)
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		if redact(i) {
			a = []byte("(redacted)")
		}
		b = sdsargs.AppendRepr(b, a)
	}
	return append(b, "\r\n"...)
}

// Redacted returns which of a command's arguments Redis hides from
// monitors and from the slow log (its redactClientCommandArgument): the
// credentials of AUTH, HELLO ... AUTH and MIGRATE ... AUTH / AUTH2,
// everything after ACL SETUSER, and the values CONFIG SET gives
// masteruser, masterauth and requirepass. As in Redis, an argument is
// hidden only where the command's own parsing reaches it.
func Redacted(args [][]byte) func(i int) bool {
	none := func(int) bool { return false }
	if len(args) == 0 {
		return none
	}
	is := func(a []byte, s string) bool { return bytes.EqualFold(a, []byte(s)) }
	var hide []int
	switch {
	case is(args[0], "auth"):
		// AUTH password, AUTH username password; more arguments are a
		// syntax error found before anything is hidden.
		if len(args) == 2 || len(args) == 3 {
			for i := 1; i < len(args); i++ {
				hide = append(hide, i)
			}
		}
	case is(args[0], "hello"):
		if len(args) < 2 {
			return none
		}
		if v, err := strconv.ParseInt(string(args[1]), 10, 64); err != nil || v < 2 || v > 3 {
			return none
		}
		for j := 2; j < len(args); j++ {
			more := len(args) - 1 - j
			switch {
			case is(args[j], "auth") && more >= 2:
				hide = append(hide, j+1, j+2)
				j += 2
			case is(args[j], "setname") && more >= 1:
				j++
			default:
				j = len(args)
			}
		}
	case is(args[0], "migrate"):
		for j := 6; j < len(args); j++ {
			more := len(args) - 1 - j
			switch {
			case is(args[j], "copy"), is(args[j], "replace"):
			case is(args[j], "auth") && more >= 1:
				hide = append(hide, j+1)
				j++
			case is(args[j], "auth2") && more >= 2:
				hide = append(hide, j+1, j+2)
				j += 2
			default: // KEYS (the rest are keys) or an error
				j = len(args)
			}
		}
	case is(args[0], "acl") && len(args) >= 3 && is(args[1], "setuser"):
		for i := 2; i < len(args); i++ {
			hide = append(hide, i)
		}
	case is(args[0], "config") && len(args) >= 2 && is(args[1], "set") && len(args)%2 == 0:
		for j := 2; j+1 < len(args); j += 2 {
			if is(args[j], "masteruser") || is(args[j], "masterauth") || is(args[j], "requirepass") {
				hide = append(hide, j+1)
			}
		}
	}
	if hide == nil {
		return none
	}
	return func(i int) bool {
		for _, h := range hide {
			if h == i {
				return true
			}
		}
		return false
	}
}
