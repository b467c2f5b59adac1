package repl

import (
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/persist"
)

// What an RDB file says of the replication stream, after Redis 7.0's
// rdbPopulateSaveInfo and the repl-* AUX fields rdbLoad reads: the
// stream's id, its offset, and the database its last command was in, so
// a server restarted from the file can continue the stream (as a master,
// with its replicas; as a replica, with its master).

// loadAux is what the RDB being loaded at start-up said (under the lock).
type loadAux struct {
	id      string
	offset  int64
	db      int
	feeding bool // a master's backlog takes the DELs of expired keys
}

// SaveAuxLocked returns the replication AUX fields for an RDB cut now,
// nil when this server is in no replication chain. masterDB is the
// database its master's stream is in (-1: no master's client is kept).
func (m *Master) SaveAuxLocked(masterDB int) *persist.ReplAux {
	switch {
	case m.link == nil && m.buf != nil:
		return &persist.ReplAux{ID: m.ID, Offset: m.Offset, StreamDB: max(m.curDB, 0)}
	case m.link != nil && (masterDB >= 0 || m.cachedID != ""):
		return &persist.ReplAux{ID: m.ID, Offset: m.Offset, StreamDB: max(masterDB, 0)}
	}
	return nil
}

// LoadBeginLocked prepares loading the RDB at start-up: a master makes a
// backlog, where the keys found expired go as DELs (LoadFeedingLocked).
// It reports whether it made one. replica is Redis's !iAmMaster(): this
// server replicates, or its cluster node is a replica (whose link starts
// after the load).
func (m *Master) LoadBeginLocked(size int64, replica bool) bool {
	m.aux = loadAux{offset: -1, db: -1}
	if replica {
		return false
	}
	m.RebaseLocked(0, size)
	m.aux.feeding = true
	return true
}

// LoadFeedingLocked reports whether the RDB being loaded feeds the
// backlog (the deletions of the keys it finds expired).
func (m *Master) LoadFeedingLocked() bool { return m.aux.feeding && m.buf != nil }

// LoadAux notes a replication AUX field of the RDB being loaded. The AUX
// fields come before the keys: a master's backlog is placed at the
// file's offset at once, so the DELs of expired keys follow it.
func (m *Master) LoadAux(k, v string, size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch strings.ToLower(k) {
	case "repl-id":
		if len(v) == IDLen {
			m.aux.id = v
		}
	case "repl-offset":
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			m.aux.offset = n
			if m.aux.feeding && m.buf != nil && m.buf.Histlen() == 0 {
				m.RebaseLocked(n, size)
			}
		}
	case "repl-stream-db":
		if n, err := strconv.Atoi(v); err == nil {
			m.aux.db = n
		}
	}
}

// LoadEndLocked applies what the RDB said of the stream
// (loadDataFromDisk): a replica continues it as its cached master (the
// database that master's stream is in is returned; -1 otherwise); a
// master keeps it as its second id, so its replicas may continue, with
// the backlog of what expired meanwhile. Without it a master drops the
// backlog (the caller sees it gone).
func (m *Master) LoadEndLocked(replica bool) (masterDB int) {
	a := m.aux
	m.aux.feeding = false
	valid := a.id != "" && a.offset >= 0 && a.db >= 0
	switch {
	case valid && replica:
		m.Log.Logf("Before turning into a replica, using my own master parameters to synthesize a cached master: I may be able to synchronize with the new master with just a partial transfer.")
		m.ID = a.id
		m.Offset = a.offset
		m.cachedID = a.id
		return a.db
	case valid:
		m.ID2 = a.id
		m.Offset2 = a.offset + 1
	case !replica:
		m.FreeBacklogLocked()
		m.Offset = 0
	}
	return -1
}
