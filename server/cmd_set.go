package server

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"unsafe"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/resp"

	"github.com/sluicedb/sluice/store"
)

// lookupSet returns the set at key (nil if missing), replying WRONGTYPE
// and returning ok=false when the key holds another type.
func (c *Client) lookupSet(key []byte) (*store.Set, bool) {
	e, ok := lookupKind(&c.w, c.DB(), key, store.KindSet)
	if e == nil {
		return nil, ok
	}
	return e.AsSet(), true
}

func (c *Client) setMaxIntset() int { return int(c.srv.cfg.SetMaxIntset.Load()) }

func saddCommand(c *Client, args [][]byte) {
	key := args[1]
	s, ok := c.lookupSet(key)
	if !ok {
		return
	}
	if s == nil {
		s = store.NewSetFor(args[2])
		c.DB().Add(key, store.NewSetEntry(s))
		c.notify(config.NotifyNew, "new", key)
	}
	max := c.setMaxIntset()
	added := 0
	for _, m := range args[2:] {
		if s.Add(m, max) {
			added++
		}
	}
	if added > 0 {
		c.DB().Modified(key)
		c.notify(config.NotifySet, "sadd", key)
	}
	c.w.Int(int64(added))
}

func sremCommand(c *Client, args [][]byte) {
	key := args[1]
	s, ok := c.lookupSet(key)
	if !ok {
		return
	}
	if s == nil {
		c.w.Int(0)
		return
	}
	c.removeMembers(key, args[2:], s.Remove, s.Len, config.NotifySet, "srem")
}

func smoveCommand(c *Client, args [][]byte) {
	db := c.DB()
	srcKey, dstKey, ele := args[1], args[2], args[3]
	srcE := db.Lookup(srcKey)
	dstE := db.Lookup(dstKey)
	if srcE == nil {
		c.w.Int(0)
		return
	}
	if srcE.Kind() != store.KindSet || (dstE != nil && dstE.Kind() != store.KindSet) {
		c.wrongType()
		return
	}
	src := srcE.AsSet()
	if srcE == dstE {
		if src.Has(ele) {
			c.w.Int(1)
		} else {
			c.w.Int(0)
		}
		return
	}
	if !src.Remove(ele) {
		c.w.Int(0)
		return
	}
	c.notify(config.NotifySet, "srem", srcKey)
	if src.Len() == 0 {
		db.Delete(srcKey)
		c.notify(config.NotifyGeneric, "del", srcKey)
	}
	var dst *store.Set
	if dstE == nil {
		dst = store.NewSetFor(ele)
		db.Add(dstKey, store.NewSetEntry(dst))
		c.notify(config.NotifyNew, "new", dstKey)
	} else {
		dst = dstE.AsSet()
	}
	db.Modified(srcKey)
	if dst.Add(ele, c.setMaxIntset()) {
		db.Modified(dstKey)
		c.notify(config.NotifySet, "sadd", dstKey)
	}
	c.w.Int(1)
}

func sismemberCommand(c *Client, args [][]byte) {
	s, ok := c.lookupSet(args[1])
	if !ok {
		return
	}
	if s != nil && s.Has(args[2]) {
		c.w.Int(1)
	} else {
		c.w.Int(0)
	}
}

func smismemberCommand(c *Client, args [][]byte) {
	s, ok := c.lookupSet(args[1])
	if !ok {
		return
	}
	c.w.Array(len(args) - 2)
	for _, m := range args[2:] {
		if s != nil && s.Has(m) {
			c.w.Int(1)
		} else {
			c.w.Int(0)
		}
	}
}

func scardCommand(c *Client, args [][]byte) {
	s, ok := c.lookupSet(args[1])
	if !ok {
		return
	}
	if s == nil {
		c.w.Int(0)
		return
	}
	c.w.Int(int64(s.Len()))
}

// replySetMembers writes the members of s as a set reply.
func replySetMembers(c *Client, s *store.Set) {
	c.w.Set(s.Len())
	if s.IsIntset() {
		for _, v := range s.Ints() {
			c.w.BulkInt(v)
		}
		return
	}
	s.ForEach(func(m []byte) bool { c.w.Bulk(m); return true })
}

const spopMoveStrategyMul = 5

