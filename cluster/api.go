package cluster

import (
	"strings"
)

// MyID returns this node's ID.
func (c *Cluster) MyID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.myself.name
}

// Connections is INFO's cluster_connections: two links per other node.
func (c *Cluster) Connections() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return (len(c.nodes) - 1) * 2
}

// LinksMemory is INFO's mem_cluster_links: the links' buffers.
func (c *Cluster) LinksMemory() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, n := range c.nodes {
		for _, l := range []*link{n.link, n.inLink} {
			if l == nil {
				continue
			}
			alloc, _ := l.bufSizes()
			l.mu.Lock()
			total += 64 + alloc + l.rcvSize
			l.mu.Unlock()
		}
	}
	return total
}

// KillLinks is DEBUG CLUSTERLINK KILL to|from|all <node-id>: it closes the
// links to and/or from a node; false when the node is unknown.
func (c *Cluster) KillLinks(dir, name string) (ok bool, badDir bool) {
	c.mu.Lock()
	defer c.unlock()
	n := c.lookupNode(name)
	if n == nil {
		return false, false
	}
	switch strings.ToLower(dir) {
	case "from":
		if n.inLink != nil {
			c.freeLink(n.inLink)
		}
	case "to":
		if n.link != nil {
			c.freeLink(n.link)
		}
	case "all":
		if n.link != nil {
			c.freeLink(n.link)
		}
		if n.inLink != nil {
			c.freeLink(n.inLink)
		}
	default:
		return true, true
	}
	return true, false
}

// SetDropFilter is DEBUG DROP-CLUSTER-PACKET-FILTER: received messages of
// type t are dropped (-1: none).
func (c *Cluster) SetDropFilter(t int) {
	c.mu.Lock()
	c.dropFilter = t
	c.mu.Unlock()
}

// IsReplica reports whether this node is a replica in the cluster.
func (c *Cluster) IsReplica() bool {
	return c.rt.cur.Load().replica
}

// VerifyWithData checks the loaded dataset against the slot
// configuration (verifyClusterConfigWithData): keys of a slot nobody
// serves make this node take the slot, keys of a slot another node serves
// make it importing. otherDBs reports keys outside database 0, which
// cluster mode cannot have (false is returned then).
func (c *Cluster) VerifyWithData(otherDBs bool) bool {
	c.mu.Lock()
	defer c.unlock()
	if c.myself.isSlave() {
		return true
	}
	if otherDBs {
		return false
	}
	update := false
	for j := 0; j < Slots; j++ {
		if c.host.CountKeysInSlot(j) == 0 {
			continue
		}
		if c.slots[j] == c.myself || c.importing[j] != nil {
			continue
		}
		update = true
		if c.slots[j] == nil {
			c.log(LogWarning, "I have keys for unassigned slot %d. Taking responsibility for it.", j)
			c.addSlot(c.myself, j)
		} else {
			c.log(LogWarning, "I have keys for slot %d, but the slot is assigned to another node. Setting it to importing state.", j)
			c.setImporting(j, c.slots[j])
		}
	}
	if update {
		c.saveConfigOrDie(true)
	}
	return true
}
