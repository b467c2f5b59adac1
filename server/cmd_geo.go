package server

import (
	"math"
	"sort"
	"strconv"

	"github.com/sluicedb/sluice/geo"
	"github.com/sluicedb/sluice/internal/pqsort"
	"github.com/sluicedb/sluice/store"
)

// GEO commands, after Redis's geo.c. A geo index is an ordinary sorted set
// whose scores are 52-bit geohashes (see package geo).

const (
	errGeoDecode = "ERR could not decode requested zset member"
	errGeoUnit   = "ERR unsupported unit provided. please use M, KM, FT, MI"
)

// appendCFloat formats f as C's "%f" does.
func appendCFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	return strconv.AppendFloat(b, f, 'f', 6, 64)
}

// geoLonLat parses a longitude, latitude pair, replying on error.
func (c *Client) geoLonLat(lon, lat []byte) (float64, float64, bool) {
	x, ok := parseScore(lon)
	if !ok {
		c.w.Error(errNotFloat)
		return 0, 0, false
	}
	y, ok := parseScore(lat)
	if !ok {
		c.w.Error(errNotFloat)
		return 0, 0, false
	}
	if x < geo.LongMin || x > geo.LongMax || y < geo.LatMin || y > geo.LatMax {
		b := append([]byte("ERR invalid longitude,latitude pair "), appendCFloat(nil, x)...)
		b = append(b, ',')
		b = appendCFloat(b, y)
		c.w.Error(string(b))
		return 0, 0, false
	}
	return x, y, true
}

// geoUnit returns a unit's length in meters, replying on error.
func (c *Client) geoUnit(u []byte) (float64, bool) {
	switch {
	case eq(u, "m"):
		return 1, true
	case eq(u, "km"):
		return 1000, true
	case eq(u, "ft"):
		return 0.3048, true
	case eq(u, "mi"):
		return 1609.34, true
	}
	c.w.Error(errGeoUnit)
	return 0, false
}

// geoNumber parses a size argument, replying msg on error.
func (c *Client) geoNumber(b []byte, msg string) (float64, bool) {
	f, ok := parseScore(b)
	if !ok {
		c.w.Error(msg)
	}
	return f, ok
}

// geoMemberPos decodes member's position.
func geoMemberPos(z *store.ZSet, member []byte) (lon, lat float64, ok bool) {
	score, ok := z.Score(member)
	if !ok {
		return 0, 0, false
	}
	return geo.DecodeScore(score)
}

