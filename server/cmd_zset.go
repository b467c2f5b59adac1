package server

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"unsafe"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// Sorted set commands, after Redis's t_zset.c.

const (
	errMinMaxFloat = "ERR min or max is not a float"
	errMinMaxLex   = "ERR min or max not valid string range item"
	errZNaN        = "ERR resulting score is not a number (NaN)"
)

// zsetSetMembers, when set by the set type, lets ZUNION/ZINTER/ZDIFF read
// plain sets as sorted sets with score 1 (as Redis does).
var zsetSetMembers func(e *store.Entry, fn func(member []byte))

// lookupZset returns key's sorted set (nil if missing), replying
// WRONGTYPE and returning ok=false for another type.
func (c *Client) lookupZset(key []byte) (*store.ZSet, bool) {
	e, ok := lookupKind(&c.w, c.DB(), key, store.KindZSet)
	if e == nil {
		return nil, ok
	}
	return e.AsZSet(), true
}

// parseScore parses a score like Redis's getDoubleFromObject.
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isSpace(b[0]) {
		return 0, false
	}
	f, err := parseFloat(b)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// parseFloat reads b as C's strtod does for a whole argument. Integers of
// up to 15 digits, the common case (scores from counters and timestamps),
// convert exactly without strconv; nothing is allocated unless b is a hex
// float without exponent.
func parseFloat(b []byte) (float64, error) {
	if len(b) > 0 && len(b) <= 16 {
		neg := b[0] == '-'
		d := b
		if neg || b[0] == '+' {
			d = b[1:]
		}
		if len(d) > 0 && len(d) <= 15 {
			var v int64
			for _, ch := range d {
				if ch < '0' || ch > '9' {
					goto general
				}
				v = v*10 + int64(ch-'0')
			}
			if neg {
				if v == 0 {
					goto general // -0
				}
				v = -v
			}
			return float64(v), nil
		}
	}
general:
	return strconv.ParseFloat(hexFloat(b), 64)
}

// hexFloat makes a C hex float without exponent ("0x10") acceptable to Go.
// The result may share b's memory: strconv copies what it keeps in errors.
func hexFloat(b []byte) string {
	s := unsafe.String(unsafe.SliceData(b), len(b))
	t := s
	if len(t) > 0 && (t[0] == '-' || t[0] == '+') {
		t = t[1:]
	}
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		for i := 2; i < len(t); i++ {
			if t[i] == 'p' || t[i] == 'P' {
				return s
			}
		}
		return string(b) + "p0"
	}
	return s
}

// zsetFits reports whether a set of n members, the longest maxLen bytes,
// stays in the compact encoding.
func (c *Client) zsetFits(n, maxLen int) bool {
	return int64(n) <= c.srv.cfg.ZsetMaxEnt.Load() && int64(maxLen) <= c.srv.cfg.ZsetMaxVal.Load()
}

// zaddFlags are ZADD's options.
const (
	zaddNX = 1 << iota
	zaddXX
	zaddGT
	zaddLT
	zaddIncr
	zaddCH
)

const (
	zaddAdded = 1 << iota
	zaddUpdated
	zaddNop
)

// zsetAdd adds or updates member as Redis's zsetAdd; ok=false means the
// increment produced NaN.
func (c *Client) zsetAdd(z *store.ZSet, member []byte, score float64, flags int) (out int, newScore float64, ok bool) {
	cur, exists := z.Score(member)
	if exists {
		if flags&zaddNX != 0 {
			return zaddNop, cur, true
		}
		if flags&zaddIncr != 0 {
			score += cur
			if math.IsNaN(score) {
				return 0, 0, false
			}
		}
		if (flags&zaddLT != 0 && score >= cur) || (flags&zaddGT != 0 && score <= cur) {
			return zaddNop, cur, true
		}
		if score != cur {
			z.SetScore(member, cur, score)
			return zaddUpdated, score, true
		}
		return 0, score, true
	}
	if flags&zaddXX != 0 {
		return zaddNop, 0, true
	}
	if z.Compact() && !c.zsetFits(z.Len()+1, len(member)) {
		z.Convert()
	}
	z.Insert(member, score)
	return zaddAdded, score, true
}

func (c *Client) newZsetKey(db *store.DB, key []byte, firstMember []byte) *store.ZSet {
	z := store.NewZSet()
	if c.srv.cfg.ZsetMaxEnt.Load() == 0 || int64(len(firstMember)) > c.srv.cfg.ZsetMaxVal.Load() {
		z.Convert()
	}
	db.Add(key, store.NewObject(store.KindZSet, unsafe.Pointer(z)))
	c.srv.signalKeyAsReady(db, key)
	return z
}

