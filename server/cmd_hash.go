package server

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/internal/longdouble"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// hashSetEncoding returns what OBJECT ENCODING reports for a hash or set
// entry (ok=false for other kinds).
func hashSetEncoding(e *store.Entry) (string, bool) {
	switch e.Kind() {
	case store.KindHash:
		return e.AsHash().Encoding(), true
	case store.KindSet:
		return e.AsSet().Encoding(), true
	}
	return "", false
}

// lookupHash returns the hash at key (nil if missing), replying WRONGTYPE
// and returning ok=false when the key holds another type.
func (c *Client) lookupHash(key []byte) (*store.Hash, bool) {
	e, ok := lookupKind(&c.w, c.DB(), key, store.KindHash)
	if e == nil {
		return nil, ok
	}
	return e.AsHash(), true
}

// hashForWrite returns the hash at key, creating (and adding) an empty one
// when the key is missing, as hashTypeLookupWriteOrCreate does.
func (c *Client) hashForWrite(key []byte) (*store.Hash, bool) {
	h, ok := c.lookupHash(key)
	if !ok || h != nil {
		return h, ok
	}
	h = store.NewHash()
	c.DB().Add(key, store.NewHashEntry(h))
	c.notify(config.NotifyNew, "new", key)
	return h, true
}

func (c *Client) hashLimits() (maxEnt, maxVal int) {
	return int(c.srv.cfg.HashMaxEnt.Load()), int(c.srv.cfg.HashMaxVal.Load())
}

func hsetCommand(c *Client, args [][]byte) {
	if len(args)%2 == 1 {
		c.w.Error(errArity(strings.ToLower(string(args[0]))))
		return
	}
	key := args[1]
	h, ok := c.hashForWrite(key)
	if !ok {
		return
	}
	maxEnt, maxVal := c.hashLimits()
	if h.IsListpack() {
		for _, a := range args[2:] {
			if len(a) > maxVal {
				h.Convert()
				break
			}
		}
	}
	created := 0
	for i := 2; i < len(args); i += 2 {
		if h.Set(args[i], args[i+1], maxEnt, maxVal) {
			created++
		}
	}
	if len(args[0]) > 1 && (args[0][1] == 's' || args[0][1] == 'S') {
		c.w.Int(int64(created))
	} else {
		c.w.OK()
	}
	c.DB().Modified(key)
	c.notify(config.NotifyHash, "hset", key)
}

func hsetnxCommand(c *Client, args [][]byte) {
	key := args[1]
	h, ok := c.hashForWrite(key)
	if !ok {
		return
	}
	if h.Has(args[2]) {
		c.w.Int(0)
		return
	}
	maxEnt, maxVal := c.hashLimits()
	h.Set(args[2], args[3], maxEnt, maxVal)
	c.w.Int(1)
	c.DB().Modified(key)
	c.notify(config.NotifyHash, "hset", key)
}

func hgetCommand(c *Client, args [][]byte) {
	h, ok := c.lookupHash(args[1])
	if !ok {
		return
	}
	if h == nil {
		c.w.Null()
		return
	}
	if v, found := h.Get(args[2]); found {
		c.w.Bulk(v)
	} else {
		c.w.Null()
	}
}

func hmgetCommand(c *Client, args [][]byte) {
	h, ok := c.lookupHash(args[1])
	if !ok {
		return
	}
	c.w.Array(len(args) - 2)
	for _, f := range args[2:] {
		if h != nil {
			if v, found := h.Get(f); found {
				c.w.Bulk(v)
				continue
			}
		}
		c.w.Null()
	}
}

func hdelCommand(c *Client, args [][]byte) {
	key := args[1]
	h, ok := c.lookupHash(key)
	if !ok {
		return
	}
	if h == nil {
		c.w.Int(0)
		return
	}
	c.removeMembers(key, args[2:], h.Delete, h.Len, config.NotifyHash, "hdel")
}

func hlenCommand(c *Client, args [][]byte) {
	h, ok := c.lookupHash(args[1])
	if !ok {
		return
	}
	if h == nil {
		c.w.Int(0)
		return
	}
	c.w.Int(int64(h.Len()))
}

func hstrlenCommand(c *Client, args [][]byte) {
	h, ok := c.lookupHash(args[1])
	if !ok {
		return
	}
	if h == nil {
		c.w.Int(0)
		return
	}
	v, _ := h.Get(args[2])
	c.w.Int(int64(len(v)))
}

func hexistsCommand(c *Client, args [][]byte) {
	h, ok := c.lookupHash(args[1])
	if !ok {
		return
	}
	if h != nil && h.Has(args[2]) {
		c.w.Int(1)
	} else {
		c.w.Int(0)
	}
}

