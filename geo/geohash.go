// Package geo holds the geohash arithmetic behind the GEO commands, with the
// same numeric behaviour as Redis 7.0 (geohash.c, geohash_helper.c): GEO
// members are sorted-set members whose score is a 52-bit interleaved
// geohash of (longitude, latitude) over the Web Mercator limits, so scores,
// decoded positions and search results agree with Redis bit for bit.
//
// Products whose result is added to something else are written with an
// explicit float64 conversion so that the compiler never fuses them into
// an FMA (which would round differently from Redis's x86-64 build).
package geo

import "math"

// Limits of the encodable area (EPSG:900913 / Web Mercator).
const (
	LatMin  = -85.05112878
	LatMax  = 85.05112878
	LongMin = -180.0
	LongMax = 180.0

	// StepMax is the precision of stored scores: 26 bits per axis.
	StepMax = 26
)

// Hash is a geohash of Step bits per axis (2*Step bits in all).
type Hash struct {
	Bits uint64
	Step uint8
}

// IsZero reports whether h is the "no area" marker.
func (h Hash) IsZero() bool { return h.Bits == 0 && h.Step == 0 }

// Range is a closed interval of one coordinate.
type Range struct{ Min, Max float64 }

func (r Range) isZero() bool { return r.Min == 0 && r.Max == 0 }

// Area is the cell a hash names.
type Area struct {
	Hash      Hash
	Longitude Range
	Latitude  Range
}

// Neighbors are the eight cells around a hash, of the same step.
type Neighbors struct {
	North, East, West, South                   Hash
	NorthEast, SouthEast, NorthWest, SouthWest Hash
}

// WGS84 ranges used for scores.
var (
	longRange = Range{LongMin, LongMax}
	latRange  = Range{LatMin, LatMax}
)

// spread moves the low 32 bits of v to the even bit positions.
func spread(v uint64) uint64 {
	v = (v | v<<16) & 0x0000FFFF0000FFFF
	v = (v | v<<8) & 0x00FF00FF00FF00FF
	v = (v | v<<4) & 0x0F0F0F0F0F0F0F0F
	v = (v | v<<2) & 0x3333333333333333
	v = (v | v<<1) & 0x5555555555555555
	return v
}

// squash gathers the even bits of v into the low 32 bits.
func squash(v uint64) uint64 {
	v &= 0x5555555555555555
	v = (v | v>>1) & 0x3333333333333333
	v = (v | v>>2) & 0x0F0F0F0F0F0F0F0F
	v = (v | v>>4) & 0x00FF00FF00FF00FF
	v = (v | v>>8) & 0x0000FFFF0000FFFF
	v = (v | v>>16) & 0x00000000FFFFFFFF
	return v
}

// interleave puts lat's bits at even positions and lon's at odd ones.
func interleave(lat, lon uint32) uint64 { return spread(uint64(lat)) | spread(uint64(lon))<<1 }

// deinterleave returns the even-position bits in the low word and the
// odd-position ones in the high word.
func deinterleave(h uint64) uint64 { return squash(h) | squash(h>>1)<<32 }

// toUint32 converts a non-negative offset to uint32 as C's cast does on
// x86-64 (truncation; the offsets here never exceed 2^32).
func toUint32(f float64) uint32 { return uint32(int64(f)) }

// Encode hashes (longitude, latitude) at step bits per axis within the
// given ranges. ok is false outside the ranges or for an invalid step.
func Encode(lonR, latR Range, longitude, latitude float64, step uint8) (Hash, bool) {
	if step > 32 || step == 0 || latR.isZero() || lonR.isZero() {
		return Hash{}, false
	}
	if longitude > LongMax || longitude < LongMin || latitude > LatMax || latitude < LatMin {
		return Hash{}, false
	}
	h := Hash{Step: step}
	if latitude < latR.Min || latitude > latR.Max || longitude < lonR.Min || longitude > lonR.Max {
		return h, false
	}
	latOff := (latitude - latR.Min) / (latR.Max - latR.Min)
	lonOff := (longitude - lonR.Min) / (lonR.Max - lonR.Min)
	scale := float64(uint64(1) << step)
	latOff = float64(latOff * scale)
	lonOff = float64(lonOff * scale)
	h.Bits = interleave(toUint32(latOff), toUint32(lonOff))
	return h, true
}

// EncodeWGS84 hashes a position with the score ranges.
func EncodeWGS84(longitude, latitude float64, step uint8) (Hash, bool) {
	return Encode(longRange, latRange, longitude, latitude, step)
}

