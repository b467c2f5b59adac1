package cluster_test

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// startPair starts a single cluster-enabled redis-server and an
// in-process Sluice with cluster-enabled yes, each a cluster of one node.
func startPair(t *testing.T) (redisAddr, sluiceAddr string) {
	t.Helper()
	dir := t.TempDir()
	redisAddr = redistest.StartRedis(t, "--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(freePort(t)), "--dir", dir)
	_, sluiceAddr = redistest.StartSluice(t, "cluster-enabled", "yes",
		"cluster-config-file", filepath.Join(t.TempDir(), "nodes.conf"), "cluster-port", strconv.Itoa(freePort(t)))
	return
}

var nodeIDRe = regexp.MustCompile(`[0-9a-f]{40}`)

// TestClusterRepliesAgainstRedis sends the same commands to a one-node
// redis-server cluster and to Sluice and compares the raw replies (node
// IDs, ports and timestamps masked where the two must differ).
func TestClusterRepliesAgainstRedis(t *testing.T) {
	ra, sa := startPair(t)
	rc, sc := redistest.Dial(t, ra), redistest.Dial(t, sa)
	rid, _ := rc.Do("CLUSTER", "MYID")
	sid, _ := sc.Do("CLUSTER", "MYID")
	myid := func(reply string) string { return strings.TrimSpace(reply[strings.IndexByte(reply, '\n')+1:]) }
	mask := func(s string, id string) string {
		id = strings.TrimSpace(id[strings.IndexByte(id, '\n')+1:])
		s = strings.ReplaceAll(s, id, "<myid>")
		return s
	}
	steps := [][]string{
		{"CLUSTER", "HELP"},
		{"CLUSTER", "KEYSLOT", "foo"},
		{"CLUSTER", "KEYSLOT", "{user1000}.following"},
		{"CLUSTER", "KEYSLOT"},
		{"CLUSTER", "NOSUCH"},
		{"CLUSTER", "MYID", "extra"},
		{"CLUSTER", "INFO", "x"},
		{"CLUSTER", "COUNTKEYSINSLOT", "abc"},
		{"CLUSTER", "COUNTKEYSINSLOT", "16384"},
		{"CLUSTER", "COUNTKEYSINSLOT", "-1"},
		{"CLUSTER", "GETKEYSINSLOT", "1", "x"},
		{"CLUSTER", "GETKEYSINSLOT", "1", "-1"},
		{"CLUSTER", "GETKEYSINSLOT", "16384", "1"},
		{"CLUSTER", "ADDSLOTS", "x"},
		{"CLUSTER", "ADDSLOTS", "16384"},
		{"CLUSTER", "ADDSLOTS", "1", "1"},
		{"CLUSTER", "DELSLOTS", "5"},
		{"CLUSTER", "ADDSLOTSRANGE", "1"},
		{"CLUSTER", "ADDSLOTSRANGE", "1", "2", "3"},
		{"CLUSTER", "ADDSLOTSRANGE", "5", "1"},
		{"CLUSTER", "ADDSLOTSRANGE", "1", "3", "3", "4"},
		{"CLUSTER", "DELSLOTSRANGE", "1", "3"},
		{"SET", "foo", "bar"},
		{"CLUSTER", "ADDSLOTSRANGE", "0", "8191"},
		{"CLUSTER", "ADDSLOTS", "100"},
		{"CLUSTER", "ADDSLOTS", "9000", "9001", "10000"},
		{"CLUSTER", "DELSLOTS", "10000"},
		{"CLUSTER", "DELSLOTS", "10000"},
		{"CLUSTER", "SETSLOT", "100", "MIGRATING", "0123456789012345678901234567890123456789"},
		{"CLUSTER", "SETSLOT", "20000", "STABLE"},
		{"CLUSTER", "SETSLOT", "100", "BLAH"},
		{"CLUSTER", "SETSLOT", "100", "STABLE", "x"},
		{"CLUSTER", "SETSLOT", "12000", "MIGRATING", "0123456789012345678901234567890123456789"},
		{"CLUSTER", "SETSLOT", "100", "IMPORTING", "0123456789012345678901234567890123456789"},
		{"CLUSTER", "SETSLOT", "12000", "NODE", "0123456789012345678901234567890123456789"},
		{"CLUSTER", "MEET", "not-an-ip", "7000"},
		{"CLUSTER", "MEET", "127.0.0.1", "x"},
		{"CLUSTER", "MEET", "127.0.0.1", "7000", "x"},
		{"CLUSTER", "MEET", "127.0.0.1", "99999"},
		{"CLUSTER", "MEET", "1", "2", "3", "4"},
		{"CLUSTER", "FORGET", "0123456789012345678901234567890123456789"},
		{"CLUSTER", "REPLICATE", "0123456789012345678901234567890123456789"},
		{"CLUSTER", "REPLICAS", "nosuch"},
		{"CLUSTER", "SLAVES", "nosuch"},
		{"CLUSTER", "COUNT-FAILURE-REPORTS", "nosuch"},
		{"CLUSTER", "FAILOVER"},
		{"CLUSTER", "FAILOVER", "sideways"},
		{"CLUSTER", "SET-CONFIG-EPOCH", "x"},
		{"CLUSTER", "SET-CONFIG-EPOCH", "-1"},
		{"CLUSTER", "SET-CONFIG-EPOCH", "10"},
		{"CLUSTER", "SET-CONFIG-EPOCH", "11"},
		{"CLUSTER", "BUMPEPOCH"},
		{"CLUSTER", "RESET", "x"},
		{"CLUSTER", "SAVECONFIG"},
		{"CLUSTER", "LINKS"},
		{"SELECT", "1"},
		{"SELECT", "0"},
		{"SELECT", "x"},
		{"SWAPDB", "0", "1"},
		{"REPLICAOF", "127.0.0.1", "1"},
		{"READONLY"},
		{"READWRITE"},
		{"ASKING"},
		{"EVAL", "#!lua flags=no-cluster\nreturn 1", "0"},
		{"EVAL", "return redis.call('get','x')", "0"},
		{"GET", "x"},
		// Every slot served: the cluster comes up.
		{"CLUSTER", "ADDSLOTSRANGE", "8192", "8999", "9002", "16383"},
		{"WAIT-OK"},
		{"SET", "foo", "bar"},
		{"GET", "foo"},
		{"MGET", "foo", "x"},
		{"MSET", "{a}1", "x", "{a}2", "y"},
		{"MGET", "{a}1", "{a}2"},
		{"MOVE", "foo", "1"},
		{"COPY", "{a}1", "{a}2", "DB", "1"},
		{"COPY", "{a}1", "{a}3"},
		{"EVAL", "return redis.call('get','foo')", "0"},
		{"EVAL", "#!lua\nredis.call('get','foo'); return redis.call('get','bar')", "0"},
		{"EVAL", "#!lua\nreturn redis.call('get','foo')", "1", "bar"},
		{"EVAL", "return redis.call('get',KEYS[1])", "2", "foo", "bar"},
		{"MULTI"},
		{"SET", "foo", "1"},
		{"SET", "bar", "2"},
		{"EXEC"},
		{"MULTI"},
		{"SET", "{a}1", "1"},
		{"GET", "{a}2"},
		{"EXEC"},
		{"CLUSTER", "COUNTKEYSINSLOT", "12182"},
		{"CLUSTER", "GETKEYSINSLOT", "12182", "10"},
		{"CLUSTER", "GETKEYSINSLOT", "12182", "0"},
		{"CLUSTER", "SETSLOT", "12182", "NODE", "<myid>"},
		{"CLUSTER", "FLUSHSLOTS"},
		{"CLUSTER", "RESET"},
		{"FLUSHALL"},
		{"CLUSTER", "RESET"},
		{"CLUSTER", "FLUSHSLOTS"},
		{"CLUSTER", "DELSLOTSRANGE", "0", "16383"},
	}
	for _, st := range steps {
		if st[0] == "WAIT-OK" {
			for _, c := range []*redistest.Conn{rc, sc} {
				deadline := time.Now().Add(10 * time.Second)
				for {
					r, _ := c.Do("CLUSTER", "INFO")
					if strings.Contains(r, "cluster_state:ok") {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("cluster_state never ok: %q", r)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			continue
		}
		rst, sst := append([]string{}, st...), append([]string{}, st...)
		for i := range st {
			if st[i] == "<myid>" {
				rst[i], sst[i] = myid(rid), myid(sid)
			}
		}
		want, err1 := rc.Do(rst...)
		got, err2 := sc.Do(sst...)
		if err1 != nil || err2 != nil {
			t.Fatalf("%v: %v %v", st, err1, err2)
		}
		want, got = mask(want, rid), mask(got, sid)
		if st[0] == "CLUSTER" && (st[1] == "MEET") && !strings.HasPrefix(want, "-") {
			// MEET of an unreachable port: both accept it.
		}
		if want != got {
			t.Errorf("%v:\n redis:  %q\n sluice: %q", st, want, got)
		} else if testing.Verbose() {
			t.Logf("%v: %q", st, want)
		}
	}
	// The slot table after ADDSLOTSRANGE 0 8191 / ADDSLOTS 9000 9001, as
	// CLUSTER SLOTS, SHARDS, NODES and INFO show it (one node, no peers).
	for _, c := range []*redistest.Conn{rc, sc} {
		c.Do("CLUSTER", "ADDSLOTSRANGE", "0", "8191")
		c.Do("CLUSTER", "ADDSLOTS", "9000", "9001", "16383")
		c.Do("CLUSTER", "SET-CONFIG-EPOCH", "3")
	}
	time.Sleep(50 * time.Millisecond)
	for _, st := range [][]string{{"CLUSTER", "SLOTS"}, {"CLUSTER", "NODES"}, {"CLUSTER", "SHARDS"},
		{"HELLO", "3"}, {"CLUSTER", "SLOTS"}, {"CLUSTER", "NODES"}, {"CLUSTER", "SHARDS"}} {
		if st[0] == "HELLO" {
			rc.Do(st...)
			sc.Do(st...)
			continue
		}
		want, _ := rc.Do(st...)
		got, _ := sc.Do(st...)
		norm := func(s, id string) string {
			s = mask(s, id)
			s = regexp.MustCompile(`:\d+\r\n\$40`).ReplaceAllString(s, ":<port>\r\n$$40")
			s = regexp.MustCompile(`:\d+@\d+ `).ReplaceAllString(s, ":<port> ")
			s = regexp.MustCompile(`\$\d+\r\n(<myid>[^\r]*)`).ReplaceAllString(s, "$$?\r\n$1")
			s = regexp.MustCompile(`=\d+\r\n`).ReplaceAllString(s, "=?\r\n")
			s = regexp.MustCompile(`port\r\n:\d+`).ReplaceAllString(s, "port\r\n:<port>")
			s = regexp.MustCompile(`replication-offset\r\n:\d+`).ReplaceAllString(s, "replication-offset\r\n:<off>")
			return s
		}
		if w, g := norm(want, rid), norm(got, sid); w != g {
			t.Errorf("%v:\n redis:  %q\n sluice: %q", st, w, g)
		}
	}
	fields := func(c *redistest.Conn) string {
		r, _ := c.Do("CLUSTER", "INFO")
		var keys []string
		for _, l := range strings.Split(r, "\r\n") {
			if i := strings.IndexByte(l, ':'); i > 0 && !strings.HasPrefix(l, "cluster_stats") {
				keys = append(keys, l)
			}
		}
		return strings.Join(keys, ",")
	}
	if w, g := fields(rc), fields(sc); w[strings.Index(w, "cluster_slots_assigned"):strings.Index(w, "cluster_current_epoch")] !=
		g[strings.Index(g, "cluster_slots_assigned"):strings.Index(g, "cluster_current_epoch")] {
		t.Errorf("CLUSTER INFO:\n redis:  %s\n sluice: %s", w, g)
	}
}