const (
	hashKeys = 1 << iota
	hashVals
)

func hashGetAll(c *Client, key []byte, what int) {
	h, ok := c.lookupHash(key)
	if !ok {
		return
	}
	n := 0
	if h != nil {
		n = h.Len()
	}
	if what == hashKeys|hashVals {
		c.w.Map(n)
	} else {
		c.w.Array(n)
	}
	if h == nil {
		return
	}
	h.ForEach(func(f, v []byte) bool {
		if what&hashKeys != 0 {
			c.w.Bulk(f)
		}
		if what&hashVals != 0 {
			c.w.Bulk(v)
		}
		return true
	})
}

func hgetallCommand(c *Client, args [][]byte) { hashGetAll(c, args[1], hashKeys|hashVals) }
func hkeysCommand(c *Client, args [][]byte)   { hashGetAll(c, args[1], hashKeys) }
func hvalsCommand(c *Client, args [][]byte)   { hashGetAll(c, args[1], hashVals) }

func hincrbyCommand(c *Client, args [][]byte) {
	incr, ok := c.intArg(args[3])
	if !ok {
		return
	}
	key := args[1]
	h, ok := c.hashForWrite(key)
	if !ok {
		return
	}
	var value int64
	if v, found := h.Get(args[2]); found {
		value, ok = resp.ParseInt(v)
		if !ok {
			c.w.Error("ERR hash value is not an integer")
			return
		}
	}
	if (incr < 0 && value < 0 && incr < -1<<63-value) || (incr > 0 && value > 0 && incr > 1<<63-1-value) {
		c.w.Error(errOverflow)
		return
	}
	value += incr
	var tmp [24]byte
	maxEnt, maxVal := c.hashLimits()
	h.Set(args[2], strconv.AppendInt(tmp[:0], value, 10), maxEnt, maxVal)
	c.w.Int(value)
	c.DB().Modified(key)
	c.notify(config.NotifyHash, "hincrby", key)
}

func hincrbyfloatCommand(c *Client, args [][]byte) {
	// Redis computes in long double; see the emulation beside INCRBYFLOAT.
	incr := longdouble.New()
	if !longdouble.Parse(incr, args[3]) {
		c.w.Error(errNotFloat)
		return
	}
	if incr.IsInf() {
		c.w.Error("ERR value is NaN or Infinity")
		return
	}
	key := args[1]
	h, ok := c.hashForWrite(key)
	if !ok {
		return
	}
	value := longdouble.New()
	if v, found := h.Get(args[2]); found && !longdouble.Parse(value, v) {
		c.w.Error("ERR hash value is not a float")
		return
	}
	if value.IsInf() {
		c.w.Error(errNaNInf)
		return
	}
	value.Add(value, incr)
	if longdouble.Overflows(value) {
		c.w.Error(errNaNInf)
		return
	}
	var tmp [64]byte
	out := longdouble.Format(tmp[:0], value)
	maxEnt, maxVal := c.hashLimits()
	h.Set(args[2], out, maxEnt, maxVal)
	c.w.Bulk(out)
	c.DB().Modified(key)
	c.notify(config.NotifyHash, "hincrbyfloat", key)
}

// Random fields.

const (
	hrandSubStrategyMul = 3
	hrandSampleLimit    = 1000
)

func hrandfieldCommand(c *Client, args [][]byte) {
	if len(args) >= 3 {
		l, ok := rangeLongArg(c, args[2])
		if !ok {
			return
		}
		withValues := false
		if len(args) > 4 || (len(args) == 4 && !eq(args[3], "withvalues")) {
			c.w.Error(errSyntax)
			return
		} else if len(args) == 4 {
			withValues = true
			if l < -(1<<63-1)/2 || l > (1<<63-1)/2 {
				c.w.Error("ERR value is out of range")
				return
			}
		}
		hrandfieldWithCount(c, args[1], l, withValues)
		return
	}
	h, ok := c.lookupHash(args[1])
	if !ok {
		return
	}
	if h == nil {
		c.w.Null()
		return
	}
	f, _ := h.Random()
	c.w.Bulk(f)
}

// rangeLongArg parses a count accepted in [-LONG_MAX, LONG_MAX].
func rangeLongArg(c *Client, b []byte) (int64, bool) {
	l, ok := c.intArg(b)
	if !ok {
		return 0, false
	}
	if l == -1<<63 {
		c.w.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return 0, false
	}
	return l, true
}

