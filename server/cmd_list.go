package server

import (
	"unsafe"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// List commands, after Redis's t_list.c.

const errIndexRange = "ERR index out of range"

// lookupList returns key's list (nil if missing), replying WRONGTYPE and
// returning ok=false for another type.
func (c *Client) lookupList(key []byte) (*store.List, bool) {
	e, ok := lookupKind(&c.w, c.DB(), key, store.KindList)
	if e == nil {
		return nil, ok
	}
	return e.AsList(), true
}

// newListKey creates an empty list at key and signals blocked clients.
func (c *Client) newListKey(db *store.DB, key []byte) *store.List {
	l := store.NewList(int(c.srv.cfg.ListPackSize.Load()))
	db.Add(key, store.NewObject(store.KindList, unsafe.Pointer(l)))
	c.srv.signalKeyAsReady(db, key)
	return l
}

// listEmptied deletes key once its list is empty (with the "del" event).
func (c *Client) listEmptied(db *store.DB, key []byte, l *store.List) {
	if l.Len() == 0 {
		db.Delete(key)
		c.notifyAt(db, config.NotifyGeneric, "del", key)
	} else {
		db.Modified(key)
	}
}

// notifyAt is notify for an explicit database (blocked clients served from
// another client's command).
func (c *Client) notifyAt(db *store.DB, class int64, event string, key []byte) {
	flags := c.srv.cfg.NotifyFlags.Load()
	if flags == 0 || flags&class == 0 {
		return
	}
	if hook := c.srv.notifyHook.Load(); hook != nil {
		(*hook)(db.ID, class, event, key)
	}
}

func pushGeneric(c *Client, args [][]byte, front, xx bool) {
	db := c.DB()
	l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if l == nil {
		if xx {
			c.w.Int(0)
			return
		}
		l = c.newListKey(db, args[1])
	}
	for _, v := range args[2:] {
		if front {
			l.PushFront(v)
		} else {
			l.PushBack(v)
		}
	}
	c.w.Int(int64(l.Len()))
	db.Modified(args[1])
	if front {
		c.notify(config.NotifyList, "lpush", args[1])
	} else {
		c.notify(config.NotifyList, "rpush", args[1])
	}
}

func lpushCommand(c *Client, args [][]byte)  { pushGeneric(c, args, true, false) }
func rpushCommand(c *Client, args [][]byte)  { pushGeneric(c, args, false, false) }
func lpushxCommand(c *Client, args [][]byte) { pushGeneric(c, args, true, true) }
func rpushxCommand(c *Client, args [][]byte) { pushGeneric(c, args, false, true) }

func llenCommand(c *Client, args [][]byte) {
	l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if l == nil {
		c.w.Int(0)
		return
	}
	c.w.Int(int64(l.Len()))
}

// popOne pops one element from the head or tail into the client's scratch.
func (c *Client) popOne(l *store.List, front bool) []byte {
	if front {
		c.scratch, _ = l.PopFront(c.scratch[:0])
	} else {
		c.scratch, _ = l.PopBack(c.scratch[:0])
	}
	return c.scratch
}

func popEvent(front bool) string {
	if front {
		return "lpop"
	}
	return "rpop"
}

// popRange replies with up to count elements popped from one end.
func popRange(c *Client, w *resp.Writer, db *store.DB, key []byte, l *store.List, front bool, count int64) {
	n := int64(l.Len())
	if count > n {
		count = n
	}
	w.Array(int(count))
	if front {
		l.Range(0, int(count)-1, false, func(v []byte) bool { w.Bulk(v); return true })
		l.DropFront(int(count))
	} else {
		l.Range(int(n-count), int(n)-1, true, func(v []byte) bool { w.Bulk(v); return true })
		l.DropBack(int(count))
	}
	c.notifyAt(db, config.NotifyList, popEvent(front), key)
	c.listEmptied(db, key, l)
}

func popGeneric(c *Client, args [][]byte, front bool) {
	if len(args) > 3 {
		c.w.Error(errArity(string(lowerASCII(args[0]))))
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
	db := c.DB()
	l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if l == nil {
		if count >= 0 {
			c.w.NullArray()
		} else {
			c.w.Null()
		}
		return
	}
	if count == 0 {
		c.w.Array(0)
		return
	}
	if count < 0 {
		c.w.Bulk(c.popOne(l, front))
		c.notify(config.NotifyList, popEvent(front), args[1])
		c.listEmptied(db, args[1], l)
		return
	}
	popRange(c, &c.w, db, args[1], l, front, count)
}

func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			ch += 32
		}
		out[i] = ch
	}
	return out
}

