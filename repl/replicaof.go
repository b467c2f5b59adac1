package repl

import "strconv"

// The replica side of a server's replication state, after Redis 7.0's
// server.masterhost and server.cached_master: the link to its master,
// the replication id it asks that master to continue (the cached
// master's, or its own history's when it was a master), and the offsets
// it reports. Master's lock guards it, as it guards the stream the
// replica passes on to its own replicas.

// Link returns the link to the master, nil when this server is a master.
func (m *Master) Link() *Link {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.link
}

// LinkLocked is Link for a caller that holds the lock.
func (m *Master) LinkLocked() *Link { return m.link }

// SetLinkLocked makes l the link to the master (nil: this server is a
// master now) and returns the link it replaces.
func (m *Master) SetLinkLocked(l *Link) (old *Link) {
	old, m.link = m.link, l
	return old
}

// CacheMyselfLocked makes this server's own history what it asks its new
// master to continue (replicationCacheMasterUsingMyself): a master
// turning replica may be able to sync with a partial transfer.
func (m *Master) CacheMyselfLocked() {
	m.Log.Logf("Before turning into a replica, using my own master parameters to synthesize a cached master: I may be able to synchronize with the new master with just a partial transfer.")
	m.cachedID = m.ID
}

// CachedIDLocked is the cached master's replication id ("": none).
func (m *Master) CachedIDLocked() string { return m.cachedID }

// ForgetMasterLocked drops the cached master: this server's history ends
// (it was promoted, or a full sync replaces it).
func (m *Master) ForgetMasterLocked() { m.cachedID = "" }

// PsyncFrom is what the link asks its master to continue: the cached
// master's replication id and the offset of the next byte wanted, or
// "?" and -1 for a full sync.
func (m *Master) PsyncFrom() (string, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cachedID == "" {
		return "?", -1
	}
	return m.cachedID, m.Offset + 1
}

// PromoteLocked is the history's side of REPLICAOF NO ONE
// (replicationUnsetMaster): the master's id becomes the second one,
// valid up to this offset, and a new one starts. The caller makes the
// backlog and disconnects the replicas (they learn the new id).
func (m *Master) PromoteLocked() {
	m.cachedID = ""
	m.ShiftIDLocked()
	m.Log.Warnf("Setting secondary replication ID to %s, valid up to offset: %d. New replication ID is %s", m.ID2, m.Offset2, m.ID)
}

// ResumeLocked: the master accepted to continue this server's stream
// (replicationResurrectCachedMaster). id is the id it said ("": none);
// a new one becomes ours and the old one the second. It reports whether
// the id changed (the replicas must reconnect to learn it).
func (m *Master) ResumeLocked(id string) (changed bool) {
	changed = id != "" && id != m.cachedID
	if changed {
		m.Log.Warnf("Master replication ID changed to %s", id)
		m.ID2 = m.cachedID
		m.Offset2 = m.Offset + 1
		m.ID = id
		m.cachedID = id
	} else {
		m.ID = m.cachedID
	}
	return changed
}

// StreamStartedLocked: the master's stream starts being applied here.
// Its history is the cached master's, and the link's read count starts
// at this offset.
func (m *Master) StreamStartedLocked() {
	m.cachedID = m.ID
	m.readBase = m.Offset
	if m.link != nil {
		m.link.ResetReadOffset()
	}
}

// SyncedLocked: a full sync of the stream id, cut at offset, was loaded;
// that stream is this server's history now. The caller makes a new
// backlog.
func (m *Master) SyncedLocked(id string, offset int64) {
	m.ID = id
	m.ID2, m.Offset2 = NoID, -1
	m.Offset = offset
	m.cachedID = id
}

// ReadOffsets are INFO's slave_read_repl_offset (the master's offset up to
// which this replica read) and slave_repl_offset (up to which it
// applied). A replica with neither a master nor a cached master says 1
// for both, as Redis's INFO does.
func (m *Master) ReadOffsets() (read, applied int64) {
	applied, base, l, orphan := m.offsets()
	switch {
	case orphan:
		return 1, 1
	case l == nil || l.State() != StateConnected:
		return applied, applied
	}
	return base + l.ReadOffset(), applied
}

// ReplicaOffset is replicationGetSlaveOffset: the offset of its master's
// stream this replica applied, or 0 while it has neither a master nor a
// cached master. The cluster bus announces it, and a master hides a
// replica at 0 from CLUSTER SLOTS and SHARDS.
func (m *Master) ReplicaOffset() int64 {
	applied, _, _, orphan := m.offsets()
	if orphan {
		return 0
	}
	return applied
}

// offsets is the offset applied, the master's offset the link's read
// count starts at, the link, and whether this replica has neither a
// master nor a cached master: a full sync's payload loading, once Detach
// dropped the cached master and before the link is connected.
func (m *Master) offsets() (applied, base int64, l *Link, orphan bool) {
	m.mu.Lock()
	applied, base, l = m.Offset, m.readBase, m.link
	cached := m.cachedID != ""
	m.mu.Unlock()
	return applied, base, l, l != nil && !cached && l.State() != StateConnected
}

// LogLatestBacklog logs the end of the backlog (showLatestBacklog), when
// a replica reports an error to its master.
func (m *Master) LogLatestBacklog() {
	m.mu.Lock()
	var b []byte
	if buf := m.buf; buf != nil && buf.Histlen() > 0 {
		b = buf.Bytes(max(buf.First(), buf.Offset()-127))
	}
	m.mu.Unlock()
	if len(b) > 0 {
		m.Log.Warnf("Latest backlog is: '%s'", strconv.Quote(string(b)))
	}
}

// KillReplicas closes every replica's connection (they reconnect and,
// with PSYNC, learn of a new replication id).
func (m *Master) KillReplicas() {
	m.mu.Lock()
	rs := append([]*Replica(nil), m.replicas...)
	m.mu.Unlock()
	for _, r := range rs {
		r.Conn.Kill()
	}
}
