package store

import (
	"strconv"
	"unsafe"

	"github.com/sluicedb/sluice/resp"
)

// Kind is the type of a value, as TYPE reports it.
type Kind uint8

const (
	KindString Kind = iota + 1
	KindList
	KindSet
	KindZSet
	KindHash
	KindStream
)

// String returns the name TYPE replies with.
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindList:
		return "list"
	case KindSet:
		return "set"
	case KindZSet:
		return "zset"
	case KindHash:
		return "hash"
	case KindStream:
		return "stream"
	}
	return "none"
}

// String encodings.
const (
	encAuto   uint8 = iota // "int" if the bytes are an integer, else embstr/raw by length
	encInt                 // an integer held in the entry itself, no bytes allocated
	encRaw                 // forced raw (APPEND, SETRANGE)
	encEmbstr              // never int (INCRBYFLOAT results): embstr/raw by length

	encMask    = 3 // the encoding's bits of Entry.enc
	encIDShift = 2 // the rest: the keyspace accountant's id while stored (mem.go)
)

// Entry is one value in the keyspace. It holds either a string's bytes (or
// an integer packed into the entry itself) or a pointer to a collection, in
// 24 bytes with a single pointer, so a million keys cost the GC little.
type Entry struct {
	ptr  unsafe.Pointer // string bytes, or the collection
	n    uint32         // string length (low half of the integer when encInt)
	c    uint32         // string capacity (high half of the integer when encInt)
	lru  uint32         // LRU clock (seconds) of the last access
	kind Kind
	enc  uint8 // encoding (low 2 bits) and accountant id (mem.go)
	vol  bool  // has an expiry: its time is in the shard's vol map (DB.ExpireOf)
	snap uint8 // epoch of the last snapshot that saw it (snapshot.go)
}

// Kind returns the value's type.
func (e *Entry) Kind() Kind { return e.kind }

// Volatile reports whether the entry has an expiry (DB.ExpireOf gives it).
func (e *Entry) Volatile() bool { return e.vol }

// LRU returns the LRU clock of the last access.
func (e *Entry) LRU() uint32 { return e.lru }

// SetLRU sets the LRU clock of the last access (RESTORE IDLETIME).
func (e *Entry) SetLRU(clock uint32) { e.lru = clock }

// NewString returns a string entry holding a copy of b. A value that is an
// integer as Redis would encode it is stored as an integer.
func NewString(b []byte) *Entry {
	e := &Entry{kind: KindString}
	e.SetBytes(b)
	return e
}

// NewInt returns a string entry holding the integer v.
func NewInt(v int64) *Entry {
	e := &Entry{kind: KindString}
	e.SetInt(v)
	return e
}

// NewObject returns an entry for a collection of kind k.
func NewObject(k Kind, p unsafe.Pointer) *Entry {
	return &Entry{kind: k, ptr: p}
}

// Object returns the collection pointer of a non-string entry.
func (e *Entry) Object() unsafe.Pointer { return e.ptr }

// SetObject replaces the collection pointer (and kind) of an entry.
func (e *Entry) SetObject(k Kind, p unsafe.Pointer) {
	a := e.acct()
	if a != nil {
		if e.kind != KindString && e.ptr != nil {
			e.hdr().acct = nil
		}
		a.Add(-e.MemBytes())
	}
	e.kind, e.ptr, e.n, e.c = k, p, 0, 0
	e.setEnc(encAuto)
	if a != nil {
		if k != KindString && p != nil {
			e.refreshHdr()
			e.hdr().acct = a
		}
		a.Add(e.MemBytes())
	}
}

// encoding returns the string encoding (enc without the accountant id).
func (e *Entry) encoding() uint8 { return e.enc & encMask }

// setEnc sets the string encoding, keeping the accountant id.
func (e *Entry) setEnc(enc uint8) { e.enc = e.enc&^encMask | enc }

// IsInt reports whether the string is held as an integer.
func (e *Entry) IsInt() bool { return e.encoding() == encInt }

// Int returns the integer of an encInt string.
func (e *Entry) Int() int64 { return int64(uint64(e.n) | uint64(e.c)<<32) }

// SetInt stores v as an integer-encoded string.
func (e *Entry) SetInt(v int64) {
	e.kind = KindString
	if e.ptr != nil {
		e.report(-e.strBytes())
	}
	e.ptr = nil
	e.setEnc(encInt)
	e.n = uint32(uint64(v))
	e.c = uint32(uint64(v) >> 32)
}

// RawCap returns the capacity of a string's own buffer (0 for an integer).
func (e *Entry) RawCap() int {
	if e.encoding() == encInt || e.ptr == nil {
		return 0
	}
	return int(e.c)
}

