package server

import (
	"crypto/tls"
	"net"
	"os"

	"github.com/sluicedb/sluice/cluster"
	"github.com/sluicedb/sluice/repl"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// Cluster mode's side of the server: the CLUSTER, ASKING, READONLY and
// READWRITE commands, the redirection check of dispatch, and clusterHost,
// through which the cluster package drives replication, the keys of a
// slot and pub/sub. Everything else lives in package cluster. With
// cluster-enabled no, these commands answer as redis-server does then.

const errNoCluster = "ERR This instance has cluster support disabled"

func init() {
	sub := clusterCommand
	register(
		&Command{Name: "readonly", Arity: 1, Flags: []string{"loading", "stale", "fast"}, ACL: []string{"connection"}, Group: "cluster", Since: "3.0.0", Summary: "Enables read queries for a connection to a cluster replica node", Complexity: "O(1)", Fn: clusterCommand},
		&Command{Name: "readwrite", Arity: 1, Flags: []string{"loading", "stale", "fast"}, ACL: []string{"connection"}, Group: "cluster", Since: "3.0.0", Summary: "Disables read queries for a connection to a cluster replica node", Complexity: "O(1)", Fn: clusterCommand},
		&Command{Name: "asking", Arity: 1, Flags: []string{"fast"}, ACL: []string{"connection"}, Group: "cluster", Since: "3.0.0", Summary: "Sent by cluster clients after an -ASK redirect", Complexity: "O(1)", Fn: clusterCommand},
		&Command{Name: "restore-asking", Arity: -4, Flags: []string{"write", "denyoom", "asking"}, First: 1, Last: 1, Step: 1, ACL: []string{"keyspace", "write", "slow", "dangerous"}, Group: "server", Since: "3.0.0", Summary: "An internal command for migrating keys in a cluster", Complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).", Fn: restoreCommand},
		// CLUSTER and its subcommands, with Redis 7.0.15's metadata (so
		// COMMAND lists them and scripts get the noscript error for the
		// ones that have it).
		&Command{Name: "cluster", Arity: -2, Group: "cluster", Since: "3.0.0", Summary: "A container for cluster commands", Complexity: "Depends on subcommand.", Subs: []*Command{
			{Name: "addslots", Arity: -3, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Assign new hash slots to receiving node", Complexity: "O(N) where N is the total number of hash slot arguments", Fn: sub},
			{Name: "addslotsrange", Arity: -4, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "7.0.0", Summary: "Assign new hash slots to receiving node", Complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.", Fn: sub},
			{Name: "bumpepoch", Arity: 2, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Advance the cluster config epoch", Complexity: "O(1)", Fn: sub},
			{Name: "count-failure-reports", Arity: 3, Flags: []string{"admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Return the number of failure reports active for a given node", Complexity: "O(N) where N is the number of failure reports", Fn: sub},
			{Name: "countkeysinslot", Arity: 3, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Return the number of local keys in the specified hash slot", Complexity: "O(1)", Fn: sub},
			{Name: "delslots", Arity: -3, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Set hash slots as unbound in receiving node", Complexity: "O(N) where N is the total number of hash slot arguments", Fn: sub},
			{Name: "delslotsrange", Arity: -4, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "7.0.0", Summary: "Set hash slots as unbound in receiving node", Complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.", Fn: sub},
			{Name: "failover", Arity: -2, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Forces a replica to perform a manual failover of its master.", Complexity: "O(1)", Fn: sub},
			{Name: "flushslots", Arity: 2, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Delete a node's own slots information", Complexity: "O(1)", Fn: sub},
			{Name: "forget", Arity: 3, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Remove a node from the nodes table", Complexity: "O(1)", Fn: sub},
			{Name: "getkeysinslot", Arity: 4, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Return local key names in the specified hash slot", Complexity: "O(log(N)) where N is the number of requested keys", Fn: sub},
			{Name: "help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "cluster", Since: "5.0.0", Summary: "Show helpful text about the different subcommands", Complexity: "O(1)", Fn: sub},
			{Name: "info", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Provides info about Redis Cluster node state", Complexity: "O(1)", Fn: sub},
			{Name: "keyslot", Arity: 3, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Returns the hash slot of the specified key", Complexity: "O(N) where N is the number of bytes in the key", Fn: sub},
			{Name: "links", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "7.0.0", Summary: "Returns a list of all TCP links to and from peer nodes in cluster", Complexity: "O(N) where N is the total number of Cluster nodes", Fn: sub},
			{Name: "meet", Arity: -4, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Force a node cluster to handshake with another node", Complexity: "O(1)", Fn: sub},
			{Name: "myid", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Return the node id", Complexity: "O(1)", Fn: sub},
			{Name: "nodes", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Get Cluster config for the node", Complexity: "O(N) where N is the total number of Cluster nodes", Fn: sub},
			{Name: "replicas", Arity: 3, Flags: []string{"admin", "stale"}, Group: "cluster", Since: "5.0.0", Summary: "List replica nodes of the specified master node", Complexity: "O(1)", Fn: sub},
			{Name: "replicate", Arity: 3, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Reconfigure a node as a replica of the specified master node", Complexity: "O(1)", Fn: sub},
			{Name: "reset", Arity: -2, Flags: []string{"admin", "stale", "noscript", "lock_all"}, Group: "cluster", Since: "3.0.0", Summary: "Reset a Redis Cluster node", Complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.", Fn: sub},
			{Name: "saveconfig", Arity: 2, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Forces the node to save cluster state on disk", Complexity: "O(1)", Fn: sub},
			{Name: "set-config-epoch", Arity: 3, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Set the configuration epoch in a new node", Complexity: "O(1)", Fn: sub},
			{Name: "setslot", Arity: -4, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Bind a hash slot to a specific node", Complexity: "O(1)", Fn: sub},
			{Name: "shards", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "7.0.0", Summary: "Get array of cluster slots to node mappings", Complexity: "O(N) where N is the total number of cluster nodes", Fn: sub},
			{Name: "slaves", Arity: 3, Flags: []string{"admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "List replica nodes of the specified master node", Complexity: "O(1)", Fn: sub},
			{Name: "slots", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Get array of Cluster slot to node mappings", Complexity: "O(N) where N is the total number of Cluster nodes", Fn: sub},
		}},
	)
}

// clusterCommand is CLUSTER and its subcommands, ASKING, READONLY and
// READWRITE.
func clusterCommand(c *Client, args [][]byte) {
	switch {
	case c.srv.cluster == nil:
		c.w.Error(errNoCluster)
	case len(args) > 1:
		c.srv.cluster.Command(&c.w, args, c.plaintextClient())
	case eq(args[0], "asking"):
		c.clAsking = true
		c.w.OK()
	default:
		c.clReadOnly = eq(args[0], "readonly")
		c.w.OK()
	}
}

// clusterKeys appends the keys getNodeByQuery looks at for cmd: its keys,
// or the channels of the sharded pub/sub commands.
func clusterKeys(dst [][]byte, cmd *Command, args [][]byte) [][]byte {
	switch cmd.Name {
	case "spublish":
		return append(dst, args[1])
	case "ssubscribe", "sunsubscribe":
		return append(dst, args[1:]...)
	}
	var kp [8]int
	for _, p := range cmd.keyPositions(args, kp[:0]) {
		dst = append(dst, args[p])
	}
	return dst
}

// clusterQuery fills a cluster.Query for cmd as client c runs it.
func (c *Client) clusterQuery(q *cluster.Query, cmd *Command, args [][]byte, asking bool) {
	q.Keys = c.clKeys[:0]
	if cmd.Name == "exec" {
		if c.tx != nil {
			for i, qc := range c.tx.cmds {
				q.Keys = clusterKeys(q.Keys, c.tx.names[i], qc)
			}
		}
	} else {
		q.Keys = clusterKeys(q.Keys, cmd, args)
	}
	c.clKeys = q.Keys[:0]
	q.Write = cmd.flags&flagWrite != 0
	if cmd.Name == "eval" || cmd.Name == "evalsha" || cmd.Name == "fcall" {
		q.Write = c.mayReplicate(cmd, args)
	}
	q.WriteTx = q.Write || (cmd.Name == "exec" && c.txQueued(flagWrite))
	q.ReadOnly = c.clReadOnly
	q.Asking = asking || cmd.Name == "restore-asking"
	q.PubSubShard = cmd.Name == "spublish" || cmd.Name == "ssubscribe" || cmd.Name == "sunsubscribe"
	q.Migrate = cmd.Name == "migrate"
}

// clusterRedirect is processCommand's cluster check: it replies with the
// redirection or error and returns true when cmd is not served here.
func (c *Client) clusterRedirect(cmd *Command, args [][]byte) bool {
	asking := c.clAsking
	if c.tx == nil && cmd.Name != "asking" {
		c.clAsking = false // ASKING applies to the next command only
	}
	c.clSlot = -1
	if c.replMaster || (cmd.First == 0 && cmd.Keys == nil && cmd.Name != "exec" && cmd.Name != "spublish" && cmd.Name != "ssubscribe" && cmd.Name != "sunsubscribe") {
		return false
	}
	var q cluster.Query
	c.clusterQuery(&q, cmd, args, asking)
	r := c.srv.cluster.Check(&q, c)
	if r.Code == cluster.RedirNone {
		c.clSlot = r.Slot
		return false
	}
	c.srv.stats[c.slot].rejected(cmd)
	if cmd.Name == "exec" {
		c.discardTx()
	} else if c.tx != nil {
		c.tx.dirty = true
	}
	c.w.Error(c.srv.cluster.Error(r, c.plaintextClient()))
	return true
}

// clusterScriptCheck is scriptVerifyClusterState for a command a script
// calls: "" when it may run, or the script error. slot is the slot the
// script's keys use so far (-1 none), updated.
func (c *Client) clusterScriptCheck(caller *Client, cmd *Command, args [][]byte, slot *int, crossSlot bool) string {
	if caller == nil || caller.replMaster {
		return ""
	}
	var q cluster.Query
	c.clusterQuery(&q, cmd, args, caller.clAsking)
	q.ReadOnly = caller.clReadOnly
	r := c.srv.cluster.Check(&q, c)
	switch r.Code {
	case cluster.RedirNone:
	case cluster.RedirDownRO:
		return "ERR Script attempted to execute a write command while the cluster is down and readonly"
	case cluster.RedirDown:
		return "ERR Script attempted to execute a command while the cluster is down"
	default:
		return "ERR Script attempted to access a non local key in a cluster node"
	}
	if r.Slot != -1 && !crossSlot {
		if *slot == -1 {
			*slot = r.Slot
		} else if *slot != r.Slot {
			return "ERR Script attempted to access keys that do not hash to the same slot"
		}
	}
	return ""
}

// KeyExists tells the cluster whether a key of a migrating or importing
// slot is here (live): ASK or TRYAGAIN depend on it.
func (c *Client) KeyExists(key []byte) bool {
	ks := c.srv.ks
	db := ks.DB(0)
	if c.inExec || c.fromScript {
		return db.Exists(key) // the keyspace is held already
	}
	ks.Lock.RLock(c.slot)
	i := store.ShardOf(key)
	db.LockShard(i)
	ok := db.Exists(key)
	db.UnlockShard(i)
	ks.Lock.RUnlock(c.slot)
	return ok
}

// startCluster loads nodes.conf and starts the bus (cluster-enabled yes).
func (s *Server) startCluster() error {
	if s.repl.link != nil {
		return errReplicaofCluster
	}
	cl, err := cluster.New(clusterHost{s}, cluster.Options{TLS: s.clusterTLS})
	if err != nil {
		return err
	}
	others := false
	for i := 1; i < s.ks.NumDBs(); i++ {
		s.ks.Lock.Lock()
		others = others || s.ks.DB(i).Size() > 0
		s.ks.Lock.Unlock()
	}
	if !cl.VerifyWithData(others) {
		cl.Stop()
		return errClusterOtherDBs
	}
	if err := cl.Start(); err != nil {
		cl.Stop()
		return err
	}
	s.cluster = cl
	return nil
}

// clusterNotAllowed is the error of commands cluster mode refuses.
func (c *Client) clusterNotAllowed(msg string) bool {
	if c.srv.cluster == nil {
		return false
	}
	c.w.Error(msg)
	return true
}

type clusterError string

func (e clusterError) Error() string { return string(e) }

const (
	errReplicaofCluster = clusterError("replicaof directive not allowed in cluster mode")
	errClusterOtherDBs  = clusterError("You can't have keys in a DB different than DB 0 when in Cluster mode. Exiting.")
)

// clusterHost is the server as the cluster package sees it.
type clusterHost struct{ s *Server }

func (h clusterHost) Log(level int, msg string) { h.s.LogAt(level, "%s", msg) }
func (h clusterHost) Config(name string) string { return h.s.cfg.Get(name) }

func (h clusterHost) Fatal(msg string) {
	h.s.Warnf("%s", msg)
	os.Exit(1)
}

func (h clusterHost) Port() int {
	for _, a := range h.s.Addrs() {
		if ta, ok := a.(*net.TCPAddr); ok {
			return ta.Port
		}
	}
	p, _ := resp.ParseInt([]byte(h.s.cfg.Get("port")))
	return int(p)
}

func (h clusterHost) ReplicaOf(ip string, port int) {
	if l := h.s.replLink(); l != nil && l.Host == ip && l.Port == port {
		return
	}
	h.s.replicaOf(ip, port, false)
}

func (h clusterHost) Promote() { h.s.promote() }

// ReplOffset is the stream's offset: what a replica applied of its
// master's, or a master's own.
func (h clusterHost) ReplOffset() int64 { return h.s.replicaOffset() }

func (h clusterHost) MasterLink() (bool, int64, int64) {
	l := h.s.replLink()
	if l == nil {
		return false, 0, 0
	}
	return l.State() == repl.StateConnected, l.LastIO(), l.DownSince()
}

func (h clusterHost) CountKeysInSlot(slot int) int { return h.s.ks.DB(0).CountKeysInSlot(slot) }
func (h clusterHost) KeyCount() int                { return h.s.ks.DB(0).KeyCount() }
func (h clusterHost) GetKeysInSlot(slot, max int) []string {
	return h.s.ks.DB(0).KeysInSlot(slot, max)
}

func (h clusterHost) DelKeysInSlot(slot int) int {
	ks := h.s.ks
	db := ks.DB(0)
	n := 0
	for _, k := range db.KeysInSlot(slot, 1<<30) {
		key := []byte(k)
		ks.Lock.RLock(h.s.goSlot)
		i := store.ShardOf(key)
		db.LockShard(i)
		if db.Delete(key) {
			n++
		}
		db.UnlockShard(i)
		ks.Lock.RUnlock(h.s.goSlot)
	}
	return n
}

// FlushAll empties the dataset for CLUSTER RESET of a replica, which
// holds the keyspace exclusively (lock_all).
func (h clusterHost) FlushAll() {
	ks := h.s.ks
	for i := 0; i < ks.NumDBs(); i++ {
		ks.DB(i).Flush()
	}
}

func (h clusterHost) Publish(channel, message []byte, shard bool) {
	h.s.publish(nil, channel, message, shard)
}

func (h clusterHost) HasSubscribers(shard bool) bool {
	r := &h.s.pubsub
	r.mu.RLock()
	defer r.mu.RUnlock()
	if shard {
		return len(r.shard) > 0
	}
	return len(r.channels)+len(r.patterns) > 0
}

// UnsubscribeShardSlot unsubscribes every client from the shard channels
// of slot, each getting its sunsubscribe message.
func (h clusterHost) UnsubscribeShardSlot(slot int) {
	r := &h.s.pubsub
	r.mu.RLock()
	var subs map[*Client][]string
	for ch, set := range r.shard {
		if cluster.KeySlotString(ch) != slot {
			continue
		}
		if subs == nil {
			subs = map[*Client][]string{}
		}
		for c := range set {
			subs[c] = append(subs[c], ch)
		}
	}
	r.mu.RUnlock()
	for c, chans := range subs {
		c.unsubscribeShardAsync(chans)
	}
}

func (h clusterHost) PauseWrites(until int64) { h.s.pauseClients(pauseWrite, until) }
func (h clusterHost) UnpauseWrites()          { h.s.unpauseClients() }

// clusterTLS gives the bus its TLS configurations with tls-cluster.
func (s *Server) clusterTLS() (srv, cli *tls.Config) {
	srv, cli, _ = s.ClusterTLS()
	return srv, cli
}

// plaintextClient: a client not on TLS in a TLS cluster is shown the
// nodes' plaintext ports (MOVED, CLUSTER NODES/SLOTS/REPLICAS).
func (c *Client) plaintextClient() bool {
	return c.tls == nil && c.srv.cfg.Get("tls-cluster") == "yes"
}

// clusterInfo is INFO's cluster_connections, or (mem) mem_cluster_links.
func (s *Server) clusterInfo(mem bool) int {
	switch {
	case s.cluster == nil:
		return 0
	case mem:
		return s.cluster.LinksMemory()
	}
	return s.cluster.Connections()
}

// debugCluster is DEBUG CLUSTERLINK KILL to|from|all <node-id> and DEBUG
// DROP-CLUSTER-PACKET-FILTER <type>.
func debugCluster(c *Client, args [][]byte) {
	cl := c.srv.cluster
	if eq(args[1], "drop-cluster-packet-filter") {
		t, ok := resp.ParseInt(args[2])
		if !ok {
			c.w.Error(errNotInt)
			return
		}
		if cl != nil {
			cl.SetDropFilter(int(t))
		}
		c.w.OK()
		return
	}
	if cl == nil {
		c.w.Error("ERR Debug option only available for cluster mode enabled setup!")
		return
	}
	switch found, badDir := cl.KillLinks(string(args[3]), string(args[4])); {
	case !found:
		c.w.Error("ERR Unknown node " + string(args[4]))
	case badDir:
		c.w.Error("ERR Unknown direction " + string(args[3]))
	default:
		c.w.OK()
	}
}

// clusterRedirectBlocked unblocks, with MOVED or CLUSTERDOWN, the clients
// blocked on keys of slots this node no longer serves or while the
// cluster is down (clusterRedirectBlockedClientIfNeeded, from the cron).
func (s *Server) clusterRedirectBlocked() {
	b := &s.blocking
	if b.count.Load() == 0 {
		return
	}
	b.mu.Lock()
	ws := make([]*waiter, 0, len(b.byClient))
	for _, w := range b.byClient {
		if len(w.keys) > 0 {
			ws = append(ws, w)
		}
	}
	b.mu.Unlock()
	for _, w := range ws {
		r := s.cluster.BlockedRedirect([]byte(w.keys[0]), w.c.clReadOnly, w.cmd != nil && w.cmd.flags&flagWrite != 0)
		if r.Code != cluster.RedirNone {
			b.finish(w, []byte("-"+s.cluster.Error(r, false)+"\r\n"))
		}
	}
}
