package cluster

import (
	"fmt"
	"strings"

	"github.com/sluicedb/sluice/resp"
)

// The CLUSTER command (clusterCommand), with redis-server 7.0's replies
// and errors. The server checks each subcommand's arity before calling.

var clusterHelp = []string{
	"ADDSLOTS <slot> [<slot> ...]",
	"    Assign slots to current node.",
	"ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Assign slots which are between <start-slot> and <end-slot> to current node.",
	"BUMPEPOCH",
	"    Advance the cluster config epoch.",
	"COUNT-FAILURE-REPORTS <node-id>",
	"    Return number of failure reports for <node-id>.",
	"COUNTKEYSINSLOT <slot>",
	"    Return the number of keys in <slot>.",
	"DELSLOTS <slot> [<slot> ...]",
	"    Delete slots information from current node.",
	"DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Delete slots information which are between <start-slot> and <end-slot> from current node.",
	"FAILOVER [FORCE|TAKEOVER]",
	"    Promote current replica node to being a master.",
	"FORGET <node-id>",
	"    Remove a node from the cluster.",
	"GETKEYSINSLOT <slot> <count>",
	"    Return key names stored by current node in a slot.",
	"FLUSHSLOTS",
	"    Delete current node own slots information.",
	"INFO",
	"    Return information about the cluster.",
	"KEYSLOT <key>",
	"    Return the hash slot for <key>.",
	"MEET <ip> <port> [<bus-port>]",
	"    Connect nodes into a working cluster.",
	"MYID",
	"    Return the node id.",
	"NODES",
	"    Return cluster configuration seen by node. Output format:",
	"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
	"REPLICATE <node-id>",
	"    Configure current node as replica to <node-id>.",
	"RESET [HARD|SOFT]",
	"    Reset current node (default: soft).",
	"SET-CONFIG-EPOCH <epoch>",
	"    Set config epoch of current node.",
	"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
	"    Set slot state.",
	"REPLICAS <node-id>",
	"    Return <node-id> replicas.",
	"SAVECONFIG",
	"    Force saving cluster configuration on disk.",
	"SLOTS",
	"    Return information about slots range mappings. Each range is made of:",
	"    start, end, master and replicas IP addresses, ports and ids",
	"SHARDS",
	"    Return information about slot range mappings and the nodes associated with them.",
	"LINKS",
	"    Return information about all network links between this node and its peers.",
	"    Output format is an array where each array element is a map containing attributes of a link",
}

// Errors shared with Redis's shared objects.
const (
	errSyntax = "ERR syntax error"
)

func syntaxErrorSub(w *resp.Writer, args [][]byte) {
	w.Error("ERR unknown subcommand or wrong number of arguments for '" + trunc(cstr(args[1]), 128) + "'. Try " + strings.ToUpper(string(args[0])) + " HELP.")
}

func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func eq(b []byte, s string) bool { return strings.EqualFold(string(b), s) }

func parseLL(b []byte) (int64, bool) { return resp.ParseInt(b) }

// slotArg is getSlotOrReply.
func slotArg(w *resp.Writer, b []byte) int {
	v, ok := parseLL(b)
	if !ok || v < 0 || v >= Slots {
		w.Error("ERR Invalid or out of range slot")
		return -1
	}
	return int(v)
}

