package server

import (
	"bytes"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unsafe"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/internal/sysinfo"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// The generic keyspace commands (Redis's db.c, expire.c and the OBJECT and
// MEMORY USAGE parts of object.c).

func objectHelpCommand(c *Client, args [][]byte) { c.replyHelp([]byte("OBJECT"), objectHelp) }

func memoryMallocStatsCommand(c *Client, args [][]byte) {
	c.w.BulkString("Stats not supported for the current allocator")
}

func memoryHelpCommand(c *Client, args [][]byte) { c.replyHelp([]byte("MEMORY"), memoryHelp) }

func dbsizeCommand(c *Client, args [][]byte) { c.w.Int(int64(c.DB().Size())) }

// Hooks for the collection types, set by their files' init functions.
var (
	// objectEncodingOf returns OBJECT ENCODING's answer for a non-string.
	objectEncodingOf = func(e *store.Entry) string { return "unknown" }
	// objectDupers[kind] returns a deep copy of a collection (COPY).
	objectDupers [8]func(e *store.Entry) *store.Entry
	// objectSizers[kind] estimates a collection's memory as Redis's
	// objectComputeSize does (the 16-byte robj included), looking at up to
	// samples nested elements.
	objectSizers [8]func(e *store.Entry, samples int64) int64
)

const (
	sharedIntegers    = 10000         // Redis's OBJ_SHARED_INTEGERS
	sharedRefcount    = math.MaxInt32 // OBJ_SHARED_REFCOUNT
	errIntRange       = "ERR value is out of range, value must between -2147483648 and 2147483647"
	errUnknownType    = "ERR unknown type object"
	errLFUNotSelected = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	errLFUSelected    = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
)

// notifyDB is notify for a database other than the client's.
func (c *Client) notifyDB(dbi int, class int64, event string, key []byte) {
	flags := c.srv.cfg.NotifyFlags.Load()
	if flags == 0 || flags&class == 0 {
		return
	}
	c.srv.notifyDB(c, dbi, class, flags, event, key)
}

// keyMiss emits the "keymiss" event of a read lookup that found nothing.
func (c *Client) keyMiss(key []byte) { c.notify(config.NotifyKeyMiss, "keymiss", key) }

// strBytes views a string as bytes without copying (read-only).
func strBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// intArgRange parses an int argument as getIntFromObjectOrReply does:
// msg (or the generic errors when empty) on a bad or out-of-range value.
func (c *Client) intArg32(b []byte, msg string) (int, bool) {
	v, ok := resp.ParseInt(b)
	if !ok {
		if msg == "" {
			msg = errNotInt
		}
		c.w.Error(msg)
		return 0, false
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		if msg == "" {
			msg = errIntRange
		}
		c.w.Error(msg)
		return 0, false
	}
	return int(v), true
}

// DEL, UNLINK

func delCommand(c *Client, args [][]byte) {
	db := c.DB()
	n, freed := int64(0), int64(0)
	for _, k := range args[1:] {
		e := db.PeekRaw(k)
		if e == nil {
			continue
		}
		size := freedSize(e)
		// A string is one allocation, never freed lazily: DEL of strings
		// skips the config lookup.
		if e.Kind() != store.KindString && (eq(args[0], "unlink") || c.srv.cfg.Get("lazyfree-lazy-user-del") == "yes") &&
			!db.IsExpired(k) && freeEffort(e, int(c.srv.cfg.ListPackSize.Load())) > lazyfreeThreshold {
			c.srv.lazyfreed.Add(1)
		}
		// A key whose time is up but that is kept (a replica waits for
		// its master's DEL) is deleted all the same, and counts.
		if db.DeleteKept(k) {
			c.notify(config.NotifyGeneric, "del", k)
			n++
			freed += size
		}
	}
	if freed >= bigFree {
		collectSoon()
	}
	c.w.Int(n)
}

func existsCommand(c *Client, args [][]byte) {
	db := c.DB()
	n := int64(0)
	for _, k := range args[1:] {
		if db.Peek(k) != nil {
			n++
		} else {
			c.keyMiss(k)
		}
	}
	c.w.Int(n)
}

func touchCommand(c *Client, args [][]byte) {
	db := c.DB()
	n := int64(0)
	for _, k := range args[1:] {
		if db.Lookup(k) != nil {
			n++
		} else {
			c.keyMiss(k)
		}
	}
	c.w.Int(n)
}

func typeCommand(c *Client, args [][]byte) {
	e := c.DB().Peek(args[1])
	if e == nil {
		c.keyMiss(args[1])
		c.w.Simple("none")
		return
	}
	c.w.Simple(e.Kind().String())
}

// KEYS, SCAN, RANDOMKEY

func keysCommand(c *Client, args [][]byte) {
	pat := args[1]
	all := len(pat) == 1 && pat[0] == '*'
	var keys []string
	c.DB().ForEach(func(k string, _ *store.Entry) bool {
		if all || store.MatchString(pat, k, false) {
			keys = append(keys, k)
		}
		return true
	})
	c.w.Array(len(keys))
	for i, k := range keys {
		if c.replyCut(uint64(i)) {
			return
		}
		c.w.BulkString(k)
	}
}

func scanCommand(c *Client, args [][]byte) {
	cursor, ok := parseScanCursor(args[1])
	if !ok {
		c.w.Error("ERR invalid cursor")
		return
	}
	count := int64(10)
	var pat, typ []byte
	usePattern := false
	for i := 2; i < len(args); i += 2 {
		more := i+1 < len(args)
		switch {
		case eq(args[i], "count") && more:
			v, ok := c.intArg(args[i+1])
			if !ok {
				return
			}
			if v < 1 {
				c.w.Error(errSyntax)
				return
			}
			count = v
		case eq(args[i], "match") && more:
			pat = args[i+1]
			usePattern = !(len(pat) == 1 && pat[0] == '*')
		case eq(args[i], "type") && more:
			typ = args[i+1]
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	if count > math.MaxInt32 {
		count = math.MaxInt32
	}
	db := c.DB()
	keys, next := db.Scan(cursor, int(count), nil)
	out := keys[:0]
	for _, k := range keys {
		if usePattern && !store.MatchString(pat, k, false) {
			continue
		}
		kb := strBytes(k)
		if typ != nil {
			e := db.Peek(kb)
			name := "none"
			if e != nil {
				name = e.Kind().String()
			} else {
				c.keyMiss(kb)
			}
			if !strings.EqualFold(string(typ), name) {
				continue
			}
		}
		// Expired keys are reclaimed on the way, as Redis's SCAN does.
		if db.Peek(kb) == nil {
			continue
		}
		out = append(out, k)
	}
	c.w.Array(2)
	var tmp [20]byte
	c.w.Bulk(strconv.AppendUint(tmp[:0], next, 10))
	c.w.Array(len(out))
	for _, k := range out {
		c.w.BulkString(k)
	}
}

func randomkeyCommand(c *Client, args [][]byte) {
	db := c.DB()
	for {
		k, _, ok := db.RandomKey()
		if !ok {
			c.w.Null()
			return
		}
		if db.IsExpired(strBytes(k)) {
			db.Peek(strBytes(k)) // reclaims it
			continue
		}
		c.w.BulkString(k)
		return
	}
}

// RENAME, RENAMENX, MOVE, COPY

func renameCommand(c *Client, args [][]byte)   { renameGeneric(c, args, false) }
func renamenxCommand(c *Client, args [][]byte) { renameGeneric(c, args, true) }

func renameGeneric(c *Client, args [][]byte, nx bool) {
	db := c.DB()
	src, dst := args[1], args[2]
	e := db.Lookup(src)
	if e == nil {
		c.w.Error(errNoSuchKey)
		return
	}
	if bytes.Equal(src, dst) {
		if nx {
			c.w.Int(0)
		} else {
			c.w.OK()
		}
		return
	}
	if db.Lookup(dst) != nil {
		if nx {
			c.w.Int(0)
			return
		}
		db.Delete(dst)
	}
	exp := db.ExpireOf(src, e)
	db.Delete(src)
	db.AddExpire(dst, e, exp)
	c.notify(config.NotifyNew, "new", dst)
	c.notify(config.NotifyGeneric, "rename_from", src)
	c.notify(config.NotifyGeneric, "rename_to", dst)
	if nx {
		c.w.Int(1)
	} else {
		c.w.OK()
	}
}

func moveCommand(c *Client, args [][]byte) {
	if c.clusterNotAllowed("ERR MOVE is not allowed in cluster mode") {
		return
	}
	key := args[1]
	dbid, ok := c.intArg32(args[2], "")
	if !ok {
		return
	}
	ks := c.srv.ks
	if dbid < 0 || dbid >= ks.NumDBs() {
		c.w.Error(errDBIndex)
		return
	}
	if dbid == c.dbi {
		c.w.Error(errSameObject)
		return
	}
	src, dst := c.DB(), ks.DB(dbid)
	e := src.Lookup(key)
	if e == nil {
		c.w.Int(0)
		return
	}
	if dst.Lookup(key) != nil {
		c.w.Int(0)
		return
	}
	exp := src.ExpireOf(key, e)
	src.Delete(key)
	dst.AddExpire(key, e, exp)
	c.notifyDB(dbid, config.NotifyNew, "new", key)
	c.notify(config.NotifyGeneric, "move_from", key)
	c.notifyDB(dbid, config.NotifyGeneric, "move_to", key)
	c.w.Int(1)
}

func copyCommand(c *Client, args [][]byte) {
	ks := c.srv.ks
	dbid := c.dbi
	replace := false
	for j := 3; j < len(args); j++ {
		switch {
		case eq(args[j], "replace"):
			replace = true
		case eq(args[j], "db") && j+1 < len(args):
			id, ok := c.intArg32(args[j+1], "")
			if !ok {
				return
			}
			if id < 0 || id >= ks.NumDBs() {
				c.w.Error(errDBIndex)
				return
			}
			dbid = id
			j++
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	if dbid != 0 && c.clusterNotAllowed("ERR Copying to another database is not allowed in cluster mode") {
		return
	}
	key, newkey := args[1], args[2]
	if dbid == c.dbi && bytes.Equal(key, newkey) {
		c.w.Error(errSameObject)
		return
	}
	src, dst := c.DB(), ks.DB(dbid)
	e := src.Lookup(key)
	if e == nil {
		c.keyMiss(key)
		c.w.Int(0)
		return
	}
	exp := src.ExpireOf(key, e)
	del := false
	if dst.Lookup(newkey) != nil {
		if !replace {
			c.w.Int(0)
			return
		}
		del = true
	}
	var dup *store.Entry
	if e.Kind() == store.KindString {
		dup = e.CloneString()
	} else if f := objectDupers[e.Kind()]; f != nil {
		dup = f(e)
	}
	if dup == nil {
		c.w.Error(errUnknownType)
		return
	}
	if del {
		dst.Delete(newkey)
	}
	dst.Add(newkey, dup)
	if exp != 0 {
		dst.SetExpire(newkey, dup, exp)
	}
	c.notifyDB(dbid, config.NotifyNew, "new", newkey)
	c.notifyDB(dbid, config.NotifyGeneric, "copy_to", newkey)
	c.w.Int(1)
}

// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT

const (
	expireNX = 1 << iota
	expireXX
	expireGT
	expireLT
)

func expireCommand(c *Client, args [][]byte)    { expireGeneric(c, args, "expire", false, false) }
func pexpireCommand(c *Client, args [][]byte)   { expireGeneric(c, args, "pexpire", false, true) }
func expireatCommand(c *Client, args [][]byte)  { expireGeneric(c, args, "expireat", true, false) }
func pexpireatCommand(c *Client, args [][]byte) { expireGeneric(c, args, "pexpireat", true, true) }

func expireGeneric(c *Client, args [][]byte, name string, abs, unitMs bool) {
	flags := 0
	for _, a := range args[3:] {
		switch {
		case eq(a, "nx"):
			flags |= expireNX
		case eq(a, "xx"):
			flags |= expireXX
		case eq(a, "gt"):
			flags |= expireGT
		case eq(a, "lt"):
			flags |= expireLT
		default:
			c.w.Error("ERR Unsupported option " + string(a))
			return
		}
	}
	if flags&expireNX != 0 && flags&(expireXX|expireGT|expireLT) != 0 {
		c.w.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if flags&expireGT != 0 && flags&expireLT != 0 {
		c.w.Error("ERR GT and LT options at the same time are not compatible")
		return
	}
	when, ok := c.intArg(args[2])
	if !ok {
		return
	}
	if !unitMs {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			c.w.Error(errInvalidExpire(name))
			return
		}
		when *= 1000
	}
	var base int64
	if !abs {
		base = c.srv.ks.Now()
	}
	if when > math.MaxInt64-base {
		c.w.Error(errInvalidExpire(name))
		return
	}
	when += base

	db := c.DB()
	key := args[1]
	e := db.Lookup(key)
	if e == nil {
		c.w.Int(0)
		return
	}
	if flags != 0 {
		cur := db.ExpireOf(key, e) // 0: none
		switch {
		case flags&expireNX != 0 && cur != 0,
			flags&expireXX != 0 && cur == 0,
			flags&expireGT != 0 && (cur == 0 || when <= cur),
			flags&expireLT != 0 && cur != 0 && when >= cur:
			c.w.Int(0)
			return
		}
	}
	if c.srv.alreadyExpired(when) {
		db.Delete(key)
		c.notify(config.NotifyGeneric, "del", key)
		c.w.Int(1)
		return
	}
	db.SetExpire(key, e, when)
	db.Modified(key)
	c.notify(config.NotifyGeneric, "expire", key)
	c.w.Int(1)
}

// TTL, PTTL, EXPIRETIME, PEXPIRETIME

func ttlCommand(c *Client, args [][]byte)         { ttlGeneric(c, args, false, false) }
func pttlCommand(c *Client, args [][]byte)        { ttlGeneric(c, args, true, false) }
func expiretimeCommand(c *Client, args [][]byte)  { ttlGeneric(c, args, false, true) }
func pexpiretimeCommand(c *Client, args [][]byte) { ttlGeneric(c, args, true, true) }

func ttlGeneric(c *Client, args [][]byte, ms, abs bool) {
	db := c.DB()
	e := db.Peek(args[1])
	if e == nil {
		c.keyMiss(args[1])
		c.w.Int(-2)
		return
	}
	exp := db.ExpireOf(args[1], e)
	if exp == 0 {
		c.w.Int(-1)
		return
	}
	ttl := exp
	if !abs {
		// The clock, not ks.Now: Redis's mstime() even in a script, whose
		// keys' expiry stands at its start.
		ttl = exp - c.srv.ks.Clock().UnixMilli()
	}
	if ttl < 0 {
		ttl = 0
	}
	if !ms {
		ttl = (ttl + 500) / 1000
	}
	c.w.Int(ttl)
}

func persistCommand(c *Client, args [][]byte) {
	db := c.DB()
	e := db.Lookup(args[1])
	if e == nil || !e.Volatile() {
		c.w.Int(0)
		return
	}
	db.SetExpire(args[1], e, 0)
	db.Modified(args[1])
	c.notify(config.NotifyGeneric, "persist", args[1])
	c.w.Int(1)
}

// DBSIZE, FLUSHDB, FLUSHALL, SWAPDB

// flushArgs checks FLUSHDB/FLUSHALL's optional ASYNC or SYNC (both empty
// synchronously here).
func flushArgs(c *Client, args [][]byte) bool {
	if len(args) == 1 || (len(args) == 2 && (eq(args[1], "sync") || eq(args[1], "async"))) {
		return true
	}
	c.w.Error(errSyntax)
	return false
}

// flushAsync says whether a FLUSHDB/FLUSHALL frees in the background in
// Redis (ASYNC, or lazyfree-lazy-user-flush without SYNC): its keys count
// in lazyfreed_objects.
func flushAsync(c *Client, args [][]byte) bool {
	if len(args) == 2 {
		return eq(args[1], "async")
	}
	return c.srv.cfg.Get("lazyfree-lazy-user-flush") == "yes"
}

func flushdbCommand(c *Client, args [][]byte) {
	if !flushArgs(c, args) {
		return
	}
	async := flushAsync(c, args)
	if c.DB().Size() > 0 {
		collectSoon()
		if async {
			c.srv.lazyfreed.Add(int64(c.DB().Size()))
		}
	}
	if async {
		c.DB().FlushAsync()
	} else {
		c.DB().Flush()
	}
	c.DB().DropScanSnapshots()
	c.srv.trackingFlushAll(c)
	c.w.OK()
}

func flushallCommand(c *Client, args [][]byte) {
	if !flushArgs(c, args) {
		return
	}
	ks := c.srv.ks
	async := flushAsync(c, args)
	for i := 0; i < ks.NumDBs(); i++ {
		if ks.DB(i).Size() > 0 {
			collectSoon()
			if async {
				c.srv.lazyfreed.Add(int64(ks.DB(i).Size()))
			}
		}
		if async {
			ks.DB(i).FlushAsync()
		} else {
			ks.DB(i).Flush()
		}
		ks.DB(i).DropScanSnapshots()
	}
	c.srv.trackingFlushAll(c)
	c.srv.flushAllSave()
	c.w.OK()
}

func swapdbCommand(c *Client, args [][]byte) {
	if c.clusterNotAllowed("ERR SWAPDB is not allowed in cluster mode") {
		return
	}
	a, ok := c.intArg32(args[1], "ERR invalid first DB index")
	if !ok {
		return
	}
	b, ok := c.intArg32(args[2], "ERR invalid second DB index")
	if !ok {
		return
	}
	ks := c.srv.ks
	if a < 0 || a >= ks.NumDBs() || b < 0 || b >= ks.NumDBs() {
		c.w.Error(errDBIndex)
		return
	}
	if a != b {
		// Watched keys of both databases are touched by the keyspace's
		// OnSwap hook (as Redis's touchAllWatchedKeysInDb does).
		ks.Swap(a, b)
	}
	c.w.OK()
}

// OBJECT

var objectHelp = []string{
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
}

var memoryHelp = []string{
	"DOCTOR",
	"    Return memory problems reports.",
	"MALLOC-STATS",
	"    Return internal statistics report from the memory allocator.",
	"PURGE",
	"    Attempt to purge dirty pages for reclamation by the allocator.",
	"STATS",
	"    Return information about the memory usage of the server.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
}

// objectLookup is objectCommandLookupOrReply: no touch, no event, null
// reply when missing.
func (c *Client) objectLookup(key []byte) *store.Entry {
	e := c.DB().Peek(key)
	if e == nil {
		c.w.Null()
	}
	return e
}

func (c *Client) lfuPolicy() bool { return c.srv.isLFUPolicy() }

func objectEncodingCommand(c *Client, args [][]byte) {
	e := c.objectLookup(args[2])
	if e == nil {
		return
	}
	if e.Kind() == store.KindString {
		c.w.BulkString(e.StringEncoding())
		return
	}
	c.w.BulkString(objectEncodingOf(e))
}

func objectRefcountCommand(c *Client, args [][]byte) {
	e := c.objectLookup(args[2])
	if e == nil {
		return
	}
	c.w.Int(refcount(c, e))
}

// refcount reports Redis's shared integer objects (0..9999, used unless
// maxmemory is set with an LRU or LFU policy) as shared; every other value
// has one reference.
func refcount(c *Client, e *store.Entry) int64 {
	if e.Kind() != store.KindString || e.StringEncoding() != "int" {
		return 1
	}
	var tmp [24]byte
	v, ok := resp.ParseInt(e.Bytes(tmp[:0]))
	if !ok || v < 0 || v >= sharedIntegers {
		return 1
	}
	if c.srv.cfg.Get("maxmemory") != "0" {
		p := c.srv.cfg.Get("maxmemory-policy")
		if strings.Contains(p, "lru") || strings.Contains(p, "lfu") {
			return 1
		}
	}
	return sharedRefcount
}

func objectIdletimeCommand(c *Client, args [][]byte) {
	e := c.objectLookup(args[2])
	if e == nil {
		return
	}
	if c.lfuPolicy() {
		c.w.Error(errLFUSelected)
		return
	}
	idle := int64(0)
	if now, lru := c.srv.ks.LRUClock(), e.LRU(); now > lru {
		idle = int64(now - lru)
	}
	c.w.Int(idle)
}

func objectFreqCommand(c *Client, args [][]byte) {
	e := c.objectLookup(args[2])
	if e == nil {
		return
	}
	if !c.lfuPolicy() {
		c.w.Error(errLFUNotSelected)
		return
	}
	c.w.Int(int64(c.srv.ks.LFUDecr(e.LRU())))
}

// MEMORY USAGE

func memoryUsageCommand(c *Client, args [][]byte) {
	samples := int64(5)
	for j := 3; j < len(args); j++ {
		if eq(args[j], "samples") && j+1 < len(args) {
			v, ok := c.intArg(args[j+1])
			if !ok {
				return
			}
			if v < 0 {
				c.w.Error(errSyntax)
				return
			}
			if v == 0 {
				v = math.MaxInt64
			}
			samples = v
			j++
			continue
		}
		c.w.Error(errSyntax)
		return
	}
	e := c.DB().PeekRaw(args[2])
	if e == nil {
		c.w.Null()
		return
	}
	c.w.Int(objectSize(e, samples) + sdsAllocSize(len(args[2])) + dictEntrySize)
}

// Sizes of Redis's structures on 64-bit builds, for MEMORY USAGE.
const (
	robjSize      = 16
	dictEntrySize = 24
)

// objectSize mirrors objectComputeSize: strings exactly as Redis (with
// jemalloc) would account them; collections by their type's sizer.
func objectSize(e *store.Entry, samples int64) int64 {
	if e.Kind() != store.KindString {
		if f := objectSizers[e.Kind()]; f != nil {
			return f(e, samples)
		}
		return robjSize
	}
	switch e.StringEncoding() {
	case "int":
		return robjSize
	case "embstr":
		// The robj and an sdshdr8 in one allocation.
		return mallocSize(robjSize + 3 + int64(e.Len()) + 1)
	}
	alloc := e.StringAlloc()
	if alloc < e.Len() {
		alloc = e.Len()
	}
	return robjSize + mallocSize(sdsHdrSize(alloc, false)+int64(alloc)+1)
}

// sdsAllocSize is the allocation of an sds string of n bytes made by
// sdsnewlen (keys), type 5 headers included.
func sdsAllocSize(n int) int64 {
	return mallocSize(sdsHdrSize(n, true) + int64(n) + 1)
}

// sdsHdrSize returns the sds header size for a string of n bytes.
// Type 5 is used only by sdsnewlen for short non-empty strings.
func sdsHdrSize(n int, type5 bool) int64 {
	switch {
	case n < 32 && n > 0 && type5:
		return 1
	case n < 1<<8:
		return 3
	case n < 1<<16:
		return 5
	case int64(n) < 1<<32:
		return 9
	}
	return 17
}

// mallocSize rounds n up to jemalloc's size class (8, 16, 32, 48, ...,
// 128, then four classes per power of two).
func mallocSize(n int64) int64 {
	switch {
	case n <= 8:
		return 8
	case n <= 128:
		return (n + 15) &^ 15
	}
	// n in (2^k, 2^(k+1)]: classes are spaced 2^(k-2) apart.
	k := bits.Len64(uint64(n-1)) - 1
	step := int64(1) << (k - 2)
	return (n + step - 1) &^ (step - 1)
}

// memoryStatsCommand is MEMORY STATS: the fields and order of Redis 7.0's
// reply, filled from the figures INFO memory reports (memory.go).
func memoryStatsCommand(c *Client, args [][]byte) {
	s := c.srv
	m := sysinfo.ReadMemory()
	mem := &s.mem
	used := s.usedMemory() // no eviction here: this runs under the keyspace lock
	dbs, keysOverhead := s.keysOverhead()
	var keys int64
	for _, d := range dbs {
		keys += d.keys
	}
	overhead := s.memoryOverhead()
	peak := max(mem.peak.Load(), used)
	net := max(1, used-mem.startup)
	dataset := max(0, used-overhead)
	_ = keysOverhead
	w := &c.w
	w.Map(27 + len(dbs))
	pair := func(k string, v int64) { w.BulkString(k); w.Int(v) }
	pairF := func(k string, v float64) { w.BulkString(k); w.Double(v) }
	pair("peak.allocated", peak)
	pair("total.allocated", used)
	pair("startup.allocated", mem.startup)
	_, replBacklog, replReplicas := s.replMemory()
	pair("replication.backlog", replBacklog)
	pair("clients.slaves", replReplicas+mem.replicas.Load())
	pair("clients.normal", mem.normal.Load())
	pair("cluster.links", 0)
	pair("aof.buffer", s.aofBuffer())
	pair("lua.caches", 0)
	pair("functions.caches", 0)
	for _, d := range dbs {
		w.BulkString("db." + strconv.FormatInt(d.id, 10))
		w.Map(3)
		pair("overhead.hashtable.main", d.main)
		pair("overhead.hashtable.expires", d.expires)
		pair("overhead.hashtable.slot-to-keys", 0)
	}
	pair("overhead.total", overhead)
	pair("keys.count", keys)
	perKey := int64(0)
	if keys > 0 {
		perKey = net / keys
	}
	pair("keys.bytes-per-key", perKey)
	pair("dataset.bytes", dataset)
	pairF("dataset.percentage", sysinfo.Percent(uint64(dataset), uint64(net)))
	pairF("peak.percentage", sysinfo.Percent(uint64(used), uint64(peak)))
	pair("allocator.allocated", int64(m.Objects))
	pair("allocator.active", int64(m.HeapInUse))
	pair("allocator.resident", int64(m.Total))
	pairF("allocator-fragmentation.ratio", sysinfo.Ratio(m.HeapInUse, m.Objects))
	pair("allocator-fragmentation.bytes", int64(m.HeapInUse-min(m.HeapInUse, m.Objects)))
	pairF("allocator-rss.ratio", sysinfo.Ratio(m.Total, m.HeapInUse))
	pair("allocator-rss.bytes", int64(m.Total)-int64(m.HeapInUse))
	pairF("rss-overhead.ratio", sysinfo.Ratio(m.RSS, m.Total))
	pair("rss-overhead.bytes", int64(m.RSS)-int64(m.Total))
	pairF("fragmentation", sysinfo.Ratio(m.RSS, uint64(used)))
	pair("fragmentation.bytes", int64(m.RSS)-used)
}
