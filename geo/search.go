package geo

import "math"

// EarthRadius is the quadratic mean radius of WGS-84, in meters.
const EarthRadius = 6372797.560856

const mercatorMax = 20037726.37

// degToRad is pi/180 rounded as C computes M_PI/180.0 in doubles.
var degToRad = func() float64 { pi := math.Pi; return pi / 180.0 }()

func degRad(d float64) float64 { return d * degToRad }
func radDeg(r float64) float64 { return r / degToRad }

// LatDistance is the distance between two latitudes on one meridian.
func LatDistance(lat1, lat2 float64) float64 {
	return EarthRadius * math.Abs(degRad(lat2)-degRad(lat1))
}

// Distance is the haversine great-circle distance in meters.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r := degRad(lon1)
	lon2r := degRad(lon2)
	v := sin((lon2r - lon1r) / 2)
	if v == 0 {
		return LatDistance(lat1, lat2)
	}
	lat1r := degRad(lat1)
	lat2r := degRad(lat2)
	u := sin((lat2r - lat1r) / 2)
	a := float64(u*u) + float64(float64(float64(cos(lat1r)*cos(lat2r))*v)*v)
	return 2.0 * EarthRadius * asin(math.Sqrt(a))
}

// Shape is a search area: a circle (Radius) or, when Box, a rectangle of
// Width by Height, centred on (Lon, Lat). Sizes are in the unit whose
// length in meters is Conversion.
type Shape struct {
	Box           bool
	Lon, Lat      float64
	Conversion    float64
	Radius        float64
	Width, Height float64
	bounds        [4]float64 // min lon, min lat, max lon, max lat
}

// Within reports whether the position a score encodes is inside the shape,
// with the position and its distance (meters) from the centre.
func (s *Shape) Within(score float64) (lon, lat, dist float64, ok bool) {
	lon, lat, ok = DecodeScore(score)
	if !ok {
		return
	}
	if !s.Box {
		dist = Distance(s.Lon, s.Lat, lon, lat)
		return lon, lat, dist, !(dist > s.Radius*s.Conversion)
	}
	w := s.Width * s.Conversion
	h := s.Height * s.Conversion
	if LatDistance(lat, s.Lat) > h/2 {
		return lon, lat, 0, false
	}
	if Distance(lon, lat, s.Lon, lat) > w/2 {
		return lon, lat, 0, false
	}
	return lon, lat, Distance(s.Lon, s.Lat, lon, lat), true
}

// estimateSteps picks the cell precision for a search of the given radius.
func estimateSteps(rangeMeters, lat float64) uint8 {
	if rangeMeters == 0 {
		return 26
	}
	step := 1
	for rangeMeters < mercatorMax {
		rangeMeters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	step = min(max(step, 1), 26)
	return uint8(step)
}

func (s *Shape) boundingBox() {
	var height, width float64
	if s.Box {
		height = s.Conversion * (s.Height / 2)
		width = s.Conversion * (s.Width / 2)
	} else {
		height = s.Conversion * s.Radius
		width = s.Conversion * s.Radius
	}
	latDelta := radDeg(height / EarthRadius)
	top := radDeg(width / EarthRadius / cos(degRad(s.Lat+latDelta)))
	bottom := radDeg(width / EarthRadius / cos(degRad(s.Lat-latDelta)))
	if s.Lat < 0 {
		s.bounds[0] = s.Lon - bottom
		s.bounds[2] = s.Lon + bottom
	} else {
		s.bounds[0] = s.Lon - top
		s.bounds[2] = s.Lon + top
	}
	s.bounds[1] = s.Lat - latDelta
	s.bounds[3] = s.Lat + latDelta
}

// Cells returns the cells to scan for the shape, in Redis's order: the
// centre, then north, south, east, west, north-east, north-west,
// south-east, south-west. Cells that cannot hold matches are zero.
func (s *Shape) Cells() [9]Hash {
	s.boundingBox()
	minLon, minLat, maxLon, maxLat := s.bounds[0], s.bounds[1], s.bounds[2], s.bounds[3]
	var radius float64
	if s.Box {
		hw, hh := s.Width/2, s.Height/2
		radius = math.Sqrt(float64(hw*hw) + float64(hh*hh))
	} else {
		radius = s.Radius
	}
	radius *= s.Conversion
	steps := estimateSteps(radius, s.Lat)

	hash, _ := Encode(longRange, latRange, s.Lon, s.Lat, steps)
	nb := NeighborsOf(hash)
	area, _ := Decode(longRange, latRange, hash)

	north, _ := Decode(longRange, latRange, nb.North)
	south, _ := Decode(longRange, latRange, nb.South)
	east, _ := Decode(longRange, latRange, nb.East)
	west, _ := Decode(longRange, latRange, nb.West)
	decrease := north.Latitude.Max < maxLat || south.Latitude.Min > minLat ||
		east.Longitude.Max < maxLon || west.Longitude.Min > minLon
	if steps > 1 && decrease {
		steps--
		hash, _ = Encode(longRange, latRange, s.Lon, s.Lat, steps)
		nb = NeighborsOf(hash)
		area, _ = Decode(longRange, latRange, hash)
	}
	if steps >= 2 {
		if area.Latitude.Min < minLat {
			nb.South, nb.SouthWest, nb.SouthEast = Hash{}, Hash{}, Hash{}
		}
		if area.Latitude.Max > maxLat {
			nb.North, nb.NorthEast, nb.NorthWest = Hash{}, Hash{}, Hash{}
		}
		if area.Longitude.Min < minLon {
			nb.West, nb.SouthWest, nb.NorthWest = Hash{}, Hash{}, Hash{}
		}
		if area.Longitude.Max > maxLon {
			nb.East, nb.SouthEast, nb.NorthEast = Hash{}, Hash{}, Hash{}
		}
	}
	return [9]Hash{hash, nb.North, nb.South, nb.East, nb.West,
		nb.NorthEast, nb.NorthWest, nb.SouthEast, nb.SouthWest}
}

// ScoreRange returns the scores [min, max) of the members inside cell h.
func ScoreRange(h Hash) (lo, hi uint64) {
	lo = Align52(h)
	h.Bits++
	hi = Align52(h)
	return lo, hi
}
