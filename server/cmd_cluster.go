package server

// Cluster commands on a server without cluster support, as redis-server
// 7.0 runs with cluster-enabled no: clients probing for a cluster
// (READONLY after connecting to a replica, ASKING after a redirect) get
// Redis's error rather than an unknown command.
func init() {
	noCluster := func(c *Client, args [][]byte) {
		c.w.Error("ERR This instance has cluster support disabled")
	}
	register(
		&Command{Name: "readonly", Arity: 1, Flags: []string{"loading", "stale", "fast"}, ACL: []string{"connection"}, Group: "cluster", Since: "3.0.0", Summary: "Enables read queries for a connection to a cluster replica node", Complexity: "O(1)", Fn: noCluster},
		&Command{Name: "readwrite", Arity: 1, Flags: []string{"loading", "stale", "fast"}, ACL: []string{"connection"}, Group: "cluster", Since: "3.0.0", Summary: "Disables read queries for a connection to a cluster replica node", Complexity: "O(1)", Fn: noCluster},
		&Command{Name: "asking", Arity: 1, Flags: []string{"fast"}, ACL: []string{"connection"}, Group: "cluster", Since: "3.0.0", Summary: "Sent by cluster clients after an -ASK redirect", Complexity: "O(1)", Fn: noCluster},
		// CLUSTER and its subcommands, with Redis 7.0.15's metadata (so
		// COMMAND lists them and scripts get the noscript error for the
		// ones that have it); every one answers that cluster support is
		// disabled, as redis-server does with cluster-enabled no.
		&Command{Name: "cluster", Arity: -2, Group: "cluster", Since: "3.0.0", Summary: "A container for cluster commands", Complexity: "Depends on subcommand.", Subs: []*Command{
			{Name: "addslots", Arity: -3, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Assign new hash slots to receiving node", Complexity: "O(N) where N is the total number of hash slot arguments", Fn: noCluster},
			{Name: "addslotsrange", Arity: -4, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "7.0.0", Summary: "Assign new hash slots to receiving node", Complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.", Fn: noCluster},
			{Name: "bumpepoch", Arity: 2, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Advance the cluster config epoch", Complexity: "O(1)", Fn: noCluster},
			{Name: "count-failure-reports", Arity: 3, Flags: []string{"admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Return the number of failure reports active for a given node", Complexity: "O(N) where N is the number of failure reports", Fn: noCluster},
			{Name: "countkeysinslot", Arity: 3, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Return the number of local keys in the specified hash slot", Complexity: "O(1)", Fn: noCluster},
			{Name: "delslots", Arity: -3, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Set hash slots as unbound in receiving node", Complexity: "O(N) where N is the total number of hash slot arguments", Fn: noCluster},
			{Name: "delslotsrange", Arity: -4, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "7.0.0", Summary: "Set hash slots as unbound in receiving node", Complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.", Fn: noCluster},
			{Name: "failover", Arity: -2, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Forces a replica to perform a manual failover of its master.", Complexity: "O(1)", Fn: noCluster},
			{Name: "flushslots", Arity: 2, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Delete a node's own slots information", Complexity: "O(1)", Fn: noCluster},
			{Name: "forget", Arity: 3, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Remove a node from the nodes table", Complexity: "O(1)", Fn: noCluster},
			{Name: "getkeysinslot", Arity: 4, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Return local key names in the specified hash slot", Complexity: "O(log(N)) where N is the number of requested keys", Fn: noCluster},
			{Name: "help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "cluster", Since: "5.0.0", Summary: "Show helpful text about the different subcommands", Complexity: "O(1)", Fn: noCluster},
			{Name: "info", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Provides info about Redis Cluster node state", Complexity: "O(1)", Fn: noCluster},
			{Name: "keyslot", Arity: 3, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Returns the hash slot of the specified key", Complexity: "O(N) where N is the number of bytes in the key", Fn: noCluster},
			{Name: "links", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "7.0.0", Summary: "Returns a list of all TCP links to and from peer nodes in cluster", Complexity: "O(N) where N is the total number of Cluster nodes", Fn: noCluster},
			{Name: "meet", Arity: -4, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Force a node cluster to handshake with another node", Complexity: "O(1)", Fn: noCluster},
			{Name: "myid", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Return the node id", Complexity: "O(1)", Fn: noCluster},
			{Name: "nodes", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Get Cluster config for the node", Complexity: "O(N) where N is the total number of Cluster nodes", Fn: noCluster},
			{Name: "replicas", Arity: 3, Flags: []string{"admin", "stale"}, Group: "cluster", Since: "5.0.0", Summary: "List replica nodes of the specified master node", Complexity: "O(1)", Fn: noCluster},
			{Name: "replicate", Arity: 3, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Reconfigure a node as a replica of the specified master node", Complexity: "O(1)", Fn: noCluster},
			{Name: "reset", Arity: -2, Flags: []string{"admin", "stale", "noscript"}, Group: "cluster", Since: "3.0.0", Summary: "Reset a Redis Cluster node", Complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.", Fn: noCluster},
			{Name: "saveconfig", Arity: 2, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Forces the node to save cluster state on disk", Complexity: "O(1)", Fn: noCluster},
			{Name: "set-config-epoch", Arity: 3, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Set the configuration epoch in a new node", Complexity: "O(1)", Fn: noCluster},
			{Name: "setslot", Arity: -4, Flags: []string{"no_async_loading", "admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "Bind a hash slot to a specific node", Complexity: "O(1)", Fn: noCluster},
			{Name: "shards", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "7.0.0", Summary: "Get array of cluster slots to node mappings", Complexity: "O(N) where N is the total number of cluster nodes", Fn: noCluster},
			{Name: "slaves", Arity: 3, Flags: []string{"admin", "stale"}, Group: "cluster", Since: "3.0.0", Summary: "List replica nodes of the specified master node", Complexity: "O(1)", Fn: noCluster},
			{Name: "slots", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Summary: "Get array of Cluster slot to node mappings", Complexity: "O(N) where N is the total number of Cluster nodes", Fn: noCluster},
		}},
	)
}
