package server

import (
	"errors"
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

// dumpPayload serializes e as Redis 7.0 would for the same encoding
// (rdb.Dump).
func (c *Client) dumpPayload(e *store.Entry) []byte {
	return rdb.Dump(e, int(c.srv.cfg.ListPackSize.Load()))
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
	v, err := rdb.DecodeWith(args[3], c.restoreOptions())
	if err != nil {
		if reason := rdb.Reason(err); reason != "" {
			c.srv.Verbosef("Internal error in RDB reading offset 0, function at rdb.c:0 -> %s", reason)
		}
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
	if ttl != 0 && c.srv.alreadyExpired(ttl) {
		// Already expired: the key is not created (and a replaced one is
		// deleted). While loading, and on a replica, it is, as in Redis.
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
func (s *Server) entryFromRDB(v *rdb.Value) *store.Entry { return rdb.NewEntry(v, s.rdbLimits()) }

// rdbLimits are the encoding limits decoded values are built under.
func (s *Server) rdbLimits() rdb.Limits {
	cfg := s.cfg
	return rdb.Limits{
		ListFill: cfg.ListPackSize.Load(), SetMaxIntset: cfg.SetMaxIntset.Load(),
		ZSetMaxEntries: cfg.ZsetMaxEnt.Load(), ZSetMaxValue: cfg.ZsetMaxVal.Load(),
		HashMaxEntries: cfg.HashMaxEnt.Load(), HashMaxValue: cfg.HashMaxVal.Load(),
	}
}

// restoreOptions is how RESTORE decodes a payload: without the CRC check
// after DEBUG SET-SKIP-CHECKSUM-VALIDATION 1, and sanitized deeply as
// sanitize-dump-payload says (clients: except for the master, a load, and
// users with skip-sanitize-payload).
func (c *Client) restoreOptions() rdb.DecodeOptions {
	o := rdb.DecodeOptions{SkipCRC: c.srv.skipChecksum.Load()}
	switch c.srv.cfg.Get("sanitize-dump-payload") {
	case "yes":
		o.Sanitize = true
	case "clients":
		skip := c.replMaster || c.srv.ks.Loading.Load()
		if u := c.user.Load(); u != nil && u.Rules().SkipSanitize() {
			skip = true
		}
		o.Sanitize = !skip
	}
	o.Shallow = !o.Sanitize
	return o
}
