package redistest

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartSluiceCluster starts in-process Sluice nodes with cluster mode on:
// masters with an equal range of the 16,384 slots each, and
// replicasPerMaster replicas of each, joined with CLUSTER MEET and
// CLUSTER REPLICATE. It waits until every node reports cluster_state:ok
// and returns the nodes' addresses, masters first.
func StartSluiceCluster(tb testing.TB, masters, replicasPerMaster int, directives ...string) []string {
	tb.Helper()
	n := masters * (1 + replicasPerMaster)
	var addrs, buses []string
	for i := 0; i < n; i++ {
		bus := strconv.Itoa(FreePort(tb))
		// The nodes share the process's working directory: a replica
		// loads its master's payload from the socket (repl-diskless-load
		// swapdb) rather than through dbfilename there.
		d := append([]string{"cluster-enabled", "yes", "cluster-node-timeout", "2000",
			"cluster-config-file", filepath.Join(tb.TempDir(), "nodes.conf"), "cluster-port", bus,
			"repl-diskless-load", "swapdb"}, directives...)
		_, addr := StartSluice(tb, d...)
		addrs, buses = append(addrs, addr), append(buses, bus)
	}
	do := func(addr string, args ...string) string {
		c := Dial(tb, addr)
		defer c.Close()
		r, err := c.Do(args...)
		if err != nil {
			tb.Fatalf("%s %v: %v", addr, args, err)
		}
		return r
	}
	host, _, _ := net.SplitHostPort(addrs[0])
	for i, a := range addrs[1:] {
		_, p, _ := net.SplitHostPort(a)
		do(addrs[0], "CLUSTER", "MEET", host, p, buses[i+1])
	}
	for i := 0; i < masters; i++ {
		lo, hi := i*16384/masters, (i+1)*16384/masters-1
		do(addrs[i], "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi))
	}
	waitUntil(tb, 20*time.Second, "every node knows every node", func() bool {
		for _, a := range addrs {
			if !strings.Contains(do(a, "CLUSTER", "INFO"), "cluster_known_nodes:"+strconv.Itoa(n)+"\r\n") {
				return false
			}
		}
		return true
	})
	for r := 0; r < masters*replicasPerMaster; r++ {
		id := do(addrs[r%masters], "CLUSTER", "MYID")
		id = strings.TrimSpace(id[strings.IndexByte(id, '\n')+1:])
		if got := do(addrs[masters+r], "CLUSTER", "REPLICATE", id); got != "+OK\r\n" {
			tb.Fatalf("CLUSTER REPLICATE: %q", got)
		}
	}
	waitUntil(tb, 20*time.Second, "cluster_state:ok and every replica known on every node", func() bool {
		for _, a := range addrs {
			if !strings.Contains(do(a, "CLUSTER", "INFO"), "cluster_state:ok") ||
				strings.Count(do(a, "CLUSTER", "NODES"), "slave ") != masters*replicasPerMaster {
				return false
			}
		}
		return true
	})
	return addrs
}

func waitUntil(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
