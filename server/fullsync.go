package server

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/repl"
)

// Full syncs: making and sending the image replicas wait for (repl.Master
// decides when, and which replicas share it), after Redis 7.0's
// startBgsaveForReplication and its socket and disk targets.
//
//   - To replicas that take a streamed payload ("capa eof") when
//     repl-diskless-sync is yes, the image is streamed as it is encoded
//     ("$EOF:<mark>"); a replica goes online at its first ACK after it
//     (it has loaded it); one that stops reading for repl-timeout is
//     dropped, and when none is left the image is given up.
//   - Otherwise a BGSAVE writes the image to dbfilename, then the file is
//     sent to each replica ("$<length>").

// errNoReplicaLeft ends a streamed image whose replicas all left.
var errNoReplicaLeft = errors.New("no replica left")

// replSyncRunning reports whether an image is being streamed to replicas
// (INFO's rdb_bgsave_in_progress counts it, as Redis counts its child).
func (s *Server) replSyncRunning() bool {
	fs := s.repl.m.Running()
	return fs != nil && fs.Socket
}

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
	d, off, log := r.m.QueueLocked(rc.Replica, busy, diskless, delay)
	if d == repl.QueueAttached {
		s.sendFullResync(rc.Replica, r.m.ID, off)
	}
	r.unlock()
	if log != "" {
		s.Logf("%s", log)
	}
	if d == repl.QueueStartNow {
		s.startFullSync(true)
	}
}

