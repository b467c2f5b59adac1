package server

import (
	"encoding/binary"
	"strconv"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/hll"
	"github.com/sluicedb/sluice/store"
)

// HyperLogLog commands (Redis's hyperloglog.c): PFADD, PFCOUNT, PFMERGE,
// PFDEBUG, PFSELFTEST over package hll's encoding of a string value.

const (
	errHLLInvalid = "INVALIDOBJ Corrupted HLL object detected"
	errHLLType    = "WRONGTYPE Key is not a valid HyperLogLog string value."
)

// hllValue returns key's HLL bytes (the stored memory: valid under the
// shard lock), replying with Redis's error when the value is not an HLL.
func (c *Client) hllValue(e *store.Entry) ([]byte, bool) {
	if e.Kind() != store.KindString {
		c.wrongType()
		return nil, false
	}
	if e.IsInt() {
		c.w.Error(errHLLType)
		return nil, false
	}
	h := e.Bytes(nil)
	if !hll.Valid(h) {
		c.w.Error(errHLLType)
		return nil, false
	}
	return h, true
}

func (c *Client) hllSparseMax() int {
	n, _ := strconv.Atoi(c.srv.cfg.Get("hll-sparse-max-bytes"))
	return n
}

// storeHLL writes h back into e in place.
func storeHLL(e *store.Entry, h []byte) {
	buf := e.MutableRaw(len(h))
	copy(buf, h)
}

func pfaddCommand(c *Client, args [][]byte) {
	key := args[1]
	db := c.DB()
	e := db.Lookup(key)
	updated := 0
	var h []byte
	created, inPlace := false, false
	if e == nil {
		h = hll.New()
		created = true
		updated++
	} else {
		cur, ok := c.hllValue(e)
		if !ok {
			return
		}
		if cur[4] == hll.Dense {
			h = e.MutableRaw(len(cur)) // updated in place: the size never changes
			inPlace = true
		} else {
			h = append([]byte(nil), cur...)
		}
	}
	maxBytes := c.hllSparseMax()
	for _, ele := range args[2:] {
		var r int
		h, r = hll.Add(h, ele, maxBytes)
		switch r {
		case 1:
			updated++
		case -1:
			c.w.Error(errHLLInvalid)
			return
		}
	}
	if created {
		e = &store.Entry{}
		e.SetRaw(h)
		db.Add(key, e)
		c.notify(config.NotifyNew, "new", key)
	}
	if updated > 0 {
		hll.InvalidateCache(h)
		if !inPlace {
			storeHLL(e, h)
		}
		skip := 0
		if created {
			skip = 1 // db.Add counted the creation
		}
		c.modifiedN(key, updated, skip)
		c.notify(config.NotifyString, "pfadd", key)
		c.w.Int(1)
		return
	}
	c.w.Int(0)
}

func pfcountCommand(c *Client, args [][]byte) {
	if len(args) > 2 {
		max := make([]uint8, hll.Registers)
		for _, k := range args[1:] {
			e := c.lookupRead(k)
			if e == nil {
				continue
			}
			h, ok := c.hllValue(e)
			if !ok {
				return
			}
			if !hll.Merge(max, h) {
				c.w.Error(errHLLInvalid)
				return
			}
		}
		var histo [64]int
		for _, v := range max {
			histo[v]++
		}
		c.w.Int(int64(hll.Estimate(&histo)))
		return
	}
	key := args[1]
	e := c.lookupRead(key)
	if e == nil {
		c.w.Int(0)
		return
	}
	h, ok := c.hllValue(e)
	if !ok {
		return
	}
	if h[15]&0x80 == 0 {
		c.w.Int(int64(binary.LittleEndian.Uint64(h[8:16])))
		return
	}
	var histo [64]int
	if hll.Histogram(h, &histo) {
		c.w.Error(errHLLInvalid)
		return
	}
	card := hll.Estimate(&histo)
	buf := e.MutableRaw(len(h))
	binary.LittleEndian.PutUint64(buf[8:16], card)
	c.DB().Modified(key)
	c.w.Int(int64(card))
}

func pfmergeCommand(c *Client, args [][]byte) {
	max := make([]uint8, hll.Registers)
	useDense := false
	for _, k := range args[1:] {
		e := c.lookupRead(k)
		if e == nil {
			continue
		}
		h, ok := c.hllValue(e)
		if !ok {
			return
		}
		if h[4] == hll.Dense {
			useDense = true
		}
		if !hll.Merge(max, h) {
			c.w.Error(errHLLInvalid)
			return
		}
	}
	key := args[1]
	db := c.DB()
	e := db.Lookup(key)
	var h []byte
	created := false
	if e == nil {
		h = hll.New()
		created = true
	} else {
		h = append([]byte(nil), e.Bytes(nil)...)
	}
	if useDense && h[4] == hll.Sparse {
		if h = hll.ToDense(h); h == nil {
			c.w.Error(errHLLInvalid)
			return
		}
	}
	maxBytes := c.hllSparseMax()
	for i, v := range max {
		if v == 0 {
			continue
		}
		if h[4] == hll.Dense {
			hll.DenseUpdate(h[hll.HdrSize:], i, v)
		} else {
			h, _ = hll.SparseSet(h, i, v, maxBytes)
		}
	}
	hll.InvalidateCache(h)
	if created {
		e = &store.Entry{}
		e.SetRaw(h)
		db.Add(key, e)
		c.notify(config.NotifyNew, "new", key)
	} else {
		storeHLL(e, h)
		db.Modified(key)
	}
	c.notify(config.NotifyString, "pfadd", key)
	c.w.OK()
}

func pfdebugCommand(c *Client, args [][]byte) {
	sub, key := args[1], args[2]
	db := c.DB()
	e := db.Lookup(key)
	if e == nil {
		c.w.Error("ERR The specified key does not exist")
		return
	}
	h, ok := c.hllValue(e)
	if !ok {
		return
	}
	toDense := func() bool {
		d := hll.ToDense(h)
		if d == nil {
			c.w.Error(errHLLInvalid)
			return false
		}
		h = d
		storeHLL(e, h)
		db.Modified(key)
		return true
	}
	switch {
	case eq(sub, "getreg"):
		if h[4] == hll.Sparse && !toDense() {
			return
		}
		c.w.Array(hll.Registers)
		for i := 0; i < hll.Registers; i++ {
			c.w.Int(int64(hll.DenseGet(h[hll.HdrSize:], i)))
		}
	case eq(sub, "decode"):
		if h[4] != hll.Sparse {
			c.w.Error("ERR HLL encoding is not sparse")
			return
		}
		c.w.BulkString(hll.DecodeSparse(h))
	case eq(sub, "encoding"):
		if h[4] == hll.Dense {
			c.w.Simple("dense")
		} else {
			c.w.Simple("sparse")
		}
	case eq(sub, "todense"):
		if h[4] == hll.Sparse {
			if !toDense() {
				return
			}
			c.w.Int(1)
			return
		}
		c.w.Int(0)
	default:
		c.w.Error("ERR Unknown PFDEBUG subcommand '" + string(sub) + "'")
	}
}

// pfselftestCommand checks the register accessors and the estimator's
// error, as Redis's PFSELFTEST does.
func pfselftestCommand(c *Client, args [][]byte) {
	if err := hll.SelfTest(c.hllSparseMax()); err != nil {
		c.w.Error("ERR " + err.Error())
		return
	}
	c.w.OK()
}
