package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Node is one node of the cluster as this node sees it (Redis's
// clusterNode). Every field is guarded by the Cluster's lock.
type Node struct {
	name        string
	ctime       int64 // ms
	flags       int
	configEpoch uint64
	slots       Bitmap
	numSlots    int
	slaves      []*Node
	slaveOf     *Node

	lastInPingGossip uint64
	pingSent         int64 // ms, 0: no ping pending
	pongReceived     int64
	dataReceived     int64
	failTime         int64
	votedTime        int64
	replOffsetTime   int64
	orphanedTime     int64
	replOffset       int64

	ip       string
	hostname string
	port     int
	pport    int
	cport    int

	link   *link // outbound
	inLink *link // inbound, accepted from the node

	failReports []failReport

	ridx uint16 // index in the routing table, 0 until the node is routed to
}

type failReport struct {
	node *Node
	time int64
}

func randomName() string {
	b := make([]byte, nameLen/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newNode(name string, flags int) *Node {
	if name == "" {
		name = randomName()
	}
	return &Node{name: name, flags: flags, ctime: mstime()}
}

func (n *Node) isMaster() bool      { return n.flags&FlagMaster != 0 }
func (n *Node) isSlave() bool       { return n.flags&FlagSlave != 0 }
func (n *Node) inHandshake() bool   { return n.flags&FlagHandshake != 0 }
func (n *Node) hasAddr() bool       { return n.flags&FlagNoAddr == 0 }
func (n *Node) timedOut() bool      { return n.flags&FlagPFail != 0 }
func (n *Node) failed() bool        { return n.flags&FlagFail != 0 }
func (n *Node) cantFailover() bool  { return n.flags&FlagNoFailover != 0 }
func (n *Node) isMyself() bool      { return n.flags&FlagMyself != 0 }
func (n *Node) failedOrTimed() bool { return n.flags&(FlagFail|FlagPFail) != 0 }

// verifyName reports whether name is a valid node ID: 40 characters of
// lower-case letters and digits.
func verifyName(name string) bool {
	if len(name) != nameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// addFailureReport records that sender sees n failing; true when the
// report is new.
func (n *Node) addFailureReport(sender *Node) bool {
	for i := range n.failReports {
		if n.failReports[i].node == sender {
			n.failReports[i].time = mstime()
			return false
		}
	}
	n.failReports = append(n.failReports, failReport{sender, mstime()})
	return true
}

func (c *Cluster) cleanupFailureReports(n *Node) {
	maxtime := c.nodeTimeout() * 2 // CLUSTER_FAIL_REPORT_VALIDITY_MULT
	now := mstime()
	out := n.failReports[:0]
	for _, fr := range n.failReports {
		if now-fr.time <= maxtime {
			out = append(out, fr)
		}
	}
	n.failReports = out
}

func (c *Cluster) delFailureReport(n, sender *Node) bool {
	for i := range n.failReports {
		if n.failReports[i].node == sender {
			n.failReports = append(n.failReports[:i], n.failReports[i+1:]...)
			c.cleanupFailureReports(n)
			return true
		}
	}
	return false
}

func (c *Cluster) failureReportsCount(n *Node) int {
	c.cleanupFailureReports(n)
	return len(n.failReports)
}

func (n *Node) removeSlave(s *Node) bool {
	for i, x := range n.slaves {
		if x == s {
			n.slaves = append(n.slaves[:i], n.slaves[i+1:]...)
			if len(n.slaves) == 0 {
				n.flags &^= FlagMigrateTo
			}
			return true
		}
	}
	return false
}

func (n *Node) addSlave(s *Node) bool {
	for _, x := range n.slaves {
		if x == s {
			return false
		}
	}
	n.slaves = append(n.slaves, s)
	n.flags |= FlagMigrateTo
	return true
}

func (n *Node) countNonFailingSlaves() int {
	ok := 0
	for _, s := range n.slaves {
		if !s.failed() {
			ok++
		}
	}
	return ok
}

// flagsString is representClusterNodeFlags.
func flagsString(flags int) string {
	var b strings.Builder
	for _, f := range [...]struct {
		flag int
		name string
	}{
		{FlagMyself, "myself,"}, {FlagMaster, "master,"}, {FlagSlave, "slave,"}, {FlagPFail, "fail?,"},
		{FlagFail, "fail,"}, {FlagHandshake, "handshake,"}, {FlagNoAddr, "noaddr,"}, {FlagNoFailover, "nofailover,"},
	} {
		if flags&f.flag != 0 {
			b.WriteString(f.name)
		}
	}
	if b.Len() == 0 {
		return "noflags"
	}
	s := b.String()
	return s[:len(s)-1]
}
