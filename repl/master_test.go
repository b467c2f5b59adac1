package repl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeConn is a replica's connection as a test sees it.
type fakeConn struct {
	mu      sync.Mutex
	out     bytes.Buffer
	killed  bool
	signals int
}

func (c *fakeConn) Deliver(b []byte) { c.mu.Lock(); c.out.Write(b); c.mu.Unlock() }
func (c *fakeConn) Signal()          { c.mu.Lock(); c.signals++; c.mu.Unlock() }
func (c *fakeConn) Kill()            { c.mu.Lock(); c.killed = true; c.mu.Unlock() }
func (c *fakeConn) Queued() int64    { return 0 }
func (c *fakeConn) Closing() bool    { return false }
func (c *fakeConn) Bulk(bool)        {}

func (c *fakeConn) String() string { c.mu.Lock(); defer c.mu.Unlock(); return c.out.String() }
func (c *fakeConn) Killed() bool   { c.mu.Lock(); defer c.mu.Unlock(); return c.killed }

// logBuf gathers log lines.
type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) Logf(f string, a ...any)  { l.add(fmt.Sprintf(f, a...)) }
func (l *logBuf) Warnf(f string, a ...any) { l.add(fmt.Sprintf(f, a...)) }
func (l *logBuf) add(s string)             { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *logBuf) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// onlineMaster is a master with a backlog and n online replicas.
func onlineMaster(n int) (*Master, []*Replica) {
	m := NewMaster()
	m.Lock()
	m.CreateBacklogLocked(MinBacklog)
	var rs []*Replica
	for i := 0; i < n; i++ {
		r := &Replica{Conn: &fakeConn{}, IP: "10.0.0.1", Port: 7000 + i}
		r.state = Online
		m.replicas = append(m.replicas, r)
		rs = append(rs, r)
	}
	m.Unlock()
	return m, rs
}

func TestWaitReleaseRule(t *testing.T) {
	cases := []struct {
		name     string
		off, n   int64
		acks     []int64 // per replica; -1: not online
		released bool
		acked    int64
	}{
		{"enough replicas acked", 100, 2, []int64{100, 150, 20}, true, 2},
		{"too few acked", 100, 3, []int64{100, 150, 20}, false, 0},
		{"an ack past the offset counts", 100, 1, []int64{101}, true, 1},
		{"replicas not online do not count", 100, 2, []int64{100, -1}, false, 0},
		{"no replica", 100, 1, nil, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, rs := onlineMaster(len(tc.acks))
			var got []int64
			m.Lock()
			m.AddWaitLocked(tc.off, tc.n, func(n int64) { got = append(got, n) })
			m.Unlock()
			for i, a := range tc.acks {
				if a < 0 {
					rs[i].state = WaitEnd
					continue
				}
				m.Ack(rs[i], a)
			}
			m.CheckWaits()
			if released := len(got) > 0; released != tc.released {
				t.Fatalf("released %v, want %v", released, tc.released)
			}
			if tc.released {
				if got[0] != tc.acked || m.NumWaits() != 0 {
					t.Fatalf("released with %d (%d left), want %d", got[0], m.NumWaits(), tc.acked)
				}
				m.CheckWaits()
				if len(got) != 1 {
					t.Fatal("released twice")
				}
			} else if m.NumWaits() != 1 {
				t.Fatalf("%d requests kept, want 1", m.NumWaits())
			}
		})
	}
}

