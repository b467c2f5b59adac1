package persist

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"unsafe"

	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// imageKeys reads an image's records back: "db/key" -> "type value
// expiry", and the keys and expiries each database announced.
func imageKeys(t *testing.T, img Image) (map[string]string, map[int][2]uint64) {
	t.Helper()
	keys := map[string]string{}
	sizes := map[int][2]uint64{}
	err := img.Each(func(db int, size, expires uint64, chunk []byte, n int) error {
		sizes[db] = [2]uint64{size, expires}
		got := 0
		err := rdb.ReadRecords(chunk, db, func(r *rdb.Record) error {
			got++
			v := ""
			switch r.Value.Kind() {
			case rdb.KindString:
				v = "string " + string(r.Value.Str)
				if r.Value.IsInt {
					v = "string " + strconv.FormatInt(r.Value.Int, 10)
				}
			case rdb.KindList:
				v = fmt.Sprintf("list %q", r.Value.Elems)
			default:
				v = fmt.Sprintf("type %d", r.Value.Type)
			}
			k := fmt.Sprintf("%d/%s", r.DB, r.Key)
			if _, dup := keys[k]; dup {
				t.Errorf("%s written twice", k)
			}
			keys[k] = fmt.Sprintf("%s expire %v %d", v, r.HasExpire, r.Expire)
			return nil
		})
		if err != nil || got != n {
			t.Errorf("chunk of db %d: %d records read, %d announced, %v", db, got, n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Each: %v", err)
	}
	return keys, sizes
}

func testDataset(t *testing.T) (*Dataset, *int) {
	ks := store.New(2, 2)
	walked := new(int)
	d := &Dataset{
		KS: ks, Slot: 1,
		ListFill: func() int { return -2 },
		AtCut: func(meta ImageMeta) ImageMeta {
			meta.Dirty = 42
			return meta
		},
		Walked: func(int64) { *walked++ },
	}
	past := ks.Now() - 1000
	ks.Lock.Lock()
	defer ks.Lock.Unlock()
	for i := range 300 {
		ks.DB(0).Add([]byte("k"+strconv.Itoa(i)), store.NewString([]byte("v"+strconv.Itoa(i))))
	}
	l := store.NewList(-2)
	l.PushBack([]byte("a"))
	l.PushBack([]byte("b"))
	ks.DB(1).AddExpire([]byte("list"), store.NewObject(store.KindList, unsafe.Pointer(l)), ks.Now()+100000)
	ks.DB(1).AddExpire([]byte("expired"), store.NewInt(7), past) // kept: loading counts it
	return d, walked
}

// TestStoreImages: a cut image, a locked image and an encoded one hold the
// same records, announce the same sizes, and the cut's is the dataset at
// the cut whatever changes after it.
func TestStoreImages(t *testing.T) {
	d, walked := testDataset(t)
	ks := d.KS

	ks.Lock.Lock()
	locked, lockedSizes := imageKeys(t, d.Locked(rdb.Enc{}, ImageMeta{CTime: 1}))
	encImg := d.Encoded(rdb.Enc{NoCompress: true}, ImageMeta{})
	cut, err := d.Cut(rdb.Enc{}, ImageMeta{CTime: 7})
	ks.Lock.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if m := cut.Meta(); m.Keys != 302 || m.Dirty != 42 || m.CTime != 7 {
		t.Fatalf("cut meta %+v", m)
	}
	if m := encImg.Meta(); m.Keys != 302 || m.Dirty != 42 {
		t.Fatalf("encoded meta %+v", m)
	}

	// Changes after the cut: a key replaced, one deleted, one added.
	db := ks.DB(0)
	db.Set([]byte("k1"), store.NewString([]byte("changed")), false)
	db.Delete([]byte("k2"))
	db.Add([]byte("new"), store.NewString([]byte("after")))

	cut.Snapshot().ChunkKeys = 7
	got, gotSizes := imageKeys(t, cut)
	if *walked != 1 {
		t.Errorf("Walked called %d times, want 1", *walked)
	}
	encoded, encSizes := imageKeys(t, encImg)
	for name, img := range map[string]map[string]string{"cut": got, "encoded": encoded} {
		if len(img) != len(locked) {
			t.Errorf("%s: %d keys, locked image %d", name, len(img), len(locked))
		}
		for k, v := range locked {
			if img[k] != v {
				t.Errorf("%s: %s = %q, locked image %q", name, k, img[k], v)
			}
		}
	}
	if got["0/k1"] != "string v1 expire false 0" || got["1/expired"] == "" || got["0/new"] != "" {
		t.Errorf("cut image: k1 %q, expired %q, new %q", got["0/k1"], got["1/expired"], got["0/new"])
	}
	want := map[int][2]uint64{0: {300, 0}, 1: {2, 2}}
	for name, sizes := range map[string]map[int][2]uint64{"locked": lockedSizes, "cut": gotSizes, "encoded": encSizes} {
		if fmt.Sprint(sizes) != fmt.Sprint(want) {
			t.Errorf("%s: sizes %v, want %v", name, sizes, want)
		}
	}
}

// TestStoreImageRelease: a released image is not walked, and a second cut
// while one is walked fails (the caller encodes instead).
func TestStoreImageRelease(t *testing.T) {
	d, walked := testDataset(t)
	d.KS.Lock.Lock()
	img, err := d.Cut(rdb.Enc{}, ImageMeta{})
	if err != nil {
		d.KS.Lock.Unlock()
		t.Fatal(err)
	}
	if _, err := d.Cut(rdb.Enc{}, ImageMeta{}); !errors.Is(err, store.ErrSnapshotBusy) {
		t.Errorf("second cut: %v, want ErrSnapshotBusy", err)
	}
	d.KS.Lock.Unlock()
	img.Release()
	if err := img.Each(func(int, uint64, uint64, []byte, int) error { return nil }); err != ErrAborted {
		t.Errorf("Each after Release: %v, want ErrAborted", err)
	}
	if *walked == 0 {
		t.Errorf("Walked not called for a released image")
	}
	d.KS.Lock.Lock()
	locked := d.Locked(rdb.Enc{}, ImageMeta{})
	locked.Release()
	err = locked.Each(func(int, uint64, uint64, []byte, int) error { return nil })
	d.KS.Lock.Unlock()
	if err != ErrAborted {
		t.Errorf("locked Each after Release: %v, want ErrAborted", err)
	}
}
