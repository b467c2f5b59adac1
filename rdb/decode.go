package rdb

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
)

var (
	// ErrChecksum: the footer's version is newer than Version, or the
	// CRC-64 does not match (RESTORE's "DUMP payload version or checksum
	// are wrong").
	ErrChecksum = errors.New("rdb: payload version or checksum are wrong")
	errFormat   = errors.New("rdb: bad data format")
	// ErrFormat is returned for any malformed or unsupported value
	// (RESTORE's "Bad data format").
	ErrFormat = errFormat
	// ErrEmptyKey is returned for a collection with no elements: RESTORE
	// refuses it as bad data, an RDB file load skips the key (as Redis
	// does since such files were written by an old bug).
	ErrEmptyKey = errors.New("rdb: empty key")
)

// Verify checks a payload's footer: its RDB version must not be newer than
// Version and its CRC-64 must match.
func Verify(p []byte) error {
	return verify(p, true)
}

// verify checks the footer's version and, with crc, its CRC-64.
func verify(p []byte, crc bool) error {
	if len(p) < 10 {
		return ErrChecksum
	}
	footer := p[len(p)-10:]
	if ver := binary.LittleEndian.Uint16(footer); ver > Version {
		return ErrChecksum
	}
	if crc && crc64(0, p[:len(p)-8]) != binary.LittleEndian.Uint64(footer[2:]) {
		return ErrChecksum
	}
	return nil
}

// Value is a decoded value. Type is the RDB object type it was read from
// (it tells the caller which encoding rules Redis applies on load). Which
// fields are set depends on the kind:
//
//	strings: Str (IsInt and Int when it was integer-encoded)
//	lists:   Elems, in order
//	sets:    Elems, or Ints (ascending) for an intset
//	hashes:  Fields and Values, in payload order
//	zsets:   Elems and Scores, in payload order
//
// Byte slices may point into the payload.
type Value struct {
	Type   byte
	Str    []byte
	IsInt  bool
	Int    int64
	Elems  [][]byte
	Ints   []int64
	Fields [][]byte
	Values [][]byte
	Scores []float64
	// MaxLen is the longest member or field/value seen (sorted sets and
	// hashes), for the caller's encoding choice.
	MaxLen int
	// Stream is the decoded stream (streams only).
	Stream *Stream
}

// Kind groups object types by the value type they hold.
type Kind uint8

const (
	KindString Kind = iota + 1
	KindList
	KindSet
	KindZSet
	KindHash
	KindStream
)

// Kind returns the kind of value v holds.
func (v *Value) Kind() Kind {
	switch v.Type {
	case TypeString:
		return KindString
	case TypeList, TypeListZiplist, TypeListQuicklist, TypeListQuicklist2:
		return KindList
	case TypeSet, TypeSetIntset:
		return KindSet
	case TypeZSet, TypeZSet2, TypeZSetZiplist, TypeZSetListpack:
		return KindZSet
	case TypeStreamLP, TypeStreamLP2:
		return KindStream
	}
	return KindHash
}

// Len returns the number of elements of a collection.
func (v *Value) Len() int {
	switch {
	case v.Ints != nil:
		return len(v.Ints)
	case v.Fields != nil:
		return len(v.Fields)
	}
	return len(v.Elems)
}

// Decode verifies a payload and decodes its value, validating it fully.
func Decode(p []byte) (*Value, error) {
	return DecodeWith(p, DecodeOptions{})
}

