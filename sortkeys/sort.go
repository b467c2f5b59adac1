// Package sortkeys is SORT's engine (Redis's sort.c): the elements of a
// list, set or sorted set loaded into a vector, weighted by themselves or
// by keys whose names come from them (BY patterns: "weight_*",
// "hash_*->field"), compared numerically as strtod reads them or
// alphabetically as strcoll does in the C locale, and cut to the LIMIT
// window; and the GET patterns' lookups. The server parses the options,
// checks ACLs and types, and writes the reply or the STORE destination.
package sortkeys

import (
	"bytes"
	"sort"

	"github.com/sluicedb/sluice/store"
)

// Options are SORT's options, as the server parsed them.
type Options struct {
	Desc, Alpha bool
	// LimitStart and LimitCount are LIMIT's (0 and -1 without one).
	LimitStart, LimitCount int64
	// By is BY's pattern, nil for none (the elements weigh themselves).
	By []byte
	// DontSort: BY was a constant pattern (no '*'): keep the native order.
	DontSort bool
	// Store: STORE was given (ALPHA compares bytes, not C strings).
	Store bool
	// Script: SORT runs from a script. With Store, it makes a set's
	// elements sorted even with DontSort, so that the result is
	// deterministic.
	Script bool
}

// Item is one element of the sorted vector.
type Item struct {
	Elem  []byte
	score float64
	cmp   []byte // ALPHA with BY: the weight (nil: missing)
	has   bool   // cmp is present
}

// Constant reports whether pattern has no '*' (before a NUL), which
// makes BY mean "do not sort".
func Constant(pattern []byte) bool {
	return bytes.IndexByte(cString(pattern), '*') < 0
}

// Sort sorts the elements of e (a list, a set or a sorted set; nil: an
// empty list) as o says and returns those in the LIMIT window; ok is
// false when a weight is not a number (without ALPHA). A compact sorted
// set is converted for good, as Redis does. The caller holds db
// exclusively (BY reads any key).
func Sort(db *store.DB, e *store.Entry, o *Options) (items []Item, ok bool) {
	desc, alpha, dontsort, sortby := o.Desc, o.Alpha, o.DontSort, o.By
	kind := store.KindList
	if e != nil {
		kind = e.Kind()
	}
	// A set has no order of its own: with STORE, or called from a script,
	// the result must still be deterministic, so it is sorted
	// lexicographically (as Redis's sort.c does).
	if dontsort && kind == store.KindSet && (o.Store || o.Script) {
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
	start := min(max(o.LimitStart, 0), vlen)
	limitCount := min(max(o.LimitCount, -1), vlen)
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
	items = make([]Item, 0, max(end-start+1, 0))
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
		items = append(items, Item{Elem: arena[prev:o:o]})
		prev = o
	}

	if !dontsort {
		var scratch []byte
		for i := range items {
			it := &items[i]
			by := it.Elem
			if sortby != nil {
				v, ok := Lookup(db, sortby, it.Elem, &scratch)
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
				f, ok := strtod(by)
				if !ok {
					return nil, false
				}
				it.score = f
			}
		}
		byPattern := sortby != nil
		sort.SliceStable(items, func(i, j int) bool {
			r := compare(&items[i], &items[j], alpha, byPattern, o.Store)
			if desc {
				r = -r
			}
			return r < 0
		})
	}
	if end < start {
		return items[:0], true
	}
	return items[start : end+1], true
}

// compare is Redis's sortCompare, before DESC is applied.
func compare(a, b *Item, alpha, byPattern, stored bool) int {
	if !alpha {
		switch {
		case a.score > b.score:
			return 1
		case a.score < b.score:
			return -1
		}
		// Equal weights: order by the elements themselves, binary-safe.
		return bytes.Compare(a.Elem, b.Elem)
	}
	x, y := a.Elem, b.Elem
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

// Lookup is Redis's lookupKeyByPattern: "#" is the element itself;
// otherwise the first '*' of the pattern is replaced by the element and the
// resulting key is read as a string or, for "key*->field", as a hash field.
// ok is false when there is no such value. scratch is reused for the key's
// name.
func Lookup(db *store.DB, pattern, elem []byte, scratch *[]byte) ([]byte, bool) {
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
