package cluster

import (
	"math/rand"
	"net"
	"strings"
)

// Building, sending and processing bus messages (cluster.c's
// clusterProcessPacket and the clusterSend* functions).

// header fills the header of a message about this node.
func (c *Cluster) header(typ uint16) *Message {
	me := c.myself
	master := me
	if me.isSlave() && me.slaveOf != nil {
		master = me.slaveOf
	}
	port, pport, cport := c.announcedPorts()
	m := &Message{
		Type:         typ,
		Sender:       me.name,
		MyIP:         truncIP(c.host.Config("cluster-announce-ip")),
		Slots:        master.slots,
		Port:         uint16(port),
		PPort:        uint16(pport),
		CPort:        uint16(cport),
		Flags:        uint16(me.flags),
		State:        uint8(c.state),
		CurrentEpoch: c.currentEpoch,
		ConfigEpoch:  master.configEpoch,
		Offset:       uint64(c.host.ReplOffset()),
	}
	if me.slaveOf != nil {
		m.SlaveOf = me.slaveOf.name
	}
	if me.isMaster() && c.mfEnd != 0 {
		m.MFlags[0] |= mflagPaused
	}
	return m
}

// sendMessage queues a message on a link, counting it.
func (c *Cluster) sendMessage(l *link, b []byte, typ uint16) {
	if l == nil {
		return
	}
	l.send(b)
	if int(typ) < msgTypeCount {
		c.statsSent[typ]++
	}
}

// broadcast sends to every node with a link but myself and nodes in
// handshake.
func (c *Cluster) broadcast(b []byte, typ uint16) {
	for _, n := range c.nodes {
		if n.flags&(FlagMyself|FlagHandshake) != 0 {
			continue
		}
		c.sendMessage(n.link, b, typ)
	}
}

func gossipEntry(n *Node) Gossip {
	return Gossip{
		Name:         n.name,
		PingSent:     uint32(n.pingSent / 1000),
		PongReceived: uint32(n.pongReceived / 1000),
		IP:           n.ip,
		Port:         uint16(n.port),
		CPort:        uint16(n.cport),
		Flags:        uint16(n.flags),
		PPort:        uint16(n.pport),
	}
}

// sendPing sends a PING, PONG or MEET with gossip about a tenth of the
// known nodes (at least 3) and every node in PFAIL.
func (c *Cluster) sendPing(l *link, typ uint16) {
	c.pingsSent++
	freshnodes := len(c.nodes) - 2
	wanted := len(c.nodes) / 10
	if wanted < 3 {
		wanted = 3
	}
	if wanted > freshnodes {
		wanted = freshnodes
	}
	pfailWanted := c.statsPFail
	if !l.inbound && typ == MsgPing {
		l.node.pingSent = mstime()
	}
	m := c.header(typ)
	all := make([]*Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		all = append(all, n)
	}
	maxIter := wanted * 3
	for freshnodes > 0 && len(m.Gossip) < wanted && maxIter > 0 {
		maxIter--
		n := all[rand.Intn(len(all))]
		if n == c.myself || n.flags&FlagPFail != 0 {
			continue
		}
		if n.flags&(FlagHandshake|FlagNoAddr) != 0 || (n.link == nil && n.numSlots == 0) {
			freshnodes--
			continue
		}
		if n.lastInPingGossip == c.pingsSent {
			continue
		}
		m.Gossip = append(m.Gossip, gossipEntry(n))
		n.lastInPingGossip = c.pingsSent
		freshnodes--
	}
	if pfailWanted > 0 {
		for _, n := range all {
			if pfailWanted == 0 {
				break
			}
			if n.flags&(FlagHandshake|FlagNoAddr) != 0 || n.flags&FlagPFail == 0 {
				continue
			}
			m.Gossip = append(m.Gossip, gossipEntry(n))
			pfailWanted--
		}
	}
	m.Hostname = c.myself.hostname
	c.sendMessage(l, m.Encode(), typ)
}

// Broadcast targets of broadcastPong.
const (
	broadcastAll = iota
	broadcastLocalSlaves
)

func (c *Cluster) broadcastPong(target int) {
	for _, n := range c.nodes {
		if n.link == nil || n == c.myself || n.inHandshake() {
			continue
		}
		if target == broadcastLocalSlaves {
			local := n.isSlave() && n.slaveOf != nil && (n.slaveOf == c.myself || n.slaveOf == c.myself.slaveOf)
			if !local {
				continue
			}
		}
		c.sendPing(n.link, MsgPong)
	}
}

