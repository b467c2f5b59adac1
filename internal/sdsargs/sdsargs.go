// Package sdsargs splits a line into words as Redis's sdssplitargs does:
// the syntax of redis.conf lines, of ACL selectors and of a function
// library's shebang line; and quotes a string as sdscatrepr does, the
// form those lines (and MONITOR) read back.
package sdsargs

import "strconv"

// Split splits a line into words as Redis's sdssplitargs does:
// blanks separate words, "double quotes" take \n \r \t \b \a \\ \" and \xHH
// escapes, 'single quotes' only \'. A closing quote must be followed by a
// blank or the end of the line.
func Split(line string) ([]string, bool) {
	var out []string
	i := 0
	isSpace := func(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f' }
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return out, true
		}
		var cur []byte
		inq, insq := false, false
		for done := false; !done; {
			if inq {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					v, _ := strconv.ParseUint(line[i+2:i+4], 16, 8)
					cur = append(cur, byte(v))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			} else if insq {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					cur = append(cur, '\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			} else {
				if i >= len(line) {
					break
				}
				switch c := line[i]; {
				case isSpace(c):
					done = true
				case c == '"':
					inq = true
				case c == '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		out = append(out, string(cur))
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// AppendRepr appends s double-quoted as Redis's sdscatrepr writes it:
// \\ \" \n \r \t \a \b escaped, other bytes outside printable ASCII as
// \xHH. Split reads it back as s.
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

// Repr is AppendRepr for a string.
func Repr(s string) string { return string(AppendRepr(nil, []byte(s))) }