func spopCommand(c *Client, args [][]byte) {
	if len(args) == 3 {
		spopWithCount(c, args)
		return
	} else if len(args) > 3 {
		c.w.Error(errSyntax)
		return
	}
	key := args[1]
	s, ok := c.lookupSet(key)
	if !ok {
		return
	}
	if s == nil {
		c.w.Null()
		return
	}
	var tmp [24]byte
	m := s.Pop(tmp[:0])
	c.notify(config.NotifySet, "spop", key)
	c.w.Bulk(m)
	if s.Len() == 0 {
		c.DB().Delete(key)
		c.notify(config.NotifyGeneric, "del", key)
	}
	c.DB().Modified(key)
}

func spopWithCount(c *Client, args [][]byte) {
	l, ok := resp.ParseInt(args[2])
	if !ok || l < 0 {
		c.w.Error(errPositive)
		return
	}
	key := args[1]
	e, ok := lookupKind(&c.w, c.DB(), key, store.KindSet)
	if !ok {
		return
	}
	var s *store.Set
	if e != nil {
		s = e.AsSet()
	}
	if s == nil || l == 0 {
		c.w.Set(0)
		return
	}
	count := uint64(l)
	size := uint64(s.Len())
	c.notify(config.NotifySet, "spop", key)
	db := c.DB()

	// The whole set: reply as SUNION of it would, then delete the key.
	if count >= size {
		u := setUnionDiff([]*store.Set{s}, false, c.setMaxIntset())
		replySetMembers(c, u)
		db.Delete(key)
		c.notify(config.NotifyGeneric, "del", key)
		db.Modified(key)
		return
	}
	c.w.Set(int(count))
	remaining := size - count
	var tmp [24]byte
	if remaining*spopMoveStrategyMul > count {
		// Few to pop: pop them one by one.
		for ; count > 0; count-- {
			c.w.Bulk(s.Pop(tmp[:0]))
		}
	} else {
		// Most of the set goes: move the survivors into a new set and
		// reply with what is left of the old one.
		max := c.setMaxIntset()
		var ns *store.Set
		for ; remaining > 0; remaining-- {
			m := s.Random(tmp[:0])
			m = append([]byte(nil), m...)
			if ns == nil {
				ns = store.NewSetFor(m)
			}
			ns.Add(m, max)
			s.Remove(m)
		}
		replyMembersNoHeader(c, s)
		e.SetObject(store.KindSet, unsafe.Pointer(ns))
	}
	db.Modified(key)
}

func replyMembersNoHeader(c *Client, s *store.Set) {
	if s.IsIntset() {
		for _, v := range s.Ints() {
			c.w.BulkInt(v)
		}
		return
	}
	s.ForEach(func(m []byte) bool { c.w.Bulk(m); return true })
}

const srandSubStrategyMul = 3

func srandmemberCommand(c *Client, args [][]byte) {
	if len(args) == 3 {
		srandmemberWithCount(c, args)
		return
	} else if len(args) > 3 {
		c.w.Error(errSyntax)
		return
	}
	s, ok := c.lookupSet(args[1])
	if !ok {
		return
	}
	if s == nil {
		c.w.Null()
		return
	}
	var tmp [24]byte
	c.w.Bulk(s.Random(tmp[:0]))
}

func srandmemberWithCount(c *Client, args [][]byte) {
	l, ok := rangeLongArg(c, args[2])
	if !ok {
		return
	}
	s, ok := c.lookupSet(args[1])
	if !ok {
		return
	}
	if s == nil {
		c.w.Array(0)
		return
	}
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
	size := uint64(s.Len())
	var tmp [24]byte
	if !uniq || count == 1 {
		c.w.Array(int(count))
		for ; count > 0 && !c.replyCut(count); count-- {
			c.w.Bulk(s.Random(tmp[:0]))
		}
		return
	}
	if count >= size {
		c.w.Array(int(size))
		replyMembersNoHeader(c, s)
		return
	}
	c.w.Array(int(count))
	if count*srandSubStrategyMul > size {
		// Most of the set: drop random members from a copy.
		all := make([][]byte, 0, size)
		if s.IsIntset() {
			for _, v := range s.Ints() {
				all = append(all, []byte(itoa(v)))
			}
		} else {
			s.ForEach(func(m []byte) bool { all = append(all, m); return true })
		}
		for uint64(len(all)) > count {
			i := rand.IntN(len(all))
			all[i] = all[len(all)-1]
			all = all[:len(all)-1]
		}
		for _, m := range all {
			c.w.Bulk(m)
		}
		return
	}
	seen := make(map[string]struct{}, count)
	for uint64(len(seen)) < count {
		m := s.Random(tmp[:0])
		if _, dup := seen[string(m)]; dup {
			continue
		}
		seen[string(m)] = struct{}{}
		c.w.Bulk(m)
	}
}

