package cluster

import (
	"strconv"
	"sync/atomic"
)

// Routing: what Check needs to place a command, published as an immutable
// table that commands read without a lock. Slot owners are kept in chunks
// of 256 slots, so a change to one slot copies one chunk, not the table.

const chunkSize = 256
const nChunks = Slots / chunkSize

type chunk [chunkSize]uint16 // node indexes into table.nodes, 0: none

// rnode is what a redirection says about a node.
type rnode struct {
	name     string
	ip       string
	hostname string
	port     int
	pport    int
}

type table struct {
	ok        bool
	replica   bool   // this node is a replica
	me        uint16 // this node's index
	myMaster  uint16 // its master's (replicas), 0 otherwise
	nodes     []*rnode
	owner     [nChunks]*chunk
	migrating [nChunks]*chunk // nil: no slot of the chunk migrating
	importing [nChunks]*chunk // nil: no slot of the chunk importing
}

var emptyChunk chunk

type routing struct {
	cur        atomic.Pointer[table]
	dirty      [nChunks]bool
	anyDirty   bool
	nodesDirty bool
	nextIdx    uint16
	byIdx      []*Node
}

func (r *routing) init() {
	r.cur.Store(&table{nodes: []*rnode{nil}})
	r.byIdx = []*Node{nil}
	r.nextIdx = 1
}

func (r *routing) slotDirty(slot int) {
	r.dirty[slot/chunkSize] = true
	r.anyDirty = true
}

func (r *routing) allDirty() {
	for i := range r.dirty {
		r.dirty[i] = true
	}
	r.anyDirty = true
}

// idx returns n's routing index, giving it one on first use.
func (c *Cluster) idx(n *Node) uint16 {
	if n == nil {
		return 0
	}
	if n.ridx == 0 || int(n.ridx) >= len(c.rt.byIdx) || c.rt.byIdx[n.ridx] != n {
		if c.rt.nextIdx == 0xffff {
			c.compactIndexes()
		}
		n.ridx = c.rt.nextIdx
		c.rt.nextIdx++
		c.rt.byIdx = append(c.rt.byIdx, n)
		c.rt.nodesDirty = true
	}
	return n.ridx
}

// compactIndexes renumbers the routed nodes when indexes run out (nodes
// that came and went).
func (c *Cluster) compactIndexes() {
	c.rt.byIdx = []*Node{nil}
	c.rt.nextIdx = 1
	for _, n := range c.nodes {
		n.ridx = 0
	}
	for _, n := range c.nodes {
		n.ridx = c.rt.nextIdx
		c.rt.nextIdx++
		c.rt.byIdx = append(c.rt.byIdx, n)
	}
	c.rt.allDirty()
	c.rt.nodesDirty = true
}

// publishRoutes rebuilds what changed in the routing table.
func (c *Cluster) publishRoutes() {
	r := &c.rt
	old := r.cur.Load()
	me := c.myself
	replica := me.isSlave()
	ok := c.state == stateOK
	myMaster := uint16(0)
	if replica && me.slaveOf != nil {
		myMaster = c.idx(me.slaveOf)
	}
	meIdx := c.idx(me)
	if !r.anyDirty && !r.nodesDirty && old.ok == ok && old.replica == replica && old.myMaster == myMaster && old.me == meIdx {
		return
	}
	t := *old
	t.ok, t.replica, t.myMaster, t.me = ok, replica, myMaster, meIdx
	if r.anyDirty {
		for ci := 0; ci < nChunks; ci++ {
			if !r.dirty[ci] {
				continue
			}
			r.dirty[ci] = false
			var own, mig, imp chunk
			anyMig, anyImp := false, false
			for i := 0; i < chunkSize; i++ {
				s := ci*chunkSize + i
				own[i] = c.idx(c.slots[s])
				if n := c.migrating[s]; n != nil {
					mig[i] = c.idx(n)
					anyMig = true
				}
				if n := c.importing[s]; n != nil {
					imp[i] = c.idx(n)
					anyImp = true
				}
			}
			t.owner[ci] = &own
			t.migrating[ci], t.importing[ci] = nil, nil
			if anyMig {
				t.migrating[ci] = &mig
			}
			if anyImp {
				t.importing[ci] = &imp
			}
		}
		r.anyDirty = false
	}
	for ci := range t.owner {
		if t.owner[ci] == nil {
			t.owner[ci] = &emptyChunk
		}
	}
	if r.nodesDirty || len(t.nodes) != len(r.byIdx) {
		nodes := make([]*rnode, len(r.byIdx))
		for i, n := range r.byIdx {
			if n == nil || i == 0 {
				continue
			}
			nodes[i] = &rnode{name: n.name, ip: n.ip, hostname: n.hostname, port: n.port, pport: n.pport}
		}
		t.nodes = nodes
		r.nodesDirty = false
	}
	r.cur.Store(&t)
}

// Redirection codes (getNodeByQuery's).
const (
	RedirNone      = 0
	RedirCrossSlot = 1
	RedirUnstable  = 2
	RedirAsk       = 3
	RedirMoved     = 4
	RedirDown      = 5
	RedirUnbound   = 6
	RedirDownRO    = 7
)

// Query describes a command for Check.
type Query struct {
	// Keys are the command's keys (for EXEC, those of every queued
	// command; for the sharded pub/sub commands, the channels).
	Keys [][]byte
	// Write: the command writes (for the cluster-down check).
	Write bool
	// WriteTx: the command, or a transaction it runs, writes (for reads
	// from replicas).
	WriteTx     bool
	ReadOnly    bool // the client sent READONLY
	Asking      bool // the client sent ASKING (or the command implies it)
	PubSubShard bool // SPUBLISH, SSUBSCRIBE, SUNSUBSCRIBE
	Migrate     bool // MIGRATE
}