func zaddGeneric(c *Client, args [][]byte, flags int) {
	i := 2
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case eq(a, "nx"):
			flags |= zaddNX
		case eq(a, "xx"):
			flags |= zaddXX
		case eq(a, "ch"):
			flags |= zaddCH
		case eq(a, "incr"):
			flags |= zaddIncr
		case eq(a, "gt"):
			flags |= zaddGT
		case eq(a, "lt"):
			flags |= zaddLT
		default:
			goto done
		}
	}
done:
	elems := len(args) - i
	if elems%2 != 0 || elems == 0 {
		c.w.Error(errSyntax)
		return
	}
	elems /= 2
	if flags&zaddNX != 0 && flags&zaddXX != 0 {
		c.w.Error("ERR XX and NX options at the same time are not compatible")
		return
	}
	nx, gt, lt := flags&zaddNX != 0, flags&zaddGT != 0, flags&zaddLT != 0
	if (gt && nx) || (lt && nx) || (gt && lt) {
		c.w.Error("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	}
	incr := flags&zaddIncr != 0
	if incr && elems > 1 {
		c.w.Error("ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, elems)
	for j := range scores {
		f, ok := parseScore(args[i+2*j])
		if !ok {
			c.w.Error(errNotFloat)
			return
		}
		scores[j] = f
	}
	db := c.DB()
	key := args[1]
	z, ok := c.lookupZset(key)
	if !ok {
		return
	}
	var added, updated, processed int64
	var score float64
	if z == nil {
		if flags&zaddXX != 0 {
			goto reply
		}
		z = c.newZsetKey(db, key, args[i+1])
	}
	for j, s := range scores {
		out, ns, ok := c.zsetAdd(z, args[i+2*j+1], s, flags)
		if !ok {
			c.w.Error(errZNaN)
			goto notify
		}
		if out&zaddAdded != 0 {
			added++
		}
		if out&zaddUpdated != 0 {
			updated++
		}
		if out&zaddNop == 0 {
			processed++
		}
		score = ns
	}
reply:
	if incr {
		if processed > 0 {
			c.w.Double(score)
		} else {
			c.w.Null()
		}
	} else if flags&zaddCH != 0 {
		c.w.Int(added + updated)
	} else {
		c.w.Int(added)
	}
notify:
	if added+updated > 0 {
		db.Modified(key)
		if incr {
			c.notify(config.NotifyZset, "zincr", key)
		} else {
			c.notify(config.NotifyZset, "zadd", key)
		}
	}
}

func zaddCommand(c *Client, args [][]byte)    { zaddGeneric(c, args, 0) }
func zincrbyCommand(c *Client, args [][]byte) { zaddGeneric(c, args, zaddIncr) }

// zsetEmptied deletes key when its set is empty.
func (c *Client) zsetEmptied(db *store.DB, key []byte, z *store.ZSet) {
	if z.Len() == 0 {
		db.Delete(key)
		c.notifyAt(db, config.NotifyGeneric, "del", key)
	}
}

func zremCommand(c *Client, args [][]byte) {
	db := c.DB()
	z, ok := c.lookupZset(args[1])
	if !ok {
		return
	}
	if z == nil {
		c.w.Int(0)
		return
	}
	n := int64(0)
	for _, m := range args[2:] {
		if z.Delete(m) {
			n++
			if z.Len() == 0 {
				break
			}
		}
	}
	if n > 0 {
		db.Modified(args[1])
		c.notify(config.NotifyZset, "zrem", args[1])
		c.zsetEmptied(db, args[1], z)
	}
	c.w.Int(n)
}

func zcardCommand(c *Client, args [][]byte) {
	z, ok := c.lookupZset(args[1])
	if !ok {
		return
	}
	if z == nil {
		c.w.Int(0)
		return
	}
	c.w.Int(int64(z.Len()))
}

func zscoreCommand(c *Client, args [][]byte) {
	z, ok := c.lookupZset(args[1])
	if !ok {
		return
	}
	if z == nil {
		c.w.Null()
		return
	}
	s, ok := z.Score(args[2])
	if !ok {
		c.w.Null()
		return
	}
	c.w.Double(s)
}

func zmscoreCommand(c *Client, args [][]byte) {
	z, ok := c.lookupZset(args[1])
	if !ok {
		return
	}
	c.w.Array(len(args) - 2)
	for _, m := range args[2:] {
		if z == nil {
			c.w.Null()
			continue
		}
		if s, ok := z.Score(m); ok {
			c.w.Double(s)
		} else {
			c.w.Null()
		}
	}
}

func zrankGeneric(c *Client, args [][]byte, rev bool) {
	z, ok := c.lookupZset(args[1])
	if !ok {
		return
	}
	if z == nil {
		c.w.Null()
		return
	}
	r, ok := z.Rank(args[2])
	if !ok {
		c.w.Null()
		return
	}
	if rev {
		r = z.Len() - 1 - r
	}
	c.w.Int(int64(r))
}

func zrankCommand(c *Client, args [][]byte)    { zrankGeneric(c, args, false) }
func zrevrankCommand(c *Client, args [][]byte) { zrankGeneric(c, args, true) }

// Ranges.

type scoreRange struct {
	min, max     float64
	minex, maxex bool
}

func parseRangeItem(b []byte) (float64, bool, bool) {
	ex := false
	if len(b) > 0 && b[0] == '(' {
		ex = true
		b = b[1:]
	}
	// strtod skips leading spaces and reads "" as 0.
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, ex, true
	}
	f, err := parseFloat(b)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false, false
		}
	}
	if math.IsNaN(f) {
		return 0, false, false
	}
	return f, ex, true
}

