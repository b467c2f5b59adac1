package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeHost is a Host without a server: configuration from a map, keys
// counted per slot from a set.
type fakeHost struct {
	mu   sync.Mutex
	cfg  map[string]string
	keys map[string]bool
	logs []string
}

func newFakeHost(t *testing.T) *fakeHost {
	return &fakeHost{cfg: map[string]string{
		"cluster-config-file":                 filepath.Join(t.TempDir(), "nodes.conf"),
		"cluster-node-timeout":                "15000",
		"cluster-require-full-coverage":       "yes",
		"cluster-allow-reads-when-down":       "no",
		"cluster-allow-pubsubshard-when-down": "yes",
		"cluster-preferred-endpoint-type":     "ip",
		"cluster-allow-replica-migration":     "yes",
		"bind":                                "127.0.0.1",
		"port":                                "7000",
	}, keys: map[string]bool{}}
}

func (h *fakeHost) Log(level int, msg string) {
	h.mu.Lock()
	h.logs = append(h.logs, msg)
	h.mu.Unlock()
}
func (h *fakeHost) Config(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg[name]
}
func (h *fakeHost) Fatal(msg string)                 { panic(msg) }
func (h *fakeHost) Port() int                        { return atoi(h.Config("port")) }
func (h *fakeHost) ReplicaOf(string, int)            {}
func (h *fakeHost) Promote()                         {}
func (h *fakeHost) ReplOffset() int64                { return 0 }
func (h *fakeHost) MasterLink() (bool, int64, int64) { return false, 0, 0 }
func (h *fakeHost) KeyCount() int                    { return len(h.keys) }
func (h *fakeHost) GetKeysInSlot(int, int) []string  { return nil }
func (h *fakeHost) DelKeysInSlot(int) int            { return 0 }
func (h *fakeHost) FlushAll()                        {}
func (h *fakeHost) Publish([]byte, []byte, bool)     {}
func (h *fakeHost) HasSubscribers(bool) bool         { return false }
func (h *fakeHost) UnsubscribeShardSlot(int)         {}
func (h *fakeHost) PauseWrites(int64)                {}
func (h *fakeHost) UnpauseWrites()                   {}
func (h *fakeHost) KeyExists(key []byte) bool        { return h.keys[string(key)] }
func (h *fakeHost) CountKeysInSlot(slot int) int {
	n := 0
	for k := range h.keys {
		if KeySlotString(k) == slot {
			n++
		}
	}
	return n
}

