package server

import (
	"math/bits"

	"github.com/sluicedb/sluice/bitstr"
	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// Bit commands (Redis's bitops.c): SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP,
// BITFIELD and BITFIELD_RO. They work on string values, bit 0 being the most
// significant bit of the first byte.

const (
	errBitOffset    = "ERR bit offset is not an integer or out of range"
	errBitValue     = "ERR bit is not an integer or out of range"
	errBitArg       = "ERR The bit argument must be 1 or 0."
	errBitopNot     = "ERR BITOP NOT must be called with a single source key."
	errBitfieldType = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	errBitfieldOw   = "ERR Invalid OVERFLOW type specified"
	errBitfieldRO   = "ERR BITFIELD_RO only supports the GET subcommand"
)

// maxBitBytes is the size in bytes a bit offset must stay below:
// proto-max-bulk-len, and what an entry can hold (with room for a 64 bit
// field past the offset).
func (c *Client) maxBitBytes() int64 {
	limit := c.srv.cfg.MaxBulkLen.Load()
	if limit > maxEntryLen-16 {
		limit = maxEntryLen - 16
	}
	return limit
}

// bitOffsetArg parses a bit offset as getBitOffsetFromArgument: with hash
// and bits > 0, "#N" means N*bits.
func (c *Client) bitOffsetArg(b []byte, hash bool, nbits int) (uint64, bool) {
	useHash := hash && nbits > 0 && len(b) > 0 && b[0] == '#'
	if useHash {
		b = b[1:]
	}
	v, ok := parseLL(b)
	if !ok {
		c.w.Error(errBitOffset)
		return 0, false
	}
	if useHash {
		v *= int64(nbits)
	}
	if v < 0 || v>>3 >= c.maxBitBytes() {
		c.w.Error(errBitOffset)
		return 0, false
	}
	return uint64(v), true
}

// parseLL is Redis's string2ll.
func parseLL(b []byte) (int64, bool) { return resp.ParseInt(b) }

// stringForBitWrite is lookupStringForBitCommand: it returns key's string
// (created, or zero-padded) so that bit maxbit can be addressed. dirty
// reports whether the key was created or grown, created whether it was
// created (db.Add already counted that change). ok is false after a
// WRONGTYPE reply.
func (c *Client) stringForBitWrite(key []byte, maxbit uint64) (buf []byte, dirty, created, ok bool) {
	need := int(maxbit>>3) + 1
	db := c.DB()
	e := db.Lookup(key)
	if e == nil {
		e = store.NewString(nil)
		buf = c.growString(e, need)
		db.Add(key, e)
		c.notify(config.NotifyNew, "new", key)
		return buf, true, true, true
	}
	if e.Kind() != store.KindString {
		c.wrongType()
		return nil, false, false, false
	}
	n := e.Len()
	if need > n {
		dirty = true
	} else {
		need = n
	}
	return c.growString(e, need), dirty, false, true
}

// modifiedN signals n changes of key (Redis's server.dirty += n), of
// which skip were already counted.
func (c *Client) modifiedN(key []byte, n, skip int) {
	db := c.DB()
	for ; n > skip; n-- {
		db.Modified(key)
	}
}

func setbitCommand(c *Client, args [][]byte) {
	key := args[1]
	off, ok := c.bitOffsetArg(args[2], false, 0)
	if !ok {
		return
	}
	on, ok := parseLL(args[3])
	if !ok || on&^1 != 0 {
		c.w.Error(errBitValue)
		return
	}
	buf, dirty, created, ok := c.stringForBitWrite(key, off)
	if !ok {
		return
	}
	byteIdx, shift := off>>3, 7-(off&7)
	old := int64(buf[byteIdx]>>shift) & 1
	if dirty || old != on {
		buf[byteIdx] = buf[byteIdx]&^(1<<shift) | byte(on)<<shift
		if !created {
			c.DB().Modified(key)
		}
		c.notify(config.NotifyString, "setbit", key)
	}
	c.w.Int(old)
}

func getbitCommand(c *Client, args [][]byte) {
	off, ok := c.bitOffsetArg(args[2], false, 0)
	if !ok {
		return
	}
	e, ok := c.getString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.w.Int(0)
		return
	}
	var scratch [24]byte
	s := e.Bytes(scratch[:0])
	var bit int64
	if byteIdx := off >> 3; byteIdx < uint64(len(s)) {
		bit = int64(s[byteIdx]>>(7-(off&7))) & 1
	}
	c.w.Int(bit)
}

