// Package store is Sluice's keyspace: 16 (or more) databases, each split
// into shards with a lock and a key table of their own (keymap.go) so
// connections on different cores rarely meet; entries with a type, an
// expiry and an LRU clock; lazy expiry on access and Redis's active expiry
// cycle; the bytes keys and values take, counted as Redis's allocator
// would count them (mem.go); maxmemory-policy's choice of victims, from a
// pool of sampled candidates (evictpool.go: Evictor); point-in-time
// snapshots taken without stopping the world (snapshot.go: BeginSnapshot,
// Walk); the digests of values and of the dataset DEBUG DIGEST reports
// (digest.go); and the prefetching of a batch's keys, whose cache misses
// the event loops overlap before they run the batch (prefetch.go:
// Prefetcher).
package store