func (c *Cluster) sendFail(name string) {
	m := c.header(MsgFail)
	m.About = name
	c.broadcast(m.Encode(), MsgFail)
}

func (c *Cluster) sendUpdate(l *link, n *Node) {
	if l == nil {
		return
	}
	m := c.header(MsgUpdate)
	m.UpdateNode = n.name
	m.UpdateEpoch = n.configEpoch
	m.UpdateSlots = n.slots
	for i := range m.UpdateSlots {
		m.UpdateSlots[i] &^= c.notClaiming[i]
	}
	c.sendMessage(l, m.Encode(), MsgUpdate)
}

// Publish sends a PUBLISH to every node, or an SPUBLISH to the other
// nodes of this node's shard. It is called by the server after delivering
// the message to its own subscribers.
func (c *Cluster) Publish(channel, message []byte, shard bool) {
	c.mu.Lock()
	if shard {
		m := c.header(MsgPublishShard)
		m.Channel, m.Payload = channel, message
		var b []byte
		for _, n := range c.shardNodes(c.myself) {
			if n.flags&(FlagMyself|FlagHandshake) != 0 {
				continue
			}
			if n.link == nil {
				continue
			}
			if b == nil {
				b = m.Encode()
			}
			c.sendMessage(n.link, b, MsgPublishShard)
		}
	} else {
		m := c.header(MsgPublish)
		m.Channel, m.Payload = channel, message
		c.broadcast(m.Encode(), MsgPublish)
	}
	c.unlock()
}

// shardNodes is clusterGetNodesServingMySlots: a node's master and its
// replicas.
func (c *Cluster) shardNodes(n *Node) []*Node {
	primary := n
	if !n.isMaster() && n.slaveOf != nil {
		primary = n.slaveOf
	}
	out := []*Node{primary}
	return append(out, primary.slaves...)
}

func (c *Cluster) requestFailoverAuth() {
	m := c.header(MsgAuthRequest)
	if c.mfEnd != 0 {
		m.MFlags[0] |= mflagForceAck
	}
	c.broadcast(m.Encode(), MsgAuthRequest)
}

func (c *Cluster) sendFailoverAuth(n *Node) {
	if n.link == nil {
		return
	}
	c.sendMessage(n.link, c.header(MsgAuthAck).Encode(), MsgAuthAck)
}

func (c *Cluster) sendMFStart(n *Node) {
	if n.link == nil {
		return
	}
	c.sendMessage(n.link, c.header(MsgMFStart).Encode(), MsgMFStart)
}

// markFailingIfNeeded flags a PFAIL node FAIL once a majority of masters
// reported it, and tells everyone.
func (c *Cluster) markFailingIfNeeded(n *Node) {
	needed := c.size/2 + 1
	if !n.timedOut() || n.failed() {
		return
	}
	failures := c.failureReportsCount(n)
	if c.myself.isMaster() {
		failures++
	}
	if failures < needed {
		return
	}
	c.log(LogNotice, "Marking node %s as failing (quorum reached).", n.name)
	n.flags &^= FlagPFail
	n.flags |= FlagFail
	n.failTime = mstime()
	c.sendFail(n.name)
	c.doBeforeSleep(todoUpdateState | todoSaveConfig)
}

// clearFailureIfNeeded undoes FAIL for a node we can reach again.
func (c *Cluster) clearFailureIfNeeded(n *Node) {
	now := mstime()
	if n.isSlave() || n.numSlots == 0 {
		kind := "master without slots"
		if n.isSlave() {
			kind = "replica"
		}
		c.log(LogNotice, "Clear FAIL state for node %s: %s is reachable again.", n.name, kind)
		n.flags &^= FlagFail
		c.doBeforeSleep(todoUpdateState | todoSaveConfig)
	}
	if n.isMaster() && n.numSlots > 0 && now-n.failTime > c.nodeTimeout()*2 {
		c.log(LogNotice, "Clear FAIL state for node %s: is reachable again and nobody is serving its slots after some time.", n.name)
		n.flags &^= FlagFail
		c.doBeforeSleep(todoUpdateState | todoSaveConfig)
	}
}

