package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/config"
)

// Log levels of Host.Log, as the server's loglevel names them.
const (
	LogDebug = iota
	LogVerbose
	LogNotice
	LogWarning
)

// Host is what the cluster needs from the server it runs in. The cluster
// calls it with its own lock held, except DelKeysInSlot, Publish,
// UnsubscribeShardSlot and FlushAll, which are called after the cluster's
// lock is released.
type Host interface {
	// Log writes a line to the server's log at a Log* level.
	Log(level int, msg string)
	// Config returns the value of a configuration directive, as CONFIG
	// GET shows it.
	Config(name string) string
	// Fatal logs msg and ends the process (Redis exits when it cannot
	// write nodes.conf).
	Fatal(msg string)
	// Port is the TCP port clients use (the one the server listens on).
	Port() int

	// ReplicaOf makes the server a replica of ip:port (Redis's
	// replicationSetMaster); nothing happens when it already is one.
	ReplicaOf(ip string, port int)
	// Promote makes a replica a master that keeps its dataset and its
	// replication history (replicationUnsetMaster).
	Promote()
	// ReplOffset is the replication offset: master_repl_offset on a
	// master, the offset processed from the master on a replica.
	ReplOffset() int64
	// MasterLink reports the replica's link to its master: whether it is
	// up, and in unix ms when it last carried data (up) or went down.
	MasterLink() (up bool, lastIO, downSince int64)

	// CountKeysInSlot and KeyCount count the keys of a slot and of the
	// whole dataset (database 0).
	CountKeysInSlot(slot int) int
	KeyCount() int
	// GetKeysInSlot returns up to max keys of a slot.
	GetKeysInSlot(slot, max int) []string
	// DelKeysInSlot deletes the keys of a slot (a slot taken away).
	DelKeysInSlot(slot int) int
	// FlushAll empties the dataset (a replica reset to master). It is
	// called during CLUSTER RESET, which the server runs with the
	// keyspace held exclusively.
	FlushAll()

	// Publish delivers a message that came over the bus to the local
	// subscribers of channel (shard: the sharded channels).
	Publish(channel, message []byte, shard bool)
	// HasSubscribers reports whether any client subscribes to a channel
	// (shard: a shard channel) or pattern, so bus messages are decoded
	// only when someone listens.
	HasSubscribers(shard bool) bool
	// UnsubscribeShardSlot unsubscribes every client from the shard
	// channels of slot (a slot this shard no longer serves).
	UnsubscribeShardSlot(slot int)

	// PauseWrites holds write commands until the given unix ms (a
	// master in a manual failover); UnpauseWrites ends that pause.
	PauseWrites(until int64)
	UnpauseWrites()
}

// Options are the parts of a cluster node the server's configuration
// does not carry.
type Options struct {
	// TLS, when set and tls-cluster is yes, returns the configurations of
	// the bus's listener and of its outbound connections.
	TLS func() (server, client *tls.Config)
}

// Cluster is this node's view of the cluster and the bus that keeps it
// (Redis's clusterState and cluster.c).
type Cluster struct {
	host Host
	opts Options

	mu           sync.Mutex
	myself       *Node
	currentEpoch uint64
	state        int // stateOK or stateFail
	size         int
	nodes        map[string]*Node
	blacklist    map[string]int64 // node name -> unix seconds it may be re-added
	slots        [Slots]*Node
	migrating    [Slots]*Node
	importing    [Slots]*Node
	notClaiming  Bitmap // slots whose owner stopped claiming them

	failoverAuthTime   int64
	failoverAuthCount  int
	failoverAuthSent   bool
	failoverAuthRank   int
	failoverAuthEpoch  uint64
	cantFailoverReason int
	lastCantLog        int64 // unix seconds

	mfEnd          int64
	mfSlave        *Node
	mfMasterOffset int64
	mfCanStart     bool
	lastVoteEpoch  uint64

	todo           int
	statsSent      [msgTypeCount]int64
	statsRecv      [msgTypeCount]int64
	statsPFail     int
	linksExceeded  uint64
	pingsSent      uint64
	cronIter       uint64
	firstStateCall int64
	minorityTime   int64
	dropFilter     int // DEBUG DROP-CLUSTER-PACKET-FILTER (-1: none)
	prevAnnounceIP string

	configFile string
	lockFile   *os.File
	lns        []net.Listener
	stopCh     chan struct{}
	links      map[*link]struct{} // every live link, with a node or not yet
	stopped    bool
	wg         sync.WaitGroup
	after      []func() // host calls made once the lock is released

	rt        routing
	mfPausing atomic.Bool // a master paused for a manual failover
}

