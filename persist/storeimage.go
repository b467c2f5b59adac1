package persist

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// Images of the store: the dataset at one instant, as RDB records, for
// everything that writes it out (BGSAVE, SAVE, BGREWRITEAOF's base, a
// replica's full sync, SHUTDOWN's save). There is no fork.
//
// Cut takes a point-in-time snapshot of the store (store.Snapshot): the
// exclusive lock is held for O(databases × shards) work, then the
// image's Each walks the keys shard by shard in small chunks while every
// client keeps being served. A key is encoded as it was at the cut, by
// the walk or, when a client is about to change it first, by that client
// (the server calls store.DB.Capture before such a command; the store
// captures what it replaces or removes itself). The encoded dataset is
// never held whole: the writer (WriteRDB, WriteAOFForm) streams it out.
//
// One store snapshot is walked at a time. An image asked for while
// another is being walked (a BGSAVE during a replica's full sync) is
// encoded whole under the exclusive lock instead (Encoded). A caller that
// holds the exclusive lock until its image is written (FLUSHALL's save,
// DEBUG RELOAD) takes a Locked image, which reads the live tables.

// Dataset is the store as images of it are taken.
type Dataset struct {
	KS *store.Keyspace
	// Slot is the BigLock reader slot a snapshot's walk uses.
	Slot int
	// ListFill returns list-max-listpack-size, read as each list is
	// encoded.
	ListFill func() int
	// AtCut completes an image's meta with what the host reads at the
	// cut (the exclusive lock is held).
	AtCut func(meta ImageMeta) ImageMeta
	// Walked, when not nil, is called from the walking goroutine when a
	// snapshot's walk ends or is given up, with its copy-on-write peak.
	Walked func(cowPeak int64)
}

// Encoder is the store.Encoder of RDB files with enc's options: a key's
// expiry, type, name and value.
func (d *Dataset) Encoder(enc rdb.Enc) store.Encoder {
	return func(dst, key []byte, e *store.Entry, expire int64) []byte {
		fill := 0
		if e.Kind() == store.KindList {
			fill = d.ListFill()
		}
		return enc.Record(dst, key, e, expire, fill)
	}
}

// Cut takes the cut of a point-in-time image, to be walked in the
// background (Each) or given up (Release). It does O(databases × shards)
// work; the exclusive lock must be held. It fails with
// store.ErrSnapshotBusy while another image is being walked.
func (d *Dataset) Cut(enc rdb.Enc, meta ImageMeta) (*StoreImage, error) {
	// A client about to change a key the walk has not reached encodes it
	// without compression: its command waits for that.
	sn, err := d.KS.BeginSnapshot(d.Encoder(enc), d.Encoder(rdb.Enc{NoCompress: true}), d.Slot)
	if err != nil {
		return nil, err
	}
	// Keys past their expiry that were not reclaimed yet are written with
	// it, as Redis's save does; loading skips them and counts them
	// (rdb_last_load_keys_expired).
	sn.KeepExpired()
	img := &StoreImage{d: d, sn: sn, meta: d.AtCut(meta)}
	img.meta.Keys = sn.Keys()
	return img, nil
}

// Locked is an image of the live dataset for a caller that holds the
// exclusive lock until it is written (nothing changes meanwhile).
func (d *Dataset) Locked(enc rdb.Enc, meta ImageMeta) *StoreImage {
	img := &StoreImage{d: d, enc: d.Encoder(enc), meta: d.AtCut(meta)}
	for i := 0; i < d.KS.NumDBs(); i++ {
		img.meta.Keys += int64(d.KS.DB(i).Size())
	}
	return img
}

// StoreImage is a point-in-time image of the store being walked, or the
// live dataset for a caller holding the exclusive lock until it is
// written (Locked).
type StoreImage struct {
	d        *Dataset
	sn       *store.Snapshot // nil: a locked image
	enc      store.Encoder   // a locked image's
	meta     ImageMeta
	released atomic.Bool
	walked   atomic.Bool // Each has returned
}

// Snapshot is the store snapshot a cut image walks (nil for a locked
// image).
func (img *StoreImage) Snapshot() *store.Snapshot { return img.sn }

func (img *StoreImage) Meta() ImageMeta { return img.meta }