// Set algebra.

// lookupSets looks every key up (missing keys are nil), replying
// WRONGTYPE when one holds another type.
func (c *Client) lookupSets(keys [][]byte) ([]*store.Set, bool) {
	sets := make([]*store.Set, len(keys))
	for i, k := range keys {
		s, ok := c.lookupSet(k)
		if !ok {
			return nil, false
		}
		sets[i] = s
	}
	return sets, true
}

func sinterCommand(c *Client, args [][]byte) { sinterGeneric(c, args[1:], nil, false, 0) }

func sinterstoreCommand(c *Client, args [][]byte) { sinterGeneric(c, args[2:], args[1], false, 0) }

func sintercardCommand(c *Client, args [][]byte) {
	numkeys, ok := resp.ParseInt(args[1])
	if !ok || numkeys < 1 {
		c.w.Error("ERR numkeys should be greater than 0")
		return
	}
	if numkeys > int64(len(args)-2) {
		c.w.Error("ERR Number of keys can't be greater than number of args")
		return
	}
	var limit int64
	for j := 2 + int(numkeys); j < len(args); j++ {
		if eq(args[j], "limit") && len(args)-1-j > 0 {
			j++
			v, ok := resp.ParseInt(args[j])
			if !ok || v < 0 {
				c.w.Error("ERR LIMIT can't be negative")
				return
			}
			limit = v
		} else {
			c.w.Error(errSyntax)
			return
		}
	}
	sinterGeneric(c, args[2:2+numkeys], nil, true, limit)
}

// storeSetResult stores a computed set at dst (or deletes dst when it is
// empty) and replies with its size, as the *STORE commands do.
func storeSetResult(c *Client, dst []byte, s *store.Set, event string) {
	db := c.DB()
	if s.Len() > 0 {
		existed := db.Lookup(dst) != nil
		db.Set(dst, store.NewSetEntry(s), false)
		if !existed {
			c.notify(config.NotifyNew, "new", dst)
		}
		c.w.Int(int64(s.Len()))
		c.notify(config.NotifySet, event, dst)
		return
	}
	c.w.Int(0)
	if db.Delete(dst) {
		c.notify(config.NotifyGeneric, "del", dst)
	}
}

func sinterGeneric(c *Client, keys [][]byte, dst []byte, cardOnly bool, limit int64) {
	sets, ok := c.lookupSets(keys)
	if !ok {
		return
	}
	for _, s := range sets {
		if s == nil {
			// Intersection with an empty set is empty.
			switch {
			case dst != nil:
				if c.DB().Delete(dst) {
					c.notify(config.NotifyGeneric, "del", dst)
				}
				c.w.Int(0)
			case cardOnly:
				c.w.Int(0)
			default:
				c.w.Set(0)
			}
			return
		}
	}
	// Smallest first (a stable sort, like glibc's qsort on this input).
	sort.SliceStable(sets, func(i, j int) bool { return sets[i].Len() < sets[j].Len() })
	first := sets[0]
	rest := sets[1:]
	inAll := func(m []byte) bool {
		for _, s := range rest {
			if s != first && !s.Has(m) {
				return false
			}
		}
		return true
	}
	inAllInt := func(v int64) bool {
		for _, s := range rest {
			if s != first && !s.HasInt(v) {
				return false
			}
		}
		return true
	}
	switch {
	case cardOnly:
		var n int64
		if first.IsIntset() {
			for _, v := range first.Ints() {
				if inAllInt(v) {
					n++
					if limit > 0 && n >= limit {
						break
					}
				}
			}
		} else {
			first.ForEach(func(m []byte) bool {
				if inAll(m) {
					n++
					if limit > 0 && n >= limit {
						return false
					}
				}
				return true
			})
		}
		c.w.Int(n)
	case dst != nil:
		out := store.NewIntSet()
		max := c.setMaxIntset()
		if first.IsIntset() {
			var tmp [24]byte
			for _, v := range first.Ints() {
				if inAllInt(v) {
					out.Add(strconv.AppendInt(tmp[:0], v, 10), max)
				}
			}
		} else {
			first.ForEach(func(m []byte) bool {
				if inAll(m) {
					out.Add(m, max)
				}
				return true
			})
		}
		storeSetResult(c, dst, out, "sinterstore")
	default:
		if first.IsIntset() {
			var res []int64
			for _, v := range first.Ints() {
				if inAllInt(v) {
					res = append(res, v)
				}
			}
			c.w.Set(len(res))
			for _, v := range res {
				c.w.BulkInt(v)
			}
			return
		}
		var res [][]byte
		first.ForEach(func(m []byte) bool {
			if inAll(m) {
				res = append(res, m)
			}
			return true
		})
		c.w.Set(len(res))
		for _, m := range res {
			c.w.Bulk(m)
		}
	}
}