// DecodeOptions relax Decode, as RESTORE does under DEBUG
// SET-SKIP-CHECKSUM-VALIDATION and sanitize-dump-payload.
type DecodeOptions struct {
	// SkipCRC skips the CRC-64 check (the version is still checked).
	SkipCRC bool
	// Shallow is RESTORE without deep sanitization (sanitize-dump-payload
	// no): where Redis would take a listpack it has only checked the header
	// of, and fail later when a command reads past the damage, the decoder
	// keeps what reads cleanly instead: a listpack's entries up to the
	// first that does not parse (its back lengths and count unchecked) and
	// a stream's entries that parse, in ID order, with the length they
	// make. Ziplists, zipmaps and intsets are checked fully either way, as
	// Redis converts them on load.
	Shallow bool
	// Sanitize adds the checks Redis makes only with deep sanitization
	// (sanitize-dump-payload yes): a stream node's entry count and each
	// entry's lp-count, and that every pending entry of a group has a
	// consumer. Without either option the decoder checks what Sluice's own
	// structures need (every listpack entry, rising stream IDs, a stream's
	// length), as RDB files are loaded.
	Sanitize bool
}

// DecodeWith is Decode with options.
func DecodeWith(p []byte, o DecodeOptions) (*Value, error) {
	if err := verify(p, !o.SkipCRC); err != nil {
		return nil, err
	}
	// Like Redis, the object is read from the whole payload: a value that
	// runs into the footer is read from the footer bytes.
	r := reader{b: p, shallow: o.Shallow, sanitize: o.Sanitize && !o.Shallow}
	return r.value()
}

// DecodeObject decodes a serialized value without footer (type byte and
// object). Bytes after the object are ignored, as Redis does.
func DecodeObject(p []byte) (*Value, error) {
	r := reader{b: p}
	return r.value()
}

// value decodes the object at the reader: its type byte, then the object.
func (r *reader) value() (*Value, error) {
	t, ok := r.byte()
	if !ok {
		return nil, errFormat
	}
	return r.object(t)
}

// FormatError is a malformed value with the reason Redis's loader gives
// for it (RESTORE logs it at verbose level). errors.Is(err, ErrFormat)
// holds for it.
type FormatError struct{ Reason string }

func (e *FormatError) Error() string        { return "rdb: bad data format: " + e.Reason }
func (e *FormatError) Is(target error) bool { return target == errFormat }

// corrupt returns a FormatError with reason.
func corrupt(reason string) error { return &FormatError{Reason: reason} }

// Reason returns the reason of a FormatError in err's chain, or "".
func Reason(err error) string {
	var fe *FormatError
	if errors.As(err, &fe) {
		return fe.Reason
	}
	return ""
}

// integrityReason is what Redis's loader reports when the encoded blob of
// a value of type t fails its check.
func integrityReason(t byte) string {
	switch t {
	case TypeHashZipmap:
		return "Zipmap integrity check failed."
	case TypeListZiplist:
		return "List ziplist integrity check failed."
	case TypeSetIntset:
		return "Intset integrity check failed."
	case TypeZSetZiplist:
		return "Zset ziplist integrity check failed."
	case TypeZSetListpack:
		return "Zset listpack integrity check failed."
	case TypeHashZiplist:
		return "Hash ziplist integrity check failed."
	case TypeHashListpack:
		return "Hash listpack integrity check failed."
	case TypeListQuicklist:
		return "Ziplist integrity check failed."
	case TypeListQuicklist2:
		return "Listpack integrity check failed."
	case TypeStreamLP, TypeStreamLP2:
		return "Stream listpack integrity check failed."
	}
	return "Unknown RDB encoding type"
}