// KeyChecker tells Check whether a key exists (live) on this node; it is
// asked only for the keys of a slot being migrated or imported.
type KeyChecker interface {
	KeyExists(key []byte) bool
}

// Redirect is Check's verdict: Code RedirNone to run the command here.
type Redirect struct {
	Code int
	Slot int // the keys' slot, -1 without keys
	node *rnode
}

// Check is getNodeByQuery: whether this node serves a command with the
// given keys, and if not the redirection or error the client gets.
func (c *Cluster) Check(q *Query, kc KeyChecker) Redirect {
	t := c.rt.cur.Load()
	var first []byte
	slot := -1
	var n uint16
	multiple := false
	migrating, importing := false, false
	missing, existing := 0, 0
	for _, k := range q.Keys {
		ks := KeySlot(k)
		if first == nil {
			first, slot = k, ks
			n = t.owner[ks/chunkSize][ks%chunkSize]
			if n == 0 {
				return Redirect{Code: RedirUnbound, Slot: -1}
			}
			if n == t.me && t.migrating[ks/chunkSize] != nil && t.migrating[ks/chunkSize][ks%chunkSize] != 0 {
				migrating = true
			} else if t.importing[ks/chunkSize] != nil && t.importing[ks/chunkSize][ks%chunkSize] != 0 {
				importing = true
			}
		} else if string(first) != string(k) {
			if ks != slot {
				return Redirect{Code: RedirCrossSlot, Slot: -1}
			}
			multiple = true
		}
		if (migrating || importing) && !q.PubSubShard {
			if kc.KeyExists(k) {
				existing++
			} else {
				missing++
			}
		}
	}
	if first == nil {
		return Redirect{Slot: -1}
	}
	if !t.ok {
		switch {
		case q.PubSubShard:
			if !c.allowPubSubShardWhenDown() {
				return Redirect{Code: RedirDown, Slot: -1}
			}
		case !c.allowReadsWhenDown():
			return Redirect{Code: RedirDown, Slot: -1}
		case q.Write:
			return Redirect{Code: RedirDownRO, Slot: -1}
		}
	}
	if (migrating || importing) && q.Migrate {
		return Redirect{Slot: slot}
	}
	if migrating && missing > 0 {
		if existing > 0 {
			return Redirect{Code: RedirUnstable, Slot: slot}
		}
		return Redirect{Code: RedirAsk, Slot: slot, node: t.nodes[t.migrating[slot/chunkSize][slot%chunkSize]]}
	}
	if importing && q.Asking {
		if multiple && missing > 0 {
			return Redirect{Code: RedirUnstable, Slot: slot}
		}
		return Redirect{Slot: slot}
	}
	if (q.ReadOnly || q.PubSubShard) && !q.WriteTx && t.replica && t.myMaster == n {
		return Redirect{Slot: slot}
	}
	if n != t.me {
		return Redirect{Code: RedirMoved, Slot: slot, node: t.nodes[n]}
	}
	return Redirect{Slot: slot}
}

func (c *Cluster) allowReadsWhenDown() bool {
	return c.host.Config("cluster-allow-reads-when-down") == "yes"
}

func (c *Cluster) allowPubSubShardWhenDown() bool {
	return c.host.Config("cluster-allow-pubsubshard-when-down") == "yes"
}

// Error is the error reply for a redirection (clusterRedirectClient), or
// "" for RedirNone. plaintext: the client is not on TLS while the cluster
// is (it is sent the nodes' plaintext ports).
func (c *Cluster) Error(r Redirect, plaintext bool) string {
	switch r.Code {
	case RedirCrossSlot:
		return "CROSSSLOT Keys in request don't hash to the same slot"
	case RedirUnstable:
		return "TRYAGAIN Multiple keys request during rehashing of slot"
	case RedirDown:
		return "CLUSTERDOWN The cluster is down"
	case RedirDownRO:
		return "CLUSTERDOWN The cluster is down and only accepts read commands"
	case RedirUnbound:
		return "CLUSTERDOWN Hash slot not served"
	case RedirMoved, RedirAsk:
		n := r.node
		port := n.port
		if plaintext && n.pport != 0 {
			port = n.pport
		}
		kind := "MOVED "
		if r.Code == RedirAsk {
			kind = "ASK "
		}
		return kind + strconv.Itoa(r.Slot) + " " + c.preferredEndpoint(n.ip, n.hostname) + ":" + strconv.Itoa(port)
	}
	return ""
}

func (c *Cluster) preferredEndpoint(ip, hostname string) string {
	switch c.host.Config("cluster-preferred-endpoint-type") {
	case "hostname":
		if hostname != "" {
			return hostname
		}
		return "?"
	case "unknown-endpoint":
		return ""
	}
	return ip
}

// SlotOwnedByMe reports whether this node (or, for a replica, its master)
// serves slot and the cluster is up: a blocked client whose keys moved is
// redirected when it is not.
func (c *Cluster) BlockedRedirect(key []byte, readOnly, write bool) Redirect {
	t := c.rt.cur.Load()
	if !t.ok {
		return Redirect{Code: RedirDown, Slot: -1}
	}
	s := KeySlot(key)
	n := t.owner[s/chunkSize][s%chunkSize]
	if readOnly && !write && t.replica && t.myMaster == n {
		n = t.me
	}
	if n != t.me && (t.importing[s/chunkSize] == nil || t.importing[s/chunkSize][s%chunkSize] == 0) {
		if n == 0 {
			return Redirect{Code: RedirUnbound, Slot: -1}
		}
		return Redirect{Code: RedirMoved, Slot: s, node: t.nodes[n]}
	}
	return Redirect{Slot: s}
}
