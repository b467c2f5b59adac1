package server

import (
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/repl"
)

// Full syncs: making the image replicas wait for, after Redis 7.0's
// startBgsaveForReplication. repl.Master decides when, and which replicas
// share it, and sends it (repl's fullsync.go): streamed to replicas that
// take a streamed payload ("capa eof") when repl-diskless-sync is yes,
// else written by a BGSAVE to dbfilename, then sent as a file.

// replSyncRunning reports whether an image is being streamed to replicas
// (INFO's rdb_bgsave_in_progress counts it, as Redis counts its child).
func (s *Server) replSyncRunning() bool { return s.repl.m.SyncRunning() }

// imageBusy reports whether another image is being written (a BGSAVE, an
// AOF rewrite, another full sync's): a full sync waits for it to end, as
// Redis's waits for its child, and then takes its own stall-free
// snapshot.
func (s *Server) imageBusy() bool {
	return s.pe.ChildActive() || s.ks.Snapshotting()
}

// queueFullSync decides when the full sync of rc (just attached as
// waiting) starts. The exclusive lock is held (SYNC is lock_all).
func (s *Server) queueFullSync(rc *replicaConn) {
	r := &s.repl
	diskless := s.cfg.Get("repl-diskless-sync") == "yes"
	delay := s.cfg.Get("repl-diskless-sync-delay") != "0"
	busy := s.imageBusy()
	r.lock()
	d, log := r.m.QueueLocked(rc.Replica, busy, diskless, delay)
	r.unlock()
	if log != "" {
		s.Logf("%s", log)
	}
	if d == repl.QueueStartNow {
		s.startFullSync(true)
	}
}

// startPendingSync starts the image replicas wait for once they waited
// repl-diskless-sync-delay, enough of them wait, or no delay applies
// (Redis's replicationStartPendingFork). The cron calls it.
func (s *Server) startPendingSync() {
	delay, _ := strconv.Atoi(s.cfg.Get("repl-diskless-sync-delay"))
	maxr, _ := strconv.Atoi(s.cfg.Get("repl-diskless-sync-max-replicas"))
	diskless := s.cfg.Get("repl-diskless-sync") == "yes"
	if !s.repl.m.Pending(diskless, time.Duration(delay)*time.Second, maxr) || s.imageBusy() {
		return
	}
	s.startFullSync(false)
}

// startFullSync starts an image for the replicas that wait for one: they
// take their place in the stream at the image's cut, when no command
// runs, so their positions and the image agree. lockHeld: the caller
// holds the exclusive lock.
func (s *Server) startFullSync(lockHeld bool) {
	r := &s.repl
	diskless := s.cfg.Get("repl-diskless-sync") == "yes"
	meta := s.imageMetaUnlocked()
	if !lockHeld {
		s.ks.Lock.Lock()
	}
	r.lock()
	socket := r.m.SocketTargetLocked(diskless)
	r.unlock()
	if !socket {
		if lockHeld {
			// A BGSAVE takes its image with the lock: started from here
			// it would wait for itself.
			go s.startFullSync(false)
			return
		}
		s.ks.Lock.Unlock()
		s.startDiskSync()
		return
	}
	if fs := s.cutForSync(true); fs != nil {
		// The image is a point-in-time snapshot walked while clients are
		// served (snapshot.go); encoded whole under the lock only if
		// another image is being walked.
		var img persist.Image
		if ci, err := s.cutImage(meta); err == nil {
			img = ci
		} else {
			img = s.encodedImage(meta)
		}
		s.Logf("Starting BGSAVE for SYNC with target: replicas sockets")
		go s.streamImage(fs, img)
	}
	if !lockHeld {
		s.ks.Lock.Unlock()
	}
}

// cutForSync attaches the replicas waiting for a full sync to the stream
// here and tells them its offset; nil when none waits.
func (s *Server) cutForSync(socket bool) *repl.Sync {
	r := &s.repl
	r.lock()
	defer r.unlock()
	fs := r.m.CutLocked(socket, s.backlogSize())
	if fs != nil {
		r.updateFeed()
	}
	return fs
}

// startDiskSync starts a BGSAVE whose file is sent to the replicas
// waiting; they take their place in the stream at its cut.
func (s *Server) startDiskSync() {
	r := &s.repl
	r.startMu.Lock()
	defer r.startMu.Unlock()
	var fs *repl.Sync
	err := s.pe.BGSaveAt(func() {
		fs = s.cutForSync(false)
		if fs != nil {
			s.Logf("Starting BGSAVE for SYNC with target: disk")
		}
	})
	if err == nil || fs == nil {
		return // done when the BGSAVE ends (diskSyncDone); or it waits for the next
	}
	r.m.FailSync(fs)
}