func lpopCommand(c *Client, args [][]byte) { popGeneric(c, args, true) }
func rpopCommand(c *Client, args [][]byte) { popGeneric(c, args, false) }

// normRange converts Redis start/stop indexes for a sequence of n into a
// valid inclusive range, or ok=false when it is empty.
func normRange(start, stop, n int64) (int64, int64, bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= n {
		return 0, 0, false
	}
	if stop >= n {
		stop = n - 1
	}
	return start, stop, true
}

func lrangeCommand(c *Client, args [][]byte) {
	start, ok1 := resp.ParseInt(args[2])
	stop, ok2 := resp.ParseInt(args[3])
	if !ok1 || !ok2 {
		c.w.Error(errNotInt)
		return
	}
	l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if l == nil {
		c.w.Array(0)
		return
	}
	s, e, ok := normRange(start, stop, int64(l.Len()))
	if !ok {
		c.w.Array(0)
		return
	}
	c.w.Array(int(e - s + 1))
	l.Range(int(s), int(e), false, func(v []byte) bool { c.w.Bulk(v); return true })
}

func lindexCommand(c *Client, args [][]byte) {
	l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if l == nil {
		c.w.Null() // as Redis: a missing key answers nil before the index is parsed
		return
	}
	idx, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	n := int64(l.Len())
	if idx < 0 {
		idx += n
	}
	if idx < 0 || idx >= n {
		c.w.Null()
		return
	}
	c.w.Bulk(l.Index(int(idx)))
}

func lsetCommand(c *Client, args [][]byte) {
	db := c.DB()
	e := db.Lookup(args[1])
	if e == nil {
		c.w.Error(errNoSuchKey)
		return
	}
	if e.Kind() != store.KindList {
		c.wrongType()
		return
	}
	idx, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	l := e.AsList()
	n := int64(l.Len())
	if idx < 0 {
		idx += n
	}
	if idx < 0 || idx >= n {
		c.w.Error(errIndexRange)
		return
	}
	l.Set(int(idx), args[3])
	c.w.OK()
	db.Modified(args[1])
	c.notify(config.NotifyList, "lset", args[1])
}

func linsertCommand(c *Client, args [][]byte) {
	var after bool
	switch {
	case eq(args[2], "after"):
		after = true
	case eq(args[2], "before"):
	default:
		c.w.Error(errSyntax)
		return
	}
	db := c.DB()
	l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if l == nil {
		c.w.Int(0)
		return
	}
	if !l.Insert(args[3], args[4], after) {
		c.w.Int(-1)
		return
	}
	db.Modified(args[1])
	c.notify(config.NotifyList, "linsert", args[1])
	c.w.Int(int64(l.Len()))
}

func lremCommand(c *Client, args [][]byte) {
	count, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	db := c.DB()
	l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if l == nil {
		c.w.Int(0)
		return
	}
	if count < -(1 << 62) {
		count = -(1 << 62)
	}
	removed := l.Remove(args[3], int(count))
	if removed > 0 {
		db.Modified(args[1])
		c.notify(config.NotifyList, "lrem", args[1])
	}
	if l.Len() == 0 {
		db.Delete(args[1])
		c.notify(config.NotifyGeneric, "del", args[1])
	}
	c.w.Int(int64(removed))
}

func ltrimCommand(c *Client, args [][]byte) {
	start, ok1 := resp.ParseInt(args[2])
	stop, ok2 := resp.ParseInt(args[3])
	if !ok1 || !ok2 {
		c.w.Error(errNotInt)
		return
	}
	db := c.DB()
	e := db.Lookup(args[1])
	if e == nil {
		c.w.OK()
		return
	}
	if e.Kind() != store.KindList {
		c.wrongType()
		return
	}
	l := e.AsList()
	n := int64(l.Len())
	s, en, ok := normRange(start, stop, n)
	if !ok {
		l.DropFront(int(n))
	} else {
		l.DropBack(int(n - 1 - en))
		l.DropFront(int(s))
	}
	c.notify(config.NotifyList, "ltrim", args[1])
	if l.Len() == 0 {
		db.Delete(args[1])
		c.notify(config.NotifyGeneric, "del", args[1])
	} else {
		db.Modified(args[1])
	}
	c.w.OK()
}