const (
	stateOK   = 0
	stateFail = 1
)

// Things to do before releasing the lock (clusterBeforeSleep's flags).
const (
	todoHandleFailover = 1 << iota
	todoUpdateState
	todoSaveConfig
	todoFsyncConfig
	todoHandleManualFailover
)

func mstime() int64 { return time.Now().UnixMilli() }

// New loads (or creates) the node configuration of a cluster node and
// takes the lock on its nodes.conf. The bus starts with Start.
func New(host Host, opts Options) (*Cluster, error) {
	c := &Cluster{
		host:           host,
		opts:           opts,
		nodes:          map[string]*Node{},
		blacklist:      map[string]int64{},
		state:          stateFail,
		size:           1,
		dropFilter:     -1,
		mfMasterOffset: -1,
		stopCh:         make(chan struct{}),
		links:          make(map[*link]struct{}),
	}
	c.rt.init()
	c.configFile = host.Config("cluster-config-file")
	if err := c.lockConfig(); err != nil {
		return nil, err
	}
	loaded, err := c.loadConfig()
	if err != nil {
		c.unlockConfig()
		return nil, err
	}
	if !loaded {
		c.myself = newNode("", FlagMyself|FlagMaster)
		c.addNode(c.myself)
		c.log(LogNotice, "No cluster configuration found, I'm %s", c.myself.name)
		if err := c.saveConfig(true); err != nil {
			c.unlockConfig()
			return nil, fmt.Errorf("Fatal: can't update cluster config file.")
		}
	}
	c.updateMyselfAnnounced()
	c.rt.nodesDirty = true
	c.rt.allDirty()
	c.publishRoutes()
	return c, nil
}

// Start listens on the bus port and starts the cluster's timers. The
// server must be listening already (its port is announced).
func (c *Cluster) Start() error {
	port := c.host.Port()
	cport := c.configInt("cluster-port")
	if cport == 0 {
		if port > 65535-10000 {
			return errors.New("Redis port number too high. Cluster communication port is 10,000 port numbers higher than your Redis port. Your Redis port number must be 55535 or less.")
		}
		cport = int64(port) + 10000
	}
	binds := strings.Fields(c.host.Config("bind"))
	if len(binds) == 0 {
		return errors.New("No bind address is configured, but it is required for the Cluster bus.")
	}
	var lns []net.Listener
	for _, b := range binds {
		network, host, optional := config.BindAddr(b)
		ln, err := net.Listen(network, net.JoinHostPort(host, strconv.Itoa(int(cport))))
		if err != nil {
			if optional {
				continue
			}
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("Failed listening on port %d (cluster), aborting.", cport)
		}
		lns = append(lns, ln)
	}
	c.mu.Lock()
	c.lns = lns
	c.updateMyselfAnnounced()
	c.unlock()
	for _, ln := range lns {
		c.wg.Add(1)
		go c.acceptLoop(ln)
	}
	c.wg.Add(1)
	go c.cronLoop()
	return nil
}

// Stop closes the bus and releases nodes.conf.
func (c *Cluster) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	close(c.stopCh)
	for _, ln := range c.lns {
		ln.Close()
	}
	// Every link, including accepted ones no node claimed yet: their
	// goroutines must end before Wait returns.
	for l := range c.links {
		c.freeLink(l)
	}
	c.mu.Unlock()
	c.wg.Wait()
	c.mu.Lock()
	c.unlockConfig()
	c.mu.Unlock()
}

// BusPort returns the port the bus listens on (0 before Start).
func (c *Cluster) BusPort() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lns) == 0 {
		return 0
	}
	return c.lns[0].Addr().(*net.TCPAddr).Port
}

