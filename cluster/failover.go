package cluster

import (
	"math/rand"
	"time"
)

// Replica failover (automatic and manual), votes, replica migration.

const (
	mfTimeout            = 5000 // CLUSTER_MF_TIMEOUT, ms
	slaveMigrationDelay  = 5000
	cantFailoverRelogSec = 60 * 5
)

// Reasons a replica cannot fail over.
const (
	cantFailoverNone = iota
	cantFailoverDataAge
	cantFailoverWaitingDelay
	cantFailoverExpired
	cantFailoverWaitingVotes
)

// sendFailoverAuthIfNeeded votes for a replica asking to replace its
// failed master, when this master may.
func (c *Cluster) sendFailoverAuthIfNeeded(n *Node, req *Message) {
	me := c.myself
	master := n.slaveOf
	forceAck := req.MFlags[0]&mflagForceAck != 0
	if me.isSlave() || me.numSlots == 0 {
		return
	}
	if req.CurrentEpoch < c.currentEpoch {
		c.log(LogWarning, "Failover auth denied to %s: reqEpoch (%d) < curEpoch(%d)", n.name, req.CurrentEpoch, c.currentEpoch)
		return
	}
	if c.lastVoteEpoch == c.currentEpoch {
		c.log(LogWarning, "Failover auth denied to %s: already voted for epoch %d", n.name, c.currentEpoch)
		return
	}
	if n.isMaster() || master == nil || (!master.failed() && !forceAck) {
		switch {
		case n.isMaster():
			c.log(LogWarning, "Failover auth denied to %s: it is a master node", n.name)
		case master == nil:
			c.log(LogWarning, "Failover auth denied to %s: I don't know its master", n.name)
		default:
			c.log(LogWarning, "Failover auth denied to %s: its master is up", n.name)
		}
		return
	}
	timeout := c.nodeTimeout()
	if since := mstime() - master.votedTime; since < timeout*2 {
		c.log(LogWarning, "Failover auth denied to %s: can't vote about this master before %d milliseconds", n.name, timeout*2-since)
		return
	}
	for j := 0; j < Slots; j++ {
		if !req.Slots.Has(j) {
			continue
		}
		if c.slotUnclaimed(j) || c.slots[j].configEpoch <= req.ConfigEpoch {
			continue
		}
		c.log(LogWarning, "Failover auth denied to %s: slot %d epoch (%d) > reqEpoch (%d)", n.name, j, c.slots[j].configEpoch, req.ConfigEpoch)
		return
	}
	c.lastVoteEpoch = c.currentEpoch
	master.votedTime = mstime()
	c.doBeforeSleep(todoSaveConfig | todoFsyncConfig)
	c.sendFailoverAuth(n)
	c.log(LogWarning, "Failover auth granted to %s for epoch %d", n.name, c.currentEpoch)
}

// slaveRank is the number of replicas of our master with a greater
// replication offset than ours.
func (c *Cluster) slaveRank() int {
	master := c.myself.slaveOf
	if master == nil {
		return 0
	}
	my := c.host.ReplOffset()
	rank := 0
	for _, s := range master.slaves {
		if s != c.myself && !s.cantFailover() && s.replOffset > my {
			rank++
		}
	}
	return rank
}

func (c *Cluster) logCantFailover(reason int) {
	now := time.Now().Unix()
	if reason == c.cantFailoverReason && now-c.lastCantLog < cantFailoverRelogSec {
		return
	}
	c.cantFailoverReason = reason
	if m := c.myself.slaveOf; m != nil && m.failed() && mstime()-m.failTime < c.nodeTimeout()+5000 {
		return
	}
	var msg string
	switch reason {
	case cantFailoverDataAge:
		msg = "Disconnected from master for longer than allowed. Please check the 'cluster-replica-validity-factor' configuration option."
	case cantFailoverWaitingDelay:
		msg = "Waiting the delay before I can start a new failover."
	case cantFailoverExpired:
		msg = "Failover attempt expired."
	case cantFailoverWaitingVotes:
		msg = "Waiting for votes, but majority still not reached."
	default:
		msg = "Unknown reason code."
	}
	c.lastCantLog = now
	c.log(LogWarning, "Currently unable to failover: %s", msg)
}

// failoverReplaceYourMaster turns this replica into the master of its
// master's slots and tells everyone.
func (c *Cluster) failoverReplaceYourMaster() {
	me := c.myself
	old := me.slaveOf
	if me.isMaster() || old == nil {
		return
	}
	c.setNodeAsMaster(me)
	c.host.Promote()
	for j := 0; j < Slots; j++ {
		if old.slots.Has(j) {
			c.delSlot(j)
			c.addSlot(me, j)
		}
	}
	c.updateState()
	c.saveConfigOrDie(true)
	c.broadcastPong(broadcastAll)
	c.resetManualFailover()
}

