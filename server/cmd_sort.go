package server

import (
	"bytes"
	"math"
	"math/big"
	"sort"
	"strconv"
	"unsafe"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// SORT and SORT_RO (Redis's sort.c). BY and GET read keys whose names come
// from the data being sorted, so both commands run with the keyspace
// exclusively locked; their declared key positions (the sorted key and the
// STORE destination) only feed COMMAND GETKEYS.

func sortCommand(c *Client, args [][]byte)   { sortGeneric(c, args, false) }
func sortRoCommand(c *Client, args [][]byte) { sortGeneric(c, args, true) }

// sortItem is one element of the vector being sorted.
type sortItem struct {
	elem  []byte
	score float64
	cmp   []byte // ALPHA with BY: the weight (nil: missing)
	has   bool   // cmp is present
}

func sortGeneric(c *Client, args [][]byte, readonly bool) {
	var (
		desc, alpha, dontsort bool
		limitStart            int64
		limitCount            int64 = -1
		sortby, storekey      []byte
		gets                  [][]byte
	)
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case eq(a, "asc"):
			desc = false
		case eq(a, "desc"):
			desc = true
		case eq(a, "alpha"):
			alpha = true
		case eq(a, "limit") && left >= 2:
			var ok bool
			if limitStart, ok = resp.ParseInt(args[j+1]); ok {
				limitCount, ok = resp.ParseInt(args[j+2])
			}
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			j += 2
		case !readonly && eq(a, "store") && left >= 1:
			storekey = args[j+1]
			j++
		case eq(a, "by") && left >= 1:
			sortby = args[j+1]
			// A constant BY pattern means: do not sort (and, as in
			// Redis, a later BY with a '*' does not undo that).
			if bytes.IndexByte(cString(sortby), '*') < 0 {
				dontsort = true
			} else if !c.aclSortAllowed(args) {
				c.w.Error("ERR BY option of SORT denied due to insufficient ACL permissions.")
				return
			}
			j++
		case eq(a, "get") && left >= 1:
			if !c.aclSortAllowed(args) {
				c.w.Error("ERR GET option of SORT denied due to insufficient ACL permissions.")
				return
			}
			gets = append(gets, args[j+1])
			j++
		default:
			c.w.Error(errSyntax)
			return
		}
	}

	db := c.DB()
	e := db.Lookup(args[1])
	kind := store.KindList
	if e != nil {
		kind = e.Kind()
		if kind != store.KindList && kind != store.KindSet && kind != store.KindZSet {
			c.w.Error(errWrongType)
			return
		}
	}

	// A set has no order of its own: with STORE, or called from a script,
	// the result must still be deterministic, so it is sorted
	// lexicographically (as Redis's sort.c does).
	if dontsort && kind == store.KindSet && (storekey != nil || c.fromScript) {
		dontsort = false
		alpha = true
		sortby = nil
	}

	var (
		l *store.List
		s *store.Set
		z *store.ZSet
	)
	n := 0
	if e != nil {
		switch kind {
		case store.KindList:
			l = e.AsList()
			n = l.Len()
		case store.KindSet:
			s = e.AsSet()
			n = s.Len()
		case store.KindZSet:
			z = e.AsZSet()
			// Redis converts a compact sorted set for good.
			if z.Compact() {
				z.Convert()
			}
			n = z.Len()
		}
	}

	// LIMIT sanity checks, as in sort.c.
	vlen := int64(n)
	start := min(max(limitStart, 0), vlen)
	limitCount = min(max(limitCount, -1), vlen)
	end := vlen - 1
	if limitCount >= 0 {
		end = start + limitCount - 1
	}
	if start >= vlen {
		start = vlen - 1
		end = vlen - 2
	}
	if end >= vlen {
		end = vlen - 1
	}

	// Load the vector. Lists and sorted sets that need no sorting load
	// just the requested range, in native order (reversed for DESC).
	items := make([]sortItem, 0, max(end-start+1, 0))
	var arena []byte
	var offs []int
	add := func(v []byte) {
		arena = append(arena, v...)
		offs = append(offs, len(arena))
	}
	addS := func(v string) {
		arena = append(arena, v...)
		offs = append(offs, len(arena))
	}
	switch {
	case l != nil && dontsort:
		if end >= start {
			cnt := int(end - start + 1)
			if desc {
				hi := n - 1 - int(start)
				l.Range(hi-cnt+1, hi, true, func(v []byte) bool { add(v); return true })
			} else {
				l.Range(int(start), int(start)+cnt-1, false, func(v []byte) bool { add(v); return true })
			}
			end -= start
			start = 0
		}
	case l != nil:
		l.Range(0, n-1, false, func(v []byte) bool { add(v); return true })
	case s != nil:
		s.ForEach(func(m []byte) bool { add(m); return true })
	case z != nil && dontsort:
		if end >= start {
			cnt := int(end - start + 1)
			r := int(start)
			if desc {
				r = n - 1 - int(start)
			}
			z.Iter(r, desc, func(it store.ZItem) bool {
				addS(it.Member)
				cnt--
				return cnt > 0
			})
			end -= start
			start = 0
		}
	case z != nil:
		z.Iter(0, false, func(it store.ZItem) bool {
			addS(it.Member)
			return true
		})
	}
	prev := 0
	for _, o := range offs {
		items = append(items, sortItem{elem: arena[prev:o:o]})
		prev = o
	}

	if !dontsort {
		var scratch []byte
		for i := range items {
			it := &items[i]
			by := it.elem
			if sortby != nil {
				v, ok := sortLookup(db, sortby, it.elem, &scratch)
				if !ok {
					continue
				}
				by = v
			}
			if alpha {
				if sortby != nil {
					it.cmp = append([]byte(nil), by...)
					it.has = true
				}
			} else {
				f, ok := sortStrtod(by)
				if !ok {
					c.w.Error("ERR One or more scores can't be converted into double")
					return
				}
				it.score = f
			}
		}
		stored := storekey != nil
		byPattern := sortby != nil
		sort.SliceStable(items, func(i, j int) bool {
			r := sortCompare(&items[i], &items[j], alpha, byPattern, stored)
			if desc {
				r = -r
			}
			return r < 0
		})
	}

	outLen := end - start + 1
	if len(gets) > 0 {
		outLen *= int64(len(gets))
	}
	var scratch []byte
	if storekey == nil {
		c.w.Array(int(outLen))
		for j := start; j <= end; j++ {
			it := &items[j]
			if len(gets) == 0 {
				c.w.Bulk(it.elem)
			}
			for _, g := range gets {
				if v, ok := sortLookup(db, g, it.elem, &scratch); ok {
					c.w.Bulk(v)
				} else {
					c.w.Null()
				}
			}
		}
		return
	}

	dst := store.NewList(int(c.srv.cfg.ListPackSize.Load()))
	for j := start; j <= end; j++ {
		it := &items[j]
		if len(gets) == 0 {
			dst.PushBack(it.elem)
		}
		for _, g := range gets {
			v, _ := sortLookup(db, g, it.elem, &scratch)
			dst.PushBack(v)
		}
	}
	if outLen > 0 {
		db.Set(storekey, store.NewObject(store.KindList, unsafe.Pointer(dst)), false)
		c.notify(config.NotifyList, "sortstore", storekey)
	} else if db.Delete(storekey) {
		c.notify(config.NotifyGeneric, "del", storekey)
	}
	c.w.Int(outLen)
}

