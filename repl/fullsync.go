package repl

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/sluicedb/sluice/persist"
)

// Sending a full sync's image, after Redis 7.0's rdbSaveToSlavesSockets
// and sendBulkToSlave (the server makes the image; Master decides which
// replicas share it, QueueLocked and StartLocked):
//
//   - to replicas that take a streamed payload ("capa eof") the image is
//     streamed as it is encoded ("$EOF:<mark>"); a replica goes online at
//     its first ACK after it (it has loaded it); one that stops reading
//     for repl-timeout is dropped (CronLocked), and when none is left the
//     image is given up;
//   - otherwise the image is a file (a BGSAVE's), sent to each replica
//     ("$<length>") once written.

// errNoReplicaLeft ends a streamed image whose replicas all left.
var errNoReplicaLeft = errors.New("no replica left")

// TransferError is a streamed image's failure in the process that made
// it, as the log says it.
type TransferError string

func (e TransferError) Error() string { return string(e) }

// syncBuffered is how much payload may wait in a replica's output before
// the image waits for its socket.
const syncBuffered = 4 << 20

// fullResync tells a PSYNC replica the stream it gets after the payload:
// the replication id and the offset at the cut.
func (r *Replica) fullResync(id string, off int64) {
	if !r.PrePSYNC {
		r.Conn.Deliver([]byte("+FULLRESYNC " + id + " " + strconv.FormatInt(off, 10) + "\r\n"))
	}
}

// CutLocked starts an image for the replicas waiting for one (StartLocked)
// and tells each the offset of its cut; nil when none waits.
func (m *Master) CutLocked(socket bool, size int64) *Sync {
	fs, off := m.StartLocked(socket, size)
	if fs == nil {
		return nil
	}
	for _, r := range fs.Replicas {
		r.fullResync(m.ID, off)
	}
	return fs
}

// SyncRunning reports whether an image is being streamed to replicas
// (INFO's rdb_bgsave_in_progress counts it, as Redis counts its child).
func (m *Master) SyncRunning() bool {
	fs := m.Running()
	return fs != nil && fs.Socket
}

// AbortStreamedSync gives up the image being streamed to replicas
// (FLUSHALL): its replicas are dropped and sync again.
func (m *Master) AbortStreamedSync() {
	if fs := m.Running(); fs != nil && fs.Socket {
		fs.CancelSync()
	}
}

// FailSync ends fs, whose BGSAVE could not start: its replicas are told
// and dropped.
func (m *Master) FailSync(fs *Sync) {
	m.Log.Warnf("BGSAVE for replication failed")
	m.mu.Lock()
	m.EndLocked(fs)
	rs := append([]*Replica(nil), fs.Replicas...)
	m.mu.Unlock()
	for _, r := range rs {
		r.Conn.Deliver([]byte("-ERR BGSAVE failed, replication can't continue\r\n"))
		r.Conn.Kill()
	}
}

// StreamSync sends fs's replicas the image write encodes, as a streamed
// payload; write's error ends it (the replicas are dropped).
func (m *Master) StreamSync(fs *Sync, write func(w io.Writer) error) {
	mark := NewEOFMark()
	m.mu.Lock()
	rs := append([]*Replica(nil), fs.Replicas...)
	for _, r := range rs {
		r.Conn.Bulk(true)
		r.Conn.Deliver(AppendPayloadHeader(nil, -1, mark))
	}
	m.mu.Unlock()
	defer func() {
		for _, r := range rs {
			r.Conn.Bulk(false)
		}
	}()
	bw := bufio.NewWriterSize(&fanout{m: m, fs: fs}, 64*1024)
	err := write(bw)
	if err == nil {
		err = bw.Flush()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.EndLocked(fs)
	switch {
	case errors.Is(err, errNoReplicaLeft):
		m.Log.Warnf("Diskless rdb transfer, last replica dropped, killing fork child.")
		return
	case err != nil:
		var te TransferError
		if errors.As(err, &te) {
			m.Log.Warnf("%s", te)
		} else {
			m.Log.Warnf("Background transfer terminated by signal")
		}
		for _, r := range fs.Replicas {
			m.Log.Warnf("SYNC failed. BGSAVE child returned an error")
			r.Conn.Kill()
		}
		return
	}
	m.Log.Warnf("Diskless rdb transfer, done reading from pipe, %d replicas still up.", len(fs.Replicas))
	m.Log.Logf("Background RDB transfer terminated with success")
	for _, r := range fs.Replicas {
		r.Conn.Deliver(mark)
		m.SentStreamedLocked(r)
		m.Log.Logf("Streamed RDB transfer with replica %s succeeded (socket). Waiting for REPLCONF ACK from slave to enable streaming", r.Name())
	}
}

// fanout hands a streamed payload to its replicas, waiting while a
// replica's socket is behind; a replica that left is skipped, and when
// none is left the write fails (ending the image).
type fanout struct {
	m  *Master
	fs *Sync
}

func (t *fanout) Write(p []byte) (int, error) {
	t.m.mu.Lock()
	rs := append([]*Replica(nil), t.fs.Replicas...)
	t.m.mu.Unlock()
	if len(rs) == 0 {
		return 0, errNoReplicaLeft
	}
	for _, r := range rs {
		c := r.Conn
		c.Deliver(p)
		for c.Queued() > syncBuffered && !c.Closing() {
			if r.stalled.Load() == 0 {
				r.stalled.Store(time.Now().UnixMilli())
			}
			select {
			case <-t.fs.Cancel:
				return 0, persist.ErrAborted
			case <-time.After(time.Millisecond):
			}
		}
		r.stalled.Store(0)
	}
	return len(p), nil
}

// FileSaved sends the file a BGSAVE for replication wrote (named name)
// to its replicas, ok when it was written; the server calls it when a
// BGSAVE ends.
func (m *Master) FileSaved(ok bool, name string) {
	m.mu.Lock()
	fs := m.sync
	if fs == nil || fs.Socket {
		m.mu.Unlock()
		return
	}
	rs := append([]*Replica(nil), fs.Replicas...)
	if ok {
		// Nothing else goes to them while the file does: the cron's
		// newlines are for replicas still waiting.
		for _, r := range rs {
			r.state = SendBulk
		}
	}
	m.EndLocked(fs)
	m.mu.Unlock()
	if !ok {
		for _, r := range rs {
			m.Log.Warnf("SYNC failed. BGSAVE child returned an error")
			r.Conn.Kill()
		}
		return
	}
	// Opened now, while the file is the one this BGSAVE wrote (servers
	// in one process share the working directory).
	for _, r := range rs {
		f, err := os.Open(name)
		if err != nil {
			m.Log.Warnf("SYNC failed. Can't open/stat DB after BGSAVE: %s", persist.Strerror(err))
			r.Conn.Kill()
			continue
		}
		go m.sendFile(r, f)
	}
}

// sendFile sends the RDB file f to r ("$<length>\r\n<bytes>"), then puts
// it online.
func (m *Master) sendFile(r *Replica, f *os.File) {
	c := r.Conn
	defer f.Close()
	c.Bulk(true)
	defer c.Bulk(false)
	st, err := f.Stat()
	if err != nil {
		c.Kill()
		return
	}
	c.Deliver(AppendPayloadHeader(nil, st.Size(), nil))
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
			m.Log.Warnf("Read error sending DB to replica: %s", persist.Strerror(err))
			c.Kill()
			return
		}
	}
	if m.SentFile(r) {
		m.Log.Logf("Synchronization with replica %s succeeded", r.Name())
	}
	c.Signal()
}