func lposCommand(c *Client, args [][]byte) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case eq(args[j], "rank") && more:
			j++
			v, ok := resp.ParseInt(args[j])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			if v == 0 {
				c.w.Error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			rank = v
		case eq(args[j], "count") && more:
			j++
			v, ok := resp.ParseInt(args[j])
			if !ok || v < 0 {
				c.w.Error("ERR COUNT can't be negative")
				return
			}
			count = v
		case eq(args[j], "maxlen") && more:
			j++
			v, ok := resp.ParseInt(args[j])
			if !ok || v < 0 {
				c.w.Error("ERR MAXLEN can't be negative")
				return
			}
			maxlen = v
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	fromTail := false
	if rank < 0 {
		if rank != -1<<63 { // -LLONG_MIN stays negative in C: every match qualifies
			rank = -rank
		}
		fromTail = true
	}
	l, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if l == nil {
		if count != -1 {
			c.w.Array(0)
		} else {
			c.w.Null()
		}
		return
	}
	var matches, scanned int64
	var found []int64
	result := int64(-1)
	l.Each(fromTail, func(i int, v []byte) bool {
		if maxlen != 0 && scanned >= maxlen {
			return false
		}
		scanned++
		if string(v) == string(args[2]) {
			matches++
			if matches >= rank {
				if count == -1 {
					result = int64(i)
					return false
				}
				found = append(found, int64(i))
				if count != 0 && matches-rank+1 >= count {
					return false
				}
			}
		}
		return true
	})
	if count != -1 {
		c.w.Array(len(found))
		for _, i := range found {
			c.w.Int(i)
		}
		return
	}
	if result < 0 {
		c.w.Null()
		return
	}
	c.w.Int(result)
}

// listWhere parses LEFT/RIGHT (true for LEFT), replying syntax error.
func listWhere(w *resp.Writer, b []byte) (bool, bool) {
	switch {
	case eq(b, "left"):
		return true, true
	case eq(b, "right"):
		return false, true
	}
	w.Error(errSyntax)
	return false, false
}

// lmoveOnce moves one element from src (non-empty) to dst, replying with
// it. It returns false after replying WRONGTYPE for dst.
func lmoveOnce(c *Client, w *resp.Writer, db *store.DB, srcKey, dstKey []byte, src *store.List, from, to bool) bool {
	de := db.Lookup(dstKey)
	if de != nil && de.Kind() != store.KindList {
		w.Error(errWrongType)
		return false
	}
	c.scratch = c.scratch[:0]
	if from {
		c.scratch, _ = src.PopFront(c.scratch)
	} else {
		c.scratch, _ = src.PopBack(c.scratch)
	}
	v := c.scratch
	var dst *store.List
	if de == nil {
		// The destination may be the source, now emptied and still present.
		if string(srcKey) == string(dstKey) {
			dst = src
		} else {
			dst = c.newListKey(db, dstKey)
		}
	} else {
		dst = de.AsList()
	}
	db.Modified(dstKey)
	if to {
		dst.PushFront(v)
	} else {
		dst.PushBack(v)
	}
	c.notifyAt(db, config.NotifyList, map[bool]string{true: "lpush", false: "rpush"}[to], dstKey)
	w.Bulk(v)
	c.notifyAt(db, config.NotifyList, popEvent(from), srcKey)
	c.listEmptied(db, srcKey, src)
	return true
}

func lmoveGeneric(c *Client, args [][]byte, from, to bool) {
	db := c.DB()
	src, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if src == nil {
		c.w.Null()
		return
	}
	lmoveOnce(c, &c.w, db, args[1], args[2], src, from, to)
}

func lmoveCommand(c *Client, args [][]byte) {
	from, ok := listWhere(&c.w, args[3])
	if !ok {
		return
	}
	to, ok := listWhere(&c.w, args[4])
	if !ok {
		return
	}
	lmoveGeneric(c, args, from, to)
}

func rpoplpushCommand(c *Client, args [][]byte) { lmoveGeneric(c, args, false, true) }

// parseMpop parses [B]LMPOP/[B]ZMPOP after the timeout: numkeys at idx,
// the keys, the direction word, [COUNT n].
func parseMpop(c *Client, args [][]byte, idx int, dir func(b []byte) (bool, bool)) (keys [][]byte, where bool, count int64, ok bool) {
	n, ok := resp.ParseInt(args[idx])
	if !ok || n < 1 {
		c.w.Error("ERR numkeys should be greater than 0")
		return nil, false, 0, false
	}
	whereIdx := int64(idx) + n + 1
	if whereIdx >= int64(len(args)) {
		c.w.Error(errSyntax)
		return nil, false, 0, false
	}
	where, ok = dir(args[whereIdx])
	if !ok {
		c.w.Error(errSyntax)
		return nil, false, 0, false
	}
	count = -1
	for j := int(whereIdx) + 1; j < len(args); j++ {
		if count == -1 && eq(args[j], "count") && j+1 < len(args) {
			j++
			v, ok := resp.ParseInt(args[j])
			if !ok || v < 1 {
				c.w.Error("ERR count should be greater than 0")
				return nil, false, 0, false
			}
			count = v
		} else {
			c.w.Error(errSyntax)
			return nil, false, 0, false
		}
	}
	if count == -1 {
		count = 1
	}
	return args[idx+1 : whereIdx], where, count, true
}