// Command runs a CLUSTER subcommand: args is the whole command. plaintext
// marks a client not on TLS in a TLS cluster (shown plaintext ports).
func (c *Cluster) Command(w *resp.Writer, args [][]byte, plaintext bool) {
	c.mu.Lock()
	defer c.unlock()
	c.updateMyselfAnnounced() // CONFIG SET of an announced address shows at once
	sub := strings.ToLower(string(args[1]))
	argc := len(args)
	me := c.myself
	switch {
	case sub == "help" && argc == 2:
		w.Array(len(clusterHelp) + 3)
		w.Simple("CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
		for _, l := range clusterHelp {
			w.Simple(l)
		}
		w.Simple("HELP")
		w.Simple("    Prints this help.")
	case sub == "meet" && (argc == 4 || argc == 5):
		port, ok := parseLL(args[3])
		if !ok {
			w.Error("ERR Invalid TCP base port specified: " + cstr(args[3]))
			return
		}
		cport := port + 10000
		if argc == 5 {
			if cport, ok = parseLL(args[4]); !ok {
				w.Error("ERR Invalid TCP bus port specified: " + cstr(args[4]))
				return
			}
		}
		if _, invalid := c.startHandshake(string(args[2]), port, cport); invalid {
			w.Error("ERR Invalid node address specified: " + cstr(args[2]) + ":" + cstr(args[3]))
			return
		}
		w.OK()
	case sub == "nodes" && argc == 2:
		w.Verbatim("txt", c.nodesDescription(0, plaintext))
	case sub == "myid" && argc == 2:
		w.BulkString(me.name)
	case sub == "slots" && argc == 2:
		c.replySlots(w, plaintext)
	case sub == "shards" && argc == 2:
		c.replyShards(w)
	case sub == "flushslots" && argc == 2:
		if c.host.KeyCount() != 0 {
			w.Error("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.")
			return
		}
		c.delNodeSlots(me)
		c.doBeforeSleep(todoUpdateState | todoSaveConfig)
		w.OK()
	case (sub == "addslots" || sub == "delslots") && argc >= 3:
		del := sub == "delslots"
		var seen [Slots]byte
		for j := 2; j < argc; j++ {
			if slotArg(w, args[j]) < 0 {
				return
			}
		}
		for j := 2; j < argc; j++ {
			s, _ := parseLL(args[j])
			if !c.checkSlotAssignment(w, &seen, del, int(s), int(s)) {
				return
			}
		}
		c.updateSlots(&seen, del)
		c.doBeforeSleep(todoUpdateState | todoSaveConfig)
		w.OK()
	case (sub == "addslotsrange" || sub == "delslotsrange") && argc >= 4:
		if argc%2 == 1 {
			w.Error("ERR wrong number of arguments for '" + strings.ToLower(string(args[0])) + "|" + sub + "' command")
			return
		}
		del := sub == "delslotsrange"
		var seen [Slots]byte
		for j := 2; j < argc; j += 2 {
			start := slotArg(w, args[j])
			if start < 0 {
				return
			}
			end := slotArg(w, args[j+1])
			if end < 0 {
				return
			}
			if start > end {
				w.Error(fmt.Sprintf("ERR start slot number %d is greater than end slot number %d", start, end))
				return
			}
			if !c.checkSlotAssignment(w, &seen, del, start, end) {
				return
			}
		}
		c.updateSlots(&seen, del)
		c.doBeforeSleep(todoUpdateState | todoSaveConfig)
		w.OK()
	case sub == "setslot" && argc >= 4:
		c.setSlotCommand(w, args)
	case sub == "bumpepoch" && argc == 2:
		word := "STILL"
		if c.bumpEpochWithoutConsensus() {
			word = "BUMPED"
		}
		w.Simple(fmt.Sprintf("%s %d", word, me.configEpoch))
	case sub == "info" && argc == 2:
		w.Verbatim("txt", c.info())
	case sub == "saveconfig" && argc == 2:
		if err := c.saveConfig(true); err != nil {
			w.Error("ERR error saving the cluster node config: " + errnoText(err))
			return
		}
		w.OK()
	case sub == "keyslot" && argc == 3:
		w.Int(int64(KeySlot(args[2])))
	case sub == "countkeysinslot" && argc == 3:
		slot, ok := parseLL(args[2])
		if !ok {
			w.Error("ERR value is not an integer or out of range")
			return
		}
		if slot < 0 || slot >= Slots {
			w.Error("ERR Invalid slot")
			return
		}
		w.Int(int64(c.host.CountKeysInSlot(int(slot))))
	case sub == "getkeysinslot" && argc == 4:
		slot, ok := parseLL(args[2])
		if !ok {
			w.Error("ERR value is not an integer or out of range")
			return
		}
		maxkeys, ok := parseLL(args[3])
		if !ok {
			w.Error("ERR value is not an integer or out of range")
			return
		}
		if slot < 0 || slot >= Slots || maxkeys < 0 {
			w.Error("ERR Invalid slot or number of keys")
			return
		}
		keys := c.host.GetKeysInSlot(int(slot), int(min(maxkeys, int64(1)<<30)))
		w.Array(len(keys))
		for _, k := range keys {
			w.BulkString(k)
		}
	case sub == "forget" && argc == 3:
		n := c.lookupNode(string(args[2]))
		switch {
		case n == nil:
			w.Error("ERR Unknown node " + cstr(args[2]))
			return
		case n == me:
			w.Error("ERR I tried hard but I can't forget myself...")
			return
		case me.isSlave() && me.slaveOf == n:
			w.Error("ERR Can't forget my master!")
			return
		}
		c.blacklistAdd(n)
		c.delNode(n)
		c.doBeforeSleep(todoUpdateState | todoSaveConfig)
		w.OK()
	case sub == "replicate" && argc == 3:
		n := c.lookupNode(string(args[2]))
		switch {
		case n == nil:
			w.Error("ERR Unknown node " + cstr(args[2]))
			return
		case n == me:
			w.Error("ERR Can't replicate myself")
			return
		case n.isSlave():
			w.Error("ERR I can only replicate a master, not a replica.")
			return
		case me.isMaster() && (me.numSlots != 0 || c.host.KeyCount() != 0):
			w.Error("ERR To set a master the node must be empty and without assigned slots.")
			return
		}
		c.setMaster(n)
		c.doBeforeSleep(todoUpdateState | todoSaveConfig)
		w.OK()
	case (sub == "slaves" || sub == "replicas") && argc == 3:
		n := c.lookupNode(string(args[2]))
		if n == nil {
			w.Error("ERR Unknown node " + cstr(args[2]))
			return
		}
		if n.isSlave() {
			w.Error("ERR The specified node is not a master")
			return
		}
		w.Array(len(n.slaves))
		for _, s := range n.slaves {
			w.BulkString(c.nodeDescription(s, plaintext))
		}
	case sub == "count-failure-reports" && argc == 3:
		n := c.lookupNode(string(args[2]))
		if n == nil {
			w.Error("ERR Unknown node " + cstr(args[2]))
			return
		}
		w.Int(int64(c.failureReportsCount(n)))
	case sub == "failover" && (argc == 2 || argc == 3):
		force, takeover := false, false
		if argc == 3 {
			switch {
			case eq(args[2], "force"):
				force = true
			case eq(args[2], "takeover"):
				takeover, force = true, true
			default:
				w.Error(errSyntax)
				return
			}
		}
		switch {
		case me.isMaster():
			w.Error("ERR You should send CLUSTER FAILOVER to a replica")
			return
		case me.slaveOf == nil:
			w.Error("ERR I'm a replica but my master is unknown to me")
			return
		case !force && (me.slaveOf.failed() || me.slaveOf.link == nil):
			w.Error("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE")
			return
		}
		c.resetManualFailover()
		c.mfEnd = mstime() + mfTimeout
		switch {
		case takeover:
			c.log(LogWarning, "Taking over the master (user request).")
			c.bumpEpochWithoutConsensus()
			c.failoverReplaceYourMaster()
		case force:
			c.log(LogWarning, "Forced failover user request accepted.")
			c.mfCanStart = true
		default:
			c.log(LogWarning, "Manual failover user request accepted.")
			c.sendMFStart(me.slaveOf)
		}
		w.OK()
	case sub == "set-config-epoch" && argc == 3:
		epoch, ok := parseLL(args[2])
		if !ok {
			w.Error("ERR value is not an integer or out of range")
			return
		}
		switch {
		case epoch < 0:
			w.Error(fmt.Sprintf("ERR Invalid config epoch specified: %d", epoch))
		case len(c.nodes) > 1:
			w.Error("ERR The user can assign a config epoch only when the node does not know any other node.")
		case me.configEpoch != 0:
			w.Error("ERR Node config epoch is already non-zero")
		default:
			me.configEpoch = uint64(epoch)
			c.log(LogWarning, "configEpoch set to %d via CLUSTER SET-CONFIG-EPOCH", me.configEpoch)
			if c.currentEpoch < uint64(epoch) {
				c.currentEpoch = uint64(epoch)
			}
			c.doBeforeSleep(todoUpdateState | todoSaveConfig)
			w.OK()
		}
	case sub == "reset" && (argc == 2 || argc == 3):
		hard := false
		if argc == 3 {
			switch {
			case eq(args[2], "hard"):
				hard = true
			case eq(args[2], "soft"):
			default:
				w.Error(errSyntax)
				return
			}
		}
		if me.isMaster() && c.host.KeyCount() != 0 {
			w.Error("ERR CLUSTER RESET can't be called with master nodes containing keys")
			return
		}
		c.reset(hard)
		w.OK()
	case sub == "links" && argc == 2:
		c.replyLinks(w)
	default:
		syntaxErrorSub(w, args)
	}
}

func errnoText(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

func (c *Cluster) checkSlotAssignment(w *resp.Writer, seen *[Slots]byte, del bool, start, end int) bool {
	for s := start; s <= end; s++ {
		if del && c.slots[s] == nil {
			w.Error(fmt.Sprintf("ERR Slot %d is already unassigned", s))
			return false
		} else if !del && c.slots[s] != nil {
			w.Error(fmt.Sprintf("ERR Slot %d is already busy", s))
			return false
		}
		seen[s]++
		if seen[s] == 2 {
			w.Error(fmt.Sprintf("ERR Slot %d specified multiple times", s))
			return false
		}
	}
	return true
}

func (c *Cluster) updateSlots(seen *[Slots]byte, del bool) {
	for j := 0; j < Slots; j++ {
		if seen[j] == 0 {
			continue
		}
		if c.importing[j] != nil {
			c.setImporting(j, nil)
		}
		if del {
			c.delSlot(j)
		} else {
			c.addSlot(c.myself, j)
		}
	}
}

func (c *Cluster) setSlotCommand(w *resp.Writer, args [][]byte) {
	me := c.myself
	argc := len(args)
	if me.isSlave() {
		w.Error("ERR Please use SETSLOT only with masters.")
		return
	}
	slot := slotArg(w, args[2])
	if slot < 0 {
		return
	}
	action := strings.ToLower(string(args[3]))
	switch {
	case action == "migrating" && argc == 5:
		if c.slots[slot] != me {
			w.Error(fmt.Sprintf("ERR I'm not the owner of hash slot %d", slot))
			return
		}
		n := c.masterTarget(w, args[4])
		if n == nil {
			return
		}
		c.setMigrating(slot, n)
	case action == "importing" && argc == 5:
		if c.slots[slot] == me {
			w.Error(fmt.Sprintf("ERR I'm already the owner of hash slot %d", slot))
			return
		}
		n := c.masterTarget(w, args[4])
		if n == nil {
			return
		}
		c.setImporting(slot, n)
	case action == "stable" && argc == 4:
		c.setImporting(slot, nil)
		c.setMigrating(slot, nil)
	case action == "node" && argc == 5:
		n := c.lookupNode(string(args[4]))
		if n == nil {
			w.Error("ERR Unknown node " + cstr(args[4]))
			return
		}
		if n.isSlave() {
			w.Error("ERR Target node is not a master")
			return
		}
		if c.slots[slot] == me && n != me && c.host.CountKeysInSlot(slot) != 0 {
			w.Error(fmt.Sprintf("ERR Can't assign hashslot %d to a different node while I still hold keys for this hash slot.", slot))
			return
		}
		if c.host.CountKeysInSlot(slot) == 0 && c.migrating[slot] != nil {
			c.setMigrating(slot, nil)
		}
		wasMine := c.slots[slot] == me
		c.delSlot(slot)
		c.addSlot(n, slot)
		if wasMine && n != me && me.numSlots == 0 && c.configBool("cluster-allow-replica-migration") {
			c.log(LogWarning, "Configuration change detected. Reconfiguring myself as a replica of %s", n.name)
			c.setMaster(n)
			c.doBeforeSleep(todoSaveConfig | todoUpdateState | todoFsyncConfig)
		}
		if n == me && c.importing[slot] != nil {
			if c.bumpEpochWithoutConsensus() {
				c.log(LogWarning, "configEpoch updated after importing slot %d", slot)
			}
			c.setImporting(slot, nil)
			c.broadcastPong(broadcastAll)
		}
	default:
		w.Error("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
		return
	}
	c.doBeforeSleep(todoSaveConfig | todoUpdateState)
	w.OK()
}

func (c *Cluster) info() string {
	var assigned, ok, pfail, fail int
	for j := 0; j < Slots; j++ {
		n := c.slots[j]
		if n == nil {
			continue
		}
		assigned++
		switch {
		case n.failed():
			fail++
		case n.timedOut():
			pfail++
		default:
			ok++
		}
	}
	me := c.myself
	myEpoch := me.configEpoch
	if me.isSlave() && me.slaveOf != nil {
		myEpoch = me.slaveOf.configEpoch
	}
	state := "ok"
	if c.state == stateFail {
		state = "fail"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster_state:%s\r\ncluster_slots_assigned:%d\r\ncluster_slots_ok:%d\r\ncluster_slots_pfail:%d\r\ncluster_slots_fail:%d\r\ncluster_known_nodes:%d\r\ncluster_size:%d\r\ncluster_current_epoch:%d\r\ncluster_my_epoch:%d\r\n",
		state, assigned, ok, pfail, fail, len(c.nodes), c.size, c.currentEpoch, myEpoch)
	var sent, recv int64
	for i := 0; i < msgTypeCount; i++ {
		if c.statsSent[i] == 0 {
			continue
		}
		sent += c.statsSent[i]
		fmt.Fprintf(&b, "cluster_stats_messages_%s_sent:%d\r\n", TypeName(i), c.statsSent[i])
	}
	fmt.Fprintf(&b, "cluster_stats_messages_sent:%d\r\n", sent)
	for i := 0; i < msgTypeCount; i++ {
		if c.statsRecv[i] == 0 {
			continue
		}
		recv += c.statsRecv[i]
		fmt.Fprintf(&b, "cluster_stats_messages_%s_received:%d\r\n", TypeName(i), c.statsRecv[i])
	}
	fmt.Fprintf(&b, "cluster_stats_messages_received:%d\r\n", recv)
	fmt.Fprintf(&b, "total_cluster_links_buffer_limit_exceeded:%d\r\n", c.linksExceeded)
	return b.String()
}

// isReplicaAvailable: a replica listed by CLUSTER SLOTS is not failed
// and has replicated something.
func (c *Cluster) isReplicaAvailable(n *Node) bool {
	if n.failed() {
		return false
	}
	off := n.replOffset
	if n.isMyself() {
		off = c.host.ReplOffset()
	}
	return off != 0
}

func (c *Cluster) writeNodeEntry(w *resp.Writer, n *Node, plaintext bool) {
	w.Array(4)
	switch c.host.Config("cluster-preferred-endpoint-type") {
	case "hostname":
		if n.hostname != "" {
			w.BulkString(n.hostname)
		} else {
			w.BulkString("?")
		}
	case "unknown-endpoint":
		w.Null()
	default:
		w.BulkString(n.ip)
	}
	port := n.port
	if plaintext && n.pport != 0 {
		port = n.pport
	}
	w.Int(int64(port))
	w.BulkString(n.name)
	typ := c.host.Config("cluster-preferred-endpoint-type")
	length := 0
	if typ != "ip" {
		length++
	}
	if typ != "hostname" && n.hostname != "" {
		length++
	}
	w.Map(length)
	if typ != "ip" {
		w.BulkString("ip")
		w.BulkString(n.ip)
	}
	if typ != "hostname" && n.hostname != "" {
		w.BulkString("hostname")
		w.BulkString(n.hostname)
	}
}

// slotRanges returns the slot ranges of consecutive slots with the same
// owner, in slot order.
func (c *Cluster) slotRanges() (owners []*Node, ranges [][2]int) {
	var n *Node
	start := -1
	for i := 0; i <= Slots; i++ {
		if n == nil {
			if i == Slots {
				break
			}
			n = c.slots[i]
			start = i
			continue
		}
		if i == Slots || n != c.slots[i] {
			owners = append(owners, n)
			ranges = append(ranges, [2]int{start, i - 1})
			if i == Slots {
				break
			}
			n = c.slots[i]
			start = i
		}
	}
	return
}

func (c *Cluster) replySlots(w *resp.Writer, plaintext bool) {
	owners, ranges := c.slotRanges()
	w.Array(len(owners))
	for i, n := range owners {
		avail := 0
		for _, s := range n.slaves {
			if c.isReplicaAvailable(s) {
				avail++
			}
		}
		w.Array(3 + avail)
		w.Int(int64(ranges[i][0]))
		w.Int(int64(ranges[i][1]))
		c.writeNodeEntry(w, n, plaintext)
		for _, s := range n.slaves {
			if c.isReplicaAvailable(s) {
				c.writeNodeEntry(w, s, plaintext)
			}
		}
	}
}

func (c *Cluster) replyShards(w *resp.Writer) {
	owners, ranges := c.slotRanges()
	pairs := map[*Node][]int{}
	for i, n := range owners {
		pairs[n] = append(pairs[n], ranges[i][0], ranges[i][1])
	}
	var masters []*Node
	for _, n := range c.sortedNodes() {
		if n.isMaster() {
			masters = append(masters, n)
		}
	}
	tlsCluster := c.configBool("tls-cluster")
	w.Array(len(masters))
	for _, m := range masters {
		w.Map(2)
		w.BulkString("slots")
		p := pairs[m]
		w.Array(len(p))
		for _, s := range p {
			w.Int(int64(s))
		}
		w.BulkString("nodes")
		shard := c.shardNodes(m)
		w.Array(len(shard))
		for _, n := range shard {
			c.writeShardNode(w, n, tlsCluster)
		}
	}
}

func (c *Cluster) writeShardNode(w *resp.Writer, n *Node, tlsCluster bool) {
	plainPort, tlsPort := n.port, 0
	if tlsCluster {
		plainPort, tlsPort = n.pport, n.port
	}
	count := 6 // id, ip, endpoint, role, replication-offset, health
	if plainPort != 0 {
		count++
	}
	if tlsPort != 0 {
		count++
	}
	if n.hostname != "" {
		count++
	}
	w.Map(count)
	w.BulkString("id")
	w.BulkString(n.name)
	if plainPort != 0 {
		w.BulkString("port")
		w.Int(int64(plainPort))
	}
	if tlsPort != 0 {
		w.BulkString("tls-port")
		w.Int(int64(tlsPort))
	}
	w.BulkString("ip")
	w.BulkString(n.ip)
	w.BulkString("endpoint")
	w.BulkString(c.preferredEndpoint(n.ip, n.hostname))
	if n.hostname != "" {
		w.BulkString("hostname")
		w.BulkString(n.hostname)
	}
	var off int64
	if n.isMyself() {
		off = c.host.ReplOffset()
	} else {
		off = n.replOffset
	}
	w.BulkString("role")
	if n.isSlave() {
		w.BulkString("replica")
	} else {
		w.BulkString("master")
	}
	w.BulkString("replication-offset")
	w.Int(off)
	w.BulkString("health")
	switch {
	case n.failed():
		w.BulkString("fail")
	case n.isSlave() && off == 0:
		w.BulkString("loading")
	default:
		w.BulkString("online")
	}
}

func (c *Cluster) replyLinks(w *resp.Writer) {
	var links []*link
	for _, n := range c.sortedNodes() {
		if n.link != nil {
			links = append(links, n.link)
		}
		if n.inLink != nil {
			links = append(links, n.inLink)
		}
	}
	w.Array(len(links))
	for _, l := range links {
		w.Map(6)
		w.BulkString("direction")
		if l.inbound {
			w.BulkString("from")
		} else {
			w.BulkString("to")
		}
		w.BulkString("node")
		w.BulkString(l.node.name)
		w.BulkString("create-time")
		w.Int(l.ctime)
		alloc, used := l.bufSizes()
		events := ""
		if l.conn != nil {
			events = "r"
			if used > 0 {
				events = "rw"
			}
		}
		w.BulkString("events")
		w.BulkString(events)
		w.BulkString("send-buffer-allocated")
		w.Int(int64(alloc))
		w.BulkString("send-buffer-used")
		w.Int(int64(used))
	}
}

// masterTarget finds the node SETSLOT MIGRATING/IMPORTING names, which
// must be a known master; otherwise it replies with Redis's error and
// returns nil.
func (c *Cluster) masterTarget(w *resp.Writer, id []byte) *Node {
	n := c.lookupNode(string(id))
	if n == nil {
		w.Error("ERR I don't know about node " + cstr(id))
		return nil
	}
	if n.isSlave() {
		w.Error("ERR Target node is not a master")
		return nil
	}
	return n
}
