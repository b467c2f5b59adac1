package geo

import (
	"math"
	"math/big"
)

// Redis computes distances with glibc's sin, cos and asin, which return
// the correctly rounded result (all but never off by an ulp), while Go's
// math package may be an ulp away. A distance stored by STOREDIST shows
// all 17 digits, so the functions here evaluate in double-double
// arithmetic (about 106 bits) and round once, giving glibc's results.

// dd is an unevaluated sum hi+lo with |lo| <= ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return
}

func quickTwoSum(a, b float64) (s, e float64) {
	s = a + b
	e = b - (s - a)
	return
}

func twoProd(a, b float64) (p, e float64) {
	p = a * b
	e = math.FMA(a, b, -p)
	return
}

func ddAdd(a, b dd) dd {
	s, e := twoSum(a.hi, b.hi)
	t, f := twoSum(a.lo, b.lo)
	e += t
	s, e = quickTwoSum(s, e)
	e += f
	s, e = quickTwoSum(s, e)
	return dd{s, e}
}

func ddMul(a, b dd) dd {
	p, e := twoProd(a.hi, b.hi)
	e += float64(a.hi*b.lo) + float64(a.lo*b.hi)
	p, e = quickTwoSum(p, e)
	return dd{p, e}
}

// ddDivD divides by a double.
func ddDivD(a dd, b float64) dd {
	q1 := a.hi / b
	p, e := twoProd(q1, b)
	s, f := twoSum(a.hi, -p)
	f -= e
	f += a.lo
	q2 := (s + f) / b
	s, e = quickTwoSum(q1, q2)
	return dd{s, e}
}

func ddNeg(a dd) dd { return dd{-a.hi, -a.lo} }

// pio2 is pi/2 as a sum of three doubles.
var pio2 = func() [3]float64 {
	const digits = "1.57079632679489661923132169163975144209858469968755291048747229615390820314310449931401741267105853399107404325664115332354692230477529111586267970406424055872514205135096926055277982231147447746519098221440548783296672306423782411689339158263560095457282428346173017430522716332410669680363012457064"
	f, _, _ := big.ParseFloat(digits, 10, 400, big.ToNearestEven)
	var out [3]float64
	for i := range out {
		out[i], _ = f.Float64()
		f.Sub(f, new(big.Float).SetFloat64(out[i]))
	}
	return out
}()

// Taylor coefficients: sinCoef[i] = (-1)^i/(2i+1)!, cosCoef[i] =
// (-1)^i/(2i)!, as double-doubles. Terms from ddTerms on are small enough
// (below 2^-60 of the sum for |r| <= pi/4) to be summed in plain doubles.
const (
	polyTerms = 16
	ddTerms   = 9
)

var sinCoef, cosCoef = func() (s, c [polyTerms]dd) {
	f := new(big.Float).SetPrec(300).SetInt64(1)
	for n := int64(0); n < 2*polyTerms; n++ {
		if n > 0 {
			f.Quo(f, new(big.Float).SetPrec(300).SetInt64(n))
		}
		v := new(big.Float).SetPrec(300).Set(f)
		if (n/2)%2 == 1 {
			v.Neg(v)
		}
		hi, _ := v.Float64()
		lo, _ := v.Sub(v, new(big.Float).SetFloat64(hi)).Float64()
		if n%2 == 0 {
			c[n/2] = dd{hi, lo}
		} else {
			s[n/2] = dd{hi, lo}
		}
	}
	return
}()

// poly evaluates sum coef[i]*x^i by Horner's rule.
func poly(coef *[polyTerms]dd, x dd) dd {
	t := coef[polyTerms-1].hi
	for i := polyTerms - 2; i >= ddTerms; i-- {
		t = float64(t*x.hi) + coef[i].hi
	}
	acc := dd{t, 0}
	for i := ddTerms - 1; i >= 0; i-- {
		acc = ddAdd(ddMul(acc, x), coef[i])
	}
	return acc
}

// reduce returns r = x - k*pi/2 in double-double, |r| <= ~pi/4, and k mod 4.
func reduce(x float64) (dd, int) {
	k := math.Round(x / pio2[0])
	r := dd{x, 0}
	if k != 0 {
		p, e := twoProd(k, pio2[0])
		r = ddAdd(r, dd{-p, -e})
		p, e = twoProd(k, pio2[1])
		r = ddAdd(r, dd{-p, -e})
		r = ddAdd(r, dd{-k * pio2[2], 0})
	}
	return r, int(int64(k) & 3)
}

func sinR(r dd) dd { return ddMul(poly(&sinCoef, ddMul(r, r)), r) }
func cosR(r dd) dd { return poly(&cosCoef, ddMul(r, r)) }

// sinQ returns sin(r + q·π/2) for the reduced argument r.
func sinQ(r dd, q int) dd {
	switch q & 3 {
	case 0:
		return sinR(r)
	case 1:
		return cosR(r)
	case 2:
		return ddNeg(sinR(r))
	default:
		return ddNeg(cosR(r))
	}
}

// sinDD returns sin(x) in double-double for |x| < accurateLimit.
func sinDD(x float64) dd {
	r, q := reduce(x)
	return sinQ(r, q)
}

// cosDD returns cos(x) = sin(x + π/2) in double-double for |x| < accurateLimit.
func cosDD(x float64) dd {
	r, q := reduce(x)
	return sinQ(r, q+1)
}

const accurateLimit = 1 << 30

func sin(x float64) float64 {
	if x == 0 || !(math.Abs(x) < accurateLimit) {
		return math.Sin(x)
	}
	s := sinDD(x)
	return s.hi + s.lo
}

func cos(x float64) float64 {
	if !(math.Abs(x) < accurateLimit) {
		return math.Cos(x)
	}
	c := cosDD(x)
	return c.hi + c.lo
}

// asin refines Go's estimate by one Newton step in double-double.
func asin(x float64) float64 {
	y := math.Asin(x)
	if x == 0 || math.IsNaN(y) || math.Abs(x) == 1 {
		return y
	}
	d := ddAdd(sinDD(y), dd{-x, 0})
	corr := (d.hi + d.lo) / math.Cos(y)
	return y - corr
}