// TestCheck covers getNodeByQuery's decisions on a table built by hand:
// this node serves slots 0-8191, node B the rest; slot of "foo" (12182)
// is B's, "bar" (5061) is ours.
func TestCheck(t *testing.T) {
	h := newFakeHost(t)
	c, err := New(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.unlockConfig()
	b := newNode(strings.Repeat("b", 40), FlagMaster)
	b.ip, b.port = "10.0.0.2", 7001
	c.mu.Lock()
	c.addNode(b)
	for s := 0; s < Slots; s++ {
		if s < 8192 {
			c.addSlot(c.myself, s)
		} else {
			c.addSlot(b, s)
		}
	}
	c.state = stateOK
	c.unlock()
	q := func(keys ...string) *Query {
		qq := &Query{}
		for _, k := range keys {
			qq.Keys = append(qq.Keys, []byte(k))
		}
		return qq
	}
	errOf := func(qq *Query) string { return c.Error(c.Check(qq, h), false) }
	for _, tc := range []struct {
		q    *Query
		want string
	}{
		{q(), ""},
		{q("bar"), ""},
		{q("foo"), "MOVED 12182 10.0.0.2:7001"},
		{q("bar", "foo"), "CROSSSLOT Keys in request don't hash to the same slot"},
		{q("{bar}1", "{bar}2", "bar"), ""},
	} {
		if got := errOf(tc.q); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.q.Keys, got, tc.want)
		}
	}
	// Slot 5061 ("bar") migrating to B: present keys are served, missing
	// ones get ASK, a mix gets TRYAGAIN; MIGRATE is served.
	c.mu.Lock()
	c.setMigrating(5061, b)
	c.unlock()
	h.keys["bar"] = true
	for _, tc := range []struct {
		q    *Query
		want string
	}{
		{q("bar"), ""},
		{q("{bar}x"), "ASK 5061 10.0.0.2:7001"},
		{q("bar", "{bar}x"), "TRYAGAIN Multiple keys request during rehashing of slot"},
		{&Query{Keys: [][]byte{[]byte("{bar}x")}, Migrate: true}, ""},
	} {
		if got := errOf(tc.q); got != tc.want {
			t.Errorf("migrating %q: %q, want %q", tc.q.Keys, got, tc.want)
		}
	}
	// Slot 12182 ("foo") importing from B: served only after ASKING, and
	// several keys only when they are all here.
	c.mu.Lock()
	c.setImporting(12182, b)
	c.unlock()
	h.keys["foo"] = true
	for _, tc := range []struct {
		q    *Query
		want string
	}{
		{q("foo"), "MOVED 12182 10.0.0.2:7001"},
		{&Query{Keys: [][]byte{[]byte("foo")}, Asking: true}, ""},
		{&Query{Keys: [][]byte{[]byte("foo"), []byte("{foo}x")}, Asking: true}, "TRYAGAIN Multiple keys request during rehashing of slot"},
	} {
		if got := errOf(tc.q); got != tc.want {
			t.Errorf("importing %+v: %q, want %q", tc.q, got, tc.want)
		}
	}
	// The cluster down: every keyed command, or only writes with
	// cluster-allow-reads-when-down; sharded pub/sub by its own setting.
	c.mu.Lock()
	c.state = stateFail
	c.unlock()
	if got := errOf(q("bar")); got != "CLUSTERDOWN The cluster is down" {
		t.Errorf("down: %q", got)
	}
	if got := errOf(&Query{Keys: [][]byte{[]byte("bar")}, PubSubShard: true}); got != "" {
		t.Errorf("down, sharded pub/sub allowed: %q", got)
	}
	h.cfg["cluster-allow-reads-when-down"] = "yes"
	if got := errOf(q("bar")); got != "" {
		t.Errorf("down, reads allowed: %q", got)
	}
	if got := errOf(&Query{Keys: [][]byte{[]byte("bar")}, Write: true}); got != "CLUSTERDOWN The cluster is down and only accepts read commands" {
		t.Errorf("down, write: %q", got)
	}
	c.mu.Lock()
	c.state = stateOK
	c.delSlot(100)
	c.unlock()
	if got := errOf(q("{06S}")); KeySlotString("06S") == 100 && got != "CLUSTERDOWN Hash slot not served" {
		t.Errorf("unbound: %q", got)
	}
	// A replica serves its master's slots to READONLY clients' reads.
	c.mu.Lock()
	c.closeAllSlots()
	c.myself.flags = FlagMyself | FlagSlave
	c.myself.slaveOf = b
	for s := 0; s < 8192; s++ {
		c.delSlot(s)
		c.addSlot(b, s)
	}
	c.unlock()
	h.cfg["cluster-preferred-endpoint-type"] = "hostname"
	for _, tc := range []struct {
		q    *Query
		want string
	}{
		{q("bar"), "MOVED 5061 ?:7001"},
		{&Query{Keys: [][]byte{[]byte("bar")}, ReadOnly: true}, ""},
		{&Query{Keys: [][]byte{[]byte("bar")}, ReadOnly: true, WriteTx: true}, "MOVED 5061 ?:7001"},
	} {
		if got := errOf(tc.q); got != tc.want {
			t.Errorf("replica %+v: %q, want %q", tc.q, got, tc.want)
		}
	}
}

