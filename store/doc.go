// Package store is Sluice's keyspace: 16 (or more) databases, each split
// into shards with a lock of their own so connections on different cores
// rarely meet; entries with a type, an expiry and an LRU clock; lazy expiry
// on access and Redis's active expiry cycle; and point-in-time snapshots
// taken without stopping the world (snapshot.go: BeginSnapshot, Walk).
package store
