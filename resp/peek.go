package resp

// Peek looks at the multibulk command at the front of buf without the
// parser: it returns the command's second argument (its first key, for
// most commands) and the command's length. n is 0 when buf does not start
// with a whole, well-formed multibulk command (Next says why); arg is nil
// when the command has fewer than two arguments. Event loops use it to
// see the keys a batch of input will touch before they run it.
func Peek(buf []byte) (arg []byte, n int) {
	if len(buf) < 4 || buf[0] != '*' {
		return nil, 0
	}
	count, pos, ok := peekLen(buf, 1)
	if !ok || count <= 0 || count > 1<<20 {
		return nil, 0
	}
	for i := int64(0); i < count; i++ {
		if pos >= len(buf) || buf[pos] != '$' {
			return nil, 0
		}
		l, p, ok := peekLen(buf, pos+1)
		if !ok || l < 0 || int64(len(buf)-p) < l+2 {
			return nil, 0
		}
		if i == 1 {
			arg = buf[p : p+int(l) : p+int(l)]
		}
		pos = p + int(l) + 2
	}
	return arg, pos
}

// peekLen reads the length at buf[i:] up to its CRLF and returns it and
// the position after the CRLF. It takes what Next takes (ParseInt) less
// negative numbers: digits without a leading zero, or "0".
func peekLen(buf []byte, i int) (v int64, next int, ok bool) {
	start := i
	for ; i < len(buf); i++ {
		d := buf[i] - '0'
		if d > 9 {
			break
		}
		v = v*10 + int64(d)
	}
	if n := i - start; n == 0 || n > 18 || n > 1 && buf[start] == '0' {
		return 0, 0, false
	}
	if i+1 >= len(buf) || buf[i] != '\r' || buf[i+1] != '\n' {
		return 0, 0, false
	}
	return v, i + 2, true
}