func (c *Cluster) handshakeInProgress(ip string, port, cport int) bool {
	for _, n := range c.nodes {
		if n.inHandshake() && strings.EqualFold(n.ip, ip) && n.port == port && n.cport == cport {
			return true
		}
	}
	return false
}

// startHandshake adds a node in handshake state for ip:port (CLUSTER
// MEET); false with invalid=true for a bad address, false alone when a
// handshake with it is already going on.
func (c *Cluster) startHandshake(ip string, port, cport int64) (started, invalid bool) {
	addr := net.ParseIP(ip)
	if addr == nil || strings.Contains(ip, "%") {
		return false, true
	}
	if port <= 0 || port > 65535 || cport <= 0 || cport > 65535 {
		return false, true
	}
	norm := addr.String()
	if v4 := addr.To4(); v4 != nil && !strings.Contains(ip, ":") {
		norm = v4.String()
	}
	if c.handshakeInProgress(norm, int(port), int(cport)) {
		return false, false
	}
	n := newNode("", FlagHandshake|FlagMeet)
	n.ip = norm
	n.port, n.cport = int(port), int(cport)
	c.addNode(n)
	return true, false
}

// peerIP is the address a link's peer connects from.
func peerIP(l *link) string {
	if l.conn == nil {
		return ""
	}
	if a, ok := l.conn.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	h, _, _ := net.SplitHostPort(l.conn.RemoteAddr().String())
	return h
}

func localIP(l *link) string {
	if l.conn == nil {
		return ""
	}
	if a, ok := l.conn.LocalAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	h, _, _ := net.SplitHostPort(l.conn.LocalAddr().String())
	return h
}

// nodeIP is the sender's IP: the one it announces, or its peer address.
func nodeIP(l *link, announced string) string {
	if announced != "" {
		return announced
	}
	return peerIP(l)
}

// processGossip handles the gossip section of a PING, PONG or MEET.
func (c *Cluster) processGossip(m *Message, l *link) {
	sender := l.node
	if sender == nil {
		sender = c.lookupNode(m.Sender)
	}
	for i := range m.Gossip {
		g := &m.Gossip[i]
		flags := int(g.Flags)
		if c.host != nil && c.logDebug() {
			c.log(LogDebug, "GOSSIP %s %s:%d@%d %s", g.Name, g.IP, g.Port, g.CPort, flagsString(flags))
		}
		n := c.lookupNode(g.Name)
		if n != nil {
			if sender != nil && sender.isMaster() && n != c.myself {
				if flags&(FlagFail|FlagPFail) != 0 {
					if n.addFailureReport(sender) {
						c.log(LogVerbose, "Node %s reported node %s as not reachable.", sender.name, n.name)
					}
					c.markFailingIfNeeded(n)
				} else if c.delFailureReport(n, sender) {
					c.log(LogVerbose, "Node %s reported node %s is back online.", sender.name, n.name)
				}
			}
			if flags&(FlagFail|FlagPFail) == 0 && n.pingSent == 0 && c.failureReportsCount(n) == 0 {
				pong := int64(g.PongReceived) * 1000
				if pong <= mstime()+500 && pong > n.pongReceived {
					n.pongReceived = pong
				}
			}
			if n.flags&(FlagFail|FlagPFail) != 0 && flags&FlagNoAddr == 0 && flags&(FlagFail|FlagPFail) == 0 &&
				(!strings.EqualFold(n.ip, g.IP) || n.port != int(g.Port) || n.cport != int(g.CPort)) {
				if n.link != nil {
					c.freeLink(n.link)
				}
				n.ip = g.IP
				n.port, n.pport, n.cport = int(g.Port), int(g.PPort), int(g.CPort)
				n.flags &^= FlagNoAddr
				c.rt.nodesDirty = true
			}
		} else if sender != nil && flags&FlagNoAddr == 0 && !c.blacklisted(g.Name) && verifyName(g.Name) {
			n := newNode(g.Name, flags)
			n.ip = g.IP
			n.port, n.pport, n.cport = int(g.Port), int(g.PPort), int(g.CPort)
			c.addNode(n)
		}
	}
}

func (c *Cluster) logDebug() bool { return c.host.Config("loglevel") == "debug" }