// TestNodesConfRoundTrip: a nodes.conf as redis-server writes it (with
// hostnames, a failed node, migrating and importing slots) loads, and
// saving it writes the same lines back.
func TestNodesConfRoundTrip(t *testing.T) {
	const conf = `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host-4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 1 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383
6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 slave,fail 67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 0 1426238316232 2 connected
824fe116063bc5fcf9f4ffd895bc17aee7731ac3 127.0.0.1:30006@31006 slave 292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 0 1426238317741 3 connected
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001,host-1 myself,master - 0 0 1 connected 0-5460 [100->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f] [5461-<-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]
vars currentEpoch 6 lastVoteEpoch 3
`
	h := newFakeHost(t)
	h.cfg["port"], h.cfg["cluster-port"], h.cfg["cluster-announce-hostname"] = "30001", "31001", "host-1"
	os.WriteFile(h.cfg["cluster-config-file"], []byte(conf), 0o644)
	c, err := New(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	if c.myself.name != "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca" || c.currentEpoch != 6 || c.lastVoteEpoch != 3 ||
		c.myself.numSlots != 5461 || c.importing[5461] == nil || c.migrating[100] == nil || len(c.nodes) != 6 {
		t.Fatalf("loaded: me %s epochs %d/%d slots %d", c.myself.name, c.currentEpoch, c.lastVoteEpoch, c.myself.numSlots)
	}
	// A replica's epoch shows its master's; the file's announced
	// hostnames and flags come back.
	if err := c.saveConfig(false); err != nil {
		t.Fatal(err)
	}
	c.unlockConfig()
	c.mu.Unlock()
	got, _ := os.ReadFile(h.cfg["cluster-config-file"])
	norm := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			f := strings.Fields(l)
			if len(f) > 5 && f[0] != "vars" {
				f[4], f[5] = "P", "P" // ping/pong times: now, on load
				f[7] = "L"            // link state: no link yet after load
			}
			out = append(out, strings.Join(f, " "))
		}
		return out
	}
	want, have := norm(conf), norm(string(got))
	wantSet := map[string]bool{}
	for _, l := range want {
		wantSet[l] = true
	}
	if len(want) != len(have) {
		t.Fatalf("saved:\n%s", got)
	}
	for _, l := range have {
		if !wantSet[l] {
			t.Errorf("saved line not in the original: %s\nsaved:\n%s", l, got)
		}
	}
}

// TestNodesConfWithRedis: redis-server reads the nodes.conf Sluice
// writes, and Sluice reads the one redis-server writes (node ID, epochs,
// slots).
func TestNodesConfWithRedis(t *testing.T) {
	// Sluice writes, redis-server reads.
	h := newFakeHost(t)
	c, err := New(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	for s := 100; s <= 200; s++ {
		c.addSlot(c.myself, s)
	}
	c.myself.configEpoch, c.currentEpoch = 7, 9
	if err := c.saveConfig(true); err != nil {
		t.Fatal(err)
	}
	id := c.myself.name
	c.unlockConfig()
	c.mu.Unlock()
	dir := t.TempDir()
	data, _ := os.ReadFile(h.cfg["cluster-config-file"])
	os.WriteFile(filepath.Join(dir, "nodes.conf"), data, 0o644)
	addr, _ := startRedisCluster(t, "--dir", dir)
	if got := redisCmd(t, addr, "CLUSTER", "MYID"); got != id {
		t.Fatalf("redis-server loaded node %q, want %q", got, id)
	}
	if nodes := redisCmd(t, addr, "CLUSTER", "NODES"); !strings.Contains(nodes, "myself,master - 0 0 7 connected 100-200") {
		t.Fatalf("redis-server's view: %s", nodes)
	}
	if info := redisCmd(t, addr, "CLUSTER", "INFO"); !strings.Contains(info, "cluster_current_epoch:9") {
		t.Fatalf("epochs: %s", info)
	}

	// redis-server writes, Sluice reads.
	dir2 := t.TempDir()
	addr2, _ := startRedisCluster(t, "--dir", dir2)
	redisCmd(t, addr2, "CLUSTER", "ADDSLOTSRANGE", "0", "99")
	redisCmd(t, addr2, "CLUSTER", "SET-CONFIG-EPOCH", "4")
	redisCmd(t, addr2, "CLUSTER", "SAVECONFIG")
	rid := redisCmd(t, addr2, "CLUSTER", "MYID")
	h2 := newFakeHost(t)
	data, _ = os.ReadFile(filepath.Join(dir2, "nodes.conf"))
	os.WriteFile(h2.cfg["cluster-config-file"], data, 0o644)
	c2, err := New(h2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.unlockConfig()
	if c2.myself.name != rid || c2.myself.numSlots != 100 || c2.myself.configEpoch != 4 || c2.currentEpoch != 4 {
		t.Fatalf("Sluice loaded %s with %d slots, epochs %d/%d", c2.myself.name, c2.myself.numSlots, c2.myself.configEpoch, c2.currentEpoch)
	}
}