// object decodes a value of object type t.
func (r *reader) object(t byte) (*Value, error) {
	v := &Value{Type: t}
	var err error
	switch t {
	case TypeString:
		err = r.stringValue(v)
	case TypeList:
		err = r.plainList(v)
	case TypeSet:
		err = r.plainSet(v)
	case TypeZSet, TypeZSet2:
		err = r.plainZSet(v, t == TypeZSet2)
	case TypeHash:
		err = r.plainHash(v)
	case TypeListQuicklist, TypeListQuicklist2:
		err = r.quicklist(v, t == TypeListQuicklist2)
	case TypeHashZipmap, TypeListZiplist, TypeSetIntset, TypeZSetZiplist,
		TypeZSetListpack, TypeHashZiplist, TypeHashListpack:
		err = r.blobValue(v)
	case TypeStreamLP, TypeStreamLP2:
		err = r.stream(v, t == TypeStreamLP2)
	default:
		// Modules are not supported; other bytes are not
		// object types at all.
		err = errFormat
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

type reader struct {
	b   []byte
	off int
	// short is set when a read ran past the end of b (a truncated file).
	short bool
	// shallow and sanitize: DecodeOptions.Shallow and Sanitize.
	shallow, sanitize bool
}

func (r *reader) left() int { return len(r.b) - r.off }

func (r *reader) byte() (byte, bool) {
	if r.off >= len(r.b) {
		r.short = true
		return 0, false
	}
	c := r.b[r.off]
	r.off++
	return c, true
}

func (r *reader) take(n uint64) ([]byte, bool) {
	if n > uint64(r.left()) {
		r.short = true
		return nil, false
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s, true
}

// length reads an RDB length; enc reports the 0b11 special string form,
// whose 6-bit kind is returned as the length.
func (r *reader) length() (n uint64, enc bool, ok bool) {
	c, ok := r.byte()
	if !ok {
		return 0, false, false
	}
	switch c >> 6 {
	case 3:
		return uint64(c & 0x3F), true, true
	case 0:
		return uint64(c & 0x3F), false, true
	case 1:
		d, ok := r.byte()
		return uint64(c&0x3F)<<8 | uint64(d), false, ok
	}
	switch c {
	case 0x80:
		b, ok := r.take(4)
		if !ok {
			return 0, false, false
		}
		return uint64(binary.BigEndian.Uint32(b)), false, true
	case 0x81:
		b, ok := r.take(8)
		if !ok {
			return 0, false, false
		}
		return binary.BigEndian.Uint64(b), false, true
	}
	return 0, false, false
}

// count reads a collection length; every element takes at least one byte,
// so a count beyond what is left is malformed (and nothing is allocated
// for it).
func (r *reader) count() (int, error) {
	n, enc, ok := r.length()
	if ok && !enc && n > uint64(r.left()) {
		r.short = true
	}
	if !ok || enc || n > uint64(r.left()) {
		return 0, errFormat
	}
	if n == 0 {
		return 0, ErrEmptyKey // empty keys are refused
	}
	return int(n), nil
}

// str reads a string: plain, integer-encoded or LZF-compressed. isInt
// reports the integer form (v its value).
func (r *reader) str() (s []byte, v int64, isInt bool, err error) {
	n, enc, ok := r.length()
	if !ok {
		return nil, 0, false, errFormat
	}
	if !enc {
		s, ok := r.take(n)
		if !ok {
			return nil, 0, false, errFormat
		}
		return s, 0, false, nil
	}
	switch n {
	case encInt8:
		b, ok := r.take(1)
		if !ok {
			return nil, 0, false, errFormat
		}
		return nil, int64(int8(b[0])), true, nil
	case encInt16:
		b, ok := r.take(2)
		if !ok {
			return nil, 0, false, errFormat
		}
		return nil, int64(int16(binary.LittleEndian.Uint16(b))), true, nil
	case encInt32:
		b, ok := r.take(4)
		if !ok {
			return nil, 0, false, errFormat
		}
		return nil, int64(int32(binary.LittleEndian.Uint32(b))), true, nil
	case encLZF:
		clen, e1, ok1 := r.length()
		ulen, e2, ok2 := r.length()
		if ok1 && clen > uint64(r.left()) {
			r.short = true
		}
		if !ok1 || !ok2 || e1 || e2 || clen > uint64(r.left()) || ulen > math.MaxInt32*2 {
			return nil, 0, false, errFormat
		}
		c, _ := r.take(clen)
		out, err := lzfDecompress(c, int(ulen))
		if err != nil {
			return nil, 0, false, errFormat
		}
		return out, 0, false, nil
	}
	return nil, 0, false, errFormat
}

// bytes reads a string as bytes (integers formatted).
func (r *reader) bytes() ([]byte, error) {
	s, v, isInt, err := r.str()
	if err != nil {
		return nil, err
	}
	if isInt {
		return strconv.AppendInt(nil, v, 10), nil
	}
	return s, nil
}

func (r *reader) stringValue(v *Value) error {
	s, n, isInt, err := r.str()
	if err != nil {
		return err
	}
	if isInt {
		v.IsInt, v.Int = true, n
		v.Str = strconv.AppendInt(nil, n, 10)
		return nil
	}
	v.Str = s
	return nil
}

func (r *reader) plainList(v *Value) error {
	n, err := r.count()
	if err != nil {
		return err
	}
	v.Elems = make([][]byte, 0, n)
	for range n {
		s, err := r.bytes()
		if err != nil {
			return err
		}
		v.Elems = append(v.Elems, s)
	}
	return nil
}

func (r *reader) plainSet(v *Value) error {
	return r.plainList(v)
}

func (r *reader) plainHash(v *Value) error {
	n, err := r.count()
	if err != nil {
		return err
	}
	v.Fields = make([][]byte, 0, n)
	v.Values = make([][]byte, 0, n)
	for range n {
		f, err := r.bytes()
		if err != nil {
			return err
		}
		val, err := r.bytes()
		if err != nil {
			return err
		}
		v.MaxLen = max(v.MaxLen, len(f), len(val))
		v.Fields = append(v.Fields, f)
		v.Values = append(v.Values, val)
	}
	return nil
}

func (r *reader) plainZSet(v *Value, binaryScores bool) error {
	n, err := r.count()
	if err != nil {
		return err
	}
	v.Elems = make([][]byte, 0, n)
	v.Scores = make([]float64, 0, n)
	for range n {
		m, err := r.bytes()
		if err != nil {
			return err
		}
		var score float64
		if binaryScores {
			b, ok := r.take(8)
			if !ok {
				return errFormat
			}
			score = math.Float64frombits(binary.LittleEndian.Uint64(b))
		} else if score, err = r.textDouble(); err != nil {
			return err
		}
		if err := v.addScored(m, score); err != nil {
			return err
		}
	}
	return nil
}

// addScored appends a sorted-set member and its score; a NaN score makes
// the payload invalid, as Redis's loader rejects it.
func (v *Value) addScored(m []byte, score float64) error {
	if math.IsNaN(score) {
		return errFormat
	}
	v.MaxLen = max(v.MaxLen, len(m))
	v.Elems = append(v.Elems, m)
	v.Scores = append(v.Scores, score)
	return nil
}

// textDouble reads an RDB_TYPE_ZSET score: a length byte (253 NaN, 254
// +inf, 255 -inf) and that many bytes of text.
func (r *reader) textDouble() (float64, error) {
	c, ok := r.byte()
	if !ok {
		return 0, errFormat
	}
	switch c {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	b, ok := r.take(uint64(c))
	if !ok {
		return 0, errFormat
	}
	return parseScore(b)
}

// parseScore parses a score as strtod does for the forms Redis writes.
func parseScore(b []byte) (float64, error) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return f, nil // ±inf or 0 as strtod gives
		}
		return 0, errFormat
	}
	return f, nil
}

func (r *reader) quicklist(v *Value, v2 bool) error {
	n, err := r.count()
	if err != nil {
		return err
	}
	for range n {
		container := uint64(containerPacked)
		if v2 {
			c, enc, ok := r.length()
			if !ok {
				return errFormat
			}
			if enc || (c != containerPacked && c != containerPlain) {
				return corrupt("Quicklist integrity check failed.")
			}
			container = c
		}
		blob, err := r.bytes()
		if err != nil || len(blob) == 0 {
			return errFormat
		}
		if container == containerPlain {
			v.Elems = append(v.Elems, blob)
			continue
		}
		var elems []element
		if v2 {
			elems, err = parseListpack(blob, r.shallow)
		} else {
			elems, err = parseZiplist(blob)
		}
		if err != nil {
			return corrupt(integrityReason(v.Type))
		}
		for _, e := range elems {
			v.Elems = append(v.Elems, e.bytes())
		}
	}
	if len(v.Elems) == 0 {
		return ErrEmptyKey
	}
	return nil
}

// blobValue reads the single-string encodings: intset, listpacks,
// ziplists and zipmaps.
func (r *reader) blobValue(v *Value) error {
	blob, err := r.bytes()
	if err != nil {
		return err
	}
	switch v.Type {
	case TypeSetIntset:
		if v.Ints, err = parseIntset(blob); err != nil {
			return corrupt(integrityReason(v.Type))
		}
		return nil
	case TypeHashZipmap:
		kv, err := parseZipmap(blob)
		if err != nil {
			return corrupt(integrityReason(v.Type))
		}
		return v.setPairs(kv)
	}
	var elems []element
	if v.Type == TypeZSetListpack || v.Type == TypeHashListpack {
		elems, err = parseListpack(blob, r.shallow)
		if r.shallow && len(elems)%2 != 0 {
			elems = elems[:len(elems)-1] // a pair cut short by the damage
		}
	} else {
		elems, err = parseZiplist(blob)
	}
	if err != nil {
		return corrupt(integrityReason(v.Type))
	}
	if len(elems) == 0 {
		return ErrEmptyKey
	}
	// Redis checks a hash's or sorted set's blob for duplicate fields or
	// members when it validates it deeply: ziplists always (it converts
	// them), listpacks when sanitizing.
	if v.Type == TypeHashZiplist || v.Type == TypeZSetZiplist ||
		(r.sanitize && (v.Type == TypeHashListpack || v.Type == TypeZSetListpack)) {
		seen := make(map[string]struct{}, len(elems)/2)
		for i := 0; i < len(elems); i += 2 {
			k := string(elems[i].bytes())
			if _, dup := seen[k]; dup {
				return corrupt(integrityReason(v.Type))
			}
			seen[k] = struct{}{}
		}
	}
	switch v.Type {
	case TypeListZiplist:
		for _, e := range elems {
			v.Elems = append(v.Elems, e.bytes())
		}
		return nil
	case TypeZSetZiplist, TypeZSetListpack:
		if len(elems)%2 != 0 {
			return corrupt(integrityReason(v.Type))
		}
		v.Elems = make([][]byte, 0, len(elems)/2)
		v.Scores = make([]float64, 0, len(elems)/2)
		for i := 0; i < len(elems); i += 2 {
			m := elems[i].bytes()
			var score float64
			if s := elems[i+1]; s.isInt {
				score = float64(s.v)
			} else if score, err = parseScore(s.s); err != nil {
				return err
			}
			if err := v.addScored(m, score); err != nil {
				return err
			}
		}
		return nil
	}
	kv := make([][]byte, len(elems))
	for i, e := range elems {
		kv[i] = e.bytes()
	}
	return v.setPairs(kv)
}

// setPairs stores interleaved fields and values; an odd count fails the
// blob's integrity check.
func (v *Value) setPairs(kv [][]byte) error {
	if len(kv) == 0 {
		return errFormat
	}
	if len(kv)%2 != 0 {
		return corrupt(integrityReason(v.Type))
	}
	v.Fields = make([][]byte, 0, len(kv)/2)
	v.Values = make([][]byte, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		v.MaxLen = max(v.MaxLen, len(kv[i]), len(kv[i+1]))
		v.Fields = append(v.Fields, kv[i])
		v.Values = append(v.Values, kv[i+1])
	}
	return nil
}
