package store_test

import (
	"encoding/hex"
	"testing"
	"unsafe"

	"github.com/sluicedb/sluice/store"
)

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
// digestData to what redis-server 7.0.15 reports after those commands.
func TestDigest(t *testing.T) {
	ks := digestData()
	db := ks.DB(0)
	for _, c := range []struct{ key, want string }{
		{"s", "d79ee9fe5d5ad902d7f6620efc3b07b75ddd742f"},
		{"n", "e1cf90774e995ae03de66e8109dc5cb9d9c2dc83"},
		{"l", "8bf72d812571eea9b927f3c11beb0c4165a6ff89"},
		{"st", "593c2414786d75446e97f4ea5d4b731f3313da72"},
		{"h", "d127864ed50239662bf61bafc9bda63c17da5b37"},
		{"z", "c45c5b051acd64070e5ed1a949939d5145f806c5"},
		{"e", "311b17018163335616e089f6b951c82c477335ac"},
		{"x", "2ed9a7a81688084b1f7eae33456ef7727d357031"},
	} {
		e := db.PeekRaw([]byte(c.key))
		if e == nil {
			t.Fatalf("no key %s", c.key)
		}
		d := store.Digest(e, db.ExpireOf([]byte(c.key), e))
		if got := hex.EncodeToString(d[:]); got != c.want {
			t.Errorf("%s: got %s, want %s", c.key, got, c.want)
		}
	}
	d := ks.Digest()
	if got, want := hex.EncodeToString(d[:]), "de30f77bfac9e4710c30d4dffa900eda4902be41"; got != want {
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
		d := ks.Digest()
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
