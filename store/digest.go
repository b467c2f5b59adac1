package store

import (
	"crypto/sha1"
	"encoding/binary"
	"strconv"
	"unsafe"

	"github.com/sluicedb/sluice/resp"
)

// Digests of values and of the dataset (DEBUG DIGEST and DIGEST-VALUE),
// which two servers (or one server before and after a reload) holding the
// same data agree on: per key a SHA1 chain over the key, its type, its
// value and its expiry, xored together so the order keys come in does
// not matter. Set members and hash fields are xored in too; list items
// and sorted-set members (with their scores) are chained, since their
// order is part of the value. (Sluice's digests are its own: they do not
// equal redis-server's for the same data.)

// Serializer appends a canonical serialized form of e to dst: the digest
// of the kinds without a rule of their own (streams) is that of their
// serialized form. The server passes its RDB encoding.
type Serializer func(dst []byte, e *Entry) []byte

func mixDigest(d *[20]byte, b []byte) {
	xorDigest(d, b)
	*d = sha1.Sum(d[:])
}

func xorDigest(d *[20]byte, b []byte) {
	h := sha1.Sum(b)
	for i := range d {
		d[i] ^= h[i]
	}
}

func xorInto(d *[20]byte, b *[20]byte) {
	for i := range d {
		d[i] ^= b[i]
	}
}

// Digest is the digest of a value e with the expiry exp (unix ms, 0 for
// none).
func Digest(e *Entry, exp int64, serial Serializer) [20]byte {
	var d [20]byte
	var typ [4]byte
	binary.BigEndian.PutUint32(typ[:], uint32(e.Kind()))
	mixDigest(&d, typ[:])
	var tmp [32]byte
	switch e.Kind() {
	case KindString:
		mixDigest(&d, e.Bytes(tmp[:0]))
	case KindList:
		e.AsList().Each(false, func(_ int, v []byte) bool { mixDigest(&d, v); return true })
	case KindSet:
		e.AsSet().ForEach(func(m []byte) bool { xorDigest(&d, m); return true })
	case KindHash:
		e.AsHash().ForEach(func(f, v []byte) bool {
			var ed [20]byte
			mixDigest(&ed, f)
			mixDigest(&ed, v)
			xorInto(&d, &ed)
			return true
		})
	case KindZSet:
		e.AsZSet().Iter(0, false, func(it ZItem) bool {
			var ed [20]byte
			mixDigest(&ed, unsafe.Slice(unsafe.StringData(it.Member), len(it.Member)))
			mixDigest(&ed, resp.AppendDouble(tmp[:0], it.Score))
			xorInto(&d, &ed)
			return true
		})
	default:
		mixDigest(&d, serial(nil, e))
	}
	if exp > 0 {
		mixDigest(&d, []byte("!!expire!!"))
		mixDigest(&d, strconv.AppendInt(tmp[:0], exp, 10))
	}
	return d
}

// Digest is DEBUG DIGEST, the digest of every database's keys, values
// and expiries: all zeros for an empty dataset. The caller holds the
// keyspace still (the exclusive lock).
func (ks *Keyspace) Digest(serial Serializer) [20]byte {
	var final [20]byte
	for i := 0; i < ks.NumDBs(); i++ {
		db := ks.DB(i)
		if db.Size() == 0 {
			continue
		}
		var dbid [4]byte
		binary.BigEndian.PutUint32(dbid[:], uint32(i))
		mixDigest(&final, dbid[:])
		db.ForEach(func(key string, e *Entry) bool {
			var kd [20]byte
			k := unsafe.Slice(unsafe.StringData(key), len(key))
			mixDigest(&kd, k)
			vd := Digest(e, db.ExpireOf(k, e), serial)
			xorInto(&kd, &vd)
			xorInto(&final, &kd)
			return true
		})
	}
	return final
}