// unlock does what clusterBeforeSleep does (failover, state, saving the
// configuration), publishes the routing table if it changed, releases the
// lock and then makes the host calls queued meanwhile.
func (c *Cluster) unlock() {
	c.beforeSleep()
	c.publishRoutes()
	after := c.after
	c.after = nil
	c.mu.Unlock()
	for _, fn := range after {
		fn()
	}
}

func (c *Cluster) doBeforeSleep(flags int) { c.todo |= flags }

func (c *Cluster) beforeSleep() {
	// What one step asks for (a save after a failover) is done by the next
	// round; what is still asked after three rounds waits for the next
	// release of the lock.
	for round := 0; round < 3 && c.todo != 0; round++ {
		flags := c.todo
		c.todo = 0
		if flags&todoHandleManualFailover != 0 {
			if c.myself.isSlave() {
				c.handleManualFailover()
				c.handleSlaveFailover()
			}
		} else if flags&todoHandleFailover != 0 {
			c.handleSlaveFailover()
		}
		if flags&todoUpdateState != 0 {
			c.updateState()
		}
		if flags&todoSaveConfig != 0 {
			c.saveConfigOrDie(flags&todoFsyncConfig != 0)
		}
	}
}

func (c *Cluster) log(level int, format string, args ...any) {
	c.host.Log(level, fmt.Sprintf(format, args...))
}

func (c *Cluster) configInt(name string) int64 {
	v, _ := strconv.ParseInt(c.host.Config(name), 10, 64)
	return v
}

func (c *Cluster) configBool(name string) bool { return c.host.Config(name) == "yes" }

func (c *Cluster) nodeTimeout() int64 { return c.configInt("cluster-node-timeout") }

// announcedPorts is deriveAnnouncedPorts: the client port, the plaintext
// port (TLS clusters) and the bus port this node announces.
func (c *Cluster) announcedPorts() (port, pport, cport int) {
	port = c.host.Port()
	tlsCluster := c.configBool("tls-cluster")
	if tlsCluster {
		if tp := int(c.configInt("tls-port")); tp != 0 {
			pport, port = port, tp
		}
	}
	if len(c.lns) > 0 {
		cport = c.lns[0].Addr().(*net.TCPAddr).Port
	} else if cp := int(c.configInt("cluster-port")); cp != 0 {
		cport = cp
	} else {
		cport = port + 10000
	}
	if ap := int(c.configInt("cluster-announce-tls-port")); tlsCluster && ap != 0 {
		port = ap
		pport = int(c.configInt("cluster-announce-port"))
	} else if ap := int(c.configInt("cluster-announce-port")); ap != 0 {
		port = ap
	}
	if bp := int(c.configInt("cluster-announce-bus-port")); bp != 0 {
		cport = bp
	}
	return
}

// updateMyselfAnnounced keeps myself's ports, announced IP, hostname and
// nofailover flag in line with the configuration (CONFIG SET may change
// them at any time).
func (c *Cluster) updateMyselfAnnounced() {
	me := c.myself
	me.port, me.pport, me.cport = c.announcedPorts()
	ip := c.host.Config("cluster-announce-ip")
	if ip != c.prevAnnounceIP {
		c.prevAnnounceIP = ip
		if ip != "" {
			me.ip = truncIP(ip)
		} else {
			me.ip = "" // autodetected again from MEETs
		}
		c.rt.nodesDirty = true
	}
	if h := c.host.Config("cluster-announce-hostname"); h != me.hostname {
		me.hostname = h
		c.rt.nodesDirty = true
	}
	old := me.flags
	me.flags &^= FlagNoFailover
	if c.configBool("cluster-replica-no-failover") {
		me.flags |= FlagNoFailover
	}
	if me.flags != old {
		c.doBeforeSleep(todoSaveConfig | todoUpdateState)
	}
}

func truncIP(ip string) string {
	if len(ip) > ipLen-1 {
		return ip[:ipLen-1]
	}
	return ip
}

func (c *Cluster) addNode(n *Node) {
	c.nodes[n.name] = n
}

func (c *Cluster) lookupNode(name string) *Node {
	if !verifyName(name) {
		return nil
	}
	return c.nodes[name]
}