// bitRange parses a BITCOUNT/BITPOS unit argument.
func (c *Client) bitUnit(b []byte) (isBit, ok bool) {
	switch {
	case eq(b, "bit"):
		return true, true
	case eq(b, "byte"):
		return false, true
	}
	c.w.Error(errSyntax)
	return false, false
}

// clampBitRange converts negative indexes and clamps to the string as
// bitcount/bitstr.Pos do; for a bit range it also returns the masks of the
// bits of the edge bytes that are outside the range, and byte indexes.
func clampBitRange(start, end, strlen int64, isBit bool) (s, e int64, firstMask, lastMask byte) {
	total := strlen
	if isBit {
		total <<= 3
	}
	start, end = clampRange(start, end, total)
	if isBit && start <= end {
		firstMask = ^byte((1 << (8 - (start & 7))) - 1)
		lastMask = byte((1 << (7 - (end & 7))) - 1)
		start >>= 3
		end >>= 3
	}
	return start, end, firstMask, lastMask
}

func bitcountCommand(c *Client, args [][]byte) {
	e, ok := c.getString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.w.Int(0)
		return
	}
	var scratch [24]byte
	p := e.Bytes(scratch[:0])
	strlen := int64(len(p))
	var start, end int64
	var firstMask, lastMask byte
	switch len(args) {
	case 4, 5:
		if start, ok = c.intArg(args[2]); !ok {
			return
		}
		if end, ok = c.intArg(args[3]); !ok {
			return
		}
		if start < 0 && end < 0 && start > end {
			c.w.Int(0)
			return
		}
		isBit := false
		if len(args) == 5 {
			if isBit, ok = c.bitUnit(args[4]); !ok {
				return
			}
		}
		start, end, firstMask, lastMask = clampBitRange(start, end, strlen, isBit)
	case 2:
		start, end = 0, strlen-1
	default:
		c.w.Error(errSyntax)
		return
	}
	if start > end {
		c.w.Int(0)
		return
	}
	count := bitstr.Popcount(p[start : end+1])
	if firstMask != 0 || lastMask != 0 {
		count -= int64(bits.OnesCount8(p[start]&firstMask) + bits.OnesCount8(p[end]&lastMask))
	}
	c.w.Int(count)
}

func bitposCommand(c *Client, args [][]byte) {
	bit, ok := c.intArg(args[2])
	if !ok {
		return
	}
	if bit != 0 && bit != 1 {
		c.w.Error(errBitArg)
		return
	}
	e := c.lookupRead(args[1])
	if e == nil {
		if bit == 1 {
			c.w.Int(-1)
		} else {
			c.w.Int(0)
		}
		return
	}
	if e.Kind() != store.KindString {
		c.wrongType()
		return
	}
	var scratch [24]byte
	p := e.Bytes(scratch[:0])
	strlen := int64(len(p))
	var start, end int64
	var firstMask, lastMask byte
	endGiven := false
	switch len(args) {
	case 4, 5, 6:
		if start, ok = c.intArg(args[3]); !ok {
			return
		}
		isBit := false
		if len(args) == 6 {
			if isBit, ok = c.bitUnit(args[5]); !ok {
				return
			}
		}
		if len(args) >= 5 {
			if end, ok = c.intArg(args[4]); !ok {
				return
			}
			endGiven = true
		} else {
			end = strlen - 1
		}
		start, end, firstMask, lastMask = clampBitRange(start, end, strlen, isBit)
	case 3:
		start, end = 0, strlen-1
	default:
		c.w.Error(errSyntax)
		return
	}
	if start > end {
		c.w.Int(-1)
		return
	}
	c.w.Int(bitstr.PosRange(p, bit, start, end, firstMask, lastMask, endGiven))
}