func hrandfieldWithCount(c *Client, key []byte, l int64, withValues bool) {
	h, ok := c.lookupHash(key)
	if !ok {
		return
	}
	if h == nil {
		c.w.Array(0)
		return
	}
	size := uint64(h.Len())
	uniq := true
	var count uint64
	if l >= 0 {
		count = uint64(l)
	} else {
		count = uint64(-l)
		uniq = false
	}
	if count == 0 {
		c.w.Array(0)
		return
	}
	resp3 := c.w.Resp3()
	pair := func(f, v []byte) {
		if withValues && resp3 {
			c.w.Array(2)
		}
		c.w.Bulk(f)
		if withValues {
			c.w.Bulk(v)
		}
	}
	header := func(n uint64) {
		if withValues && !resp3 {
			c.w.Array(int(n * 2))
		} else {
			c.w.Array(int(n))
		}
	}

	// Repeats allowed (or a single field): sample independently.
	if !uniq || count == 1 {
		header(count)
		if !h.IsListpack() {
			for ; count > 0 && !c.replyCut(count); count-- {
				pair(h.Random())
			}
			return
		}
		fs, vs := h.Pairs(nil, nil)
		for ; count > 0 && !c.replyCut(count); count-- {
			i := rand.IntN(len(fs))
			pair(fs[i], vs[i])
		}
		return
	}

	n := count
	if size < n {
		n = size
	}
	header(n)
	// The whole hash.
	if count >= size {
		h.ForEach(func(f, v []byte) bool { pair(f, v); return true })
		return
	}
	// Most of the hash: drop random fields from a copy of it.
	if count*hrandSubStrategyMul > size || h.IsListpack() {
		fs, vs := h.Pairs(make([][]byte, 0, size), make([][]byte, 0, size))
		for uint64(len(fs)) > count {
			i := rand.IntN(len(fs))
			last := len(fs) - 1
			fs[i], vs[i] = fs[last], vs[last]
			fs, vs = fs[:last], vs[:last]
		}
		for i := range fs {
			pair(fs[i], vs[i])
		}
		return
	}
	// A few fields of a big hash: sample until enough distinct ones.
	seen := make(map[string]struct{}, count)
	for uint64(len(seen)) < count {
		f, v := h.Random()
		if _, dup := seen[string(f)]; dup {
			continue
		}
		seen[string(f)] = struct{}{}
		pair(f, v)
	}
}

// Scanning (SCAN, HSCAN, SSCAN, ZSCAN).

