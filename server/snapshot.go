package server

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// Snapshots: the dataset at one instant, as RDB records (persist.Image),
// for everything that writes it out: BGSAVE, SAVE, BGREWRITEAOF's base, a
// replica's full sync, SHUTDOWN's save. There is no fork: package persist
// takes images of the store (persist.Dataset: a point-in-time snapshot
// walked while clients are served, or encoded whole under the exclusive
// lock while another is being walked, or the live tables for a caller
// that holds the lock); the server adds what it knows at the cut and
// captures the keys a command is about to change (captureKeys).

// snapshotImage takes a point-in-time image of the dataset
// (persist.Host.Snapshot). atCut, when not nil, runs at the cut, when no
// command runs.
func (s *Server) snapshotImage(atCut func()) persist.Image {
	meta := s.imageMetaUnlocked()
	s.ks.Lock.Lock()
	defer s.ks.Lock.Unlock()
	if atCut != nil {
		atCut()
	}
	if img, err := s.cutImage(meta); err == nil {
		return img
	}
	return s.encodedImage(meta)
}

// dataset is the store as package persist takes images of it.
func (s *Server) dataset() *persist.Dataset {
	return &persist.Dataset{
		KS: s.ks, Slot: s.goSlot,
		ListFill: func() int { return int(s.cfg.ListPackSize.Load()) },
		AtCut:    s.metaAtCut,
		Walked: func(cowPeak int64) {
			// INFO's figure, and replicas waiting for a full sync may
			// start theirs.
			s.snapStats.lastCOW.Store(cowPeak)
			go s.startPendingSync()
		},
	}
}

// snapStats are INFO's figures for snapshots.
type snapStats struct {
	lastCOW atomic.Int64 // the last walk's peak copy-on-write (rdb_last_cow_size)
}

// imageMetaUnlocked is what an image records besides its keys and the
// change counter: taken just before the cut, without the lock.
func (s *Server) imageMetaUnlocked() persist.ImageMeta {
	meta := persist.ImageMeta{CTime: time.Now().Unix(), UsedMem: uint64(s.usedMemory())}
	return meta
}

// cutImage takes the cut of a point-in-time image (persist.Dataset.Cut);
// the exclusive lock must be held. It fails with store.ErrSnapshotBusy
// while another image is being walked.
func (s *Server) cutImage(meta persist.ImageMeta) (*persist.StoreImage, error) {
	img, err := s.dataset().Cut(s.rdbEnc(), meta)
	if err != nil {
		return nil, err
	}
	if us, _ := strconv.ParseInt(s.cfg.Get("rdb-key-save-delay"), 10, 64); us > 0 {
		img.Snapshot().ChunkKeys = 1 // rdb-key-save-delay is per key: the walk goes key by key
	}
	return img, nil
}

// encodedImage is the whole dataset encoded now, under the exclusive lock
// (persist.Dataset.Encoded): the image taken while another is walked.
func (s *Server) encodedImage(meta persist.ImageMeta) persist.Image {
	return s.dataset().Encoded(s.rdbEnc(), meta)
}

// lockedImage is an image of the live dataset for a caller that holds the
// exclusive lock until it is written (nothing changes meanwhile).
func (s *Server) lockedImage() persist.Image {
	return s.dataset().Locked(s.rdbEnc(), s.imageMetaUnlocked())
}

// metaAtCut completes meta with what is read at the cut (exclusive lock).
func (s *Server) metaAtCut(meta persist.ImageMeta) persist.ImageMeta {
	meta.Dirty = s.ks.DirtyTotal()
	meta.Repl = s.replSaveInfo()
	for _, l := range s.lua.eng.Libraries() {
		meta.Functions = append(meta.Functions, []byte(l.Code))
	}
	return meta
}

// rdbEnc is how RDB files encode values (rdbcompression).
func (s *Server) rdbEnc() rdb.Enc {
	return rdb.Enc{NoCompress: s.cfg.Get("rdbcompression") == "no"}
}

// captureKeys gives the running snapshot the values cmd's keys in db
// have now, before cmd runs and changes them in place (the store captures
// what it replaces or removes itself). The keys' locks, or the exclusive
// lock, are held.
func (c *Client) captureKeys(db *store.DB, cmd *Command, args [][]byte) {
	c.snapKeys = cmd.Keys(args, c.snapKeys[:0], cmdspec.Access)
	for _, k := range c.snapKeys {
		db.Capture(args[k.Pos])
	}
}

// snapshotInfo is INFO persistence's copy-on-write figures: the extra
// memory of the running snapshot (whoever writes it), the records clients
// captured before changing keys the walk had not reached yet, until the
// walk hands them to the writer.
func (s *Server) snapshotInfo() (cow, cowPeak, lastCOW int64) {
	if sn := s.ks.RunningSnapshot(); sn != nil {
		cow, cowPeak = sn.COW(), sn.COWPeak()
	}
	return cow, cowPeak, s.snapStats.lastCOW.Load()
}