func parseScoreRange(minb, maxb []byte) (scoreRange, bool) {
	var r scoreRange
	var ok bool
	if r.min, r.minex, ok = parseRangeItem(minb); !ok {
		return r, false
	}
	if r.max, r.maxex, ok = parseRangeItem(maxb); !ok {
		return r, false
	}
	return r, true
}

func (r *scoreRange) gteMin(s float64) bool {
	if r.minex {
		return s > r.min
	}
	return s >= r.min
}

func (r *scoreRange) lteMax(s float64) bool {
	if r.maxex {
		return s < r.max
	}
	return s <= r.max
}

// ranks returns the rank interval [lo, hi) of members in r.
func (r *scoreRange) ranks(z *store.ZSet) (int, int) {
	lo := z.Search(func(it *store.ZItem) bool { return r.gteMin(it.Score) })
	hi := z.Search(func(it *store.ZItem) bool { return !r.lteMax(it.Score) })
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

type lexBound struct {
	inf  int // -1: "-", +1: "+", 0: a string
	s    string
	excl bool
}

type lexRange struct{ min, max lexBound }

func parseLexItem(b []byte) (lexBound, bool) {
	if len(b) == 0 {
		return lexBound{}, false
	}
	switch b[0] {
	case '+':
		if len(b) != 1 {
			return lexBound{}, false
		}
		return lexBound{inf: 1}, true
	case '-':
		if len(b) != 1 {
			return lexBound{}, false
		}
		return lexBound{inf: -1}, true
	case '(':
		return lexBound{s: string(b[1:]), excl: true}, true
	case '[':
		return lexBound{s: string(b[1:])}, true
	}
	return lexBound{}, false
}

func parseLexRange(minb, maxb []byte) (lexRange, bool) {
	min, ok1 := parseLexItem(minb)
	max, ok2 := parseLexItem(maxb)
	return lexRange{min, max}, ok1 && ok2
}

func (r *lexRange) gteMin(m string) bool {
	switch r.min.inf {
	case -1:
		return true
	case 1:
		return false
	}
	if r.min.excl {
		return m > r.min.s
	}
	return m >= r.min.s
}

func (r *lexRange) lteMax(m string) bool {
	switch r.max.inf {
	case 1:
		return true
	case -1:
		return false
	}
	if r.max.excl {
		return m < r.max.s
	}
	return m <= r.max.s
}

func (r *lexRange) ranks(z *store.ZSet) (int, int) {
	lo := z.Search(func(it *store.ZItem) bool { return r.gteMin(it.Member) })
	hi := z.Search(func(it *store.ZItem) bool { return !r.lteMax(it.Member) })
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// zrangeSink receives a range: to the client, or into a destination set.
type zrangeSink struct {
	c          *Client
	store      bool
	withScores bool
	items      []store.ZItem
}

func (s *zrangeSink) add(it store.ZItem) { s.items = append(s.items, it) }

func (s *zrangeSink) finish(dst []byte) {
	c := s.c
	if !s.store {
		writeZItems(&c.w, s.items, s.withScores)
		return
	}
	c.storeZset(dst, s.items, "zrangestore")
}

// writeZItems replies with members (and scores: flat in RESP2, pairs in RESP3).
func writeZItems(w *resp.Writer, items []store.ZItem, withScores bool) {
	if withScores && w.Proto == 2 {
		w.Array(2 * len(items))
	} else {
		w.Array(len(items))
	}
	for _, it := range items {
		if withScores && w.Proto == 3 {
			w.Array(2)
		}
		w.BulkString(it.Member)
		if withScores {
			w.Double(it.Score)
		}
	}
}

// storeZset replaces dst with a set of items (deleting it when empty) and
// replies with the size.
func (c *Client) storeZset(dst []byte, items []store.ZItem, event string) {
	db := c.DB()
	if len(items) == 0 {
		c.w.Int(0)
		if db.Delete(dst) {
			c.notify(config.NotifyGeneric, "del", dst)
		}
		return
	}
	z := store.NewZSet()
	maxLen := 0
	for _, it := range items {
		if len(it.Member) > maxLen {
			maxLen = len(it.Member)
		}
	}
	if !c.zsetFits(len(items), maxLen) {
		z.Convert()
	}
	for _, it := range items {
		z.InsertString(it.Member, it.Score)
	}
	db.Set(dst, store.NewObject(store.KindZSet, unsafe.Pointer(z)), false)
	c.srv.signalKeyAsReady(db, dst)
	c.w.Int(int64(len(items)))
	c.notify(config.NotifyZset, event, dst)
}

const (
	zrAuto = iota
	zrRank
	zrScore
	zrLex
)

// zrangeGeneric implements ZRANGE, ZRANGESTORE and the older range
// commands; argStart is the position of the source key.
func zrangeGeneric(c *Client, args [][]byte, argStart int, storeDst bool, rangeType int, rev int) {
	key := args[argStart]
	minIdx, maxIdx := argStart+1, argStart+2
	withScores := false
	offset, limit := int64(0), int64(-1)
	for j := argStart + 3; j < len(args); j++ {
		left := len(args) - j - 1
		switch {
		case !storeDst && eq(args[j], "withscores"):
			withScores = true
		case eq(args[j], "limit") && left >= 2:
			o, ok1 := resp.ParseInt(args[j+1])
			if !ok1 {
				c.w.Error(errNotInt)
				return
			}
			l, ok2 := resp.ParseInt(args[j+2])
			if !ok2 {
				c.w.Error(errNotInt)
				return
			}
			offset, limit = o, l
			j += 2
		case rev == 0 && eq(args[j], "rev"):
			rev = 1
		case rangeType == zrAuto && eq(args[j], "bylex"):
			rangeType = zrLex
		case rangeType == zrAuto && eq(args[j], "byscore"):
			rangeType = zrScore
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	reverse := rev == 1
	if rangeType == zrAuto {
		rangeType = zrRank
	}
	if limit != -1 && rangeType == zrRank {
		c.w.Error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return
	}
	if withScores && rangeType == zrLex {
		c.w.Error("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return
	}
	if reverse && rangeType != zrRank {
		minIdx, maxIdx = maxIdx, minIdx
	}
	var start, end int64
	var sr scoreRange
	var lr lexRange
	switch rangeType {
	case zrRank:
		var ok1, ok2 bool
		start, ok1 = resp.ParseInt(args[minIdx])
		end, ok2 = resp.ParseInt(args[maxIdx])
		if !ok1 || !ok2 {
			c.w.Error(errNotInt)
			return
		}
	case zrScore:
		var ok bool
		if sr, ok = parseScoreRange(args[minIdx], args[maxIdx]); !ok {
			c.w.Error(errMinMaxFloat)
			return
		}
	case zrLex:
		var ok bool
		if lr, ok = parseLexRange(args[minIdx], args[maxIdx]); !ok {
			c.w.Error(errMinMaxLex)
			return
		}
	}
	sink := &zrangeSink{c: c, store: storeDst, withScores: withScores}
	z, ok := c.lookupZset(key)
	if !ok {
		return
	}
	if z == nil {
		sink.finish(args[1])
		return
	}
	n := z.Len()
	switch rangeType {
	case zrRank:
		s, e, ok := normRange(start, end, int64(n))
		if ok {
			if reverse {
				z.Iter(n-1-int(s), true, func(it store.ZItem) bool { sink.add(it); s++; return s <= e })
			} else {
				z.Iter(int(s), false, func(it store.ZItem) bool { sink.add(it); s++; return s <= e })
			}
		}
	case zrScore, zrLex:
		var lo, hi int
		if rangeType == zrScore {
			lo, hi = sr.ranks(z)
		} else {
			lo, hi = lr.ranks(z)
		}
		if offset >= 0 && lo < hi && limit != 0 {
			if !reverse {
				z.Iter(lo+int(min(offset, int64(n))), false, func(it store.ZItem) bool {
					if z.Len() == 0 {
						return false
					}
					return addInRange(sink, it, &limit, rangeType, &sr, &lr)
				})
			} else {
				z.Iter(hi-1-int(min(offset, int64(n))), true, func(it store.ZItem) bool {
					return addInRange(sink, it, &limit, rangeType, &sr, &lr)
				})
			}
		}
	}
	sink.finish(args[1])
}

func addInRange(sink *zrangeSink, it store.ZItem, limit *int64, rangeType int, sr *scoreRange, lr *lexRange) bool {
	if rangeType == zrScore {
		if !sr.gteMin(it.Score) || !sr.lteMax(it.Score) {
			return false
		}
	} else if !lr.gteMin(it.Member) || !lr.lteMax(it.Member) {
		return false
	}
	sink.add(it)
	if *limit > 0 {
		*limit--
		return *limit > 0
	}
	return true
}

func zrangeCommand(c *Client, args [][]byte)      { zrangeGeneric(c, args, 1, false, zrAuto, 0) }
func zrangestoreCommand(c *Client, args [][]byte) { zrangeGeneric(c, args, 2, true, zrAuto, 0) }
func zrevrangeCommand(c *Client, args [][]byte)   { zrangeGeneric(c, args, 1, false, zrRank, 1) }
func zrangebyscoreCommand(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 1, false, zrScore, 2)
}
func zrevrangebyscoreCommand(c *Client, args [][]byte) {
	zrangeGeneric(c, args, 1, false, zrScore, 1)
}
func zrangebylexCommand(c *Client, args [][]byte)    { zrangeGeneric(c, args, 1, false, zrLex, 2) }
func zrevrangebylexCommand(c *Client, args [][]byte) { zrangeGeneric(c, args, 1, false, zrLex, 1) }

func zcountCommand(c *Client, args [][]byte) {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		c.w.Error(errMinMaxFloat)
		return
	}
	zcountIn(c, args[1], &r)
}

// zcountIn replies with how many members of key's sorted set fall in r.
func zcountIn(c *Client, key []byte, r interface{ ranks(*store.ZSet) (int, int) }) {
	z, ok := c.lookupZset(key)
	if !ok {
		return
	}
	if z == nil {
		c.w.Int(0)
		return
	}
	lo, hi := r.ranks(z)
	c.w.Int(int64(hi - lo))
}

func zlexcountCommand(c *Client, args [][]byte) {
	r, ok := parseLexRange(args[2], args[3])
	if !ok {
		c.w.Error(errMinMaxLex)
		return
	}
	zcountIn(c, args[1], &r)
}

func zremrangeGeneric(c *Client, args [][]byte, rangeType int) {
	var start, end int64
	var sr scoreRange
	var lr lexRange
	var event string
	switch rangeType {
	case zrRank:
		var ok1, ok2 bool
		start, ok1 = resp.ParseInt(args[2])
		end, ok2 = resp.ParseInt(args[3])
		if !ok1 || !ok2 {
			c.w.Error(errNotInt)
			return
		}
		event = "zremrangebyrank"
	case zrScore:
		var ok bool
		if sr, ok = parseScoreRange(args[2], args[3]); !ok {
			c.w.Error(errMinMaxFloat)
			return
		}
		event = "zremrangebyscore"
	case zrLex:
		var ok bool
		if lr, ok = parseLexRange(args[2], args[3]); !ok {
			c.w.Error(errMinMaxLex)
			return
		}
		event = "zremrangebylex"
	}
	db := c.DB()
	z, ok := c.lookupZset(args[1])
	if !ok {
		return
	}
	if z == nil {
		c.w.Int(0)
		return
	}
	var lo, hi int
	switch rangeType {
	case zrRank:
		s, e, ok := normRange(start, end, int64(z.Len()))
		if !ok {
			c.w.Int(0)
			return
		}
		lo, hi = int(s), int(e)+1
	case zrScore:
		lo, hi = sr.ranks(z)
	case zrLex:
		lo, hi = lr.ranks(z)
	}
	if hi > lo {
		z.DeleteRange(lo, hi-1, nil)
		db.Modified(args[1])
		c.notify(config.NotifyZset, event, args[1])
		c.zsetEmptied(db, args[1], z)
	}
	c.w.Int(int64(hi - lo))
}

func zremrangebyrankCommand(c *Client, args [][]byte)  { zremrangeGeneric(c, args, zrRank) }
func zremrangebyscoreCommand(c *Client, args [][]byte) { zremrangeGeneric(c, args, zrScore) }
func zremrangebylexCommand(c *Client, args [][]byte)   { zremrangeGeneric(c, args, zrLex) }

// Pops.

// zpop pops up to count members (count -1: one) from the first existing
// key among keys, as Redis's genericZpopCommand.
func zpop(c *Client, w *resp.Writer, db *store.DB, keys [][]byte, max bool, emitKey bool, count int64, nested, nilWhenEmpty bool) {
	var key []byte
	var z *store.ZSet
	for _, k := range keys {
		e, ok := lookupKind(w, db, k, store.KindZSet)
		if !ok {
			return
		}
		if e != nil {
			key, z = k, e.AsZSet()
			break
		}
	}
	if z == nil {
		if nilWhenEmpty {
			w.NullArray()
		} else {
			w.Array(0)
		}
		return
	}
	if count == 0 {
		w.Array(0)
		return
	}
	if count == -1 {
		count = 1
	}
	n := int64(z.Len())
	if count > n {
		count = n
	}
	switch {
	case !nested && !emitKey:
		w.Array(int(count) * 2)
	case nested && !emitKey:
		w.Array(int(count))
	case !nested && emitKey:
		w.Array(int(count)*2 + 1)
		w.Bulk(key)
	default:
		w.Array(2)
		w.Bulk(key)
		w.Array(int(count))
	}
	for i := int64(0); i < count; i++ {
		r := 0
		if max {
			r = z.Len() - 1
		}
		it := z.At(r)
		z.DeleteRange(r, r, nil)
		if nested {
			w.Array(2)
		}
		w.BulkString(it.Member)
		w.Double(it.Score)
	}
	db.Modified(key)
	if max {
		c.notifyAt(db, config.NotifyZset, "zpopmax", key)
	} else {
		c.notifyAt(db, config.NotifyZset, "zpopmin", key)
	}
	c.zsetEmptied(db, key, z)
}

func zpopMinMax(c *Client, args [][]byte, max bool) {
	if len(args) > 3 {
		c.w.Error(errSyntax)
		return
	}
	count := int64(-1)
	if len(args) == 3 {
		v, ok := resp.ParseInt(args[2])
		if !ok || v < 0 {
			c.w.Error(errPositive)
			return
		}
		count = v
	}
	zpop(c, &c.w, c.DB(), args[1:2], max, false, count, c.w.Proto == 3 && count != -1, false)
}

func zpopminCommand(c *Client, args [][]byte) { zpopMinMax(c, args, false) }
func zpopmaxCommand(c *Client, args [][]byte) { zpopMinMax(c, args, true) }

func minMax(b []byte) (bool, bool) {
	switch {
	case eq(b, "min"):
		return false, true
	case eq(b, "max"):
		return true, true
	}
	return false, false
}

func zmpopCommand(c *Client, args [][]byte) {
	keys, max, count, ok := parseMpopZ(c, args, 1)
	if !ok {
		return
	}
	zpop(c, &c.w, c.DB(), keys, max, true, count, true, true)
}

// parseMpopZ parses ZMPOP's arguments (MIN means false).
func parseMpopZ(c *Client, args [][]byte, idx int) ([][]byte, bool, int64, bool) {
	keys, front, count, ok := parseMpop(c, args, idx, minMax)
	return keys, front, count, ok
}

// blockingZpop is BZPOPMIN/BZPOPMAX (count -1) and BZMPOP.
func blockingZpop(c *Client, keys [][]byte, max bool, count int64, nested bool, deadline int64) {
	db := c.DB()
	for _, k := range keys {
		z, ok := c.lookupZset(k)
		if !ok {
			return
		}
		if z == nil {
			continue
		}
		zpop(c, &c.w, db, [][]byte{k}, max, true, count, nested, nested)
		return
	}
	if !c.canBlock() {
		c.w.NullArray()
		return
	}
	c.blockOn(keys, blockZset, deadline, func(w *resp.Writer, db *store.DB, key []byte) serveResult {
		_, res, ok := readyEntry(db, key, store.KindZSet)
		if !ok {
			return res
		}
		zpop(c, w, db, [][]byte{key}, max, true, count, nested, nested)
		return serveDone
	})
}

func bzpopGeneric(c *Client, args [][]byte, max bool) {
	deadline, ok := c.parseTimeout(args[len(args)-1])
	if !ok {
		return
	}
	blockingZpop(c, copyArgs(args[1:len(args)-1]), max, -1, false, deadline)
}

func bzpopminCommand(c *Client, args [][]byte) { bzpopGeneric(c, args, false) }
func bzpopmaxCommand(c *Client, args [][]byte) { bzpopGeneric(c, args, true) }

func bzmpopCommand(c *Client, args [][]byte) {
	keys, max, count, ok := parseMpopZ(c, args, 2)
	if !ok {
		return
	}
	deadline, ok := c.parseTimeout(args[1])
	if !ok {
		return
	}
	blockingZpop(c, copyArgs(keys), max, count, true, deadline)
}

// ZRANDMEMBER.

func zrandmemberCommand(c *Client, args [][]byte) {
	if len(args) >= 3 {
		l, ok := resp.ParseInt(args[2])
		if !ok {
			c.w.Error(errNotInt)
			return
		}
		if l == math.MinInt64 {
			c.w.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
			return
		}
		withScores := false
		if len(args) > 4 || (len(args) == 4 && !eq(args[3], "withscores")) {
			c.w.Error(errSyntax)
			return
		} else if len(args) == 4 {
			withScores = true
			if l < -math.MaxInt64/2 || l > math.MaxInt64/2 {
				c.w.Error("ERR value is out of range")
				return
			}
		}
		zrandWithCount(c, args[1], l, withScores)
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
	c.w.BulkString(z.At(rand.IntN(z.Len())).Member)
}

func zrandWithCount(c *Client, key []byte, l int64, withScores bool) {
	z, ok := c.lookupZset(key)
	if !ok {
		return
	}
	if z == nil || l == 0 {
		c.w.Array(0)
		return
	}
	n := z.Len()
	var items []store.ZItem
	switch {
	case l < 0:
		// Repeats allowed: written as they are drawn, however many.
		w := &c.w
		if withScores && w.Proto == 2 {
			w.Array(int(-2 * l))
		} else {
			w.Array(int(-l))
		}
		for k := uint64(-l); k > 0 && !c.replyCut(k); k-- {
			it := z.At(rand.IntN(n))
			if withScores && w.Proto == 3 {
				w.Array(2)
			}
			w.BulkString(it.Member)
			if withScores {
				w.Double(it.Score)
			}
		}
		return
	case l >= int64(n):
		// The whole set, as Redis walks it: from the highest.
		z.Iter(n-1, true, func(it store.ZItem) bool { items = append(items, it); return true })
	default:
		// Distinct random ranks, in random order.
		picked := make(map[int]struct{}, l)
		for int64(len(picked)) < l {
			r := rand.IntN(n)
			if _, dup := picked[r]; dup {
				continue
			}
			picked[r] = struct{}{}
			items = append(items, z.At(r))
		}
	}
	writeZItems(&c.w, items, withScores)
}

// Set operations.

type zsrc struct {
	z      *store.ZSet
	set    *store.Entry // a plain set (scores 1)
	weight float64
	n      int
}

func (s *zsrc) each(fn func(m string, score float64)) {
	switch {
	case s.z != nil:
		s.z.Iter(0, false, func(it store.ZItem) bool { fn(it.Member, it.Score); return true })
	case s.set != nil:
		zsetSetMembers(s.set, func(m []byte) { fn(string(m), 1) })
	}
}

func (s *zsrc) find(m string, lookup map[string]float64) (float64, bool) {
	if s.z != nil {
		return s.z.Score(unsafe.Slice(unsafe.StringData(m), len(m)))
	}
	if lookup != nil {
		v, ok := lookup[m]
		return v, ok
	}
	return 0, false
}

const (
	opUnion = iota
	opInter
	opDiff
)

func aggregate(target *float64, val float64, agg int) {
	switch agg {
	case 0:
		*target += val
		if math.IsNaN(*target) {
			*target = 0
		}
	case 1:
		if val < *target {
			*target = val
		}
	case 2:
		if val > *target {
			*target = val
		}
	}
}

func zsetOpGeneric(c *Client, args [][]byte, dst []byte, numIdx int, op int, cardOnly bool) {
	setnum, ok := resp.ParseInt(args[numIdx])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if setnum < 1 {
		c.w.Error("ERR at least 1 input key is needed for '" + string(lowerASCII(args[0])) + "' command")
		return
	}
	if setnum > int64(len(args)-numIdx-1) {
		c.w.Error(errSyntax)
		return
	}
	db := c.DB()
	src := make([]zsrc, setnum)
	j := numIdx + 1
	for i := range src {
		e := db.Lookup(args[j])
		j++
		src[i].weight = 1
		if e == nil {
			continue
		}
		switch {
		case e.Kind() == store.KindZSet:
			src[i].z = e.AsZSet()
			src[i].n = src[i].z.Len()
		case e.Kind() == store.KindSet && zsetSetMembers != nil:
			src[i].set = e
			zsetSetMembers(e, func([]byte) { src[i].n++ })
		default:
			c.w.Error(errWrongType)
			return
		}
	}
	agg := 0
	withScores := false
	limit := int64(0)
	for j < len(args) {
		rem := len(args) - j
		switch {
		case op != opDiff && !cardOnly && rem >= int(setnum)+1 && eq(args[j], "weights"):
			j++
			for i := range src {
				f, ok := parseScore(args[j])
				if !ok {
					c.w.Error("ERR weight value is not a float")
					return
				}
				src[i].weight = f
				j++
			}
		case op != opDiff && !cardOnly && rem >= 2 && eq(args[j], "aggregate"):
			j++
			switch {
			case eq(args[j], "sum"):
				agg = 0
			case eq(args[j], "min"):
				agg = 1
			case eq(args[j], "max"):
				agg = 2
			default:
				c.w.Error(errSyntax)
				return
			}
			j++
		case dst == nil && !cardOnly && eq(args[j], "withscores"):
			j++
			withScores = true
		case cardOnly && rem >= 2 && eq(args[j], "limit"):
			v, ok := resp.ParseInt(args[j+1])
			if !ok || v < 0 {
				c.w.Error("ERR LIMIT can't be negative")
				return
			}
			limit = v
			j += 2
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	// Plain sets are looked up through a map.
	setMaps := make([]map[string]float64, len(src))
	for i := range src {
		if src[i].set != nil {
			m := make(map[string]float64, src[i].n)
			src[i].each(func(k string, s float64) { m[k] = s })
			setMaps[i] = m
		}
	}
	order := make([]int, len(src))
	for i := range order {
		order[i] = i
	}
	if op != opDiff {
		sort.SliceStable(order, func(a, b int) bool { return src[order[a]].n < src[order[b]].n })
	}
	acc := map[string]float64{}
	var card int64
	switch op {
	case opInter:
		first := &src[order[0]]
		if first.n > 0 {
			stop := false
			first.each(func(m string, s float64) {
				if stop {
					return
				}
				score := first.weight * s
				if math.IsNaN(score) {
					score = 0
				}
				for _, oi := range order[1:] {
					o := &src[oi]
					v, ok := o.find(m, setMaps[oi])
					if !ok {
						return
					}
					v *= o.weight
					aggregate(&score, v, agg)
				}
				if cardOnly {
					card++
					if limit > 0 && card >= limit {
						stop = true
					}
					return
				}
				acc[m] = score
			})
		}
	case opUnion:
		for _, oi := range order {
			o := &src[oi]
			o.each(func(m string, s float64) {
				score := o.weight * s
				if math.IsNaN(score) {
					score = 0
				}
				if cur, ok := acc[m]; ok {
					aggregate(&cur, score, agg)
					acc[m] = cur
				} else {
					acc[m] = score
				}
			})
		}
	case opDiff:
		first := &src[0]
		first.each(func(m string, s float64) {
			for i := 1; i < len(src); i++ {
				if _, ok := src[i].find(m, setMaps[i]); ok {
					return
				}
			}
			acc[m] = s
		})
	}
	if cardOnly {
		c.w.Int(card)
		return
	}
	items := make([]store.ZItem, 0, len(acc))
	for m, s := range acc {
		items = append(items, store.ZItem{Member: m, Score: s})
	}
	sort.Slice(items, func(a, b int) bool {
		return items[a].Score < items[b].Score || (items[a].Score == items[b].Score && items[a].Member < items[b].Member)
	})
	if dst != nil {
		ev := [...]string{"zunionstore", "zinterstore", "zdiffstore"}[op]
		c.storeZset(dst, items, ev)
		return
	}
	writeZItems(&c.w, items, withScores)
}

func zunionCommand(c *Client, args [][]byte) { zsetOpGeneric(c, args, nil, 1, opUnion, false) }
func zinterCommand(c *Client, args [][]byte) { zsetOpGeneric(c, args, nil, 1, opInter, false) }
func zdiffCommand(c *Client, args [][]byte)  { zsetOpGeneric(c, args, nil, 1, opDiff, false) }
func zintercardCommand(c *Client, args [][]byte) {
	zsetOpGeneric(c, args, nil, 1, opInter, true)
}
func zunionstoreCommand(c *Client, args [][]byte) {
	zsetOpGeneric(c, args, args[1], 2, opUnion, false)
}
func zinterstoreCommand(c *Client, args [][]byte) {
	zsetOpGeneric(c, args, args[1], 2, opInter, false)
}
func zdiffstoreCommand(c *Client, args [][]byte) {
	zsetOpGeneric(c, args, args[1], 2, opDiff, false)
}

// ZSCAN.

func zscanCommand(c *Client, args [][]byte) {
	cursor, ok := parseScanCursor(args[2])
	if !ok {
		c.w.Error("ERR invalid cursor")
		return
	}
	z, ok := c.lookupZset(args[1])
	if !ok {
		return
	}
	if z == nil {
		c.w.Array(2)
		c.w.BulkString("0")
		c.w.Array(0)
		return
	}
	o, ok := parseCollScanOpts(c, args)
	if !ok {
		return
	}
	count, pattern := o.count, o.pattern
	// The compact form is returned whole; a big set is walked by rank,
	// count members per call.
	start, n := 0, z.Len()
	next := uint64(0)
	if !z.Compact() {
		start = int(min(cursor, uint64(n)))
		if end := uint64(start) + uint64(count); end < uint64(n) {
			n = int(end)
			next = end
		}
	}
	var items []store.ZItem
	if start < n {
		k := start
		z.Iter(start, false, func(it store.ZItem) bool {
			if pattern == nil || store.Match(pattern, []byte(it.Member), false) {
				items = append(items, it)
			}
			k++
			return k < n
		})
	}
	c.w.Array(2)
	var tmp [24]byte
	c.w.Bulk(strconv.AppendUint(tmp[:0], next, 10))
	c.w.Array(2 * len(items))
	var sb [40]byte
	compact := z.Compact()
	for _, it := range items {
		c.w.BulkString(it.Member)
		if compact && it.Score == math.Trunc(it.Score) && math.Abs(it.Score) < 9.2e18 {
			// The listpack holds integral scores as integers.
			c.w.Bulk(strconv.AppendInt(sb[:0], int64(it.Score), 10))
		} else {
			c.w.Bulk(resp.AppendDouble(sb[:0], it.Score))
		}
	}
}

// zsetEncoding is OBJECT ENCODING for lists and sorted sets ("" otherwise).
func listZsetEncoding(e *store.Entry) string {
	switch e.Kind() {
	case store.KindList:
		return e.AsList().Encoding()
	case store.KindZSet:
		return e.AsZSet().Encoding()
	}
	return ""
}

// dupListZset deep-copies a list or sorted set entry (COPY).
func dupListZset(e *store.Entry) *store.Entry {
	switch e.Kind() {
	case store.KindList:
		return store.NewObject(store.KindList, unsafe.Pointer(e.AsList().Clone()))
	case store.KindZSet:
		return store.NewObject(store.KindZSet, unsafe.Pointer(e.AsZSet().Clone()))
	}
	return nil
}