// parseScanCursor parses a SCAN cursor as Redis's strtoul-based
// parseScanCursorOrReply does.
func parseScanCursor(b []byte) (uint64, bool) {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i] // C string semantics
	}
	if len(b) > 0 && (b[0] == ' ' || (b[0] >= '\t' && b[0] <= '\r')) {
		return 0, false
	}
	if len(b) == 0 {
		return 0, true
	}
	neg := false
	s := b
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	var v uint64
	for _, ch := range s {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := uint64(ch - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}

// scanOpts are the options of HSCAN/SSCAN/ZSCAN after the cursor.
type scanOpts struct {
	count   int64
	pattern []byte // nil: match everything
}

// parseCollScanOpts parses COUNT and MATCH from args[3:], replying with
// Redis's errors.
func parseCollScanOpts(c *Client, args [][]byte) (scanOpts, bool) {
	o := scanOpts{count: 10}
	for i := 3; i < len(args); {
		more := len(args) - i
		switch {
		case eq(args[i], "count") && more >= 2:
			v, ok := c.intArg(args[i+1])
			if !ok {
				return o, false
			}
			if v < 1 {
				c.w.Error(errSyntax)
				return o, false
			}
			o.count = v
			i += 2
		case eq(args[i], "match") && more >= 2:
			o.pattern = args[i+1]
			if len(o.pattern) == 1 && o.pattern[0] == '*' {
				o.pattern = nil
			}
			i += 2
		default:
			c.w.Error(errSyntax)
			return o, false
		}
	}
	return o, true
}

// scanSteps runs Redis's scanGenericCommand loop over a hash table: one
// step (bucket) at a time while the cursor is not 0, fewer than
// count*10 steps were taken and fewer than count raw elements were seen.
func scanSteps(cursor uint64, count int64, raw *uint64, step func(uint64) uint64) uint64 {
	maxIter := count * 10
	for {
		cursor = step(cursor)
		if cursor == 0 {
			return 0
		}
		if maxIter == 0 {
			return cursor
		}
		maxIter--
		if *raw >= uint64(count) {
			return cursor
		}
	}
}

// replyScan writes [cursor, items].
func replyScan(c *Client, cursor uint64, items [][]byte) {
	c.w.Array(2)
	var tmp [24]byte
	c.w.Bulk(strconv.AppendUint(tmp[:0], cursor, 10))
	c.w.Array(len(items))
	for _, it := range items {
		c.w.Bulk(it)
	}
}

func replyEmptyScan(c *Client) {
	c.w.Array(2)
	c.w.BulkString("0")
	c.w.Array(0)
}

func hscanCommand(c *Client, args [][]byte) {
	cursor, ok := parseScanCursor(args[2])
	if !ok {
		c.w.Error("ERR invalid cursor")
		return
	}
	h, ok := c.lookupHash(args[1])
	if !ok {
		return
	}
	if h == nil {
		replyEmptyScan(c)
		return
	}
	o, ok := parseCollScanOpts(c, args)
	if !ok {
		return
	}
	var items [][]byte
	visit := func(f, v []byte) {
		if o.pattern != nil && !store.Match(o.pattern, f, false) {
			return
		}
		items = append(items, f, v)
	}
	if h.IsListpack() {
		cursor = h.Scan(cursor, visit)
	} else {
		// Like Redis: steps until COUNT elements (fields and values both
		// count, so 2*COUNT) or 10*COUNT steps. Filtering comes after, so
		// raw elements count. The arithmetic wraps and the comparison is
		// unsigned as in C, so a huge COUNT means "everything".
		count := o.count * 2
		raw := uint64(0)
		cursor = scanSteps(cursor, count, &raw, func(cur uint64) uint64 {
			return h.Scan(cur, func(f, v []byte) {
				raw += 2
				visit(f, v)
			})
		})
	}
	replyScan(c, cursor, items)
}

// Hooks of the generic keyspace commands (OBJECT ENCODING, COPY, MEMORY
// USAGE) for hashes and sets.
func init() {
	prev := objectEncodingOf
	objectEncodingOf = func(e *store.Entry) string {
		if enc, ok := hashSetEncoding(e); ok {
			return enc
		}
		return prev(e)
	}
	objectDupers[store.KindHash] = func(e *store.Entry) *store.Entry { return store.NewHashEntry(e.AsHash().Dup()) }
	objectDupers[store.KindSet] = func(e *store.Entry) *store.Entry { return store.NewSetEntry(e.AsSet().Dup()) }
	objectSizers[store.KindHash] = hashObjectSize
	objectSizers[store.KindSet] = setObjectSize
}

// Redis's structure sizes for objectComputeSize (64-bit).
const (
	dictStructSize = 56 // struct dict in 7.0
	listpackHeader = 7  // 6-byte header and the end byte
)

// redisDictSlots approximates the bucket count of a Redis dict holding n
// entries: the power of two it grows to (at least 4), ignoring rehashing
// in progress.
func redisDictSlots(n int) int64 {
	s := int64(4)
	for s < int64(n) {
		s *= 2
	}
	return s
}

// hashObjectSize mirrors objectComputeSize for hashes.
func hashObjectSize(e *store.Entry, samples int64) int64 {
	h := e.AsHash()
	if h.IsListpack() {
		n := int64(listpackHeader)
		h.ForEach(func(f, v []byte) bool {
			n += int64(store.ListpackEntrySize(f) + store.ListpackEntrySize(v))
			return true
		})
		return robjSize + mallocSize(n)
	}
	size := int64(robjSize+dictStructSize) + 8*redisDictSlots(h.Len())
	var ele, seen int64
	h.ForEach(func(f, v []byte) bool {
		ele += sdsAllocSize(len(f)) + sdsAllocSize(len(v)) + dictEntrySize
		seen++
		return seen < samples
	})
	if seen > 0 {
		size += int64(float64(ele) / float64(seen) * float64(h.Len()))
	}
	return size
}

// setObjectSize mirrors objectComputeSize for sets.
func setObjectSize(e *store.Entry, samples int64) int64 {
	s := e.AsSet()
	if s.IsIntset() {
		width := int64(2)
		for _, v := range s.Ints() {
			switch {
			case v < -1<<31 || v >= 1<<31:
				width = 8
			case (v < -1<<15 || v >= 1<<15) && width < 4:
				width = 4
			}
		}
		return robjSize + mallocSize(8+width*int64(s.Len()))
	}
	size := int64(robjSize+dictStructSize) + 8*redisDictSlots(s.Len())
	var ele, seen int64
	s.ForEach(func(m []byte) bool {
		ele += sdsAllocSize(len(m)) + dictEntrySize
		seen++
		return seen < samples
	})
	if seen > 0 {
		size += int64(float64(ele) / float64(seen) * float64(s.Len()))
	}
	return size
}
