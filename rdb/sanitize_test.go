package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// A payload whose CRC-64 is wrong decodes only with SkipCRC; a version
// newer than ours is refused either way.
func TestDecodeSkipCRC(t *testing.T) {
	p := EncodeString([]byte("hello"))
	p[len(p)-1] ^= 0xFF
	if _, err := Decode(p); !errors.Is(err, ErrChecksum) {
		t.Fatalf("bad CRC: %v", err)
	}
	v, err := DecodeWith(p, DecodeOptions{SkipCRC: true})
	if err != nil || string(v.Str) != "hello" {
		t.Fatalf("SkipCRC: %v %+v", err, v)
	}
	binary.LittleEndian.PutUint16(p[len(p)-10:], Version+1)
	if _, err := DecodeWith(p, DecodeOptions{SkipCRC: true}); !errors.Is(err, ErrChecksum) {
		t.Fatalf("newer version with SkipCRC: %v", err)
	}
}

// refinish gives a payload changed in place a right footer again.
func refinish(p []byte) []byte { return Finish(p[:len(p)-10]) }

// hashListpackPayload is a hash listpack of fields f0..f3 (values v0..v3)
// whose third field's entry starts with byte bad (0: left as it is).
func hashListpackPayload(bad byte) []byte {
	var lp Listpack
	for _, s := range []string{"f0", "v0", "f1", "v1", "f2", "v2", "f3", "v3"} {
		lp.Append([]byte(s))
	}
	b := lp.Bytes()
	if bad != 0 {
		i := bytes.Index(b, []byte("f2")) - 1 // the entry's encoding byte
		b[i] = bad
	}
	return Finish(AppendString([]byte{TypeHashListpack}, b))
}

// A listpack entry that does not parse refuses the value, with Redis's
// reason; without deep sanitization the fields before it are kept, as
// Redis takes the listpack and fails only when a command reaches the
// damage.
func TestShallowListpack(t *testing.T) {
	p := hashListpackPayload(0xF6) // not an encoding
	for _, o := range []DecodeOptions{{}, {Sanitize: true}} {
		_, err := DecodeWith(p, o)
		if !errors.Is(err, ErrFormat) || Reason(err) != "Hash listpack integrity check failed." {
			t.Fatalf("%+v: %v (reason %q)", o, err, Reason(err))
		}
	}
	v, err := DecodeWith(p, DecodeOptions{Shallow: true})
	if err != nil || len(v.Fields) != 2 || string(v.Fields[1]) != "f1" || string(v.Values[1]) != "v1" {
		t.Fatalf("shallow: %v %+v", err, v)
	}
	// A wrong back length is caught by the full check only.
	p = hashListpackPayload(0)
	i := bytes.Index(p, []byte("v3")) + 2
	p[i] ^= 0x7F
	p = refinish(p)
	if _, err := DecodeWith(p, DecodeOptions{}); Reason(err) == "" {
		t.Fatalf("wrong back length accepted: %v", err)
	}
	if v, err := DecodeWith(p, DecodeOptions{Shallow: true}); err != nil || len(v.Fields) != 4 {
		t.Fatalf("shallow, wrong back length: %v %+v", err, v)
	}
	// The header is checked either way.
	p = hashListpackPayload(0)
	p[3] ^= 0x01 // the listpack's total size
	p = refinish(p)
	if _, err := DecodeWith(p, DecodeOptions{Shallow: true}); !errors.Is(err, ErrFormat) {
		t.Fatalf("shallow, wrong total size: %v", err)
	}
}

// A hash ziplist with a field twice is refused with Redis's reason; a
// listpack one only when sanitizing (the server's entry refuses it anyway).
func TestDuplicateFieldsReason(t *testing.T) {
	zl := []byte("\x19\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x01a\x03\x01b\x03\x01a\x03\x01d\xff")
	_, err := DecodeWith(Finish(AppendString([]byte{TypeHashZiplist}, zl)), DecodeOptions{Shallow: true})
	if Reason(err) != "Hash ziplist integrity check failed." {
		t.Fatalf("ziplist with a duplicate field: %v", err)
	}
	var lp Listpack
	for _, s := range []string{"a", "1", "a", "2"} {
		lp.Append([]byte(s))
	}
	p := Finish(AppendString([]byte{TypeHashListpack}, lp.Bytes()))
	if _, err := DecodeWith(p, DecodeOptions{Shallow: true}); err != nil {
		t.Fatalf("shallow listpack with a duplicate field: %v", err)
	}
	if _, err := DecodeWith(p, DecodeOptions{Sanitize: true}); Reason(err) != "Hash listpack integrity check failed." {
		t.Fatalf("sanitized listpack with a duplicate field: %v", err)
	}
}