// updateAddressIfNeeded takes the address a node announces in a PING on
// its inbound link; true when it changed.
func (c *Cluster) updateAddressIfNeeded(n *Node, l *link, m *Message) bool {
	if l == n.link {
		return false
	}
	ip := nodeIP(l, m.MyIP)
	if ip == "" {
		return false
	}
	port, pport, cport := int(m.Port), int(m.PPort), int(m.CPort)
	if n.port == port && n.cport == cport && n.pport == pport && n.ip == ip {
		return false
	}
	n.ip = ip
	n.port, n.pport, n.cport = port, pport, cport
	if n.link != nil {
		c.freeLink(n.link)
	}
	n.flags &^= FlagNoAddr
	c.rt.nodesDirty = true
	c.log(LogWarning, "Address updated for node %s, now %s:%d", n.name, n.ip, n.port)
	if c.myself.isSlave() && c.myself.slaveOf == n {
		c.host.ReplicaOf(n.ip, n.port)
	}
	return true
}

// updateSlotsConfigWith rebinds the slots that sender claims with a
// greater config epoch, and turns this node into a replica of the node
// that took all its slots.
func (c *Cluster) updateSlotsConfigWith(sender *Node, senderEpoch uint64, slots *Bitmap) {
	me := c.myself
	cur := me
	if !me.isMaster() {
		cur = me.slaveOf
	}
	if sender == me {
		c.log(LogWarning, "Discarding UPDATE message about myself.")
		return
	}
	var dirty []int
	senderSlots, migrated := 0, 0
	var newMaster *Node
	for j := 0; j < Slots; j++ {
		if slots.Has(j) {
			senderSlots++
			if c.slots[j] == sender {
				c.notClaiming.Clear(j)
				continue
			}
			if c.importing[j] != nil {
				continue
			}
			if c.slotUnclaimed(j) || c.slots[j].configEpoch < senderEpoch {
				if c.slots[j] == me && c.host.CountKeysInSlot(j) > 0 && sender != me {
					dirty = append(dirty, j)
				}
				if c.slots[j] == cur && cur != nil {
					newMaster = sender
					migrated++
				}
				c.delSlot(j)
				c.addSlot(sender, j)
				c.notClaiming.Clear(j)
				c.doBeforeSleep(todoSaveConfig | todoUpdateState | todoFsyncConfig)
			}
		} else if c.slots[j] == sender {
			c.notClaiming.Set(j)
		}
	}
	if newMaster != nil && cur.numSlots == 0 && (c.configBool("cluster-allow-replica-migration") || senderSlots == migrated) {
		c.log(LogWarning, "Configuration change detected. Reconfiguring myself as a replica of %s", sender.name)
		c.setMaster(sender)
		c.doBeforeSleep(todoSaveConfig | todoUpdateState | todoFsyncConfig)
	} else if me.slaveOf != nil && me.slaveOf.slaveOf != nil && me.slaveOf.slaveOf != me {
		c.log(LogWarning, "I'm a sub-replica! Reconfiguring myself as a replica of grandmaster %s", me.slaveOf.slaveOf.name)
		c.setMaster(me.slaveOf.slaveOf)
		c.doBeforeSleep(todoSaveConfig | todoUpdateState | todoFsyncConfig)
	} else if len(dirty) > 0 {
		for _, s := range dirty {
			s := s
			c.after = append(c.after, func() { c.host.DelKeysInSlot(s) })
		}
	}
}