// sendFullResync tells a PSYNC replica the stream it gets after the
// payload: the replication id and the offset at the cut.
func (s *Server) sendFullResync(rp *repl.Replica, id string, off int64) {
	if !rp.PrePSYNC {
		rp.Conn.Deliver([]byte("+FULLRESYNC " + id + " " + strconv.FormatInt(off, 10) + "\r\n"))
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
		s.Logf("Background RDB transfer started by pid %d", os.Getpid())
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
	fs, off := r.m.StartLocked(socket, s.backlogSize())
	if fs == nil {
		return nil
	}
	r.updateFeed()
	for _, rp := range fs.Replicas {
		s.sendFullResync(rp, r.m.ID, off)
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
	s.Warnf("BGSAVE for replication failed")
	r.lock()
	r.m.EndLocked(fs)
	rs := append([]*repl.Replica(nil), fs.Replicas...)
	r.unlock()
	for _, rp := range rs {
		rp.Conn.Deliver([]byte("-ERR BGSAVE failed, replication can't continue\r\n"))
		rp.Conn.Kill()
	}
}

// streamImage sends img to fs's replicas as a streamed payload.
func (s *Server) streamImage(fs *repl.Sync, img persist.Image) {
	r := &s.repl
	mark := repl.NewEOFMark()
	r.lock()
	for _, rp := range fs.Replicas {
		rp.Conn.Deliver(repl.AppendPayloadHeader(nil, -1, mark))
	}
	r.unlock()
	w := bufio.NewWriterSize(&syncFanout{s: s, fs: fs}, 64*1024)
	err := persist.WriteRDB(w, img, persist.RDBOptions{
		Version:  Version,
		Checksum: s.cfg.Get("rdbchecksum") != "no",
		// rdb-key-save-delay applies here too, as it does to Redis's
		// child whatever it writes to.
		KeyDelay: func() time.Duration {
			us, _ := strconv.ParseInt(s.cfg.Get("rdb-key-save-delay"), 10, 64)
			return time.Duration(us) * time.Microsecond
		},
		Cancel: fs.Cancel,
	})
	img.Release()
	r.lock()
	defer r.unlock()
	defer r.m.EndLocked(fs)
	switch {
	case errors.Is(err, errNoReplicaLeft):
		s.Warnf("Diskless rdb transfer, last replica dropped, killing fork child.")
		return
	case err != nil:
		s.Warnf("Background transfer terminated by signal")
		for _, rp := range fs.Replicas {
			s.Warnf("SYNC failed. BGSAVE child returned an error")
			rp.Conn.Kill()
		}
		return
	}
	s.Warnf("Diskless rdb transfer, done reading from pipe, %d replicas still up.", len(fs.Replicas))
	s.Logf("Background RDB transfer terminated with success")
	for _, rp := range fs.Replicas {
		rp.Conn.Deliver(mark)
		r.m.SentStreamedLocked(rp)
		s.Logf("Streamed RDB transfer with replica %s succeeded (socket). Waiting for REPLCONF ACK from slave to enable streaming", rp.Name())
	}
}

// syncFanout hands a streamed payload to its replicas, waiting while a
// replica's socket is behind; a replica that left is skipped, and when
// none is left the write fails (ending the image).
type syncFanout struct {
	s  *Server
	fs *repl.Sync
}

// syncBuffered is how much payload may wait in a replica's output before
// the image waits for its socket.
const syncBuffered = 4 << 20

func (t *syncFanout) Write(p []byte) (int, error) {
	r := &t.s.repl
	r.lock()
	rs := append([]*repl.Replica(nil), t.fs.Replicas...)
	r.unlock()
	if len(rs) == 0 {
		return 0, errNoReplicaLeft
	}
	for _, rp := range rs {
		c := rp.Conn
		c.Deliver(p)
		for c.Queued() > syncBuffered && !c.Closing() {
			if rp.Stalled().Load() == 0 {
				rp.Stalled().Store(time.Now().UnixMilli())
			}
			select {
			case <-t.fs.Cancel:
				return 0, persist.ErrAborted
			case <-time.After(time.Millisecond):
			}
		}
		rp.Stalled().Store(0)
	}
	return len(p), nil
}

// diskSyncDone sends the file a BGSAVE for replication wrote to its
// replicas once it is written (the engine calls it when a BGSAVE ends).
func (s *Server) diskSyncDone(ok bool) {
	r := &s.repl
	r.lock()
	fs := r.m.RunningLocked()
	if fs == nil || fs.Socket {
		r.unlock()
		return
	}
	rs := append([]*repl.Replica(nil), fs.Replicas...)
	r.m.EndLocked(fs)
	r.unlock()
	if !ok {
		for _, rp := range rs {
			s.Warnf("SYNC failed. BGSAVE child returned an error")
			rp.Conn.Kill()
		}
		return
	}
	// Opened now, while the file is the one this BGSAVE wrote (servers
	// in one process share the working directory).
	name := s.cfg.Get("dbfilename")
	for _, rp := range rs {
		f, err := os.Open(name)
		if err != nil {
			s.Warnf("SYNC failed. Can't open/stat DB after BGSAVE: %s", strerror(err))
			rp.Conn.Kill()
			continue
		}
		go s.sendFile(rp, f)
	}
}

// sendFile sends the RDB file f to rp ("$<length>\r\n<bytes>"), then puts
// it online.
func (s *Server) sendFile(rp *repl.Replica, f *os.File) {
	c := rp.Conn
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		c.Kill()
		return
	}
	c.Deliver(repl.AppendPayloadHeader(nil, st.Size(), nil))
	buf := make([]byte, 64*1024)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			c.Deliver(buf[:n])
			for c.Queued() > syncBuffered && !c.Closing() {
				time.Sleep(time.Millisecond)
			}
			if c.Closing() {
				return
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			s.Warnf("Read error sending DB to replica: %s", strerror(err))
			c.Kill()
			return
		}
	}
	if s.repl.m.SentFile(rp) {
		s.Logf("Synchronization with replica %s succeeded", rp.Name())
	}
	c.Signal()
}

// abortReplSync gives up the image being streamed to replicas (FLUSHALL):
// its replicas are dropped and sync again.
func (s *Server) abortReplSync() {
	if fs := s.repl.m.Running(); fs != nil && fs.Socket {
		fs.CancelSync()
	}
}
