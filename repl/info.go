package repl

import "time"

// INFO's replication section, after Redis 7.0's genRedisInfoString: the
// state is read at one moment into a snapshot (MasterInfo, LinkInfo),
// then written out.

// LinkInfo is what INFO replication and ROLE say of a replica's link to
// its master.
type LinkInfo struct {
	Host string
	Port int
	// State is the link's; StateTransfer while a payload loads.
	State State
	// LastIO and DownSince are unix ms (0: none, up).
	LastIO, DownSince int64
	// A full sync's progress: the payload's size (-1: streamed), the
	// bytes read, the unix ms of the last read.
	SyncTotal, SyncRead, SyncLastIO int64
	// ReadOffset and Offset are the master's offsets read and applied.
	ReadOffset, Offset int64

	// The server's settings: replica-priority, replica-read-only,
	// replica-announced.
	Priority            string
	ReadOnly, Announced bool
}

// LinkInfo reads the replica's side; nil when this server is a master.
func (m *Master) LinkInfo() *LinkInfo {
	l := m.Link()
	if l == nil {
		return nil
	}
	i := &LinkInfo{Host: l.Host, Port: l.Port, State: l.State(), LastIO: l.LastIO(), DownSince: l.DownSince()}
	if m.Loading.Load() != LoadingNone {
		i.State = StateTransfer
	}
	i.SyncTotal, i.SyncRead, i.SyncLastIO = l.Sync()
	i.ReadOffset, i.Offset = m.ReadOffsets()
	return i
}

// Write writes INFO replication's replica part; now is the unix ms.
func (i *LinkInfo) Write(f func(format string, args ...any), now int64) {
	f("role:slave")
	f("master_host:%s", i.Host)
	f("master_port:%d", i.Port)
	st := i.State
	f("master_link_status:%s", map[bool]string{true: "up", false: "down"}[st == StateConnected])
	last := int64(-1)
	if i.LastIO != 0 && st == StateConnected {
		last = (now - i.LastIO) / 1000
	}
	f("master_last_io_seconds_ago:%d", last)
	f("master_sync_in_progress:%d", b2i(st == StateTransfer))
	f("slave_read_repl_offset:%d", i.ReadOffset)
	f("slave_repl_offset:%d", i.Offset)
	if st == StateTransfer {
		total, got := max(i.SyncTotal, 0), i.SyncRead
		perc := 0.0
		if total > 0 {
			perc = float64(got) / float64(total) * 100
		}
		f("master_sync_total_bytes:%d", total)
		f("master_sync_read_bytes:%d", got)
		f("master_sync_left_bytes:%d", total-got)
		f("master_sync_perc:%.2f", perc)
		f("master_sync_last_io_seconds_ago:%d", (now-i.SyncLastIO)/1000)
	}
	if st != StateConnected {
		since := int64(-1)
		if i.DownSince != 0 {
			since = (now - i.DownSince) / 1000
		}
		f("master_link_down_since_seconds:%d", since)
	}
	f("slave_priority:%s", i.Priority)
	f("slave_read_only:%d", b2i(i.ReadOnly))
	f("replica_announced:%d", b2i(i.Announced))
}

// MasterInfo is INFO replication's master part.
type MasterInfo struct {
	Replicas []ReplicaInfo
	// Good is min_slaves_good_slaves, shown when ShowGood.
	Good     int64
	ShowGood bool
	Failover string // master_failover_state

	ID, ID2         string
	Offset, Offset2 int64

	BacklogActive                             bool
	BacklogSize, BacklogFirst, BacklogHistlen int64
}

// ReplicaInfo is a slaveN line.
type ReplicaInfo struct {
	IP          string
	Port        int
	State       ReplicaState
	Offset, Lag int64
}

// InfoLocked reads the master part: good is the count of good replicas,
// shown when showGood (min-replicas-to-write and its lag are set).
func (m *Master) InfoLocked(good int64, showGood bool, failover string, backlogSize int64) MasterInfo {
	now := time.Now().UnixMilli()
	i := MasterInfo{Good: good, ShowGood: showGood, Failover: failover, ID: m.ID, ID2: m.ID2, Offset: m.Offset, Offset2: m.Offset2, BacklogSize: backlogSize}
	for _, r := range m.replicas {
		lag := int64(0)
		if r.state == Online {
			lag = (now - r.ackTime.Load()) / 1000
		}
		i.Replicas = append(i.Replicas, ReplicaInfo{IP: r.IP, Port: r.Port, State: r.state, Offset: r.ackOff.Load(), Lag: lag})
	}
	if m.buf != nil {
		i.BacklogActive, i.BacklogFirst, i.BacklogHistlen = true, m.buf.First(), m.buf.Histlen()
	}
	return i
}

// Write writes the master part: connected_slaves, the slaveN lines, the
// ids, offsets and backlog figures.
func (i *MasterInfo) Write(f func(format string, args ...any)) {
	f("connected_slaves:%d", len(i.Replicas))
	if i.ShowGood {
		f("min_slaves_good_slaves:%d", i.Good)
	}
	for n, r := range i.Replicas {
		f("slave%d:ip=%s,port=%d,state=%s,offset=%d,lag=%d", n, r.IP, r.Port, r.State, r.Offset, r.Lag)
	}
	f("master_failover_state:%s", i.Failover)
	f("master_replid:%s", i.ID)
	f("master_replid2:%s", i.ID2)
	f("master_repl_offset:%d", i.Offset)
	f("second_repl_offset:%d", i.Offset2)
	f("repl_backlog_active:%d", b2i(i.BacklogActive))
	f("repl_backlog_size:%d", i.BacklogSize)
	f("repl_backlog_first_byte_offset:%d", i.BacklogFirst)
	f("repl_backlog_histlen:%d", i.BacklogHistlen)
}
