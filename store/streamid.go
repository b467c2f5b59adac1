package store

import (
	"math"

	"github.com/sluicedb/sluice/resp"
)

// parseUint64 is Redis's string2ull: a canonical integer, else strtoull's
// syntax (leading spaces, a sign, leading zeros).
func parseUint64(b []byte) (uint64, bool) {
	if v, ok := resp.ParseInt(b); ok && len(b) > 0 && (b[0] != '0' || len(b) == 1) && !(len(b) > 1 && b[0] == '-' && b[1] == '0') {
		if v < 0 {
			return 0, false
		}
		return uint64(v), true
	}
	i := 0
	for i < len(b) && isCSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i >= len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}

// ParseStreamID parses a stream ID argument as Redis's
// streamGenericParseIDOrReply does, without the reply: "-", "+", "ms" (the
// sequence is missingSeq) or "ms-seq"; strict refuses "-" and "+".
// seqGiven non-nil allows "ms-*" (XADD) and reports whether the sequence
// was given.
func ParseStreamID(b []byte, missingSeq uint64, strict bool, seqGiven *bool) (StreamID, bool) {
	if len(b) > 127 {
		return StreamID{}, false
	}
	if strict && len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		return StreamID{}, false
	}
	if seqGiven != nil {
		*seqGiven = true
	}
	if len(b) == 1 && b[0] == '-' {
		return StreamID{}, true
	}
	if len(b) == 1 && b[0] == '+' {
		return MaxStreamID, true
	}
	// Like C, the text stops at a NUL byte.
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	msPart, seqPart, dot := b, []byte(nil), false
	for i, c := range b {
		if c == '-' {
			msPart, seqPart, dot = b[:i], b[i+1:], true
			break
		}
	}
	ms, ok := parseUint64(msPart)
	if !ok {
		return StreamID{}, false
	}
	seq := missingSeq
	if dot {
		if seqGiven != nil && len(seqPart) == 1 && seqPart[0] == '*' {
			seq = 0
			*seqGiven = false
		} else if seq, ok = parseUint64(seqPart); !ok {
			return StreamID{}, false
		}
	}
	return StreamID{Ms: ms, Seq: seq}, true
}

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