// sortCompare is Redis's sortCompare, before DESC is applied.
func sortCompare(a, b *sortItem, alpha, byPattern, stored bool) int {
	if !alpha {
		switch {
		case a.score > b.score:
			return 1
		case a.score < b.score:
			return -1
		}
		// Equal weights: order by the elements themselves, binary-safe.
		return bytes.Compare(a.elem, b.elem)
	}
	x, y := a.elem, b.elem
	if byPattern {
		if !a.has || !b.has {
			switch {
			case a.has == b.has:
				return 0
			case !a.has:
				return -1
			}
			return 1
		}
		x, y = a.cmp, b.cmp
	}
	if stored {
		return bytes.Compare(x, y)
	}
	// strcoll in the C locale: byte order up to the first NUL.
	return bytes.Compare(cString(x), cString(y))
}

// cString is b as C sees it: up to its first NUL byte.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// sortLookup is Redis's lookupKeyByPattern: "#" is the element itself;
// otherwise the first '*' of the pattern is replaced by the element and the
// resulting key is read as a string or, for "key*->field", as a hash field.
// ok is false when there is no such value.
func sortLookup(db *store.DB, pattern, elem []byte, scratch *[]byte) ([]byte, bool) {
	cp := cString(pattern)
	if len(cp) == 1 && cp[0] == '#' {
		return elem, true
	}
	p := bytes.IndexByte(cp, '*')
	if p < 0 {
		return nil, false
	}
	var field []byte
	postfix := pattern[p+1:]
	if f := bytes.Index(cp[p+1:], []byte("->")); f >= 0 && p+1+f+2 < len(cp) {
		field = pattern[p+1+f+2:]
		postfix = pattern[p+1 : p+1+f]
	}
	key := append((*scratch)[:0], pattern[:p]...)
	key = append(key, elem...)
	key = append(key, postfix...)
	*scratch = key
	e := db.Lookup(key)
	if e == nil {
		return nil, false
	}
	if field != nil {
		if e.Kind() != store.KindHash {
			return nil, false
		}
		return e.AsHash().Get(field)
	}
	if e.Kind() != store.KindString {
		return nil, false
	}
	return e.Bytes(nil), true
}

