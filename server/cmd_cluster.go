package server

import (
	"crypto/tls"
	"net"
	"os"

	"github.com/sluicedb/sluice/cluster"
	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/pubsub"
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
	var kb [8]cmdspec.Key
	for _, k := range cmd.Keys(args, kb[:0], cmdspec.Access) {
		dst = append(dst, args[k.Pos])
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
	q.Write = cmd.Flags&cmdspec.Write != 0
	if cmd.Name == "eval" || cmd.Name == "evalsha" || cmd.Name == "fcall" {
		q.Write = c.mayReplicate(cmd, args)
	}
	q.WriteTx = q.Write || (cmd.Name == "exec" && c.txQueued(cmdspec.Write))
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
	if c.replMaster || (!cmd.HasKeys() && cmd.Name != "exec" && cmd.Name != "spublish" && cmd.Name != "ssubscribe" && cmd.Name != "sunsubscribe") {
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
	if s.replLink() != nil {
		return errReplicaofCluster
	}
	cl, err := cluster.New(clusterHost{s}, cluster.Options{TLS: s.clusterTLS})
	if err != nil {
		return err
	}
	if !cl.VerifyWithData(s.keysOutsideDB0()) {
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

// keysOutsideDB0 reports whether a database other than 0 holds keys.
func (s *Server) keysOutsideDB0() bool {
	s.ks.Lock.Lock()
	defer s.ks.Lock.Unlock()
	for i := 1; i < s.ks.NumDBs(); i++ {
		if s.ks.DB(i).Size() > 0 {
			return true
		}
	}
	return false
}

// verifyClusterData checks the dataset loaded at start-up against the
// cluster's slots, as Redis does once it has loaded
// (verifyClusterConfigWithData): the node takes the unassigned slots it
// has keys for, and keys outside database 0 stop start-up. The cluster
// starts with the server, before the dataset loads, so startCluster's
// check sees only what an embedded server was given.
func (s *Server) verifyClusterData() error {
	if s.cluster != nil && !s.cluster.VerifyWithData(s.keysOutsideDB0()) {
		return errClusterOtherDBs
	}
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
	channels, patterns, shardChannels := h.s.pubsub.Counts()
	if shard {
		return shardChannels > 0
	}
	return channels+patterns > 0
}

// UnsubscribeShardSlot unsubscribes every client from the shard channels
// of slot, each getting its sunsubscribe message.
func (h clusterHost) UnsubscribeShardSlot(slot int) {
	var subs map[*Client][]string
	h.s.pubsub.Each(func(c *Client, k pubsub.Kind, ch string) {
		if k != pubsub.Shard || cluster.KeySlotString(ch) != slot {
			return
		}
		if subs == nil {
			subs = map[*Client][]string{}
		}
		subs[c] = append(subs[c], ch)
	})
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
		r := s.cluster.BlockedRedirect([]byte(w.keys[0]), w.c.clReadOnly, w.cmd != nil && w.cmd.Flags&cmdspec.Write != 0)
		if r.Code != cluster.RedirNone {
			b.finish(w, []byte("-"+s.cluster.Error(r, false)+"\r\n"))
		}
	}
}