// delNode removes a node: its slots become unassigned, its failure
// reports go, its links close.
func (c *Cluster) delNode(del *Node) {
	for j := 0; j < Slots; j++ {
		if c.importing[j] == del {
			c.setImporting(j, nil)
		}
		if c.migrating[j] == del {
			c.setMigrating(j, nil)
		}
		if c.slots[j] == del {
			c.delSlot(j)
		}
	}
	for _, n := range c.nodes {
		if n != del {
			c.delFailureReport(n, del)
		}
	}
	c.freeNode(del)
}

func (c *Cluster) freeNode(n *Node) {
	for _, s := range n.slaves {
		s.slaveOf = nil
	}
	if n.isSlave() && n.slaveOf != nil {
		n.slaveOf.removeSlave(n)
	}
	delete(c.nodes, n.name)
	if n.link != nil {
		c.freeLink(n.link)
	}
	if n.inLink != nil {
		c.freeLink(n.inLink)
	}
	if c.mfSlave == n {
		c.mfSlave = nil
	}
	c.rt.nodesDirty = true
}

func (c *Cluster) renameNode(n *Node, name string) {
	c.log(LogDebug, "Renaming node %s into %s", n.name, name)
	delete(c.nodes, n.name)
	n.name = name
	c.addNode(n)
	c.rt.nodesDirty = true
}

// maxEpoch is the greatest config epoch known, or the current epoch if
// greater.
func (c *Cluster) maxEpoch() uint64 {
	var m uint64
	for _, n := range c.nodes {
		if n.configEpoch > m {
			m = n.configEpoch
		}
	}
	if m < c.currentEpoch {
		m = c.currentEpoch
	}
	return m
}

// bumpEpochWithoutConsensus gives this node a new config epoch unless it
// already has the greatest one.
func (c *Cluster) bumpEpochWithoutConsensus() bool {
	me := c.myself
	if me.configEpoch == 0 || me.configEpoch != c.maxEpoch() {
		c.currentEpoch++
		me.configEpoch = c.currentEpoch
		c.doBeforeSleep(todoSaveConfig | todoFsyncConfig)
		c.log(LogWarning, "New configEpoch set to %d", me.configEpoch)
		return true
	}
	return false
}

// handleEpochCollision: two masters with the same config epoch; the one
// with the smaller node ID takes a new epoch.
func (c *Cluster) handleEpochCollision(sender *Node) {
	me := c.myself
	if sender.configEpoch != me.configEpoch || !sender.isMaster() || !me.isMaster() {
		return
	}
	if sender.name <= me.name {
		return
	}
	c.currentEpoch++
	me.configEpoch = c.currentEpoch
	c.saveConfigOrDie(true)
	c.log(LogVerbose, "WARNING: configEpoch collision with node %s. configEpoch set to %d", sender.name, me.configEpoch)
}

const blacklistTTL = 60 // seconds

func (c *Cluster) blacklistCleanup() {
	now := time.Now().Unix()
	for id, exp := range c.blacklist {
		if exp < now {
			delete(c.blacklist, id)
		}
	}
}

func (c *Cluster) blacklistAdd(n *Node) {
	c.blacklistCleanup()
	c.blacklist[n.name] = time.Now().Unix() + blacklistTTL
}

func (c *Cluster) blacklisted(name string) bool {
	c.blacklistCleanup()
	_, ok := c.blacklist[name]
	return ok
}

// Slot ownership.

func (c *Cluster) mastersHaveSlaves() bool {
	for _, n := range c.nodes {
		if !n.isSlave() && len(n.slaves) > 0 {
			return true
		}
	}
	return false
}

func (c *Cluster) setSlotBit(n *Node, slot int) bool {
	old := n.slots.Has(slot)
	n.slots.Set(slot)
	if !old {
		n.numSlots++
		if n.numSlots == 1 && c.mastersHaveSlaves() {
			n.flags |= FlagMigrateTo
		}
	}
	return old
}

func clearSlotBit(n *Node, slot int) bool {
	old := n.slots.Has(slot)
	n.slots.Clear(slot)
	if old {
		n.numSlots--
	}
	return old
}

