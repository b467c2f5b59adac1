package store

import "time"

// Now is the wall clock in unix milliseconds (the next change moves its
// callers to Keyspace.Now).
func Now() int64 { return time.Now().UnixMilli() }

// LRUClock is the wall LRU clock (the next change moves its callers to
// Keyspace.LRUClock).
func LRUClock() uint32 { return lruClock.Load() }

// LFUValue is Keyspace.LFUValue on the wall clock.
func LFUValue(counter uint32) uint32 { return (LRUClock()/60)&0xffff<<8 | counter&0xff }
