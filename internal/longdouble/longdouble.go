// Package longdouble is C's long double as Redis's INCRBYFLOAT and
// HINCRBYFLOAT compute in it on x86-64: the x87 80-bit extended format,
// emulated with big.Float (Prec bits, round to nearest even) and the
// format's overflow and underflow limits, with Redis's string2ld parsing
// and ld2string's human formatting.
package longdouble

import (
	"bytes"
	"math/big"
)

// INCRBYFLOAT and HINCRBYFLOAT work in C's long double, which on the x86-64 builds Redis
// ships is the x87 80-bit extended format: a 64-bit significand and an
// exponent range up to 2^16383. It is emulated here with big.Float at 64
// bits of precision (round to nearest even, as the FPU does), with the
// extended format's overflow and underflow thresholds applied by hand.

const (
	Prec   = 64
	maxExp = 16384  // MantExp of the largest finite value is 16384
	minExp = -16445 // the smallest subnormal is 2^-16445
	maxLen = 5 * 1024
)

func New() *big.Float { return new(big.Float).SetPrec(Prec) }

// Overflows reports whether a rounded value is beyond the extended range.
func Overflows(f *big.Float) bool {
	return !f.IsInf() && f.Sign() != 0 && f.MantExp(nil) > maxExp
}

// underflows reports whether an exact nonzero value rounds to zero in
// the extended format: at most half the smallest subnormal, 2^-16446.
func underflows(num, den *big.Int) bool {
	if num.Sign() == 0 {
		return false
	}
	// |num/den| <= 2^-16446  <=>  |num| * 2^16446 <= den
	if den == nil {
		den = big.NewInt(1)
	}
	l := new(big.Int).Abs(num)
	l.Lsh(l, -(minExp - 1))
	return l.Cmp(den) <= 0
}

func isCSpace(ch byte) bool {
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r'
}

func hexDigit(ch byte) (byte, bool) {
	switch {
	case ch >= '0' && ch <= '9':
		return ch - '0', true
	case ch >= 'a' && ch <= 'f':
		return ch - 'a' + 10, true
	case ch >= 'A' && ch <= 'F':
		return ch - 'A' + 10, true
	}
	return 0, false
}

// Parse parses b into z as Redis's string2ld does with strtold:
// the whole string must be a decimal or hexadecimal float or an infinity
// (no spaces, no NaN); values that overflow, or underflow to zero, are
// refused. z must have precision Prec.
func Parse(z *big.Float, b []byte) bool {
	if len(b) == 0 || len(b) >= maxLen || isCSpace(b[0]) {
		return false
	}
	s := b
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	if bytes.EqualFold(s, []byte("inf")) || bytes.EqualFold(s, []byte("infinity")) {
		z.SetInf(neg)
		return true
	}
	hex := len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')
	if hex {
		s = s[2:]
	}
	// Significand: digits with at most one point, at least one digit. The
	// significant digits are gathered for big.Int to convert at once.
	var digitBuf [32]byte
	digits := digitBuf[:0]
	ndigits, sig, frac, seenPoint := 0, 0, 0, false
	i := 0
	for ; i < len(s); i++ {
		ch := s[i]
		if ch == '.' && !seenPoint {
			seenPoint = true
			continue
		}
		var d byte
		var ok bool
		if hex {
			d, ok = hexDigit(ch)
		} else {
			d, ok = ch-'0', isDigit(ch)
		}
		if !ok {
			break
		}
		ndigits++
		if seenPoint {
			frac++
		}
		if sig > 0 || d != 0 {
			sig++
			digits = append(digits, ch)
		}
	}
	if ndigits == 0 {
		return false
	}
	// Exponent: e (decimal) or p (hex, a power of two), with digits.
	var exp int64
	if i < len(s) {
		ch := s[i] | 0x20
		if (hex && ch != 'p') || (!hex && ch != 'e') {
			return false
		}
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		if i == len(s) {
			return false
		}
		for ; i < len(s); i++ {
			if !isDigit(s[i]) {
				return false
			}
			if exp < 1e9 {
				exp = exp*10 + int64(s[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	if sig == 0 {
		z.SetInt64(0)
		if neg {
			z.Neg(z)
		}
		return true
	}
	mant := new(big.Int)
	if hex {
		mant.SetString(string(digits), 16)
	} else {
		mant.SetString(string(digits), 10)
	}
	if neg {
		mant.Neg(mant)
	}
	// The value is num/den exactly (den nil for an integer).
	num := mant
	var den *big.Int
	var nearBottom bool
	if hex {
		// |value| < 2^mag: out of range far beyond the limits is decided
		// without building huge numbers.
		e2 := exp - 4*int64(frac)
		mag := int64(mant.BitLen()) + e2
		if mag > maxExp+1 || mag < minExp-2 {
			return false
		}
		nearBottom = mag < minExp+8
		if e2 >= 0 {
			num.Lsh(num, uint(e2))
		} else {
			den = new(big.Int).Lsh(big.NewInt(1), uint(-e2))
		}
	} else {
		// |value| < 10^mag, and at least 10^(mag-1).
		e10 := exp - int64(frac)
		mag := int64(sig) + e10
		if mag > 4934 || mag < -4952 {
			return false
		}
		nearBottom = mag < -4940
		if e10 != 0 {
			p := new(big.Int).Exp(big.NewInt(10), big.NewInt(abs64(e10)), nil)
			if e10 > 0 {
				num.Mul(num, p)
			} else {
				den = p
			}
		}
	}
	if nearBottom && underflows(num, den) {
		return false
	}
	if den == nil {
		z.SetInt(num) // rounds to z's 64 bits
	} else {
		// Quo of exact operands is correctly rounded: one rounding, as
		// strtold does.
		var a, b big.Float
		a.SetInt(num)
		b.SetInt(den)
		z.Quo(&a, &b)
	}
	return !Overflows(z)
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Format appends f as ld2string's LD_STR_HUMAN mode prints it:
// "%.17Lf", then trailing zeros (and a trailing point) removed, and "-0"
// written as "0".
func Format(dst []byte, f *big.Float) []byte {
	start := len(dst)
	dst = f.Append(dst, 'f', 17)
	n := len(dst)
	for n > start && dst[n-1] == '0' {
		n--
	}
	if dst[n-1] == '.' {
		n--
	}
	dst = dst[:n]
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}

func isDigit(ch byte) bool { return ch >= '0' && ch <= '9' }
