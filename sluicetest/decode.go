package sluicetest

import (
	"bytes"
	"errors"
	"strconv"
)

// replyError is an error reply from the server.
type replyError string

func (e replyError) Error() string { return string(e) }

var errShort = errors.New("sluicetest: truncated reply")

// decode parses one RESP2/RESP3 value from b.
func decode(b []byte) (any, []byte, error) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return nil, nil, errShort
	}
	head, rest := string(b[1:i]), b[i+2:]
	switch b[0] {
	case '+':
		return head, rest, nil
	case '-':
		return replyError(head), rest, nil
	case ':':
		n, err := strconv.ParseInt(head, 10, 64)
		return n, rest, err
	case ',':
		f, err := strconv.ParseFloat(head, 64)
		return f, rest, err
	case '#':
		return head == "t", rest, nil
	case '_':
		return nil, rest, nil
	case '$', '=':
		n, err := strconv.Atoi(head)
		if err != nil {
			return nil, nil, err
		}
		if n < 0 {
			return nil, rest, nil
		}
		if len(rest) < n+2 {
			return nil, nil, errShort
		}
		s := string(rest[:n])
		if b[0] == '=' && len(s) >= 4 {
			s = s[4:]
		}
		return s, rest[n+2:], nil
	case '*', '~', '>':
		n, err := strconv.Atoi(head)
		if err != nil {
			return nil, nil, err
		}
		if n < 0 {
			return nil, rest, nil
		}
		out := make([]any, 0, n)
		for j := 0; j < n; j++ {
			var v any
			v, rest, err = decode(rest)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, v)
		}
		return out, rest, nil
	case '%':
		n, err := strconv.Atoi(head)
		if err != nil {
			return nil, nil, err
		}
		out := make(map[string]any, n)
		for j := 0; j < n; j++ {
			var k, v any
			if k, rest, err = decode(rest); err != nil {
				return nil, nil, err
			}
			if v, rest, err = decode(rest); err != nil {
				return nil, nil, err
			}
			ks, _ := k.(string)
			out[ks] = v
		}
		return out, rest, nil
	}
	return nil, nil, errors.New("sluicetest: unknown reply type " + string(b[0]))
}