func bitopCommand(c *Client, args [][]byte) {
	const (
		opAnd = iota
		opOr
		opXor
		opNot
	)
	var op int
	switch name := args[1]; {
	case eq(name, "and"):
		op = opAnd
	case eq(name, "or"):
		op = opOr
	case eq(name, "xor"):
		op = opXor
	case eq(name, "not"):
		op = opNot
	default:
		c.w.Error(errSyntax)
		return
	}
	if op == opNot && len(args) != 4 {
		c.w.Error(errBitopNot)
		return
	}
	target, keys := args[2], args[3:]
	srcs := make([][]byte, len(keys))
	maxLen := 0
	for i, k := range keys {
		e := c.lookupRead(k)
		if e == nil {
			continue
		}
		if e.Kind() != store.KindString {
			c.wrongType()
			return
		}
		if e.IsInt() {
			srcs[i] = e.AppendTo(nil)
		} else {
			srcs[i] = e.Bytes(nil)
		}
		maxLen = max(maxLen, len(srcs[i]))
	}
	db := c.DB()
	if maxLen == 0 {
		if db.Delete(target) {
			c.notify(config.NotifyGeneric, "del", target)
		}
		c.w.Int(0)
		return
	}
	res := make([]byte, maxLen)
	copy(res, srcs[0])
	if op == opNot {
		for i := range res {
			res[i] = ^res[i]
		}
	}
	for _, s := range srcs[1:] {
		switch op {
		case opAnd:
			bitstr.And(res[:len(s)], s)
			clear(res[len(s):])
		case opOr:
			bitstr.Or(res[:len(s)], s)
		case opXor:
			bitstr.Xor(res[:len(s)], s)
		}
	}
	e := &store.Entry{}
	e.SetRaw(res)
	if db.Lookup(target) == nil {
		db.Add(target, e)
		c.notify(config.NotifyNew, "new", target)
	} else {
		db.Set(target, e, false)
	}
	c.notify(config.NotifyString, "set", target)
	c.w.Int(int64(maxLen))
}

// BITFIELD.

const (
	bfGet = iota
	bfSet
	bfIncrby
)

type bitfieldOp struct {
	offset uint64
	val    int64
	op     int
	ow     int
	bits   int
	signed bool
}

// bitfieldTypeArg parses "i<bits>" (1..64) or "u<bits>" (1..63).
func (c *Client) bitfieldTypeArg(b []byte) (signed bool, nbits int, ok bool) {
	if len(b) == 0 || (b[0] != 'i' && b[0] != 'u') {
		c.w.Error(errBitfieldType)
		return false, 0, false
	}
	signed = b[0] == 'i'
	rest := b[1:]
	for i, ch := range rest { // C reads up to the first NUL
		if ch == 0 {
			rest = rest[:i]
			break
		}
	}
	v, ok := parseLL(rest)
	if !ok || v < 1 || (signed && v > 64) || (!signed && v > 63) {
		c.w.Error(errBitfieldType)
		return false, 0, false
	}
	return signed, int(v), true
}

func bitfieldCommand(c *Client, args [][]byte)   { bitfieldGeneric(c, args, false) }
func bitfieldRoCommand(c *Client, args [][]byte) { bitfieldGeneric(c, args, true) }

