package store

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"unsafe"
)

// Set is a set value. As in Redis 7.0, a set whose members are all
// integers (canonical decimal, as string2ll accepts them) and that has at
// most set-max-intset-entries members is an "intset": a sorted slice of
// integers. Any other set is a table of members ("hashtable"). The
// conversion is one way.
type Set struct {
	memHdr
	ints []int64
	tab  *table
}

// intsetCap is the hard limit on intset entries Redis applies.
const intsetCap = 1 << 30

// NewIntSet returns an empty intset.
func NewIntSet() *Set { return &Set{} }

// NewSetFor returns an empty set in the encoding Redis creates for a set
// whose first member is m (setTypeCreate): intset if m is an integer.
func NewSetFor(m []byte) *Set {
	if _, ok := isIntEncodable(m); ok {
		return &Set{}
	}
	s := &Set{tab: newTable(false, 0)}
	s.account()
	return s
}

// NewSetEntry returns an entry holding s.
func NewSetEntry(s *Set) *Entry { return NewObject(KindSet, unsafe.Pointer(s)) }

// AsSet returns the set of a KindSet entry.
func (e *Entry) AsSet() *Set { return (*Set)(e.ptr) }

// Len returns the number of members.
func (s *Set) Len() int {
	if s.tab != nil {
		return s.tab.n
	}
	return len(s.ints)
}

// Encoding returns what OBJECT ENCODING reports: intset or hashtable.
func (s *Set) Encoding() string {
	if s.tab != nil {
		return "hashtable"
	}
	return "intset"
}

// IsIntset reports whether the set is an intset.
func (s *Set) IsIntset() bool { return s.tab == nil }

// Ints returns the members of an intset, ascending (the set's own slice).
func (s *Set) Ints() []int64 { return s.ints }

func (s *Set) intIndex(v int64) (int, bool) {
	i := sort.Search(len(s.ints), func(i int) bool { return s.ints[i] >= v })
	return i, i < len(s.ints) && s.ints[i] == v
}

// Add adds m, reporting whether it is new. maxIntset is
// set-max-intset-entries.
func (s *Set) Add(m []byte, maxIntset int) bool {
	defer s.account()
	if s.tab == nil {
		v, ok := isIntEncodable(m)
		if !ok {
			s.Convert()
			return s.tabAdd(m)
		}
		i, found := s.intIndex(v)
		if found {
			return false
		}
		s.ints = append(s.ints, 0)
		copy(s.ints[i+1:], s.ints[i:])
		s.ints[i] = v
		if maxIntset > intsetCap {
			maxIntset = intsetCap
		}
		if len(s.ints) > maxIntset {
			s.Convert()
		}
		return true
	}
	return s.tabAdd(m)
}

func (s *Set) tabAdd(m []byte) bool {
	h := hashBytes(m)
	if s.tab.find(m, h) >= 0 {
		return false
	}
	s.tab.insert(newKeyBlob(m), h)
	return true
}

// Convert switches an intset to the table encoding.
func (s *Set) Convert() {
	if s.tab != nil {
		return
	}
	t := newTable(false, len(s.ints))
	var tmp [24]byte
	for _, v := range s.ints {
		b := strconv.AppendInt(tmp[:0], v, 10)
		t.insert(newKeyBlob(b), hashBytes(b))
	}
	s.tab, s.ints = t, nil
	s.account()
}

// Remove removes m, reporting whether it was a member.
func (s *Set) Remove(m []byte) bool {
	defer s.account()
	if s.tab == nil {
		v, ok := isIntEncodable(m)
		if !ok {
			return false
		}
		i, found := s.intIndex(v)
		if !found {
			return false
		}
		s.ints = append(s.ints[:i], s.ints[i+1:]...)
		return true
	}
	i := s.tab.find(m, hashBytes(m))
	if i < 0 {
		return false
	}
	s.tab.removeAt(i)
	return true
}

// Has reports whether m is a member.
func (s *Set) Has(m []byte) bool {
	if s.tab == nil {
		v, ok := isIntEncodable(m)
		if !ok {
			return false
		}
		_, found := s.intIndex(v)
		return found
	}
	return s.tab.find(m, hashBytes(m)) >= 0
}

// HasInt reports whether the integer v is a member.
func (s *Set) HasInt(v int64) bool {
	if s.tab == nil {
		_, found := s.intIndex(v)
		return found
	}
	var tmp [24]byte
	b := strconv.AppendInt(tmp[:0], v, 10)
	return s.tab.find(b, hashBytes(b)) >= 0
}

// ForEach calls fn for every member (intset: ascending) until it returns
// false. The bytes are valid only during the call. fn must not change
// the set.
func (s *Set) ForEach(fn func(m []byte) bool) {
	if s.tab != nil {
		s.tab.each(func(p unsafe.Pointer) bool { return fn(blobKey(p)) })
		return
	}
	var tmp [24]byte
	for _, v := range s.ints {
		if !fn(strconv.AppendInt(tmp[:0], v, 10)) {
			return
		}
	}
}

// Random returns a uniformly random member (formatted into scratch for an
// intset). The set must not be empty.
func (s *Set) Random(scratch []byte) []byte {
	if s.tab != nil {
		return blobKey(s.tab.slots[s.tab.random()])
	}
	return strconv.AppendInt(scratch[:0], s.ints[rand.IntN(len(s.ints))], 10)
}

// Pop removes and returns a uniformly random member. The returned bytes
// stay valid (a table member's blob, or scratch for an intset). The set
// must not be empty.
func (s *Set) Pop(scratch []byte) []byte {
	defer s.account()
	if s.tab != nil {
		i := s.tab.random()
		m := blobKey(s.tab.slots[i])
		s.tab.removeAt(i)
		return m
	}
	i := rand.IntN(len(s.ints))
	v := s.ints[i]
	s.ints = append(s.ints[:i], s.ints[i+1:]...)
	return strconv.AppendInt(scratch[:0], v, 10)
}

// Scan visits the members a SCAN cursor step covers and returns the next
// cursor. An intset is visited whole and the cursor is 0, as in Redis.
func (s *Set) Scan(cursor uint64, fn func(m []byte)) uint64 {
	if s.tab == nil {
		s.ForEach(func(m []byte) bool { fn(m); return true })
		return 0
	}
	return s.tab.scan(cursor, func(p unsafe.Pointer) { fn(blobKey(p)) })
}

// Dup returns a deep copy with the same encoding.
func (s *Set) Dup() *Set {
	var d *Set
	if s.tab != nil {
		d = &Set{tab: s.tab.dup()}
	} else {
		d = &Set{ints: append([]int64(nil), s.ints...)}
	}
	d.account()
	return d
}

// account records the set's current size in its header.
func (s *Set) account() {
	n := AllocSize(int(unsafe.Sizeof(Set{})))
	if s.tab != nil {
		n += s.tab.size()
	} else {
		n += AllocSize(8 * cap(s.ints))
	}
	s.setMem(n)
}

// MemUsage estimates the bytes the set uses (sample: members to measure,
// 0 for all).
func (s *Set) MemUsage(sample int) int {
	if s.tab != nil {
		return 32 + s.tab.memUsage(sample)
	}
	return 32 + 8*cap(s.ints)
}
