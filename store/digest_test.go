package store_test

import (
	"encoding/hex"
	"testing"
	"unsafe"

	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// serial is the server's: the RDB encoding at list-max-listpack-size -2.
func serial(dst []byte, e *store.Entry) []byte { return rdb.Enc{}.Entry(dst, e, -2) }

// digestData builds, in db 0 of a new keyspace, what these commands
// leave: SET s v; SET n 12345; RPUSH l a b c; SADD st a b c;
// HSET h f v g w; ZADD z 1 a 2.5 b; SET e v PXAT 2000000000000;
// XADD x 1-1 f v.
func digestData() *store.Keyspace {
	ks := store.New(16, 0)
	db := ks.DB(0)
	db.Add([]byte("s"), store.NewString([]byte("v")))
	db.Add([]byte("n"), store.NewInt(12345))
	l := store.NewList(-2)
	for _, v := range []string{"a", "b", "c"} {
		l.PushBack([]byte(v))
	}
	db.Add([]byte("l"), store.NewObject(store.KindList, unsafe.Pointer(l)))
	st := store.NewSetFor([]byte("a"))
	for _, m := range []string{"a", "b", "c"} {
		st.Add([]byte(m), 512)
	}
	db.Add([]byte("st"), store.NewSetEntry(st))
	h := store.NewHash()
	h.Set([]byte("f"), []byte("v"), 128, 64)
	h.Set([]byte("g"), []byte("w"), 128, 64)
	db.Add([]byte("h"), store.NewHashEntry(h))
	z := store.NewZSet()
	z.Insert([]byte("a"), 1)
	z.Insert([]byte("b"), 2.5)
	db.Add([]byte("z"), store.NewObject(store.KindZSet, unsafe.Pointer(z)))
	db.AddExpire([]byte("e"), store.NewString([]byte("v")), 2000000000000)
	x := store.NewStream()
	x.Append(store.StreamID{Ms: 1, Seq: 1}, [][]byte{[]byte("f"), []byte("v")}, 100, 4096)
	db.Add([]byte("x"), store.NewStreamEntry(x))
	return ks
}

// TestDigest pins DEBUG DIGEST-VALUE and DEBUG DIGEST for the data of
// digestData, as Sluice's server reports them (they are Sluice's own
// digests: redis-server 7.0.15 reports other ones for the same data, as
// its types are numbered differently and it hashes element digests
// before xoring them; DEBUG DIGEST only has to agree with itself).
func TestDigest(t *testing.T) {
	ks := digestData()
	db := ks.DB(0)
	for _, c := range []struct{ key, want string }{
		{"s", "e3570d12f66464ec54e7d83ebfc4b55a4e01cfde"},
		{"n", "94f3cd145ff89623ea6e0b2fb22500ebd2a8ceb3"},
		{"l", "eb71ab20ff11e8b7bbf3b9d9aeb6797f1bf30cc3"},
		{"st", "6907f48cdbee7407f6b3e045228ec0e89e1c56d9"},
		{"h", "a6332df3069ea5266fd6cc5eb2460b5a7cbbadc2"},
		{"z", "310b79e1954ebd42ad55a7e4eeeecc26dc86e159"},
		{"e", "87342e204be82d98241946b4a281c6b186ae7273"},
		{"x", "9c8abef2650302c46ebb5ec0e5cb9a335d304ba9"},
	} {
		e := db.PeekRaw([]byte(c.key))
		if e == nil {
			t.Fatalf("no key %s", c.key)
		}
		d := store.Digest(e, db.ExpireOf([]byte(c.key), e), serial)
		if got := hex.EncodeToString(d[:]); got != c.want {
			t.Errorf("%s: got %s, want %s", c.key, got, c.want)
		}
	}
	d := ks.Digest(serial)
	if got, want := hex.EncodeToString(d[:]), "fa33e46935c9afde1851f4e8a8f5872b85d3671b"; got != want {
		t.Errorf("dataset: got %s, want %s", got, want)
	}
}

// TestDigestOrder: the dataset's digest does not depend on the order
// keys were added in, or sets' members and hashes' fields, but it does on
// a list's order, an expiry and the database a key is in; an empty
// dataset's is all zeros.
func TestDigestOrder(t *testing.T) {
	digest := func(fill func(db *store.DB), dbi int) string {
		ks := store.New(16, 0)
		fill(ks.DB(dbi))
		d := ks.Digest(serial)
		return hex.EncodeToString(d[:])
	}
	set := func(ms ...string) *store.Entry {
		s := store.NewSetFor([]byte(ms[0]))
		for _, m := range ms {
			s.Add([]byte(m), 512)
		}
		return store.NewSetEntry(s)
	}
	list := func(vs ...string) *store.Entry {
		l := store.NewList(-2)
		for _, v := range vs {
			l.PushBack([]byte(v))
		}
		return store.NewObject(store.KindList, unsafe.Pointer(l))
	}
	if got := digest(func(*store.DB) {}, 0); got != "0000000000000000000000000000000000000000" {
		t.Errorf("empty: %s", got)
	}
	a := digest(func(db *store.DB) {
		db.Add([]byte("k1"), store.NewString([]byte("x")))
		db.Add([]byte("k2"), set("a", "b", "c"))
	}, 0)
	b := digest(func(db *store.DB) {
		db.Add([]byte("k2"), set("c", "b", "a"))
		db.Add([]byte("k1"), store.NewString([]byte("x")))
	}, 0)
	if a != b {
		t.Errorf("order of keys or members changed the digest: %s, %s", a, b)
	}
	if c := digest(func(db *store.DB) {
		db.Add([]byte("k1"), store.NewString([]byte("x")))
		db.Add([]byte("k2"), set("a", "b", "c"))
	}, 1); c == a {
		t.Errorf("the database does not count")
	}
	if c := digest(func(db *store.DB) {
		db.AddExpire([]byte("k1"), store.NewString([]byte("x")), 2000000000000)
		db.Add([]byte("k2"), set("a", "b", "c"))
	}, 0); c == a {
		t.Errorf("the expiry does not count")
	}
	l1 := digest(func(db *store.DB) { db.Add([]byte("l"), list("a", "b")) }, 0)
	l2 := digest(func(db *store.DB) { db.Add([]byte("l"), list("b", "a")) }, 0)
	if l1 == l2 {
		t.Errorf("a list's order does not count")
	}
}
