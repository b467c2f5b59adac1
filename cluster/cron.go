package cluster

import (
	"math/rand"
	"time"
)

// The cluster's timer (clusterCron, ten times a second) and the cluster
// state evaluation (clusterUpdateState).

func (c *Cluster) cronLoop() {
	defer c.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.stopCh:
			return
		case <-t.C:
		}
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			return
		}
		c.cron()
		c.unlock()
	}
}

func (c *Cluster) cron() {
	c.cronIter++
	c.updateMyselfAnnounced()
	timeout := c.nodeTimeout()
	handshakeTimeout := max(timeout, 1000)
	now := mstime()
	c.statsPFail = 0
	limit := c.configInt("cluster-link-sendbuf-limit")
	for _, n := range c.nodes {
		for _, l := range []*link{n.link, n.inLink} {
			if l == nil || limit == 0 {
				continue
			}
			if alloc, _ := l.bufSizes(); int64(alloc) > limit {
				dir, name := "to", n.name
				if l.inbound {
					dir = "from"
				}
				c.log(LogWarning, "Freeing cluster link(%s node %s, used memory: %d) due to exceeding send buffer memory limit.", dir, name, alloc)
				c.freeLink(l)
				c.linksExceeded++
			}
		}
		if n.flags&(FlagMyself|FlagNoAddr) != 0 {
			continue
		}
		if n.flags&FlagPFail != 0 {
			c.statsPFail++
		}
		if n.inHandshake() && now-n.ctime > handshakeTimeout {
			c.delNode(n)
			continue
		}
		if n.link == nil {
			l := newLink(c, n)
			c.connect(n, l)
		}
	}

	if c.cronIter%10 == 0 {
		all := make([]*Node, 0, len(c.nodes))
		for _, n := range c.nodes {
			all = append(all, n)
		}
		var minNode *Node
		var minPong int64
		for j := 0; j < 5 && len(all) > 0; j++ {
			n := all[rand.Intn(len(all))]
			if n.link == nil || n.pingSent != 0 || n.flags&(FlagMyself|FlagHandshake) != 0 {
				continue
			}
			if minNode == nil || minPong > n.pongReceived {
				minNode, minPong = n, n.pongReceived
			}
		}
		if minNode != nil {
			c.log(LogDebug, "Pinging node %s", minNode.name)
			c.sendPing(minNode.link, MsgPing)
		}
	}

	orphaned, maxSlaves, thisSlaves := 0, 0, 0
	updateState := false
	me := c.myself
	for _, n := range c.nodes {
		now = mstime()
		if n.flags&(FlagMyself|FlagNoAddr|FlagHandshake) != 0 {
			continue
		}
		if me.isSlave() && n.isMaster() && !n.failed() {
			ok := n.countNonFailingSlaves()
			if ok == 0 && n.numSlots > 0 && n.flags&FlagMigrateTo != 0 {
				orphaned++
			}
			if ok > maxSlaves {
				maxSlaves = ok
			}
			if me.slaveOf == n {
				thisSlaves = ok
			}
		}
		pingDelay := now - n.pingSent
		dataDelay := now - n.dataReceived
		if n.link != nil && now-n.link.ctime > timeout && n.pingSent != 0 && pingDelay > timeout/2 && dataDelay > timeout/2 {
			c.freeLink(n.link)
		}
		if n.link != nil && n.pingSent == 0 && now-n.pongReceived > timeout/2 {
			c.sendPing(n.link, MsgPing)
			continue
		}
		if c.mfEnd != 0 && me.isMaster() && c.mfSlave == n && n.link != nil {
			c.sendPing(n.link, MsgPing)
			continue
		}
		if n.pingSent == 0 {
			continue
		}
		delay := min(pingDelay, dataDelay)
		if delay > timeout && n.flags&(FlagPFail|FlagFail) == 0 {
			c.log(LogDebug, "*** NODE %s possibly failing", n.name)
			n.flags |= FlagPFail
			updateState = true
		}
	}

	if me.isSlave() && me.slaveOf != nil && me.slaveOf.hasAddr() {
		if up, _, _ := c.host.MasterLink(); !up {
			// Replication stays pointed at our master (ReplicaOf is a
			// no-op when it already is).
			c.host.ReplicaOf(me.slaveOf.ip, me.slaveOf.port)
		}
	}
	c.manualFailoverCheckTimeout()
	if me.isSlave() {
		c.handleManualFailover()
		c.handleSlaveFailover()
		if orphaned > 0 && maxSlaves >= 2 && thisSlaves == maxSlaves && c.configBool("cluster-allow-replica-migration") {
			c.handleSlaveMigration(maxSlaves)
		}
	}
	if updateState || c.state == stateFail {
		c.updateState()
	}
}

const (
	maxRejoinDelay = 5000
	minRejoinDelay = 500
	writableDelay  = 2000
)

func (c *Cluster) updateState() {
	c.todo &^= todoUpdateState
	now := mstime()
	if c.firstStateCall == 0 {
		c.firstStateCall = now
	}
	me := c.myself
	if me.isMaster() && c.state == stateFail && now-c.firstStateCall < writableDelay {
		return
	}
	newState := stateOK
	if c.configBool("cluster-require-full-coverage") {
		for j := 0; j < Slots; j++ {
			if c.slots[j] == nil || c.slots[j].flags&FlagFail != 0 {
				newState = stateFail
				break
			}
		}
	}
	c.size = 0
	reachable := 0
	for _, n := range c.nodes {
		if n.isMaster() && n.numSlots > 0 {
			c.size++
			if n.flags&(FlagFail|FlagPFail) == 0 {
				reachable++
			}
		}
	}
	if reachable < c.size/2+1 {
		newState = stateFail
		c.minorityTime = mstime()
	}
	if newState != c.state {
		rejoin := min(max(c.nodeTimeout(), minRejoinDelay), maxRejoinDelay)
		if newState == stateOK && me.isMaster() && mstime()-c.minorityTime < rejoin {
			return
		}
		name := "ok"
		if newState == stateFail {
			name = "fail"
		}
		c.log(LogWarning, "Cluster state changed: %s", name)
		c.state = newState
	}
}
