package server

import (
	"math"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/internal/longdouble"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// String commands, after Redis 7.0's t_string.c: the same replies, error
// texts, argument checking order, encodings and keyspace notifications.

// Errors only the string commands use.
const (
	errDecrOverflow = "ERR decrement would overflow"
	errLCSType      = "ERR The specified keys must contain string values"
	errLCSLenIdx    = "ERR If you want both the length and indexes, please just use IDX."
	errLCSTooLong   = "ERR String too long for LCS"
	errLCSMemory    = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
)

// maxEntryLen is the longest string a store.Entry can hold (its length is
// 32 bits). Redis has no such limit below proto-max-bulk-len; Sluice
// refuses longer strings with the proto-max-bulk-len error.
const maxEntryLen = math.MaxUint32

// lookupRead looks key up for reading, as Redis's lookupKeyRead: a miss
// fires the "keymiss" notification.
func (c *Client) lookupRead(key []byte) *store.Entry {
	e := c.DB().Lookup(key)
	if e == nil {
		c.notify(config.NotifyKeyMiss, "keymiss", key)
	}
	return e
}

// getString returns the string entry of key, replying WRONGTYPE (and
// returning ok=false) when the key holds another type. e is nil for a
// missing key.
func (c *Client) getString(key []byte) (e *store.Entry, ok bool) {
	e = c.lookupRead(key)
	if e != nil && e.Kind() != store.KindString {
		c.wrongType()
		return nil, false
	}
	return e, true
}

// replyString appends the string value of e as a bulk string.
func (c *Client) replyString(e *store.Entry) {
	if e.IsInt() {
		c.w.BulkInt(e.Int())
		return
	}
	c.w.Bulk(e.Bytes(nil))
}

// getGeneric is GET's body, shared by GETSET, GETDEL and SET ... GET: it
// replies with the value (or null) and returns the entry; ok is false
// after a WRONGTYPE reply.
func (c *Client) getGeneric(key []byte) (e *store.Entry, ok bool) {
	e, ok = c.getString(key)
	if !ok {
		return nil, false
	}
	if e == nil {
		c.w.Null()
	} else {
		c.replyString(e)
	}
	return e, true
}

// setKey stores val under key as Redis's setKey does. An existing string
// is overwritten in place (no allocation for a value of similar size);
// any other existing value is replaced. The TTL is cleared unless keepTTL.
// old is the key's current entry (nil when missing).
func (c *Client) setKey(key, val []byte, old *store.Entry, keepTTL bool) *store.Entry {
	db := c.DB()
	if old != nil && old.Kind() == store.KindString {
		old.SetBytes(val)
		if !keepTTL && old.Volatile() {
			db.SetExpire(key, old, 0)
		}
		db.Modified(key)
		return old
	}
	e := store.NewString(val)
	if old == nil {
		db.Add(key, e)
		c.notify(config.NotifyNew, "new", key)
	} else {
		db.Set(key, e, keepTTL)
	}
	return e
}

// opt returns an option argument as Redis's C code sees it: up to the
// first NUL byte (so "nx\x00junk" is NX there, and here).
func opt(b []byte) []byte {
	for i, ch := range b {
		if ch == 0 {
			return b[:i]
		}
	}
	return b
}

// Options of SET and GETEX (t_string.c's OBJ_* flags).
const (
	setNX = 1 << iota
	setXX
	setGet
	setKeepTTL
	setEX
	setPX
	setEXAT
	setPXAT
	setPersist
	setAnyExpire = setEX | setPX | setEXAT | setPXAT
)

// parseStringOpts parses the options of SET (from args[3]) or GETEX (from
// args[2]) as parseExtendedStringArgumentsOrReply does. Only the syntax is
// checked here; the expire argument is validated later, in Redis's order.
func (c *Client) parseStringOpts(args [][]byte, isSet bool) (flags int, expire []byte, ok bool) {
	j := 2
	if isSet {
		j = 3
	}
	for ; j < len(args); j++ {
		a := opt(args[j])
		next := j+1 < len(args)
		switch {
		case isSet && eq(a, "nx") && flags&setXX == 0:
			flags |= setNX
		case isSet && eq(a, "xx") && flags&setNX == 0:
			flags |= setXX
		case isSet && eq(a, "get"):
			flags |= setGet
		case isSet && eq(a, "keepttl") && flags&(setPersist|setAnyExpire) == 0:
			flags |= setKeepTTL
		case !isSet && eq(a, "persist") && flags&(setAnyExpire|setKeepTTL) == 0:
			flags |= setPersist
		case eq(a, "ex") && flags&(setKeepTTL|setPersist|setEXAT|setPX|setPXAT) == 0 && next:
			flags |= setEX
			j++
			expire = args[j]
		case eq(a, "px") && flags&(setKeepTTL|setPersist|setEX|setEXAT|setPXAT) == 0 && next:
			flags |= setPX
			j++
			expire = args[j]
		case eq(a, "exat") && flags&(setKeepTTL|setPersist|setEX|setPX|setPXAT) == 0 && next:
			flags |= setEXAT
			j++
			expire = args[j]
		case eq(a, "pxat") && flags&(setKeepTTL|setPersist|setEX|setEXAT|setPX) == 0 && next:
			flags |= setPXAT
			j++
			expire = args[j]
		default:
			c.w.Error(errSyntax)
			return 0, nil, false
		}
	}
	return flags, expire, true
}

// expireMs converts an expire argument to an absolute unix time in ms, as
// getExpireMillisecondsOrReply does (relative for EX/PX, seconds for
// EX/EXAT), replying with Redis's error when it is invalid.
func (c *Client) expireMs(arg []byte, flags int, name string) (int64, bool) {
	v, ok := resp.ParseInt(arg)
	if !ok {
		c.w.Error(errNotInt)
		return 0, false
	}
	seconds := flags&(setEX|setEXAT) != 0
	if v <= 0 || (seconds && v > math.MaxInt64/1000) {
		c.w.Error(errInvalidExpire(name))
		return 0, false
	}
	if seconds {
		v *= 1000
	}
	if flags&(setEX|setPX) != 0 {
		v += c.srv.ks.Now() // wraps on overflow, caught below as in Redis
	}
	if v <= 0 {
		c.w.Error(errInvalidExpire(name))
		return 0, false
	}
	return v, true
}

func getCommand(c *Client, args [][]byte) {
	c.getGeneric(args[1])
}

// Reply styles of setGeneric.
const (
	replyOK  = iota // +OK, or null when NX/XX aborts
	replyInt        // :1, or :0 when NX/XX aborts (SETNX)
)

// setGeneric is setGenericCommand: SET, SETNX, SETEX and PSETEX.
func (c *Client) setGeneric(name string, flags int, key, val, expire []byte, style int) {
	var when int64
	if expire != nil {
		var ok bool
		if when, ok = c.expireMs(expire, flags, name); !ok {
			return
		}
	}
	if flags&setGet != 0 {
		if _, ok := c.getGeneric(key); !ok {
			return
		}
	}
	db := c.DB()
	old := db.Lookup(key)
	if (flags&setNX != 0 && old != nil) || (flags&setXX != 0 && old == nil) {
		if flags&setGet == 0 {
			if style == replyInt {
				c.w.Int(0)
			} else {
				c.w.Null()
			}
		}
		return
	}
	e := c.setKey(key, val, old, flags&setKeepTTL != 0)
	c.notify(config.NotifyString, "set", key)
	if expire != nil {
		// A time already past leaves the key logically expired: the next
		// access removes it (with its "expired" event), as in Redis.
		db.SetExpire(key, e, when)
		c.notify(config.NotifyGeneric, "expire", key)
	}
	if flags&setGet == 0 {
		if style == replyInt {
			c.w.Int(1)
		} else {
			c.w.OK()
		}
	}
}

func setCommand(c *Client, args [][]byte) {
	flags, expire, ok := c.parseStringOpts(args, true)
	if !ok {
		return
	}
	c.setGeneric("set", flags, args[1], args[2], expire, replyOK)
}

func setnxCommand(c *Client, args [][]byte) {
	c.setGeneric("setnx", setNX, args[1], args[2], nil, replyInt)
}

func setexCommand(c *Client, args [][]byte) {
	c.setGeneric("setex", setEX, args[1], args[3], args[2], replyOK)
}

func psetexCommand(c *Client, args [][]byte) {
	c.setGeneric("psetex", setPX, args[1], args[3], args[2], replyOK)
}

func getexCommand(c *Client, args [][]byte) {
	flags, expire, ok := c.parseStringOpts(args, false)
	if !ok {
		return
	}
	key := args[1]
	e, ok := c.getString(key)
	if !ok {
		return
	}
	if e == nil {
		c.w.Null()
		return
	}
	var when int64
	if expire != nil {
		if when, ok = c.expireMs(expire, flags, "getex"); !ok {
			return
		}
	}
	c.replyString(e)
	db := c.DB()
	switch {
	case flags&(setEXAT|setPXAT) != 0 && c.srv.alreadyExpired(when):
		db.Delete(key)
		c.notify(config.NotifyGeneric, "del", key)
	case expire != nil:
		db.SetExpire(key, e, when)
		db.Modified(key)
		c.notify(config.NotifyGeneric, "expire", key)
	case flags&setPersist != 0 && e.Volatile():
		db.SetExpire(key, e, 0)
		db.Modified(key)
		c.notify(config.NotifyGeneric, "persist", key)
	}
}

func getdelCommand(c *Client, args [][]byte) {
	e, ok := c.getGeneric(args[1])
	if !ok || e == nil {
		return
	}
	c.DB().Delete(args[1])
	c.notify(config.NotifyGeneric, "del", args[1])
}

func getsetCommand(c *Client, args [][]byte) {
	e, ok := c.getGeneric(args[1])
	if !ok {
		return
	}
	c.setKey(args[1], args[2], e, false)
	c.notify(config.NotifyString, "set", args[1])
}

func mgetCommand(c *Client, args [][]byte) {
	c.w.Array(len(args) - 1)
	for _, key := range args[1:] {
		e := c.lookupRead(key)
		if e == nil || e.Kind() != store.KindString {
			c.w.Null()
		} else {
			c.replyString(e)
		}
	}
}

func msetCommand(c *Client, args [][]byte)   { c.msetGeneric(args, false) }
func msetnxCommand(c *Client, args [][]byte) { c.msetGeneric(args, true) }

func (c *Client) msetGeneric(args [][]byte, nx bool) {
	if len(args)%2 == 0 {
		if nx {
			c.w.Error(errArity("msetnx"))
		} else {
			c.w.Error(errArity("mset"))
		}
		return
	}
	db := c.DB()
	if nx {
		for j := 1; j < len(args); j += 2 {
			if db.Lookup(args[j]) != nil {
				c.w.Int(0)
				return
			}
		}
	}
	for j := 1; j < len(args); j += 2 {
		c.setKey(args[j], args[j+1], db.Lookup(args[j]), false)
		c.notify(config.NotifyString, "set", args[j])
	}
	if nx {
		c.w.Int(1)
	} else {
		c.w.OK()
	}
}

// entryInt returns the integer value of a string entry (Redis's
// getLongLongFromObject: string2ll rules for non-integer encodings).
func entryInt(e *store.Entry) (int64, bool) {
	if e.IsInt() {
		return e.Int(), true
	}
	return resp.ParseInt(e.Bytes(nil))
}

// incrDecr is incrDecrCommand. An integer-encoded value is updated in
// place without allocating; the TTL is kept.
func (c *Client) incrDecr(key []byte, incr int64) {
	db := c.DB()
	e := db.Lookup(key)
	var v int64
	if e != nil {
		if e.Kind() != store.KindString {
			c.wrongType()
			return
		}
		var ok bool
		if v, ok = entryInt(e); !ok {
			c.w.Error(errNotInt)
			return
		}
	}
	if (incr < 0 && v < 0 && incr < math.MinInt64-v) || (incr > 0 && v > 0 && incr > math.MaxInt64-v) {
		c.w.Error(errOverflow)
		return
	}
	v += incr
	if e != nil {
		e.SetInt(v)
		db.Modified(key)
	} else {
		db.Add(key, store.NewInt(v))
		c.notify(config.NotifyNew, "new", key)
	}
	c.notify(config.NotifyString, "incrby", key)
	c.w.Int(v)
}

func incrCommand(c *Client, args [][]byte) { c.incrDecr(args[1], 1) }
func decrCommand(c *Client, args [][]byte) { c.incrDecr(args[1], -1) }

func incrbyCommand(c *Client, args [][]byte) {
	if incr, ok := c.intArg(args[2]); ok {
		c.incrDecr(args[1], incr)
	}
}

func decrbyCommand(c *Client, args [][]byte) {
	incr, ok := c.intArg(args[2])
	if !ok {
		return
	}
	if incr == math.MinInt64 {
		c.w.Error(errDecrOverflow)
		return
	}
	c.incrDecr(args[1], -incr)
}

func incrbyfloatCommand(c *Client, args [][]byte) {
	key := args[1]
	db := c.DB()
	e := db.Lookup(key)
	value := longdouble.New()
	if e != nil {
		if e.Kind() != store.KindString {
			c.wrongType()
			return
		}
		if e.IsInt() {
			value.SetInt64(e.Int())
		} else if !longdouble.Parse(value, e.Bytes(nil)) {
			c.w.Error(errNotFloat)
			return
		}
	}
	incr := longdouble.New()
	if !longdouble.Parse(incr, args[2]) {
		c.w.Error(errNotFloat)
		return
	}
	if value.IsInf() || incr.IsInf() {
		// inf+x is inf, inf-inf is NaN: both refused.
		c.w.Error(errNaNInf)
		return
	}
	value.Add(value, incr)
	if longdouble.Overflows(value) {
		c.w.Error(errNaNInf)
		return
	}
	var tmp [64]byte
	s := longdouble.Format(tmp[:0], value)
	if e != nil {
		e.SetEmbstr(s)
		db.Modified(key)
	} else {
		e = new(store.Entry)
		e.SetEmbstr(s)
		db.Add(key, e)
		c.notify(config.NotifyNew, "new", key)
	}
	c.notify(config.NotifyString, "incrbyfloat", key)
	c.w.Bulk(s)
}

// checkStringLength is Redis's check that a string of size+add bytes stays
// within proto-max-bulk-len (and within what an entry can hold).
func (c *Client) checkStringLength(size, add int64) bool {
	limit := c.srv.cfg.MaxBulkLen.Load()
	if limit > maxEntryLen {
		limit = maxEntryLen
	}
	if size > limit-add {
		c.w.Error(errStringTooLong)
		return false
	}
	return true
}

func appendCommand(c *Client, args [][]byte) {
	key, val := args[1], args[2]
	db := c.DB()
	e := db.Lookup(key)
	var total int
	if e == nil {
		// A new key is stored like SET stores it (integers as integers).
		db.Add(key, store.NewString(val))
		c.notify(config.NotifyNew, "new", key)
		total = len(val)
	} else {
		if e.Kind() != store.KindString {
			c.wrongType()
			return
		}
		n := e.Len()
		if !c.checkStringLength(int64(n), int64(len(val))) {
			return
		}
		buf := c.growString(e, n+len(val))
		copy(buf[n:], val)
		total = len(buf)
		db.Modified(key)
	}
	c.notify(config.NotifyString, "append", key)
	c.w.Int(int64(total))
}

func strlenCommand(c *Client, args [][]byte) {
	e, ok := c.getString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.w.Int(0)
		return
	}
	c.w.Int(int64(e.Len()))
}

