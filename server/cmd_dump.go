package server

import (
	"errors"
	"math"
	"strconv"
	"unsafe"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// DUMP and RESTORE (Redis's cluster.c): values travel as Redis 7.0
// serialized payloads (package rdb), so they move both ways between
// Sluice and redis-server.

const (
	errBadPayload   = "ERR DUMP payload version or checksum are wrong"
	errBadData      = "ERR Bad data format"
	errBusyKey      = "BUSYKEY Target key name already exists."
	errRestoreTTL   = "ERR Invalid TTL value, must be >= 0"
	errRestoreIdle  = "ERR Invalid IDLETIME value, must be >= 0"
	errRestoreFreq  = "ERR Invalid FREQ value, must be >= 0 and <= 255"
	lruClockMaxSecs = 1<<24 - 1 // Redis's LRU_CLOCK_MAX (in seconds)
)

func dumpCommand(c *Client, args [][]byte) {
	e := c.lookupRead(args[1])
	if e == nil {
		c.w.Null()
		return
	}
	p := c.dumpPayload(e)
	if p == nil {
		c.w.Error(errUnknownType)
		return
	}
	c.w.Bulk(p)
}

// dumpPayload serializes e as Redis 7.0 would for the same encoding:
// listpack for small hashes and sorted sets, intset for integer sets, a
// quicklist of listpacks for lists.
func (c *Client) dumpPayload(e *store.Entry) []byte {
	typ, ok := rdbType(e)
	if !ok {
		return nil
	}
	return rdb.Finish(c.srv.appendRDBValue([]byte{typ}, e))
}

// rdbType returns the RDB object type Redis 7.0 writes for e's encoding.
func rdbType(e *store.Entry) (byte, bool) {
	switch e.Kind() {
	case store.KindString:
		return rdb.TypeString, true
	case store.KindList:
		return rdb.TypeListQuicklist2, true
	case store.KindSet:
		if e.AsSet().IsIntset() {
			return rdb.TypeSetIntset, true
		}
		return rdb.TypeSet, true
	case store.KindHash:
		if e.AsHash().IsListpack() {
			return rdb.TypeHashListpack, true
		}
		return rdb.TypeHash, true
	case store.KindZSet:
		if e.AsZSet().Compact() {
			return rdb.TypeZSetListpack, true
		}
		return rdb.TypeZSet2, true
	case store.KindStream:
		return rdb.TypeStreamLP2, true
	}
	return 0, false
}

// appendRDBValue appends the body of e's value (what follows the type
// byte rdbType gives, in a DUMP payload or an RDB file).
func (s *Server) appendRDBValue(dst []byte, e *store.Entry) []byte {
	return s.appendValue(rdb.Enc{}, dst, e)
}

// appendValue is appendRDBValue with the encoder's options.
func (s *Server) appendValue(enc rdb.Enc, dst []byte, e *store.Entry) []byte {
	switch e.Kind() {
	case store.KindString:
		if e.IsInt() {
			return rdb.AppendInt(dst, e.Int())
		}
		return enc.String(dst, e.Bytes(nil))
	case store.KindList:
		l := e.AsList()
		return enc.List(dst, int(s.cfg.ListPackSize.Load()), func(yield func([]byte) bool) {
			l.Each(false, func(_ int, v []byte) bool { return yield(v) })
		})
	case store.KindSet:
		set := e.AsSet()
		if set.IsIntset() {
			return enc.Intset(dst, set.Ints())
		}
		return enc.Set(dst, set.Len(), set.ForEach)
	case store.KindHash:
		h := e.AsHash()
		if h.IsListpack() {
			return enc.HashListpack(dst, h.ForEach)
		}
		return enc.Hash(dst, h.Len(), h.ForEach)
	case store.KindZSet:
		z := e.AsZSet()
		items := func(rank int, reverse bool) func(func([]byte, float64) bool) {
			return func(yield func([]byte, float64) bool) {
				z.Iter(rank, reverse, func(it store.ZItem) bool { return yield(strBytes(it.Member), it.Score) })
			}
		}
		if z.Compact() {
			return enc.ZSetListpack(dst, items(0, false))
		}
		return enc.ZSet(dst, z.Len(), items(z.Len()-1, true))
	case store.KindStream:
		return appendStreamRDB(dst, e.AsStream())
	}
	return dst
}

func restoreCommand(c *Client, args [][]byte) {
	replace, absttl := false, false
	lfuFreq, lruIdle := int64(-1), int64(-1)
	for j := 4; j < len(args); j++ {
		more := len(args) - j - 1
		switch {
		case eq(args[j], "replace"):
			replace = true
		case eq(args[j], "absttl"):
			absttl = true
		case eq(args[j], "idletime") && more >= 1 && lfuFreq == -1:
			v, ok := c.intArg(args[j+1])
			if !ok {
				return
			}
			if v < 0 {
				c.w.Error(errRestoreIdle)
				return
			}
			lruIdle = v
			j++
		case eq(args[j], "freq") && more >= 1 && lruIdle == -1:
			v, ok := c.intArg(args[j+1])
			if !ok {
				return
			}
			if v < 0 || v > 255 {
				c.w.Error(errRestoreFreq)
				return
			}
			lfuFreq = v
			j++
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	db := c.DB()
	key := args[1]
	old := db.Lookup(key)
	if !replace && old != nil {
		c.w.Error(errBusyKey)
		return
	}
	ttl, ok := c.intArg(args[2])
	if !ok {
		return
	}
	if ttl < 0 {
		c.w.Error(errRestoreTTL)
		return
	}
	v, err := rdb.Decode(args[3])
	if err != nil {
		if errors.Is(err, rdb.ErrChecksum) {
			c.w.Error(errBadPayload)
		} else {
			c.w.Error(errBadData)
		}
		return
	}
	e := c.restoredEntry(v)
	if e == nil {
		c.w.Error(errBadData)
		return
	}

	now := c.srv.ks.Now()
	if ttl != 0 && !absttl {
		ttl += now
	}
	if ttl != 0 && ttl <= now {
		// Already expired: the key is not created (and a replaced one is
		// deleted).
		if old != nil && db.Delete(key) {
			c.notify(config.NotifyGeneric, "del", key)
		}
		c.w.OK()
		return
	}
	if old != nil {
		db.Set(key, e, false) // one change, as dbDelete + dbAdd count
		c.srv.signalKeyAsReady(db, key)
	} else {
		db.Add(key, e)
	}
	if ttl != 0 {
		db.SetExpire(key, e, ttl)
	}
	if lruIdle >= 0 && !c.lfuPolicy() {
		now := c.srv.ks.LRUClock()
		idle := uint32(min(lruIdle, lruClockMaxSecs))
		if idle <= now {
			e.SetLRU(now - idle)
		} else {
			e.SetLRU(0)
		}
	}
	if lfuFreq >= 0 && c.lfuPolicy() {
		e.SetLRU(c.srv.ks.LFUValue(uint32(lfuFreq)))
	}
	c.notify(config.NotifyNew, "new", key)
	c.notify(config.NotifyGeneric, "restore", key)
	c.w.OK()
}

// restoredEntry builds the value of a decoded payload with the encodings
// Redis 7.0's rdbLoadObject picks under the current limits. It returns nil
// for a value Redis refuses (duplicate members or fields).
func (c *Client) restoredEntry(v *rdb.Value) *store.Entry { return c.srv.entryFromRDB(v) }

// entryFromRDB builds the entry of a decoded value (RESTORE, RDB loading).
func (s *Server) entryFromRDB(v *rdb.Value) *store.Entry {
	cfg := s.cfg
	switch v.Kind() {
	case rdb.KindString:
		if v.IsInt {
			return store.NewInt(v.Int)
		}
		return store.NewString(v.Str)

	case rdb.KindList:
		l := store.NewList(int(cfg.ListPackSize.Load()))
		for _, el := range v.Elems {
			l.PushBack(el)
		}
		return store.NewObject(store.KindList, unsafe.Pointer(l))

	case rdb.KindSet:
		maxIntset := int(cfg.SetMaxIntset.Load())
		set := store.NewIntSet()
		if v.Type == rdb.TypeSetIntset {
			var tmp [24]byte
			for _, n := range v.Ints {
				set.Add(strconv.AppendInt(tmp[:0], n, 10), maxIntset)
			}
			return store.NewSetEntry(set)
		}
		if v.Len() > min(maxIntset, 1<<30) {
			set.Convert()
		}
		for _, m := range v.Elems {
			if !set.Add(m, maxIntset) {
				return nil
			}
		}
		return store.NewSetEntry(set)

	case rdb.KindZSet:
		n := v.Len()
		compact := int64(n) <= cfg.ZsetMaxEnt.Load()
		if v.Type == rdb.TypeZSet || v.Type == rdb.TypeZSet2 {
			compact = compact && int64(v.MaxLen) <= cfg.ZsetMaxVal.Load()
		}
		z := store.NewZSet()
		if !compact {
			z.Convert()
		}
		for i, m := range v.Elems {
			if _, dup := z.Score(m); dup {
				return nil
			}
			z.Insert(m, v.Scores[i])
		}
		return store.NewObject(store.KindZSet, unsafe.Pointer(z))

	case rdb.KindHash:
		maxEnt, maxVal := int(cfg.HashMaxEnt.Load()), int(cfg.HashMaxVal.Load())
		h := store.NewHash()
		if v.Type == rdb.TypeHash {
			if v.Len() > maxEnt {
				h.Convert()
			}
		} else {
			// Compact blobs keep their encoding unless there are too many
			// fields (zipmaps also convert for long entries).
			if v.Type == rdb.TypeHashZipmap && v.MaxLen > maxVal {
				h.Convert()
			}
			maxVal = math.MaxInt
		}
		for i, f := range v.Fields {
			if !h.Set(f, v.Values[i], maxEnt, maxVal) {
				return nil
			}
		}
		return store.NewHashEntry(h)

	case rdb.KindStream:
		return streamFromRDB(v.Stream, cfg)
	}
	return nil
}