// streamImage sends img to fs's replicas as a streamed payload. The
// image goes through a relay child and back, as Redis's goes from its
// forked child through a pipe: the child is there to be seen and killed
// (the sync then fails), and it exits if the server dies. Where no child
// can start (the executable was removed by an upgrade, say), the server
// streams it itself rather than leave its replicas without a sync.
func (s *Server) streamImage(fs *repl.Sync, img persist.Image) {
	opts := persist.RDBOptions{
		Version:  Version,
		Checksum: s.cfg.Get("rdbchecksum") != "no",
		// rdb-key-save-delay applies here too, as it does to Redis's
		// child whatever it writes to.
		KeyDelay: func() time.Duration {
			us, _ := strconv.ParseInt(s.cfg.Get("rdb-key-save-delay"), 10, 64)
			return time.Duration(us) * time.Microsecond
		},
		Cancel: fs.Cancel,
	}
	child, out, err := s.pe.StartRelay()
	if err != nil {
		s.Warnf("Can't start the child for the RDB transfer (%s): the server sends it itself", persist.Strerror(err))
		s.repl.m.StreamSync(fs, func(w io.Writer) error {
			defer img.Release()
			return persist.WriteRDB(w, img, opts)
		})
		return
	}
	s.Logf("Background RDB transfer started by pid %d", child.Pid)
	go func() {
		defer img.Release()
		if err := persist.WriteRDB(child, img, opts); err != nil {
			child.Kill()
			return
		}
		child.End()
	}()
	go func() {
		// A child that dies ends the transfer even while it waits for a
		// slow replica's socket.
		select {
		case <-child.Dead():
			if ex := child.Wait(); ex.Code != 0 || ex.Signal != 0 {
				fs.CancelSync()
			}
		case <-fs.Done:
		}
	}()
	s.repl.m.StreamSync(fs, func(w io.Writer) error {
		defer out.Close()
		if _, err := io.Copy(w, out); err != nil {
			// Stopped by the child's death (the watcher above), or by the
			// replicas' (the child is killed, as Redis kills its own).
			ex, died := child.Exited()
			child.Kill()
			if died && errors.Is(err, persist.ErrAborted) {
				return childFailed(ex)
			}
			return err
		}
		return childFailed(child.Wait())
	})
}

// childFailed is a relay child's failure as Redis logs its child's, nil
// when it exited 0 (the image went through whole).
func childFailed(ex persist.ChildExit) error {
	switch {
	case ex.Signal != 0:
		return repl.TransferError("Background transfer terminated by signal " + strconv.Itoa(ex.Signal))
	case ex.Code != 0:
		return repl.TransferError("Background transfer error")
	}
	return nil
}

// diskSyncDone sends the file a BGSAVE for replication wrote to its
// replicas (the engine calls it when a BGSAVE ends).
func (s *Server) diskSyncDone(ok bool) { s.repl.m.FileSaved(ok, s.cfg.Get("dbfilename")) }

// abortReplSync gives up the image being streamed to replicas (FLUSHALL).
func (s *Server) abortReplSync() { s.repl.m.AbortStreamedSync() }

// functionsImage is an image of no keys: the functions are its meta's.
type functionsImage struct{ meta persist.ImageMeta }

func (i functionsImage) Meta() persist.ImageMeta { return i.meta }

func (functionsImage) Each(func(int, uint64, uint64, []byte, int) error) error { return nil }

func (functionsImage) Release() {}

// sendFunctionsRDB answers the SYNC or PSYNC of a peer that asked for
// the RDB alone with only the functions in it (REPLCONF rdb-only 1 and
// rdb-filter-only functions: redis-cli --functions-rdb), as Redis does:
// an RDB without keys, in a full sync's form. The peer does not become a
// replica. The exclusive lock is held (SYNC is lock_all).
func (s *Server) sendFunctionsRDB(c *Client, psync bool) {
	payload := persist.EncodeRDB(functionsImage{s.metaAtCut(s.imageMetaUnlocked())}, persist.RDBOptions{
		Version:  Version,
		Checksum: s.cfg.Get("rdbchecksum") != "no",
	})
	if psync {
		r := &s.repl
		r.lock()
		id, off := r.m.ID, r.m.Offset
		r.unlock()
		c.w.Buf = append(c.w.Buf, "+FULLRESYNC "+id+" "+strconv.FormatInt(off, 10)+"\r\n"...)
	}
	c.w.Buf = repl.AppendPayloadHeader(c.w.Buf, int64(len(payload)), nil)
	c.w.Buf = append(c.w.Buf, payload...)
	s.Logf("Replica %s asks for synchronization of the functions alone: sent %d bytes of RDB", c.addr, len(payload))
}