// Len returns the string's length in bytes.
func (e *Entry) Len() int {
	if e.encoding() == encInt {
		var tmp [24]byte
		return len(strconv.AppendInt(tmp[:0], e.Int(), 10))
	}
	return int(e.n)
}

// raw returns the stored bytes of a non-integer string.
func (e *Entry) raw() []byte {
	if e.ptr == nil {
		return nil
	}
	return unsafe.Slice((*byte)(e.ptr), e.c)[:e.n]
}

// AppendTo appends the string value to dst.
func (e *Entry) AppendTo(dst []byte) []byte {
	if e.encoding() == encInt {
		return strconv.AppendInt(dst, e.Int(), 10)
	}
	return append(dst, e.raw()...)
}

// Bytes returns the string value. For a non-integer string it is the stored
// memory itself: valid only while the shard lock is held, and not to be
// modified. For an integer it is formatted into scratch.
func (e *Entry) Bytes(scratch []byte) []byte {
	if e.encoding() == encInt {
		return strconv.AppendInt(scratch[:0], e.Int(), 10)
	}
	return e.raw()
}

// isIntEncodable reports whether Redis would store b as an integer: at most
// 20 bytes and a canonical long.
func isIntEncodable(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	return resp.ParseInt(b)
}

// SetBytes stores a copy of b, as SET does (integers as integers).
func (e *Entry) SetBytes(b []byte) {
	e.kind = KindString
	if v, ok := isIntEncodable(b); ok {
		e.SetInt(v)
		return
	}
	e.setBytes(b)
	e.setEnc(encAuto)
}

func (e *Entry) setBytes(b []byte) {
	n := len(b)
	if e.encoding() != encInt && e.ptr != nil && uint32(n) <= e.c && e.c <= uint32(2*n+64) {
		copy(unsafe.Slice((*byte)(e.ptr), e.c), b)
		e.n = uint32(n)
		return
	}
	old := e.strBytes()
	if n == 0 {
		e.ptr, e.n, e.c = nil, 0, 0
		e.report(-old)
		return
	}
	buf := make([]byte, n)
	copy(buf, b)
	e.ptr = unsafe.Pointer(unsafe.SliceData(buf))
	e.n, e.c = uint32(n), uint32(cap(buf))
	e.report(AllocSize(n) - old)
}

// SetRaw stores a copy of b as a raw string (never integer-encoded).
func (e *Entry) SetRaw(b []byte) {
	e.kind = KindString
	e.setBytes(b)
	e.setEnc(encRaw)
}

// SetEmbstr stores a copy of b never integer-encoded (INCRBYFLOAT results).
func (e *Entry) SetEmbstr(b []byte) {
	e.kind = KindString
	e.setBytes(b)
	e.setEnc(encEmbstr)
}

// MutableRaw turns the string into a raw string of length n, growing its
// memory greedily as Redis does for APPEND and SETRANGE, and returns the
// bytes to modify in place (bytes past the old length are zero).
func (e *Entry) MutableRaw(n int) []byte {
	var old []byte
	var tmp [24]byte
	if e.encoding() == encInt {
		old = strconv.AppendInt(tmp[:0], e.Int(), 10)
		e.ptr, e.n, e.c = nil, 0, 0
	} else {
		old = e.raw()
	}
	e.setEnc(encRaw)
	if n <= int(e.c) && e.ptr != nil {
		buf := unsafe.Slice((*byte)(e.ptr), e.c)
		if n > int(e.n) {
			clear(buf[e.n:n])
		}
		e.n = uint32(n)
		return buf[:n]
	}
	// A string made by the command (SETRANGE or SETBIT on a missing
	// key) gets exactly its size; one that grows, room to grow more
	// (sdsMakeRoomFor's greedy rule).
	newCap := n
	if len(old) > 0 {
		if n < 1024*1024 {
			newCap = n * 2
		} else {
			newCap = n + 1024*1024
		}
	}
	before := e.strBytes()
	buf := make([]byte, n, newCap)
	copy(buf, old)
	e.ptr = unsafe.Pointer(unsafe.SliceData(buf))
	e.n, e.c = uint32(n), uint32(cap(buf))
	e.report(e.strBytes() - before)
	return buf
}

// Encoding returns what OBJECT ENCODING reports for a string entry.
func (e *Entry) StringEncoding() string {
	switch e.encoding() {
	case encInt:
		return "int"
	case encRaw:
		return "raw"
	case encAuto:
		if _, ok := isIntEncodable(e.raw()); ok {
			return "int"
		}
	}
	if e.n <= 44 {
		return "embstr"
	}
	return "raw"
}
