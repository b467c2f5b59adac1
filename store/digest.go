package store

import (
	"crypto/sha1"
	"encoding/binary"
	"strconv"
	"unsafe"

	"github.com/sluicedb/sluice/resp"
)

// Digests of values and of the dataset (DEBUG DIGEST and DIGEST-VALUE),
// computed as redis-server 7.0 computes them, so that a Sluice replica
// of a Redis master, or the two servers loaded with the same data, report
// the same digest. Two steps build them:
//
//   - mixing bytes into a digest chains them: the digest becomes the SHA1
//     of itself xored with the bytes' SHA1, so order counts;
//   - xoring bytes into a digest xors in their SHA1, so order does not.
//
// A key's digest mixes the key, then its value's: the value's type (as
// Redis numbers types), then its contents. A string mixes its bytes, a
// list each element from the head; a set xors in each member; a hash
// xors in, for each field, the SHA1 of a digest that mixes the field and
// its value, and a sorted set likewise the member and its score (printed
// as %.17g); a stream mixes each live entry's ID ("ms.seq") and its fields
// and values. A key with an expiry xors in "!!expire!!" (not the time).
// The dataset's digest mixes each non-empty database's number and xors in
// the SHA1 of each of its keys' digests.

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

// redisType is the type's number in Redis (OBJ_STRING, OBJ_LIST...).
func redisType(k Kind) uint32 {
	switch k {
	case KindList:
		return 1
	case KindSet:
		return 2
	case KindZSet:
		return 3
	case KindHash:
		return 4
	case KindStream:
		return 6
	}
	return 0
}

// valueDigest mixes value e (with an expiry or not) into d: Redis's
// xorObjectDigest.
func valueDigest(d *[20]byte, e *Entry, expires bool) {
	var typ [4]byte
	binary.BigEndian.PutUint32(typ[:], redisType(e.Kind()))
	mixDigest(d, typ[:])
	var tmp [32]byte
	switch e.Kind() {
	case KindString:
		mixDigest(d, e.Bytes(tmp[:0]))
	case KindList:
		e.AsList().Each(false, func(_ int, v []byte) bool { mixDigest(d, v); return true })
	case KindSet:
		e.AsSet().ForEach(func(m []byte) bool { xorDigest(d, m); return true })
	case KindHash:
		e.AsHash().ForEach(func(f, v []byte) bool {
			var ed [20]byte
			mixDigest(&ed, f)
			mixDigest(&ed, v)
			xorDigest(d, ed[:])
			return true
		})
	case KindZSet:
		e.AsZSet().Iter(0, false, func(it ZItem) bool {
			var ed [20]byte
			mixDigest(&ed, unsafe.Slice(unsafe.StringData(it.Member), len(it.Member)))
			mixDigest(&ed, resp.AppendDouble(tmp[:0], it.Score)) // %.17g
			xorDigest(d, ed[:])
			return true
		})
	case KindStream:
		e.AsStream().Range(StreamID{}, MaxStreamID, false, func(se StreamEntry) bool {
			id := se.ID()
			b := strconv.AppendUint(tmp[:0], id.Ms, 10)
			b = append(b, '.')
			mixDigest(d, strconv.AppendUint(b, id.Seq, 10))
			se.Fields(func(f, v []byte) {
				mixDigest(d, f)
				mixDigest(d, v)
			})
			return true
		})
	}
	if expires {
		xorDigest(d, []byte("!!expire!!"))
	}
}

// Digest is DEBUG DIGEST-VALUE's digest of value e, with the expiry exp
// (unix ms, 0 for none).
func Digest(e *Entry, exp int64) [20]byte {
	var d [20]byte
	valueDigest(&d, e, exp > 0)
	return d
}

// Digest is DEBUG DIGEST, the digest of every database's keys, values
// and expiries: all zeros for an empty dataset. The caller holds the
// keyspace still (the exclusive lock).
func (ks *Keyspace) Digest() [20]byte {
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
			valueDigest(&kd, e, db.ExpireOf(k, e) > 0)
			xorDigest(&final, kd[:])
			return true
		})
	}
	return final
}