func (c *Cluster) addSlot(n *Node, slot int) bool {
	if c.slots[slot] != nil {
		return false
	}
	c.setSlotBit(n, slot)
	c.slots[slot] = n
	c.rt.slotDirty(slot)
	return true
}

func (c *Cluster) delSlot(slot int) bool {
	n := c.slots[slot]
	if n == nil {
		return false
	}
	// Shard channels of a slot this shard served go with it.
	primary := n
	if !n.isMaster() && n.slaveOf != nil {
		primary = n.slaveOf
	}
	if primary == c.myself || c.myself.slaveOf == primary {
		s := slot
		c.after = append(c.after, func() { c.host.UnsubscribeShardSlot(s) })
	}
	clearSlotBit(n, slot)
	c.slots[slot] = nil
	c.rt.slotDirty(slot)
	return true
}

func (c *Cluster) delNodeSlots(n *Node) int {
	deleted := 0
	for j := 0; j < Slots; j++ {
		if n.slots.Has(j) {
			c.delSlot(j)
			deleted++
		}
	}
	return deleted
}

func (c *Cluster) setMigrating(slot int, n *Node) {
	c.migrating[slot] = n
	c.rt.slotDirty(slot)
}

func (c *Cluster) setImporting(slot int, n *Node) {
	c.importing[slot] = n
	c.rt.slotDirty(slot)
}

func (c *Cluster) closeAllSlots() {
	for j := 0; j < Slots; j++ {
		if c.migrating[j] != nil || c.importing[j] != nil {
			c.migrating[j], c.importing[j] = nil, nil
			c.rt.slotDirty(j)
		}
	}
}

func (c *Cluster) slotUnclaimed(slot int) bool {
	return c.slots[slot] == nil || c.notClaiming.Has(slot)
}

// setNodeAsMaster turns a node we believed a replica into a master.
func (c *Cluster) setNodeAsMaster(n *Node) {
	if n.isMaster() {
		return
	}
	if n.slaveOf != nil {
		n.slaveOf.removeSlave(n)
		if n != c.myself {
			n.flags |= FlagMigrateTo
		}
	}
	n.flags &^= FlagSlave
	n.flags |= FlagMaster
	n.slaveOf = nil
	c.rt.nodesDirty = true
	c.doBeforeSleep(todoSaveConfig | todoUpdateState)
}

// setMaster makes this node a replica of n.
func (c *Cluster) setMaster(n *Node) {
	me := c.myself
	if me.isMaster() {
		me.flags &^= FlagMaster | FlagMigrateTo
		me.flags |= FlagSlave
		c.closeAllSlots()
	} else if me.slaveOf != nil {
		me.slaveOf.removeSlave(me)
	}
	me.slaveOf = n
	n.addSlave(me)
	c.rt.nodesDirty = true
	// Commands see the new slot owners before the server turns read-only,
	// so a write gets MOVED rather than READONLY.
	c.publishRoutes()
	c.host.ReplicaOf(n.ip, n.port)
	c.resetManualFailover()
}

// reset is CLUSTER RESET: forget every other node, release the slots, turn
// into a master (a replica's data is flushed) and, HARD, take a new name
// and zero epochs.
func (c *Cluster) reset(hard bool) {
	me := c.myself
	if me.isSlave() {
		c.setNodeAsMaster(me)
		c.host.Promote()
		c.after = append(c.after, c.host.FlushAll)
	}
	c.closeAllSlots()
	c.resetManualFailover()
	for j := 0; j < Slots; j++ {
		c.delSlot(j)
	}
	for _, n := range c.nodes {
		if n != me {
			c.delNode(n)
		}
	}
	if hard {
		c.currentEpoch = 0
		c.lastVoteEpoch = 0
		me.configEpoch = 0
		c.log(LogWarning, "configEpoch set to 0 via CLUSTER RESET HARD")
		delete(c.nodes, me.name)
		me.name = randomName()
		c.addNode(me)
		c.log(LogNotice, "Node hard reset, now I'm %s", me.name)
	}
	c.rt.nodesDirty = true
	c.doBeforeSleep(todoSaveConfig | todoUpdateState | todoFsyncConfig)
}