// processPacket handles one message received on a link.
func (c *Cluster) processPacket(l *link, buf []byte) {
	if len(buf) >= 16 {
		if t := int(uint16(buf[offType])<<8 | uint16(buf[offType+1])); t < msgTypeCount {
			c.statsRecv[t]++
		}
	}
	m, err := Decode(buf)
	if err != nil {
		if le, ok := err.(*LengthError); ok {
			c.log(LogWarning, "%s", le.Msg)
		}
		return
	}
	if int(m.Type) == c.dropFilter {
		c.log(LogWarning, "Dropping packet that matches debug drop filter")
		return
	}
	now := mstime()
	typ := m.Type
	flags := int(m.Flags)

	var sender *Node
	if l.node != nil && !l.node.inHandshake() {
		sender = l.node
	} else {
		sender = c.lookupNode(m.Sender)
		if sender != nil && l.node == nil {
			c.setInbound(sender, l)
		}
	}
	if sender != nil {
		sender.dataReceived = now
	}
	var senderEpoch uint64
	if sender != nil && !sender.inHandshake() {
		if m.CurrentEpoch > c.currentEpoch {
			c.currentEpoch = m.CurrentEpoch
		}
		senderEpoch = m.ConfigEpoch
		if senderEpoch > sender.configEpoch {
			sender.configEpoch = senderEpoch
			c.doBeforeSleep(todoSaveConfig | todoFsyncConfig)
		}
		sender.replOffset = int64(m.Offset)
		sender.replOffsetTime = now
		if c.mfEnd != 0 && c.myself.isSlave() && c.myself.slaveOf == sender && m.MFlags[0]&mflagPaused != 0 && c.mfMasterOffset == -1 {
			c.mfMasterOffset = sender.replOffset
			c.doBeforeSleep(todoHandleManualFailover)
			c.log(LogWarning, "Received replication offset for paused master manual failover: %d", c.mfMasterOffset)
		}
	}

	if typ == MsgPing || typ == MsgMeet {
		// A MEET tells us our own address as the other node sees it.
		if (typ == MsgMeet || c.myself.ip == "") && c.host.Config("cluster-announce-ip") == "" {
			if ip := localIP(l); ip != "" && ip != c.myself.ip {
				c.myself.ip = ip
				c.rt.nodesDirty = true
				c.log(LogWarning, "IP address for this node updated to %s", ip)
				c.doBeforeSleep(todoSaveConfig)
			}
		}
		if sender == nil && typ == MsgMeet {
			n := newNode("", FlagHandshake)
			n.ip = nodeIP(l, m.MyIP)
			n.port, n.pport, n.cport = int(m.Port), int(m.PPort), int(m.CPort)
			c.addNode(n)
			c.doBeforeSleep(todoSaveConfig)
			c.processGossip(m, l)
		}
		c.sendPing(l, MsgPong)
	}

	switch typ {
	case MsgPing, MsgPong, MsgMeet:
		c.log(LogDebug, "%s packet received: %s", TypeName(int(typ)), m.Sender)
		if !l.inbound {
			if l.node.inHandshake() {
				if sender != nil {
					c.log(LogVerbose, "Handshake: we already know node %s, updating the address if needed.", sender.name)
					if c.updateAddressIfNeeded(sender, l, m) {
						c.doBeforeSleep(todoSaveConfig | todoUpdateState)
					}
					c.delNode(l.node)
					return
				}
				c.renameNode(l.node, m.Sender)
				c.log(LogDebug, "Handshake with node %s completed.", l.node.name)
				l.node.flags &^= FlagHandshake
				l.node.flags |= flags & (FlagMaster | FlagSlave)
				c.doBeforeSleep(todoSaveConfig)
			} else if l.node.name != m.Sender {
				c.log(LogDebug, "PONG contains mismatching sender ID. About node %s added %d ms ago, having flags %d", l.node.name, now-l.node.ctime, l.node.flags)
				n := l.node
				n.flags |= FlagNoAddr
				n.ip = ""
				n.port, n.pport, n.cport = 0, 0, 0
				c.freeLink(l)
				c.rt.nodesDirty = true
				c.doBeforeSleep(todoSaveConfig)
				return
			}
		}
		if sender != nil {
			sender.flags &^= FlagNoFailover
			sender.flags |= flags & FlagNoFailover
		}
		if sender != nil && typ == MsgPing && !sender.inHandshake() && c.updateAddressIfNeeded(sender, l, m) {
			c.doBeforeSleep(todoSaveConfig | todoUpdateState)
		}
		if !l.inbound && typ == MsgPong {
			n := l.node
			n.pongReceived = now
			n.pingSent = 0
			if n.timedOut() {
				n.flags &^= FlagPFail
				c.doBeforeSleep(todoSaveConfig | todoUpdateState)
			} else if n.failed() {
				c.clearFailureIfNeeded(n)
			}
		}
		if sender != nil {
			if m.SlaveOf == "" {
				c.setNodeAsMaster(sender)
			} else {
				master := c.lookupNode(m.SlaveOf)
				if sender.isMaster() {
					c.delNodeSlots(sender)
					sender.flags &^= FlagMaster | FlagMigrateTo
					sender.flags |= FlagSlave
					c.rt.nodesDirty = true
					c.doBeforeSleep(todoSaveConfig | todoUpdateState)
				}
				if master != nil && sender.slaveOf != master {
					if sender.slaveOf != nil {
						sender.slaveOf.removeSlave(sender)
					}
					master.addSlave(sender)
					sender.slaveOf = master
					c.doBeforeSleep(todoSaveConfig)
				}
			}
		}
		var senderMaster *Node
		dirtySlots := false
		if sender != nil {
			senderMaster = sender
			if !sender.isMaster() {
				senderMaster = sender.slaveOf
			}
			if senderMaster != nil {
				dirtySlots = senderMaster.slots != m.Slots
			}
		}
		if sender != nil && sender.isMaster() && dirtySlots {
			c.updateSlotsConfigWith(sender, senderEpoch, &m.Slots)
		}
		if sender != nil && dirtySlots {
			for j := 0; j < Slots; j++ {
				if !m.Slots.Has(j) {
					continue
				}
				if c.slots[j] == sender || c.slotUnclaimed(j) {
					continue
				}
				if c.slots[j].configEpoch > senderEpoch {
					c.log(LogVerbose, "Node %s has old slots configuration, sending an UPDATE message about %s", sender.name, c.slots[j].name)
					c.sendUpdate(sender.link, c.slots[j])
					break
				}
			}
		}
		if sender != nil && c.myself.isMaster() && sender.isMaster() && senderEpoch == c.myself.configEpoch {
			c.handleEpochCollision(sender)
		}
		if sender != nil {
			c.processGossip(m, l)
			// The hostname extension (none: no announced hostname).
			for _, t := range m.UnknownExts {
				c.log(LogWarning, "Received unknown extension type %d", t)
			}
			h := ""
			if m.HasHostname {
				h = m.Hostname
			}
			if sender.hostname != h {
				sender.hostname = h
				c.rt.nodesDirty = true
			}
		}
	case MsgFail:
		if sender != nil {
			failing := c.lookupNode(m.About)
			if failing != nil && failing.flags&(FlagFail|FlagMyself) == 0 {
				c.log(LogNotice, "FAIL message received from %s about %s", m.Sender, m.About)
				failing.flags |= FlagFail
				failing.failTime = now
				failing.flags &^= FlagPFail
				c.doBeforeSleep(todoSaveConfig | todoUpdateState)
			}
		} else {
			c.log(LogNotice, "Ignoring FAIL message from unknown node %s about %s", m.Sender, m.About)
		}
	case MsgPublish, MsgPublishShard:
		if sender == nil {
			return
		}
		shard := typ == MsgPublishShard
		if c.host.HasSubscribers(shard) {
			ch := append([]byte(nil), m.Channel...)
			msg := append([]byte(nil), m.Payload...)
			c.after = append(c.after, func() { c.host.Publish(ch, msg, shard) })
		}
	case MsgAuthRequest:
		if sender == nil {
			return
		}
		c.sendFailoverAuthIfNeeded(sender, m)
	case MsgAuthAck:
		if sender == nil {
			return
		}
		if sender.isMaster() && sender.numSlots > 0 && m.CurrentEpoch >= c.failoverAuthEpoch {
			c.failoverAuthCount++
			c.doBeforeSleep(todoHandleFailover)
		}
	case MsgMFStart:
		if sender == nil || sender.slaveOf != c.myself {
			return
		}
		c.resetManualFailover()
		c.mfEnd = now + mfTimeout
		c.mfSlave = sender
		c.pauseForFailover(now + mfTimeout*2)
		c.log(LogWarning, "Manual failover requested by replica %s.", sender.name)
		c.sendPing(l, MsgPing)
	case MsgUpdate:
		if sender == nil {
			return
		}
		n := c.lookupNode(m.UpdateNode)
		if n == nil || n.configEpoch >= m.UpdateEpoch {
			return
		}
		if n.isSlave() {
			c.setNodeAsMaster(n)
		}
		n.configEpoch = m.UpdateEpoch
		c.doBeforeSleep(todoSaveConfig | todoFsyncConfig)
		c.updateSlotsConfigWith(n, m.UpdateEpoch, &m.UpdateSlots)
	case MsgModule:
		// No modules: nothing receives module messages.
	default:
		c.log(LogWarning, "Received unknown packet type: %d", typ)
	}
}