// Decode returns the cell of hash within the ranges.
func Decode(lonR, latR Range, h Hash) (Area, bool) {
	if h.IsZero() || latR.isZero() || lonR.isZero() {
		return Area{}, false
	}
	a := Area{Hash: h}
	sep := deinterleave(h.Bits)
	latScale := latR.Max - latR.Min
	lonScale := lonR.Max - lonR.Min
	ilat := uint32(sep)
	ilon := uint32(sep >> 32)
	div := float64(uint64(1) << h.Step)
	a.Latitude.Min = latR.Min + float64(float64(ilat)/div*latScale)
	a.Latitude.Max = latR.Min + float64(float64(ilat+1)/div*latScale)
	a.Longitude.Min = lonR.Min + float64(float64(ilon)/div*lonScale)
	a.Longitude.Max = lonR.Min + float64(float64(ilon+1)/div*lonScale)
	return a, true
}

// DecodeWGS84 returns the cell of a hash in the score ranges.
func DecodeWGS84(h Hash) (Area, bool) { return Decode(longRange, latRange, h) }

// Center returns the middle of an area, clamped to the valid limits.
func (a *Area) Center() (lon, lat float64) {
	lon = (a.Longitude.Min + a.Longitude.Max) / 2
	lon = min(max(lon, LongMin), LongMax)
	lat = (a.Latitude.Min + a.Latitude.Max) / 2
	lat = min(max(lat, LatMin), LatMax)
	return lon, lat
}

// ScoreBits converts a sorted-set score to hash bits as Redis's
// (uint64_t) cast does on x86-64, so that arbitrary scores put there by
// ZADD decode as they do in Redis.
func ScoreBits(score float64) uint64 {
	const two63 = 9223372036854775808.0
	if score < two63 {
		return uint64(cvttsd2si(score))
	}
	return uint64(cvttsd2si(score-two63)) ^ (1 << 63)
}

// cvttsd2si is the x86-64 truncating conversion: out-of-range values and
// NaN give the "integer indefinite" value, math.MinInt64.
func cvttsd2si(f float64) int64 {
	if f != f || f >= 9223372036854775808.0 || f < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(f)
}

// DecodeScore returns the position a score encodes (the center of its
// 52-bit cell).
func DecodeScore(score float64) (lon, lat float64, ok bool) {
	a, ok := DecodeWGS84(Hash{Bits: ScoreBits(score), Step: StepMax})
	if !ok {
		return 0, 0, false
	}
	lon, lat = a.Center()
	return lon, lat, true
}

// Align52 shifts a hash's bits to the 52-bit score scale.
func Align52(h Hash) uint64 { return h.Bits << (52 - uint(h.Step)*2) }

// ScoreOf returns the score of a position; ok is false outside the limits.
func ScoreOf(longitude, latitude float64) (uint64, bool) {
	h, ok := EncodeWGS84(longitude, latitude, StepMax)
	if !ok {
		return 0, false
	}
	return Align52(h), true
}

const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// StandardHash returns the 11-character geohash string of a score, in the
// standard (-90..90 latitude) geohash space, as GEOHASH replies.
func StandardHash(score float64) ([]byte, bool) {
	lon, lat, ok := DecodeScore(score)
	if !ok {
		return nil, false
	}
	h, _ := Encode(Range{-180, 180}, Range{-90, 90}, lon, lat, StepMax)
	buf := make([]byte, 11)
	for i := 0; i < 11; i++ {
		idx := uint64(0)
		if i < 10 {
			idx = (h.Bits >> (52 - (i+1)*5)) & 0x1f
		}
		buf[i] = alphabet[idx]
	}
	return buf, true
}

// move steps h by d cells (-1, 0 or 1) along one coordinate: mask
// selects that coordinate's interleaved bits (0xaa... longitude, 0x55...
// latitude). The other coordinate's bits are set in the gaps first, so an
// add or subtract carries across them, then cleared.
func move(h *Hash, d int, mask uint64) {
	if d == 0 {
		return
	}
	shift := 64 - uint(h.Step)*2
	v := h.Bits & mask
	other := h.Bits &^ mask
	zz := ^mask >> shift
	if d > 0 {
		v += zz + 1
	} else {
		v |= zz
		v -= zz + 1
	}
	v &= mask >> shift
	h.Bits = v | other
}

func moved(h Hash, dx, dy int) Hash {
	move(&h, dx, 0xaaaaaaaaaaaaaaaa)
	move(&h, dy, 0x5555555555555555)
	return h
}

// NeighborsOf returns the eight cells around h.
func NeighborsOf(h Hash) Neighbors {
	return Neighbors{
		East:      moved(h, 1, 0),
		West:      moved(h, -1, 0),
		South:     moved(h, 0, -1),
		North:     moved(h, 0, 1),
		NorthWest: moved(h, -1, 1),
		NorthEast: moved(h, 1, 1),
		SouthEast: moved(h, 1, -1),
		SouthWest: moved(h, -1, -1),
	}
}