func bitfieldGeneric(c *Client, args [][]byte, ro bool) {
	var ops []bitfieldOp
	ow := bitstr.Wrap
	readonly := true
	var highest uint64
	for j := 2; j < len(args); j++ {
		rem := len(args) - j - 1
		sub := args[j]
		var op int
		switch {
		case eq(sub, "get") && rem >= 2:
			op = bfGet
		case eq(sub, "set") && rem >= 3:
			op = bfSet
		case eq(sub, "incrby") && rem >= 3:
			op = bfIncrby
		case eq(sub, "overflow") && rem >= 1:
			j++
			switch t := args[j]; {
			case eq(t, "wrap"):
				ow = bitstr.Wrap
			case eq(t, "sat"):
				ow = bitstr.Sat
			case eq(t, "fail"):
				ow = bitstr.Fail
			default:
				c.w.Error(errBitfieldOw)
				return
			}
			continue
		default:
			c.w.Error(errSyntax)
			return
		}
		signed, nbits, ok := c.bitfieldTypeArg(args[j+1])
		if !ok {
			return
		}
		off, ok := c.bitOffsetArg(args[j+2], true, nbits)
		if !ok {
			return
		}
		var val int64
		if op != bfGet {
			readonly = false
			if end := off + uint64(nbits) - 1; end > highest {
				highest = end
			}
			if val, ok = c.intArg(args[j+3]); !ok {
				return
			}
			j += 3
		} else {
			j += 2
		}
		ops = append(ops, bitfieldOp{offset: off, val: val, op: op, ow: ow, bits: nbits, signed: signed})
	}

	var buf []byte // the string to operate on (nil: missing key, read only)
	var dirty, created bool
	var scratch [24]byte
	if readonly {
		e, ok := c.getString(args[1])
		if !ok {
			return
		}
		if e != nil {
			buf = e.Bytes(scratch[:0])
		}
	} else {
		if ro {
			c.w.Error(errBitfieldRO)
			return
		}
		var ok bool
		if buf, dirty, created, ok = c.stringForBitWrite(args[1], highest); !ok {
			return
		}
	}

	c.w.Array(len(ops))
	changes := 0
	for _, o := range ops {
		if o.op == bfGet {
			// Copy up to 9 bytes, zero padded past the string's end.
			var tmp [9]byte
			byteIdx := o.offset >> 3
			if byteIdx < uint64(len(buf)) {
				copy(tmp[:], buf[byteIdx:])
			}
			rel := o.offset - byteIdx*8
			if o.signed {
				c.w.Int(bitstr.GetSigned(tmp[:], rel, o.bits))
			} else {
				c.w.Int(int64(bitstr.GetUnsigned(tmp[:], rel, o.bits)))
			}
			continue
		}
		if o.signed {
			oldv := bitstr.GetSigned(buf, o.offset, o.bits)
			var newv, ret int64
			var of int
			var wrapped int64
			if o.op == bfIncrby {
				of, wrapped = bitstr.SignedOverflow(oldv, o.val, o.bits, o.ow)
				newv = oldv + o.val
				if of != 0 {
					newv = wrapped
				}
				ret = newv
			} else {
				newv = o.val
				of, wrapped = bitstr.SignedOverflow(newv, 0, o.bits, o.ow)
				if of != 0 {
					newv = wrapped
				}
				ret = oldv
			}
			if of != 0 && o.ow == bitstr.Fail {
				c.w.Null()
				continue
			}
			c.w.Int(ret)
			bitstr.SetUnsigned(buf, o.offset, o.bits, uint64(newv))
			if dirty || oldv != newv {
				changes++
			}
		} else {
			oldv := bitstr.GetUnsigned(buf, o.offset, o.bits)
			var newv, ret uint64
			var of int
			var wrapped uint64
			if o.op == bfIncrby {
				newv = oldv + uint64(o.val)
				of, wrapped = bitstr.UnsignedOverflow(oldv, o.val, o.bits, o.ow)
				if of != 0 {
					newv = wrapped
				}
				ret = newv
			} else {
				newv = uint64(o.val)
				of, wrapped = bitstr.UnsignedOverflow(newv, 0, o.bits, o.ow)
				if of != 0 {
					newv = wrapped
				}
				ret = oldv
			}
			if of != 0 && o.ow == bitstr.Fail {
				c.w.Null()
				continue
			}
			c.w.Int(int64(ret))
			bitstr.SetUnsigned(buf, o.offset, o.bits, newv)
			if dirty || oldv != newv {
				changes++
			}
		}
	}
	if changes > 0 {
		skip := 0
		if created {
			skip = 1
		}
		c.modifiedN(args[1], changes, skip)
		c.notify(config.NotifyString, "setbit", args[1])
	}
}