// Each calls fn with the image's key records, database by database, in
// chunks of whole records (Image). fn runs with no lock held. A
// snapshot's walk takes each shard's lock for a chunk of keys at a time;
// a locked image needs the exclusive lock held throughout.
func (img *StoreImage) Each(fn func(db int, size, expires uint64, chunk []byte, keys int) error) error {
	k := &eachSink{fn: fn}
	var err error
	if img.sn != nil {
		err = img.sn.Walk(k, nil)
		img.walked.Store(true)
		img.walkDone()
	} else {
		if img.released.Load() {
			return ErrAborted
		}
		err = img.d.KS.WalkLocked(img.enc, k, true)
	}
	if err == store.ErrSnapshotAborted {
		err = ErrAborted
	}
	return err
}

// Release gives the image up, from any goroutine: a walk not started
// never will, one under way stops at its next chunk (Each returns
// ErrAborted); a no-op once Each has returned.
func (img *StoreImage) Release() {
	if img.released.Swap(true) || img.sn == nil || img.walked.Load() {
		return
	}
	img.sn.Abort()
	img.walkDone()
}

// walkDone reports the end of a snapshot's walk (Dataset.Walked).
func (img *StoreImage) walkDone() {
	if w := img.d.Walked; w != nil {
		w(img.sn.COWPeak())
	}
}

// eachSink adapts Each's callback to the store's snapshot sink.
type eachSink struct {
	fn            func(db int, size, expires uint64, chunk []byte, keys int) error
	db            int
	size, expires uint64
}

func (k *eachSink) DB(id, keys, expires int) error {
	k.db, k.size, k.expires = id, uint64(keys), uint64(expires)
	return nil
}

func (k *eachSink) Records(b []byte, n int) error { return k.fn(k.db, k.size, k.expires, b, n) }

// Encoded is the whole dataset encoded now, under the exclusive lock
// (held by the caller), into memory buffers: the image taken while
// another is being walked. Its cost is the encoding time under the lock
// and memory for the encoded dataset until it is written.
func (d *Dataset) Encoded(enc rdb.Enc, meta ImageMeta) Image {
	snap := &encodedImage{meta: d.AtCut(meta)}
	now := int64(math.MinInt64) // expired keys not reclaimed are kept, as in Cut
	ndb := d.KS.NumDBs()
	chunks := make([]snapChunk, ndb*store.NShards)
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := max(1, min(runtime.GOMAXPROCS(0), 16))
	encode := d.Encoder(enc)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= len(chunks) {
					return
				}
				chunks[j] = encodeShard(d.KS.DB(j/store.NShards), j%store.NShards, now, encode)
			}
		}()
	}
	wg.Wait()
	for i := range ndb {
		ds := dbChunks{id: i}
		for _, ch := range chunks[i*store.NShards : (i+1)*store.NShards] {
			if ch.keys == 0 {
				continue
			}
			ds.size += uint64(ch.keys)
			ds.expires += uint64(ch.expires)
			ds.chunks = append(ds.chunks, ch)
		}
		if ds.size > 0 {
			snap.meta.Keys += int64(ds.size)
			snap.dbs = append(snap.dbs, ds)
		}
	}
	return snap
}

// encodedImage is an Encoded image.
type encodedImage struct {
	meta     ImageMeta
	dbs      []dbChunks
	released atomic.Bool
}

type dbChunks struct {
	id            int
	size, expires uint64
	chunks        []snapChunk
}

type snapChunk struct {
	buf           []byte
	keys, expires int
}

func (sn *encodedImage) Meta() ImageMeta { return sn.meta }

func (sn *encodedImage) Each(fn func(db int, size, expires uint64, chunk []byte, keys int) error) error {
	for _, ds := range sn.dbs {
		for _, ch := range ds.chunks {
			if sn.released.Load() {
				return ErrAborted
			}
			if err := fn(ds.id, ds.size, ds.expires, ch.buf, ch.keys); err != nil {
				return err
			}
		}
	}
	return nil
}

func (sn *encodedImage) Release() { sn.released.Store(true) }

// encodeShard encodes the keys of one shard as RDB key-value records.
func encodeShard(db *store.DB, shard int, now int64, enc store.Encoder) snapChunk {
	var ch snapChunk
	if n := db.ShardLen(shard); n > 0 {
		// Room for small keys; bigger values grow the buffer.
		ch.buf = make([]byte, 0, n*32)
	}
	db.EachInShard(shard, now, func(key string, e *store.Entry, expire int64) bool {
		n := len(ch.buf)
		if ch.buf = enc(ch.buf, unsafe.Slice(unsafe.StringData(key), len(key)), e, expire); len(ch.buf) > n {
			ch.keys++
			if expire != 0 {
				ch.expires++
			}
		}
		return true
	})
	return ch
}