// handleSlaveFailover runs the election of a replica whose master
// failed (or that was asked to fail over).
func (c *Cluster) handleSlaveFailover() {
	me := c.myself
	authAge := mstime() - c.failoverAuthTime
	needed := c.size/2 + 1
	manual := c.mfEnd != 0 && c.mfCanStart
	c.todo &^= todoHandleFailover
	timeout := c.nodeTimeout()
	authTimeout := max(timeout*2, 2000)
	authRetry := authTimeout * 2
	if me.isMaster() || me.slaveOf == nil || (!me.slaveOf.failed() && !manual) ||
		(c.configBool("cluster-replica-no-failover") && !manual) || me.slaveOf.numSlots == 0 {
		c.cantFailoverReason = cantFailoverNone
		return
	}
	now := mstime()
	up, lastIO, downSince := c.host.MasterLink()
	var dataAge int64
	if up {
		dataAge = (now/1000 - lastIO/1000) * 1000
	} else {
		dataAge = (now/1000 - downSince/1000) * 1000
	}
	if dataAge > timeout {
		dataAge -= timeout
	}
	vf := c.configInt("cluster-replica-validity-factor")
	period := c.configInt("repl-ping-replica-period")
	if vf != 0 && dataAge > period*1000+timeout*vf && !manual {
		c.logCantFailover(cantFailoverDataAge)
		return
	}
	if authAge > authRetry {
		c.failoverAuthTime = mstime() + 500 + rand.Int63n(500)
		c.failoverAuthCount = 0
		c.failoverAuthSent = false
		c.failoverAuthRank = c.slaveRank()
		c.failoverAuthTime += int64(c.failoverAuthRank) * 1000
		if c.mfEnd != 0 {
			c.failoverAuthTime = mstime()
			c.failoverAuthRank = 0
			c.doBeforeSleep(todoHandleFailover)
		}
		c.log(LogWarning, "Start of election delayed for %d milliseconds (rank #%d, offset %d).", c.failoverAuthTime-mstime(), c.failoverAuthRank, c.host.ReplOffset())
		c.broadcastPong(broadcastLocalSlaves)
		return
	}
	if !c.failoverAuthSent && c.mfEnd == 0 {
		if rank := c.slaveRank(); rank > c.failoverAuthRank {
			added := int64(rank-c.failoverAuthRank) * 1000
			c.failoverAuthTime += added
			c.failoverAuthRank = rank
			c.log(LogWarning, "Replica rank updated to #%d, added %d milliseconds of delay.", rank, added)
		}
	}
	if mstime() < c.failoverAuthTime {
		c.logCantFailover(cantFailoverWaitingDelay)
		return
	}
	if authAge > authTimeout {
		c.logCantFailover(cantFailoverExpired)
		return
	}
	if !c.failoverAuthSent {
		c.currentEpoch++
		c.failoverAuthEpoch = c.currentEpoch
		c.log(LogWarning, "Starting a failover election for epoch %d.", c.currentEpoch)
		c.requestFailoverAuth()
		c.failoverAuthSent = true
		c.doBeforeSleep(todoSaveConfig | todoUpdateState | todoFsyncConfig)
		return
	}
	if c.failoverAuthCount >= needed {
		c.log(LogWarning, "Failover election won: I'm the new master.")
		if me.configEpoch < c.failoverAuthEpoch {
			me.configEpoch = c.failoverAuthEpoch
			c.log(LogWarning, "configEpoch set to %d after successful failover", me.configEpoch)
		}
		c.failoverReplaceYourMaster()
	} else {
		c.logCantFailover(cantFailoverWaitingVotes)
	}
}

// handleSlaveMigration moves this replica to an orphaned master when its
// own master keeps enough replicas.
func (c *Cluster) handleSlaveMigration(maxSlaves int) {
	me := c.myself
	if c.state != stateOK {
		return
	}
	my := me.slaveOf
	if my == nil {
		return
	}
	ok := 0
	for _, s := range my.slaves {
		if !s.failed() && !s.timedOut() {
			ok++
		}
	}
	if int64(ok) <= c.configInt("cluster-migration-barrier") {
		return
	}
	candidate := me
	var target *Node
	for _, n := range c.sortedNodes() {
		okSlaves := 0
		orphaned := true
		if n.isSlave() || n.failed() {
			orphaned = false
		}
		if n.flags&FlagMigrateTo == 0 {
			orphaned = false
		}
		if n.isMaster() {
			okSlaves = n.countNonFailingSlaves()
		}
		if okSlaves > 0 {
			orphaned = false
		}
		if orphaned {
			if target == nil && n.numSlots > 0 {
				target = n
			}
			if n.orphanedTime == 0 {
				n.orphanedTime = mstime()
			}
		} else {
			n.orphanedTime = 0
		}
		if okSlaves == maxSlaves {
			for _, s := range n.slaves {
				if s.name < candidate.name {
					candidate = s
				}
			}
		}
	}
	if target != nil && candidate == me && mstime()-target.orphanedTime > slaveMigrationDelay {
		c.log(LogWarning, "Migrating to orphaned master %s", target.name)
		c.setMaster(target)
	}
}

// resetManualFailover clears the manual failover state (a master that
// paused its clients for one resumes them).
func (c *Cluster) resetManualFailover() {
	if c.mfSlave != nil || c.mfPausing.Load() {
		c.mfPausing.Store(false)
		c.host.UnpauseWrites()
	}
	c.mfEnd = 0
	c.mfCanStart = false
	c.mfSlave = nil
	c.mfMasterOffset = -1
}

func (c *Cluster) pauseForFailover(until int64) {
	c.mfPausing.Store(true)
	c.host.PauseWrites(until)
}

func (c *Cluster) manualFailoverCheckTimeout() {
	if c.mfEnd != 0 && c.mfEnd < mstime() {
		c.log(LogWarning, "Manual failover timed out.")
		c.resetManualFailover()
	}
}

func (c *Cluster) handleManualFailover() {
	if c.mfEnd == 0 || c.mfCanStart || c.mfMasterOffset == -1 {
		return
	}
	if c.mfMasterOffset == c.host.ReplOffset() {
		c.mfCanStart = true
		c.log(LogWarning, "All master replication stream processed, manual failover can start.")
		c.doBeforeSleep(todoHandleFailover)
		return
	}
	c.doBeforeSleep(todoHandleManualFailover)
}

// ManualFailoverPaused reports whether this master paused its clients for
// a replica's manual failover (the replication stream then carries no
// PING, so the replica can reach the master's offset).
func (c *Cluster) ManualFailoverPaused() bool { return c.mfPausing.Load() }