// appendDistance formats a distance with four decimals, rounding as
// llrint does (half to even), like Redis's fixedpoint_d2string.
func appendDistance(b []byte, d float64) []byte {
	if d == 0 {
		return append(b, "0.0000"...)
	}
	v := math.RoundToEven(d * 10000)
	var u uint64
	if v < 0 {
		b = append(b, '-')
		if v <= -9223372036854775808.0 {
			u = 1 << 63
		} else {
			u = uint64(-int64(v))
		}
	} else if v >= 9223372036854775808.0 {
		u = 1 << 63 // llrint's out-of-range result, negated as Redis does
		b = append(b, '-')
	} else {
		u = uint64(v)
	}
	digits := strconv.AppendUint(nil, u, 10)
	if len(digits) <= 4 {
		b = append(b, "0."...)
		for i := len(digits); i < 4; i++ {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	b = append(b, digits[:len(digits)-4]...)
	b = append(b, '.')
	return append(b, digits[len(digits)-4:]...)
}

func (c *Client) replyDistance(d float64) {
	var tmp [32]byte
	c.w.Bulk(appendDistance(tmp[:0], d))
}

// replyCoord writes a coordinate as addReplyHumanLongDouble: "%.17Lf" with
// trailing zeros removed, a bulk string in RESP2 and a double in RESP3.
func (c *Client) replyCoord(f float64) {
	var tmp [48]byte
	b := strconv.AppendFloat(tmp[:0], f, 'f', 17, 64)
	n := len(b)
	for b[n-1] == '0' {
		n--
	}
	if b[n-1] == '.' {
		n--
	}
	b = b[:n]
	if string(b) == "-0" {
		b = append(b[:0], '0')
	}
	if c.w.Proto == 3 {
		c.w.Buf = append(c.w.Buf, ',')
		c.w.Buf = append(c.w.Buf, b...)
		c.w.Buf = append(c.w.Buf, '\r', '\n')
		return
	}
	c.w.Bulk(b)
}

// GEOADD key [NX|XX] [CH] longitude latitude member [...]: ZADD with the
// positions turned into scores (so it notifies "zadd", as Redis does).
func geoaddCommand(c *Client, args [][]byte) {
	xx, nx := false, false
	longidx := 2
	for ; longidx < len(args); longidx++ {
		a := args[longidx]
		if eq(a, "nx") {
			nx = true
		} else if eq(a, "xx") {
			xx = true
		} else if !eq(a, "ch") {
			break
		}
	}
	if (len(args)-longidx)%3 != 0 || (xx && nx) {
		c.w.Error(errSyntax)
		return
	}
	elements := (len(args) - longidx) / 3
	zargs := make([][]byte, 0, longidx+elements*2)
	zargs = append(zargs, []byte("zadd"))
	zargs = append(zargs, args[1:longidx]...)
	for i := 0; i < elements; i++ {
		p := args[longidx+i*3:]
		lon, lat, ok := c.geoLonLat(p[0], p[1])
		if !ok {
			return
		}
		score, _ := geo.ScoreOf(lon, lat)
		zargs = append(zargs, strconv.AppendUint(nil, score, 10), p[2])
	}
	zaddGeneric(c, zargs, 0)
}

// GEOHASH key member [...]
func geohashCommand(c *Client, args [][]byte) {
	z, ok := c.lookupZset(args[1])
	if !ok {
		return
	}
	c.w.Array(len(args) - 2)
	for _, m := range args[2:] {
		var score float64
		found := false
		if z != nil {
			score, found = z.Score(m)
		}
		if !found {
			c.w.Null()
			continue
		}
		h, ok := geo.StandardHash(score)
		if !ok {
			c.w.Null()
			continue
		}
		c.w.Bulk(h)
	}
}

// GEOPOS key member [...]
func geoposCommand(c *Client, args [][]byte) {
	z, ok := c.lookupZset(args[1])
	if !ok {
		return
	}
	c.w.Array(len(args) - 2)
	for _, m := range args[2:] {
		if z == nil {
			c.w.NullArray()
			continue
		}
		lon, lat, ok := geoMemberPos(z, m)
		if !ok {
			c.w.NullArray()
			continue
		}
		c.w.Array(2)
		c.replyCoord(lon)
		c.replyCoord(lat)
	}
}

// GEODIST key member1 member2 [M|KM|FT|MI]
func geodistCommand(c *Client, args [][]byte) {
	toMeter := 1.0
	if len(args) == 5 {
		var ok bool
		if toMeter, ok = c.geoUnit(args[4]); !ok {
			return
		}
	} else if len(args) > 5 {
		c.w.Error(errSyntax)
		return
	}
	z, ok := c.lookupZset(args[1])
	if !ok {
		return
	}
	if z == nil {
		c.w.Null()
		return
	}
	s1, ok1 := z.Score(args[2])
	s2, ok2 := z.Score(args[3])
	if !ok1 || !ok2 {
		c.w.Null()
		return
	}
	lon1, lat1, ok1 := geo.DecodeScore(s1)
	lon2, lat2, ok2 := geo.DecodeScore(s2)
	if !ok1 || !ok2 {
		c.w.Null()
		return
	}
	c.replyDistance(geo.Distance(lon1, lat1, lon2, lat2) / toMeter)
}

// Search variants (Redis's georadiusGeneric flags).
const (
	geoRadiusCoords = 1 << iota
	geoRadiusMember
	geoNoStore
	geoSearch
	geoSearchStore
)

const (
	geoSortNone = iota
	geoSortAsc
	geoSortDesc
)

// geoPoint is one search result.
type geoPoint struct {
	lon, lat float64
	dist     float64
	score    float64
	member   string
}

func georadiusCommand(c *Client, args [][]byte) { georadiusGeneric(c, args, 1, geoRadiusCoords) }
func georadiusbymemberCommand(c *Client, args [][]byte) {
	georadiusGeneric(c, args, 1, geoRadiusMember)
}
func georadiusRoCommand(c *Client, args [][]byte) {
	georadiusGeneric(c, args, 1, geoRadiusCoords|geoNoStore)
}
func georadiusbymemberRoCommand(c *Client, args [][]byte) {
	georadiusGeneric(c, args, 1, geoRadiusMember|geoNoStore)
}
func geosearchCommand(c *Client, args [][]byte) { georadiusGeneric(c, args, 1, geoSearch) }
func geosearchstoreCommand(c *Client, args [][]byte) {
	georadiusGeneric(c, args, 2, geoSearch|geoSearchStore)
}

// geoDistanceArg parses "<radius> <unit>".
func (c *Client) geoDistanceArg(r, u []byte) (radius, conv float64, ok bool) {
	if radius, ok = c.geoNumber(r, "ERR need numeric radius"); !ok {
		return
	}
	if radius < 0 {
		c.w.Error("ERR radius cannot be negative")
		return 0, 0, false
	}
	conv, ok = c.geoUnit(u)
	return
}

// geoBoxArg parses "<width> <height> <unit>".
func (c *Client) geoBoxArg(wb, hb, u []byte) (w, h, conv float64, ok bool) {
	if w, ok = c.geoNumber(wb, "ERR need numeric width"); !ok {
		return
	}
	if h, ok = c.geoNumber(hb, "ERR need numeric height"); !ok {
		return
	}
	if h < 0 || w < 0 {
		c.w.Error("ERR height or width cannot be negative")
		return 0, 0, 0, false
	}
	conv, ok = c.geoUnit(u)
	return
}

func georadiusGeneric(c *Client, args [][]byte, srcIdx int, flags int) {
	z, ok := c.lookupZset(args[srcIdx])
	if !ok {
		return
	}
	var storeKey []byte
	storeDist := false
	var shape geo.Shape
	var base int
	switch {
	case flags&geoRadiusCoords != 0:
		base = 6
		if shape.Lon, shape.Lat, ok = c.geoLonLat(args[2], args[3]); !ok {
			return
		}
		if shape.Radius, shape.Conversion, ok = c.geoDistanceArg(args[4], args[5]); !ok {
			return
		}
	case flags&geoRadiusMember != 0 && z == nil:
		base = 5
	case flags&geoRadiusMember != 0:
		base = 5
		if shape.Lon, shape.Lat, ok = geoMemberPos(z, args[2]); !ok {
			c.w.Error(errGeoDecode)
			return
		}
		if shape.Radius, shape.Conversion, ok = c.geoDistanceArg(args[3], args[4]); !ok {
			return
		}
	default: // GEOSEARCH, GEOSEARCHSTORE
		base = 2
		if flags&geoSearchStore != 0 {
			base = 3
			storeKey = args[1]
		}
	}

	withDist, withHash, withCoord := false, false, false
	fromMember, fromLoc, byRadius, byBox := false, false, false, false
	order := geoSortNone
	anyOpt := false
	count := int64(0)
	search := flags&geoSearch != 0
	canStore := flags&geoNoStore == 0 && !search
	opts := args[base:]
	for i := 0; i < len(opts); i++ {
		a := opts[i]
		left := len(opts) - i - 1
		switch {
		case eq(a, "withdist"):
			withDist = true
		case eq(a, "withhash"):
			withHash = true
		case eq(a, "withcoord"):
			withCoord = true
		case eq(a, "any"):
			anyOpt = true
		case eq(a, "asc"):
			order = geoSortAsc
		case eq(a, "desc"):
			order = geoSortDesc
		case eq(a, "count") && left >= 1:
			n, ok := c.intArg(opts[i+1])
			if !ok {
				return
			}
			if n <= 0 {
				c.w.Error("ERR COUNT must be > 0")
				return
			}
			count = n
			i++
		case eq(a, "store") && left >= 1 && canStore:
			storeKey = opts[i+1]
			storeDist = false
			i++
		case eq(a, "storedist") && left >= 1 && canStore:
			storeKey = opts[i+1]
			storeDist = true
			i++
		case eq(a, "storedist") && search && flags&geoSearchStore != 0:
			storeDist = true
		case eq(a, "frommember") && left >= 1 && search && !fromLoc:
			fromMember = true
			i++
			if z == nil {
				continue // no source: finish parsing, then reply for the missing key
			}
			if shape.Lon, shape.Lat, ok = geoMemberPos(z, opts[i]); !ok {
				c.w.Error(errGeoDecode)
				return
			}
		case eq(a, "fromlonlat") && left >= 2 && search && !fromMember:
			if shape.Lon, shape.Lat, ok = c.geoLonLat(opts[i+1], opts[i+2]); !ok {
				return
			}
			fromLoc = true
			i += 2
		case eq(a, "byradius") && left >= 2 && search && !byBox:
			if shape.Radius, shape.Conversion, ok = c.geoDistanceArg(opts[i+1], opts[i+2]); !ok {
				return
			}
			shape.Box = false
			byRadius = true
			i += 2
		case eq(a, "bybox") && left >= 3 && search && !byRadius:
			if shape.Width, shape.Height, shape.Conversion, ok = c.geoBoxArg(opts[i+1], opts[i+2], opts[i+3]); !ok {
				return
			}
			shape.Box = true
			byBox = true
			i += 3
		default:
			c.w.Error(errSyntax)
			return
		}
	}

	if storeKey != nil && (withDist || withHash || withCoord) {
		if flags&geoSearchStore != 0 {
			c.w.Error("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		} else {
			c.w.Error("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		}
		return
	}
	if search && !(fromMember || fromLoc) {
		c.w.Error("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(args[0]))
		return
	}
	if search && !(byRadius || byBox) {
		c.w.Error("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(args[0]))
		return
	}
	if anyOpt && count == 0 {
		c.w.Error("ERR the ANY argument requires COUNT argument")
		return
	}
	if z == nil {
		if storeKey != nil {
			c.storeZset(storeKey, nil, "")
		} else {
			c.w.Array(0)
		}
		return
	}
	if count != 0 && order == geoSortNone && !anyOpt {
		order = geoSortAsc
	}

	limit := 0
	if anyOpt {
		limit = int(min(count, math.MaxInt32))
	}
	points := geoCollect(z, &shape, limit)
	if len(points) == 0 && storeKey == nil {
		c.w.Array(0)
		return
	}
	returned := len(points)
	if count != 0 && int64(returned) > count {
		returned = int(count)
	}
	if order != geoSortNone {
		cmp := func(a, b *geoPoint) int {
			switch {
			case a.dist > b.dist:
				return 1
			case a.dist == b.dist:
				return 0
			}
			return -1
		}
		if order == geoSortDesc {
			asc := cmp
			cmp = func(a, b *geoPoint) int { return -asc(a, b) }
		}
		if returned == len(points) {
			// glibc's qsort is a stable merge sort.
			sort.SliceStable(points, func(i, j int) bool { return cmp(&points[i], &points[j]) < 0 })
		} else {
			pqsort.Sort(points, cmp, 0, returned-1)
		}
	}
	points = points[:returned]

	if storeKey == nil {
		opts := 0
		if withDist {
			opts++
		}
		if withCoord {
			opts++
		}
		if withHash {
			opts++
		}
		c.w.Array(len(points))
		for i := range points {
			p := &points[i]
			if opts > 0 {
				c.w.Array(opts + 1)
			}
			c.w.BulkString(p.member)
			if withDist {
				c.replyDistance(p.dist / shape.Conversion)
			}
			if withHash {
				c.w.Int(cvttsd2si(p.score))
			}
			if withCoord {
				c.w.Array(2)
				c.replyCoord(p.lon)
				c.replyCoord(p.lat)
			}
		}
		return
	}
	items := make([]store.ZItem, len(points))
	for i := range points {
		p := &points[i]
		score := p.score
		if storeDist {
			score = p.dist / shape.Conversion
		}
		items[i] = store.ZItem{Member: p.member, Score: score}
	}
	event := "georadiusstore"
	if search {
		event = "geosearchstore"
	}
	c.storeZset(storeKey, items, event)
}

// cvttsd2si converts as C's (long long) cast does on x86-64.
func cvttsd2si(f float64) int64 {
	if f != f || f >= 9223372036854775808.0 || f < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(f)
}

// geoCollect gathers the members inside the shape, scanning the shape's
// cells in Redis's order; with limit > 0 it stops once it has that many.
func geoCollect(z *store.ZSet, shape *geo.Shape, limit int) []geoPoint {
	cells := shape.Cells()
	var points []geoPoint
	last := 0
	for i, cell := range cells {
		if cell.IsZero() {
			continue
		}
		// Huge radii can make adjacent cells the same; skip a cell equal
		// to the last one scanned (the centre does not count as scanned).
		if last != 0 && cell == cells[last] {
			continue
		}
		if len(points) > 0 && limit > 0 && len(points) >= limit {
			break
		}
		lo, hi := geo.ScoreRange(cell)
		points = geoCellMembers(z, float64(lo), float64(hi), shape, points, limit)
		last = i
	}
	return points
}

// geoCellMembers appends the members with min <= score < max that are
// inside the shape.
func geoCellMembers(z *store.ZSet, min, max float64, shape *geo.Shape, points []geoPoint, limit int) []geoPoint {
	r := z.Search(func(it *store.ZItem) bool { return it.Score >= min })
	z.Iter(r, false, func(it store.ZItem) bool {
		if !(it.Score < max) {
			return false
		}
		if lon, lat, dist, ok := shape.Within(it.Score); ok {
			points = append(points, geoPoint{lon: lon, lat: lat, dist: dist, score: it.Score, member: it.Member})
		}
		return !(len(points) > 0 && limit > 0 && len(points) >= limit)
	})
	return points
}