// sortStrtod converts a weight as sort.c does with strtod: the whole
// string (up to a NUL) must be a C floating point number, not NaN and not
// out of range; the empty string reads as 0.
func sortStrtod(b []byte) (float64, bool) {
	b = cString(b)
	if len(b) == 0 {
		return 0, true
	}
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	t := b[i:]
	neg := false
	if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if isInfWord(t) {
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	hex := len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')
	body := t
	digit := isDigit
	expChar := byte('e')
	if hex {
		body = t[2:]
		digit = isHexDigit
		expChar = 'p'
	}
	// mantissa: digits [. digits], at least one digit
	k, nd, nonzero := 0, 0, false
	for ; k < len(body) && digit(body[k]); k++ {
		nd++
		nonzero = nonzero || body[k] != '0'
	}
	if k < len(body) && body[k] == '.' {
		for k++; k < len(body) && digit(body[k]); k++ {
			nd++
			nonzero = nonzero || body[k] != '0'
		}
	}
	if nd == 0 {
		return 0, false
	}
	hasExp := false
	if k < len(body) && (body[k]|0x20) == expChar {
		k++
		if k < len(body) && (body[k] == '+' || body[k] == '-') {
			k++
		}
		ed := 0
		for ; k < len(body) && isDigit(body[k]); k++ {
			ed++
		}
		if ed == 0 {
			return 0, false
		}
		hasExp = true
	}
	if k != len(body) {
		return 0, false
	}
	str := string(b[i:])
	if hex && !hasExp {
		str += "p0"
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		// Syntax was checked: this is an overflow (ERANGE).
		return 0, false
	}
	// glibc reports ERANGE for an inexact result below the normal range.
	if af := math.Abs(f); nonzero && af < 0x1p-1022 {
		exact, _, perr := big.ParseFloat(str, 0, 4096, big.ToNearestEven)
		if perr != nil || f == 0 || exact.Cmp(new(big.Float).SetFloat64(f)) != 0 {
			return 0, false
		}
	}
	return f, true
}

func isHexDigit(c byte) bool {
	return isDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'f'
}

// isInfWord reports whether b is "inf" or "infinity", in any case.
func isInfWord(b []byte) bool {
	return len(b) == 3 && eq(b, "inf") || len(b) == 8 && eq(b, "infinity")
}

func isDigit(ch byte) bool { return ch >= '0' && ch <= '9' }
