package sortkeys

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
)

// strtod converts a weight as sort.c does with strtod: the whole string
// (up to a NUL) must be a C floating point number, not NaN and not out of
// range; the empty string reads as 0.
func strtod(b []byte) (float64, bool) {
	b = cString(b)
	if len(b) == 0 {
		return 0, true
	}
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	t := b[i:]
	neg := false
	if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if isInfWord(t) {
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	hex := len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')
	body := t
	digit := isDigit
	expChar := byte('e')
	if hex {
		body = t[2:]
		digit = isHexDigit
		expChar = 'p'
	}
	// mantissa: digits [. digits], at least one digit
	k, nd, nonzero := 0, 0, false
	for ; k < len(body) && digit(body[k]); k++ {
		nd++
		nonzero = nonzero || body[k] != '0'
	}
	if k < len(body) && body[k] == '.' {
		for k++; k < len(body) && digit(body[k]); k++ {
			nd++
			nonzero = nonzero || body[k] != '0'
		}
	}
	if nd == 0 {
		return 0, false
	}
	hasExp := false
	if k < len(body) && (body[k]|0x20) == expChar {
		k++
		if k < len(body) && (body[k] == '+' || body[k] == '-') {
			k++
		}
		ed := 0
		for ; k < len(body) && isDigit(body[k]); k++ {
			ed++
		}
		if ed == 0 {
			return 0, false
		}
		hasExp = true
	}
	if k != len(body) {
		return 0, false
	}
	str := string(b[i:])
	if hex && !hasExp {
		str += "p0"
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		// Syntax was checked: this is an overflow (ERANGE).
		return 0, false
	}
	// glibc reports ERANGE for an inexact result below the normal range.
	if af := math.Abs(f); nonzero && af < 0x1p-1022 {
		exact, _, perr := big.ParseFloat(str, 0, 4096, big.ToNearestEven)
		if perr != nil || f == 0 || exact.Cmp(new(big.Float).SetFloat64(f)) != 0 {
			return 0, false
		}
	}
	return f, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isDigit(ch byte) bool { return ch >= '0' && ch <= '9' }

func isHexDigit(c byte) bool {
	return isDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'f'
}

// isInfWord reports whether b is "inf" or "infinity", in any case.
func isInfWord(b []byte) bool {
	return len(b) == 3 && bytes.EqualFold(b, []byte("inf")) || len(b) == 8 && bytes.EqualFold(b, []byte("infinity"))
}
