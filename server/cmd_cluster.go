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
	)
}
