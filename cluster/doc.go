// Package cluster is Redis Cluster for Sluice: the 16,384 hash slots and
// who serves them, the nodes, their epochs and roles, Redis 7.0's binary
// cluster bus (PING/PONG/MEET gossip, FAIL, PUBLISH, UPDATE, failover
// votes, manual failover), nodes.conf, failure detection, replica
// failover and migration, and the CLUSTER command.
//
// The server runs a Cluster beside its keyspace and talks to it through
// two small surfaces: Check (does this node serve these keys, or which
// redirection does the client get) and Host, which the server implements
// so the cluster can drive replication, count and delete the keys of a
// slot and deliver bus messages to local subscribers. Sluice and
// redis-server 7.0 nodes form one cluster.
package cluster
