package store

// Access for persistence (RDB snapshots): the caller holds the exclusive
// lock, so shards can be read without their own locks, and from several
// goroutines at once.

// EachInShard calls fn for every key of shard i that has not expired by
// now, with its expiry (unix ms, 0 for none), until fn returns false.
// Exclusive lock.
func (db *DB) EachInShard(i int, now int64, fn func(key string, e *Entry, expire int64) bool) {
	s := &db.shards[i]
	for k, e := range s.m {
		var exp int64
		if e.vol {
			exp = s.vol[k]
			if exp <= now {
				continue
			}
		}
		if !fn(k, e, exp) {
			return
		}
	}
}

// DirtyTotal returns the changes counted since the keyspace was created;
// MarkSavedAt(DirtyTotal()) taken at a snapshot's point in time makes
// Dirty count only the changes made after it (Redis's dirty_before_bgsave).
func (ks *Keyspace) DirtyTotal() uint64 { return ks.dirtyTotal() }

// MarkSavedAt records a save of the dataset as it was when DirtyTotal
// returned total.
func (ks *Keyspace) MarkSavedAt(total uint64) { ks.savedDirty.Store(total) }

// ShardLen returns the number of keys in shard i, expired ones included.
// Exclusive lock.
func (db *DB) ShardLen(i int) int { return len(db.shards[i].m) }