func leftRight(b []byte) (bool, bool) {
	switch {
	case eq(b, "left"):
		return true, true
	case eq(b, "right"):
		return false, true
	}
	return false, false
}

// popRangeWithKey replies [key, [elements]] (LMPOP).
func popRangeWithKey(c *Client, w *resp.Writer, db *store.DB, key []byte, l *store.List, front bool, count int64) {
	w.Array(2)
	w.Bulk(key)
	popRange(c, w, db, key, l, front, count)
}

func lmpopCommand(c *Client, args [][]byte) {
	keys, front, count, ok := parseMpop(c, args, 1, leftRight)
	if !ok {
		return
	}
	db := c.DB()
	for _, k := range keys {
		l, ok := c.lookupList(k)
		if !ok {
			return
		}
		if l == nil {
			continue
		}
		popRangeWithKey(c, &c.w, db, k, l, front, count)
		return
	}
	c.w.NullArray()
}

// Blocking list pops.

// blockingListPop is BLPOP/BRPOP (count < 0) and BLMPOP (count > 0).
func blockingListPop(c *Client, keys [][]byte, front bool, count int64, deadline int64) {
	db := c.DB()
	for _, k := range keys {
		l, ok := c.lookupList(k)
		if !ok {
			return
		}
		if l == nil {
			continue
		}
		serveListPop(c, &c.w, db, k, l, front, count)
		return
	}
	if !c.canBlock() {
		c.w.NullArray()
		return
	}
	c.blockOn(keys, blockList, deadline, func(w *resp.Writer, db *store.DB, key []byte) serveResult {
		e, res, ok := readyEntry(db, key, store.KindList)
		if !ok {
			return res
		}
		serveListPop(c, w, db, key, e.AsList(), front, count)
		return serveDone
	})
}

func serveListPop(c *Client, w *resp.Writer, db *store.DB, key []byte, l *store.List, front bool, count int64) {
	if count > 0 {
		popRangeWithKey(c, w, db, key, l, front, count)
		return
	}
	w.Array(2)
	w.Bulk(key)
	w.Bulk(c.popOne(l, front))
	c.notifyAt(db, config.NotifyList, popEvent(front), key)
	c.listEmptied(db, key, l)
}

func bpopGeneric(c *Client, args [][]byte, front bool) {
	deadline, ok := c.parseTimeout(args[len(args)-1])
	if !ok {
		return
	}
	blockingListPop(c, copyArgs(args[1:len(args)-1]), front, -1, deadline)
}

// copyArgs copies arguments that must outlive the command (a waiter's keys).
func copyArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

func blpopCommand(c *Client, args [][]byte) { bpopGeneric(c, args, true) }
func brpopCommand(c *Client, args [][]byte) { bpopGeneric(c, args, false) }

func blmpopCommand(c *Client, args [][]byte) {
	// Redis parses numkeys, direction and COUNT first, then the timeout.
	keys, front, count, ok := parseMpop(c, args, 2, leftRight)
	if !ok {
		return
	}
	deadline, ok := c.parseTimeout(args[1])
	if !ok {
		return
	}
	blockingListPop(c, copyArgs(keys), front, count, deadline)
}

func blmoveGeneric(c *Client, args [][]byte, from, to bool, deadline int64) {
	db := c.DB()
	src, ok := c.lookupList(args[1])
	if !ok {
		return
	}
	if src != nil {
		lmoveOnce(c, &c.w, db, args[1], args[2], src, from, to)
		return
	}
	if !c.canBlock() {
		c.w.Null()
		return
	}
	keys := copyArgs(args[1:3])
	c.blockOn(keys[:1], blockList, deadline, func(w *resp.Writer, db *store.DB, key []byte) serveResult {
		e, res, ok := readyEntry(db, key, store.KindList)
		if !ok {
			return res
		}
		lmoveOnce(c, w, db, key, keys[1], e.AsList(), from, to)
		return serveDone
	})
}

func blmoveCommand(c *Client, args [][]byte) {
	from, ok := listWhere(&c.w, args[3])
	if !ok {
		return
	}
	to, ok := listWhere(&c.w, args[4])
	if !ok {
		return
	}
	deadline, ok := c.parseTimeout(args[5])
	if !ok {
		return
	}
	blmoveGeneric(c, args, from, to, deadline)
}

func brpoplpushCommand(c *Client, args [][]byte) {
	deadline, ok := c.parseTimeout(args[3])
	if !ok {
		return
	}
	blmoveGeneric(c, args, false, true, deadline)
}