func TestWaitTimeoutAndRelease(t *testing.T) {
	m, rs := onlineMaster(2)
	m.Ack(rs[0], 50)
	done := make(chan int64, 2)
	m.Lock()
	w := m.AddWaitLocked(50, 2, func(n int64) { done <- n })
	m.Unlock()
	m.WaitTimeout(w, 10*time.Millisecond)
	select {
	case n := <-done:
		if n != 1 {
			t.Fatalf("timed out with %d acked, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not released at its timeout")
	}
	m.ReleaseWait(w)
	m.Ack(rs[1], 50)
	m.CheckWaits()
	select {
	case <-done:
		t.Fatal("released twice")
	case <-time.After(20 * time.Millisecond):
	}
}

func TestLinkInfoWrite(t *testing.T) {
	const now = int64(1_000_000)
	cases := []struct {
		name string
		info LinkInfo
		want []string
	}{
		{"connected", LinkInfo{Host: "127.0.0.1", Port: 6380, State: StateConnected, LastIO: now - 2500, ReadOffset: 120, Offset: 100, Priority: "100", ReadOnly: true, Announced: true}, []string{
			"role:slave", "master_host:127.0.0.1", "master_port:6380", "master_link_status:up",
			"master_last_io_seconds_ago:2", "master_sync_in_progress:0",
			"slave_read_repl_offset:120", "slave_repl_offset:100",
			"slave_priority:100", "slave_read_only:1", "replica_announced:1",
		}},
		{"loading a payload", LinkInfo{Host: "h", Port: 1, State: StateTransfer, LastIO: now, DownSince: now - 3000, SyncTotal: 200, SyncRead: 50, SyncLastIO: now - 1000, Offset: 7, ReadOffset: 7, Priority: "5"}, []string{
			"role:slave", "master_host:h", "master_port:1", "master_link_status:down",
			"master_last_io_seconds_ago:-1", "master_sync_in_progress:1",
			"slave_read_repl_offset:7", "slave_repl_offset:7",
			"master_sync_total_bytes:200", "master_sync_read_bytes:50", "master_sync_left_bytes:150",
			"master_sync_perc:25.00", "master_sync_last_io_seconds_ago:1",
			"master_link_down_since_seconds:3",
			"slave_priority:5", "slave_read_only:0", "replica_announced:0",
		}},
		{"streamed payload of unknown size", LinkInfo{Host: "h", Port: 1, State: StateTransfer, SyncTotal: -1, SyncRead: 10, SyncLastIO: now}, []string{
			"role:slave", "master_host:h", "master_port:1", "master_link_status:down",
			"master_last_io_seconds_ago:-1", "master_sync_in_progress:1",
			"slave_read_repl_offset:0", "slave_repl_offset:0",
			"master_sync_total_bytes:0", "master_sync_read_bytes:10", "master_sync_left_bytes:-10",
			"master_sync_perc:0.00", "master_sync_last_io_seconds_ago:0",
			"master_link_down_since_seconds:-1",
			"slave_priority:", "slave_read_only:0", "replica_announced:0",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			tc.info.Write(func(f string, a ...any) { got = append(got, fmt.Sprintf(f, a...)) }, now)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestMasterInfoWrite(t *testing.T) {
	id, id2 := strings.Repeat("a", IDLen), NoID
	cases := []struct {
		name string
		info MasterInfo
		want []string
	}{
		{"no backlog", MasterInfo{Failover: FailoverNone, ID: id, ID2: id2, Offset2: -1, BacklogSize: 1048576}, []string{
			"connected_slaves:0", "master_failover_state:no-failover",
			"master_replid:" + id, "master_replid2:" + id2, "master_repl_offset:0", "second_repl_offset:-1",
			"repl_backlog_active:0", "repl_backlog_size:1048576", "repl_backlog_first_byte_offset:0", "repl_backlog_histlen:0",
		}},
		{"replicas, good replicas shown", MasterInfo{
			Replicas: []ReplicaInfo{{IP: "10.0.0.1", Port: 7000, State: Online, Offset: 90, Lag: 1}, {IP: "10.0.0.2", Port: 7001, State: WaitEnd}},
			Good:     1, ShowGood: true, Failover: FailoverWaitSync, ID: id, ID2: id2, Offset: 100, Offset2: -1,
			BacklogActive: true, BacklogSize: 1048576, BacklogFirst: 1, BacklogHistlen: 100,
		}, []string{
			"connected_slaves:2", "min_slaves_good_slaves:1",
			"slave0:ip=10.0.0.1,port=7000,state=online,offset=90,lag=1",
			"slave1:ip=10.0.0.2,port=7001,state=wait_bgsave,offset=0,lag=0",
			"master_failover_state:waiting-for-sync",
			"master_replid:" + id, "master_replid2:" + id2, "master_repl_offset:100", "second_repl_offset:-1",
			"repl_backlog_active:1", "repl_backlog_size:1048576", "repl_backlog_first_byte_offset:1", "repl_backlog_histlen:100",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			tc.info.Write(func(f string, a ...any) { got = append(got, fmt.Sprintf(f, a...)) })
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestMasterInfoSnapshot(t *testing.T) {
	m, rs := onlineMaster(2)
	rs[1].state = WaitStart
	m.Ack(rs[0], 0)
	m.Lock()
	m.FeedLocked(0, nil, []byte("SET"), []byte("k"), []byte("v"))
	i := m.InfoLocked(3, true, FailoverNone, MinBacklog)
	m.Unlock()
	if len(i.Replicas) != 2 || i.Replicas[0].State != Online || i.Replicas[1].State != WaitStart || i.Replicas[0].Port != 7000 {
		t.Fatalf("replicas %+v", i.Replicas)
	}
	if !i.BacklogActive || i.BacklogFirst != 1 || i.BacklogHistlen != i.Offset || i.Offset == 0 || i.Good != 3 {
		t.Fatalf("snapshot %+v", i)
	}
}

func TestAuxSaveAndLoad(t *testing.T) {
	id := strings.Repeat("b", IDLen)
	t.Run("save", func(t *testing.T) {
		m := NewMaster()
		m.Lock()
		defer m.Unlock()
		if a := m.SaveAuxLocked(-1); a != nil {
			t.Fatalf("a master without a backlog saves %+v", a)
		}
		m.CreateBacklogLocked(MinBacklog)
		m.FeedLocked(3, nil, []byte("PING"))
		if a := m.SaveAuxLocked(-1); a == nil || a.ID != m.ID || a.Offset != m.Offset || a.StreamDB != 3 {
			t.Fatalf("master: %+v", a)
		}
		m.SetLinkLocked(&Link{})
		if a := m.SaveAuxLocked(-1); a != nil {
			t.Fatalf("a replica without a master saves %+v", a)
		}
		if a := m.SaveAuxLocked(5); a == nil || a.StreamDB != 5 {
			t.Fatalf("replica with its master's client: %+v", a)
		}
		m.CacheMyselfLocked()
		if a := m.SaveAuxLocked(-1); a == nil || a.StreamDB != 0 {
			t.Fatalf("replica with a cached master: %+v", a)
		}
	})
	cases := []struct {
		name    string
		replica bool
		aux     [][2]string
		db      int    // LoadEndLocked's
		id2     string // the master's second id after
		off2    int64
		backlog bool
		offset  int64
	}{
		{"master continues its stream", false, [][2]string{{"repl-id", id}, {"repl-offset", "500"}, {"repl-stream-db", "2"}}, -1, id, 501, true, 500},
		{"master without the fields", false, nil, -1, NoID, -1, false, 0},
		{"a short id is ignored", false, [][2]string{{"repl-id", "abc"}, {"repl-offset", "500"}, {"repl-stream-db", "2"}}, -1, NoID, -1, false, 0},
		{"a bad offset is ignored", false, [][2]string{{"REPL-ID", id}, {"repl-offset", "x"}, {"repl-stream-db", "2"}}, -1, NoID, -1, false, 0},
		{"replica keeps its cached master", true, [][2]string{{"repl-id", id}, {"repl-offset", "77"}, {"repl-stream-db", "4"}}, 4, NoID, -1, false, 77},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMaster()
			m.Lock()
			if tc.replica {
				m.SetLinkLocked(&Link{})
			}
			made := m.LoadBeginLocked(MinBacklog, tc.replica)
			if made != !tc.replica || m.LoadFeedingLocked() != !tc.replica {
				t.Fatalf("backlog made %v, feeding %v", made, m.LoadFeedingLocked())
			}
			m.Unlock()
			for _, kv := range tc.aux {
				m.LoadAux(kv[0], kv[1], MinBacklog)
			}
			m.Lock()
			defer m.Unlock()
			if db := m.LoadEndLocked(tc.replica); db != tc.db {
				t.Fatalf("db %d, want %d", db, tc.db)
			}
			if m.ID2 != tc.id2 || m.Offset2 != tc.off2 || (m.Backlog() != nil) != tc.backlog || m.Offset != tc.offset {
				t.Fatalf("id2 %s off2 %d backlog %v offset %d", m.ID2, m.Offset2, m.Backlog() != nil, m.Offset)
			}
			if tc.backlog && m.Backlog().Offset() != tc.offset {
				t.Fatalf("backlog at %d, want %d", m.Backlog().Offset(), tc.offset)
			}
			if tc.replica && (m.ID != id || m.CachedIDLocked() != id) {
				t.Fatalf("replica: id %s cached %s", m.ID, m.CachedIDLocked())
			}
			if m.LoadFeedingLocked() {
				t.Fatal("still feeding after the load")
			}
		})
	}
}

func TestHandshakeSet(t *testing.T) {
	cases := []struct {
		opt, val string
		err      string
		want     Handshake
	}{
		{"listening-port", "6380", "", Handshake{Port: 6380}},
		{"LISTENING-PORT", "x", "ERR value is not an integer or out of range", Handshake{}},
		{"ip-address", "10.1.2.3", "", Handshake{IP: "10.1.2.3"}},
		{"ip-address", strings.Repeat("1", 46), "ERR REPLCONF ip-address provided by replica instance is too long: 46 bytes", Handshake{}},
		{"capa", "eof", "", Handshake{EOF: true}},
		{"capa", "PSYNC2", "", Handshake{PSYNC2: true}},
		{"capa", "other", "", Handshake{}},
		{"rdb-only", "1", "", Handshake{RDBOnly: true}},
		{"rdb-only", "2", "ERR value is out of range, must be positive", Handshake{}},
		{"rdb-filter-only", "", "", Handshake{}},
		{"rdb-filter-only", "functions", "", Handshake{FunctionsOnly: true}},
		{"rdb-filter-only", "functions keys", "ERR Unsupported rdb-filter-only option: keys", Handshake{}},
		{"ip-addreſs", "x", "ERR Unrecognized REPLCONF option: ip-addreſs", Handshake{}},
		{"nope", "1", "ERR Unrecognized REPLCONF option: nope", Handshake{}},
	}
	for _, tc := range cases {
		var h Handshake
		if err := h.Set([]byte(tc.opt), []byte(tc.val)); err != tc.err || h != tc.want {
			t.Errorf("%s %s: %q %+v, want %q %+v", tc.opt, tc.val, err, h, tc.err, tc.want)
		}
	}
}

func TestNewReplica(t *testing.T) {
	c := &fakeConn{}
	r := NewReplica(c, "192.168.1.5:40000", nil)
	if r.IP != "192.168.1.5" || r.Port != 0 || r.Name() != "192.168.1.5:40000" {
		t.Fatalf("%+v %s", r, r.Name())
	}
	r = NewReplica(c, "192.168.1.5:40000", &Handshake{Port: 6380, IP: "10.0.0.9", PSYNC2: true, EOF: true})
	if r.IP != "10.0.0.9" || r.Port != 6380 || !r.PSYNC2 || !r.EOF || r.Name() != "10.0.0.9:6380" {
		t.Fatalf("%+v %s", r, r.Name())
	}
	m := NewMaster()
	m.Handshake(c).Port = 7
	if h := m.HandshakeOf(c); h == nil || h.Port != 7 {
		t.Fatalf("handshake %+v", h)
	}
	m.ForgetHandshake(c)
	if m.HandshakeOf(c) != nil {
		t.Fatal("handshake kept")
	}
}

func TestTryPartial(t *testing.T) {
	m := NewMaster()
	m.Lock()
	m.CreateBacklogLocked(MinBacklog)
	m.FeedLocked(0, nil, []byte("PING"))
	m.Unlock()
	off := m.Offset
	cases := []struct {
		name   string
		id     string
		off    int64
		psync2 bool
		ok     bool
		line   string
		errs   int64
	}{
		{"full sync asked", "?", -1, false, false, "", 0},
		{"unknown id", strings.Repeat("c", IDLen), 1, false, false, "", 1},
		{"offset past the backlog", m.ID, off + 2, false, false, "", 1},
		{"continues", m.ID, 1, false, true, "+CONTINUE\r\n", 0},
		{"continues, saying its id", m.ID, off + 1, true, true, "+CONTINUE " + m.ID + "\r\n", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, oks := m.SyncPartialErr.Load(), m.SyncPartialOK.Load()
			r := &Replica{Conn: &fakeConn{}, PSYNC2: tc.psync2}
			line, ok := m.TryPartial(r, tc.id, tc.off)
			if ok != tc.ok || line != tc.line || m.SyncPartialErr.Load()-errs != tc.errs {
				t.Fatalf("%q %v, errors +%d", line, ok, m.SyncPartialErr.Load()-errs)
			}
			if ok && (m.SyncPartialOK.Load() != oks+1 || m.State(r) != Online || !r.Streaming()) {
				t.Fatal("an accepted replica is online and streamed")
			}
		})
	}
}

func TestWrittenKeysSweep(t *testing.T) {
	var w WrittenKeys
	w.Add(0, []byte("a"))
	w.Add(0, []byte("b"))
	w.Add(1, []byte("a"))
	w.Add(0, []byte("a"))
	if w.Len() != 3 {
		t.Fatalf("%d keys", w.Len())
	}
	seen := map[string]bool{}
	w.Sweep(func(db int, key []byte) bool {
		seen[fmt.Sprintf("%d:%s", db, key)] = true
		if db == 0 && string(key) == "b" {
			w.Add(2, []byte("new")) // added meanwhile: stays
		}
		return db == 1
	})
	if len(seen) != 3 || w.Len() != 2 {
		t.Fatalf("seen %v, %d kept", seen, w.Len())
	}
	seen = map[string]bool{}
	w.Sweep(func(db int, key []byte) bool { seen[fmt.Sprintf("%d:%s", db, key)] = true; return false })
	if !seen["1:a"] || !seen["2:new"] || w.Len() != 0 {
		t.Fatalf("seen %v, %d kept", seen, w.Len())
	}
}

func TestStreamSync(t *testing.T) {
	log := &logBuf{}
	m := NewMaster()
	m.Log = log
	var conns []*fakeConn
	m.Lock()
	for i := 0; i < 2; i++ {
		c := &fakeConn{}
		conns = append(conns, c)
		m.AttachLocked(&Replica{Conn: c, EOF: true, Port: 7000 + i, IP: "h"}, MinBacklog, false)
	}
	fs := m.CutLocked(true, MinBacklog)
	m.Unlock()
	if fs == nil || len(fs.Replicas) != 2 {
		t.Fatal("no sync cut")
	}
	for _, c := range conns {
		if want := "+FULLRESYNC " + m.ID + " 0\r\n"; c.String() != want {
			t.Fatalf("replica told %q, want %q", c.String(), want)
		}
	}
	m.StreamSync(fs, func(w io.Writer) error {
		w.Write([]byte("REDIS-IMAGE"))
		return w.(*bufio.Writer).Flush()
	})
	for i, c := range conns {
		out := strings.TrimPrefix(c.String(), "+FULLRESYNC "+m.ID+" 0\r\n$EOF:")
		mark := out[:EOFMarkLen]
		if out != mark+"\r\nREDIS-IMAGE"+mark {
			t.Fatalf("payload %q", c.String())
		}
		r := fs.Replicas[i]
		if m.State(r) != Online || r.Streaming() {
			t.Fatal("a replica sent a streamed payload is online, and streamed once it acknowledges it")
		}
		m.Ack(r, 0)
		if !r.Streaming() || !log.has(fmt.Sprintf("Synchronization with replica h:%d succeeded", 7000+i)) {
			t.Fatal("not streamed after its ACK")
		}
	}
	if m.Running() != nil || !log.has("Diskless rdb transfer, done reading from pipe, 2 replicas still up.") {
		t.Fatalf("sync not ended: %v", log.lines)
	}

	// Every replica left: the image is given up.
	c := &fakeConn{}
	m.Lock()
	m.AttachLocked(&Replica{Conn: c, EOF: true}, MinBacklog, false)
	fs = m.CutLocked(true, MinBacklog)
	m.Unlock()
	m.Remove(c)
	m.StreamSync(fs, func(w io.Writer) error {
		w.Write(make([]byte, 100<<10))
		return w.(*bufio.Writer).Flush()
	})
	if !log.has("Diskless rdb transfer, last replica dropped, killing fork child.") || m.Running() != nil {
		t.Fatalf("log %v", log.lines)
	}

	// The image failed: its replicas are dropped.
	c = &fakeConn{}
	m.Lock()
	m.AttachLocked(&Replica{Conn: c, EOF: true}, MinBacklog, false)
	fs = m.CutLocked(true, MinBacklog)
	m.Unlock()
	m.StreamSync(fs, func(io.Writer) error { return errors.New("disk on fire") })
	if !c.Killed() || !log.has("SYNC failed. BGSAVE child returned an error") {
		t.Fatal("replica kept after a failed image")
	}
}

func TestFileSaved(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("dump.rdb", []byte("RDBFILE"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := &logBuf{}
	m := NewMaster()
	m.Log = log
	c := &fakeConn{}
	r := &Replica{Conn: c, IP: "h", Port: 1}
	m.Lock()
	m.AttachLocked(r, MinBacklog, false)
	fs := m.CutLocked(false, MinBacklog)
	m.Unlock()
	if fs == nil || m.Running() != fs {
		t.Fatal("no sync cut")
	}
	m.FileSaved(true, filepath.Join(".", "dump.rdb"))
	deadline := time.Now().Add(5 * time.Second)
	for !r.Streaming() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !r.Streaming() || m.State(r) != Online || m.Running() != nil {
		t.Fatal("replica not online after the file")
	}
	if want := "+FULLRESYNC " + m.ID + " 0\r\n$7\r\nRDBFILE"; c.String() != want {
		t.Fatalf("sent %q, want %q", c.String(), want)
	}
	if !log.has("Synchronization with replica h:1 succeeded") {
		t.Fatalf("log %v", log.lines)
	}

	// A failed BGSAVE drops the replicas.
	c2 := &fakeConn{}
	m.Lock()
	m.AttachLocked(&Replica{Conn: c2}, MinBacklog, false)
	m.CutLocked(false, MinBacklog)
	m.Unlock()
	m.FileSaved(false, "dump.rdb")
	if !c2.Killed() || m.Running() != nil {
		t.Fatal("replica kept after a failed BGSAVE")
	}
}