// setUnionDiff computes the union (diff=false) or the difference of sets
// (nil entries are empty sets) into a new set built as Redis builds it
// (an intset that converts as members come), so its encoding and
// iteration order match Redis's.
func setUnionDiff(sets []*store.Set, diff bool, max int) *store.Set {
	out := store.NewIntSet()
	if !diff {
		for _, s := range sets {
			if s == nil {
				continue
			}
			s.ForEach(func(m []byte) bool { out.Add(m, max); return true })
		}
		return out
	}
	if sets[0] == nil {
		return out
	}
	for _, s := range sets[1:] {
		if s == sets[0] {
			return out // a set minus itself
		}
	}
	// Redis picks one of two algorithms by estimated work; they give the
	// same members but may build the result through different encodings.
	var algoOne, algoTwo int
	for _, s := range sets {
		if s == nil {
			continue
		}
		algoOne += sets[0].Len()
		algoTwo += s.Len()
	}
	algoOne /= 2
	if algoOne <= algoTwo {
		// Each member of the first set that no other set has.
		sets[0].ForEach(func(m []byte) bool {
			for _, s := range sets[1:] {
				if s != nil && s.Has(m) {
					return true
				}
			}
			out.Add(m, max)
			return true
		})
		return out
	}
	// Everything in the first set, minus everything in the others.
	sets[0].ForEach(func(m []byte) bool { out.Add(m, max); return true })
	for _, s := range sets[1:] {
		if out.Len() == 0 {
			break
		}
		if s == nil {
			continue
		}
		s.ForEach(func(m []byte) bool { out.Remove(m); return true })
	}
	return out
}

func sunionDiffGeneric(c *Client, keys [][]byte, dst []byte, diff bool) {
	sets, ok := c.lookupSets(keys)
	if !ok {
		return
	}
	out := setUnionDiff(sets, diff, c.setMaxIntset())
	if dst == nil {
		replySetMembers(c, out)
		return
	}
	event := "sunionstore"
	if diff {
		event = "sdiffstore"
	}
	storeSetResult(c, dst, out, event)
}

func sunionCommand(c *Client, args [][]byte)      { sunionDiffGeneric(c, args[1:], nil, false) }
func sunionstoreCommand(c *Client, args [][]byte) { sunionDiffGeneric(c, args[2:], args[1], false) }
func sdiffCommand(c *Client, args [][]byte)       { sunionDiffGeneric(c, args[1:], nil, true) }
func sdiffstoreCommand(c *Client, args [][]byte)  { sunionDiffGeneric(c, args[2:], args[1], true) }

func sscanCommand(c *Client, args [][]byte) {
	cursor, ok := parseScanCursor(args[2])
	if !ok {
		c.w.Error("ERR invalid cursor")
		return
	}
	s, ok := c.lookupSet(args[1])
	if !ok {
		return
	}
	if s == nil {
		replyEmptyScan(c)
		return
	}
	o, ok := parseCollScanOpts(c, args)
	if !ok {
		return
	}
	var items [][]byte
	visit := func(m []byte) {
		if o.pattern != nil && !store.Match(o.pattern, m, false) {
			return
		}
		items = append(items, append([]byte(nil), m...))
	}
	if s.IsIntset() {
		cursor = s.Scan(cursor, visit)
	} else {
		raw := uint64(0)
		cursor = scanSteps(cursor, o.count, &raw, func(cur uint64) uint64 {
			return s.Scan(cur, func(m []byte) { raw++; visit(m) })
		})
	}
	replyScan(c, cursor, items)
}