// streamPayload is a stream of one node with entries 1-1 and 1-2 (one
// field each), one group whose list holds 1-1 and 1-2, and consumers as
// given, each with the pending IDs listed. lpCount is the second entry's
// lp-count.
func streamPayload(lpCount int64, consumers map[string][]StreamID, order ...string) []byte {
	var lp Listpack
	lp.AppendInt(2) // live entries
	lp.AppendInt(0) // deleted
	lp.AppendInt(1) // master fields
	lp.Append([]byte("f"))
	lp.AppendInt(0)
	for seq, count := range []int64{4, lpCount} {
		lp.AppendInt(2) // same fields as the master
		lp.AppendInt(0)
		lp.AppendInt(int64(seq))
		lp.Append([]byte("v"))
		lp.AppendInt(count)
	}
	dst := []byte{TypeStreamLP2}
	dst = AppendLen(dst, 1)
	dst = AppendString(dst, binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, 1), 1))
	dst = AppendString(dst, lp.Bytes())
	dst = AppendStreamMeta(dst, 2, StreamID{1, 2}, StreamID{1, 1}, StreamID{}, 2, 1)
	dst = AppendStreamGroup(dst, []byte("g"), StreamID{1, 2}, 2, []StreamNACK{{ID: StreamID{1, 1}}, {ID: StreamID{1, 2}}})
	dst = AppendLen(dst, uint64(len(order)))
	for _, name := range order {
		dst = AppendStreamConsumer(dst, []byte(name), 0, consumers[name])
	}
	return Finish(dst)
}

func TestStreamSanitize(t *testing.T) {
	both := map[string][]StreamID{"alice": {{1, 1}}, "bob": {{1, 2}}}
	good := streamPayload(4, both, "alice", "bob")
	for _, o := range []DecodeOptions{{}, {Shallow: true}, {Sanitize: true}} {
		if v, err := DecodeWith(good, o); err != nil || len(v.Stream.Entries) != 2 {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	cases := []struct {
		name    string
		p       []byte
		reason  string
		checked bool // refused without Sanitize too
	}{
		{"wrong lp-count", streamPayload(5, both, "alice", "bob"), "Stream listpack integrity check failed.", false},
		{"pending entry without a consumer", streamPayload(4, both, "alice"), "Stream CG PEL entry without consumer", false},
		{"consumer twice", streamPayload(4, both, "alice", "alice"), "Duplicate stream consumer detected.", true},
		{"entry claimed twice", streamPayload(4, map[string][]StreamID{"alice": {{1, 1}}, "bob": {{1, 1}}}, "alice", "bob"),
			"Duplicated consumer PEL entry loading a stream consumer group", true},
		{"consumer entry not in the group's list", streamPayload(4, map[string][]StreamID{"alice": {{1, 1}}, "bob": {{1, 3}}}, "alice", "bob"),
			"Consumer entry not found in group global PEL", true},
	}
	for _, c := range cases {
		if _, err := DecodeWith(c.p, DecodeOptions{Sanitize: true}); Reason(err) != c.reason {
			t.Errorf("%s, sanitized: %v, want %q", c.name, err, c.reason)
		}
		_, err := DecodeWith(c.p, DecodeOptions{})
		if c.checked && Reason(err) != c.reason {
			t.Errorf("%s: %v, want %q", c.name, err, c.reason)
		}
		if !c.checked && err != nil {
			t.Errorf("%s: refused without sanitizing: %v", c.name, err)
		}
	}
}

// Without deep sanitization, a stream node cut short keeps the entries
// before the damage, and the stream's length follows them.
func TestShallowStream(t *testing.T) {
	p := streamPayload(4, map[string][]StreamID{"alice": {{1, 1}, {1, 2}}}, "alice")
	i := bytes.LastIndex(p, []byte("\x81v")) // the second entry's value
	p[i] = 0xF6
	p = refinish(p)
	if _, err := DecodeWith(p, DecodeOptions{}); Reason(err) != "Stream listpack integrity check failed." {
		t.Fatalf("full check: %v", err)
	}
	v, err := DecodeWith(p, DecodeOptions{Shallow: true})
	if err != nil || len(v.Stream.Entries) != 1 || v.Stream.Length != 1 {
		t.Fatalf("shallow: %v %+v", err, v)
	}
	if NewEntry(v, Limits{ListFill: -2}) == nil {
		t.Fatal("the kept stream does not load")
	}
}
