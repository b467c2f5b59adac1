package geo

import "math"

// The trigonometric functions the distance formula uses.
func sin(x float64) float64  { return math.Sin(x) }
func cos(x float64) float64  { return math.Cos(x) }
func asin(x float64) float64 { return math.Asin(x) }