func setrangeCommand(c *Client, args [][]byte) {
	key, val := args[1], args[3]
	offset, ok := c.intArg(args[2])
	if !ok {
		return
	}
	if offset < 0 {
		c.w.Error(errOffsetRange)
		return
	}
	db := c.DB()
	e := db.Lookup(key)
	if e == nil {
		if len(val) == 0 {
			c.w.Int(0)
			return
		}
		if !c.checkStringLength(offset, int64(len(val))) {
			return
		}
		e = store.NewString(nil)
		buf := c.growString(e, int(offset)+len(val))
		copy(buf[offset:], val)
		db.Add(key, e)
		c.notify(config.NotifyNew, "new", key)
	} else {
		if e.Kind() != store.KindString {
			c.wrongType()
			return
		}
		n := e.Len()
		if len(val) == 0 {
			c.w.Int(int64(n))
			return
		}
		if !c.checkStringLength(offset, int64(len(val))) {
			return
		}
		if end := int(offset) + len(val); end > n {
			n = end
		}
		buf := c.growString(e, n)
		copy(buf[offset:], val)
		db.Modified(key)
	}
	c.notify(config.NotifyString, "setrange", key)
	c.w.Int(int64(e.Len()))
}

// clampRange turns the inclusive range start..end of a string of n
// bytes (or bits), negative indexes counting from the end, into indexes
// inside it, as GETRANGE, BITCOUNT and BITPOS read their ranges; the
// range is empty when start > end afterwards.
func clampRange(start, end, n int64) (int64, int64) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = 0
	}
	if end >= n {
		end = n - 1
	}
	return start, end
}

func getrangeCommand(c *Client, args [][]byte) {
	start, ok := c.intArg(args[2])
	if !ok {
		return
	}
	end, ok := c.intArg(args[3])
	if !ok {
		return
	}
	e := c.lookupRead(args[1])
	if e == nil {
		c.w.BulkString("")
		return
	}
	if e.Kind() != store.KindString {
		c.wrongType()
		return
	}
	var tmp [24]byte
	s := e.Bytes(tmp[:0])
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		c.w.BulkString("")
		return
	}
	start, end = clampRange(start, end, n)
	if start > end || n == 0 {
		c.w.BulkString("")
		return
	}
	c.w.Bulk(s[start : end+1])
}

// lcsRange is one matching range of LCS ... IDX.
type lcsRange struct{ a0, a1, b0, b1 uint32 }

func lcsCommand(c *Client, args [][]byte) {
	ea := c.lookupRead(args[1])
	eb := c.lookupRead(args[2])
	if (ea != nil && ea.Kind() != store.KindString) || (eb != nil && eb.Kind() != store.KindString) {
		c.w.Error(errLCSType)
		return
	}
	var getLen, getIdx, withMatchLen bool
	var minMatchLen int64
	for j := 3; j < len(args); j++ {
		a := opt(args[j])
		switch {
		case eq(a, "idx"):
			getIdx = true
		case eq(a, "len"):
			getLen = true
		case eq(a, "withmatchlen"):
			withMatchLen = true
		case eq(a, "minmatchlen") && j+1 < len(args):
			v, ok := c.intArg(args[j+1])
			if !ok {
				return
			}
			minMatchLen = max(v, 0)
			j++
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	if getLen && getIdx {
		c.w.Error(errLCSLenIdx)
		return
	}
	var ta, tb [24]byte
	var a, b []byte
	if ea != nil {
		a = ea.Bytes(ta[:0])
	}
	if eb != nil {
		b = eb.Bytes(tb[:0])
	}
	if len(a) >= math.MaxUint32-1 || len(b) >= math.MaxUint32-1 {
		c.w.Error(errLCSTooLong)
		return
	}
	alen, blen := len(a), len(b)
	cells := uint64(alen+1) * uint64(blen+1)
	if cells*4 > uint64(c.srv.cfg.MaxBulkLen.Load()) {
		c.w.Error(errLCSMemory)
		return
	}
	// lcs[i*(blen+1)+j] is the LCS length of a[:i] and b[:j].
	w := blen + 1
	lcs := make([]uint32, cells)
	for i := 1; i <= alen; i++ {
		row, prev := lcs[i*w:(i+1)*w], lcs[(i-1)*w:i*w]
		ai := a[i-1]
		for j := 1; j <= blen; j++ {
			if ai == b[j-1] {
				row[j] = prev[j-1] + 1
			} else {
				row[j] = max(prev[j], row[j-1])
			}
		}
	}
	total := lcs[alen*w+blen]
	if getLen {
		c.w.Int(int64(total))
		return
	}
	// Walk back from the end, rebuilding the LCS and its matching ranges
	// exactly as Redis does (so the ranges come out in the same order).
	result := make([]byte, total)
	var ranges []lcsRange
	idx := total
	const unset = math.MaxUint32
	as, ae, bs, be := uint32(unset), uint32(0), uint32(0), uint32(0)
	i, j := alen, blen
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			if as == unset {
				as, ae, bs, be = uint32(i-1), uint32(i-1), uint32(j-1), uint32(j-1)
			} else if as == uint32(i) && bs == uint32(j) {
				as--
				bs--
			} else {
				emit = true
			}
			if as == 0 || bs == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if lcs[(i-1)*w+j] > lcs[i*w+j-1] {
				i--
			} else {
				j--
			}
			if as != unset {
				emit = true
			}
		}
		if emit {
			if n := int64(ae - as + 1); minMatchLen == 0 || n >= minMatchLen {
				if getIdx {
					ranges = append(ranges, lcsRange{as, ae, bs, be})
				}
			}
			as = unset
		}
	}
	if !getIdx {
		c.w.Bulk(result)
		return
	}
	c.w.Map(2)
	c.w.BulkString("matches")
	c.w.Array(len(ranges))
	for _, r := range ranges {
		if withMatchLen {
			c.w.Array(3)
		} else {
			c.w.Array(2)
		}
		c.w.Array(2)
		c.w.Int(int64(r.a0))
		c.w.Int(int64(r.a1))
		c.w.Array(2)
		c.w.Int(int64(r.b0))
		c.w.Int(int64(r.b1))
		if withMatchLen {
			c.w.Int(int64(r.a1 - r.a0 + 1))
		}
	}
	c.w.BulkString("len")
	c.w.Int(int64(total))
}
