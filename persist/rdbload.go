package persist

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// Loading an RDB file into the keyspace (Redis's rdbLoad): at start-up,
// for DEBUG RELOAD, and for an AOF's base in RDB form. The records are
// read by package rdb and built into entries (rdb.NewEntry); the host
// notes the AUX fields, loads the function libraries, and decides about
// keys found expired (RDBSink).

// LoadState is what INFO shows of a dataset being loaded, and of the
// last RDB load.
type LoadState struct {
	On          atomic.Bool
	Start       atomic.Int64 // unix seconds
	Total       atomic.Int64 // bytes to load
	Loaded      atomic.Int64 // bytes loaded
	UsedMem     atomic.Int64 // the file's used-mem AUX field
	LoadedKeys  atomic.Int64 // keys the last RDB load added (rdb_last_load_keys_loaded)
	ExpiredKeys atomic.Int64 // keys it left out, expired (rdb_last_load_keys_expired)
}

// Begin starts a load of total bytes (0: not known).
func (l *LoadState) Begin(total int64) {
	l.Start.Store(time.Now().Unix())
	l.Total.Store(total)
	l.Loaded.Store(0)
	l.UsedMem.Store(0)
	l.On.Store(true)
}

// RDBSink is what loading an RDB file needs from the host.
type RDBSink interface {
	Logger
	// Aux notes an AUX field (the replication fields among them).
	Aux(key, val string)
	// Function loads a function library's code; merge: it replaces a
	// library of the same name, else that is an error.
	Function(code []byte, merge bool) error
	// DropExpired reports whether a key whose expiry had passed is left
	// out; the host notes it (a master tells its replicas).
	DropExpired(db int, key []byte) bool
	// Limits are the encoding limits values are built under.
	Limits() rdb.Limits
	// LFU reports whether the maxmemory policy is an LFU one: a record's
	// frequency hint is kept, else its idle time.
	LFU() bool
}

// LoadRDBOptions tune LoadRDB.
type LoadRDBOptions struct {
	Verify bool // rdbchecksum: the file's CRC-64 is checked
	// Merge: keys and function libraries in the file replace those
	// already loaded (DEBUG RELOAD MERGE); without it they are an error.
	Merge    bool
	KeyDelay int64 // key-load-delay, in microseconds (KeyDelay)
	// Yield, when not nil, is called every 1024 keys, and after each key
	// that ends YieldBytes or more past the last call
	// (loading-process-events-interval-bytes: Redis serves its clients
	// that often while it loads).
	Yield      func()
	YieldBytes int64
	// Sleep, when not nil, sleeps key-load-delay's pauses (time.Sleep
	// otherwise): a load that lets clients in between keys lets them in
	// while it sleeps too.
	Sleep func(time.Duration)
}

// KeyDelay is key-load-delay: Usec microseconds after each key; a
// negative value sleeps one microsecond once in -Usec keys (Redis's
// debugDelay). Sleeps shorter than the timer's resolution would take
// longer than asked, so the delay is owed and slept in pieces of 2 ms.
type KeyDelay struct {
	Usec int64
	owed time.Duration
}

// Key counts one key's delay and sleeps, with sleep (time.Sleep if nil),
// once 2 ms are owed.
func (d *KeyDelay) Key(sleep func(time.Duration)) {
	usec := d.Usec
	if usec == 0 {
		return
	}
	if usec < 0 {
		if rand.Uint64()%uint64(-usec) != 0 {
			return
		}
		usec = 1
	}
	d.owed += time.Duration(usec) * time.Microsecond
	if d.owed >= 2*time.Millisecond {
		t := time.Now()
		if sleep == nil {
			sleep = time.Sleep
		}
		sleep(d.owed)
		d.owed -= time.Since(t)
	}
}

// lruClockMax is Redis's LRU_CLOCK_MAX (in seconds).
const lruClockMax = 1<<24 - 1

// LoadRDB loads the RDB image at the start of b into ks and returns its
// length. The keys' figures go to st (LoadedKeys, ExpiredKeys, UsedMem,
// Loaded); a loaded dataset is marked saved. The errors are Redis's log
// lines.
func LoadRDB(ks *store.Keyspace, b []byte, sink RDBSink, st *LoadState, opt LoadRDBOptions) (int, error) {
	st.LoadedKeys.Store(0)
	st.ExpiredKeys.Store(0)
	now := ks.Now()
	ndb := ks.NumDBs()
	empty := 0
	keys := 0
	yielded := int64(0) // where the last Yield was
	delay := KeyDelay{Usec: opt.KeyDelay}
	h := &rdb.Handler{
		Aux: func(k, v []byte) {
			sink.Aux(string(k), string(v))
			switch strings.ToLower(string(k)) {
			case "redis-ver":
				sink.Logf("Loading RDB produced by version %s", v)
			case "ctime":
				t, _ := strconv.ParseInt(string(v), 10, 64)
				sink.Logf("RDB age %d seconds", max(0, time.Now().Unix()-t))
			case "used-mem":
				m, _ := strconv.ParseInt(string(v), 10, 64)
				st.UsedMem.Store(m)
				sink.Logf("RDB memory usage when created %.2f Mb", float64(m)/(1024*1024))
			}
		},
		SelectDB: func(db int) error {
			if db >= ndb {
				return fmt.Errorf("FATAL: Data file was created with a Redis server configured to handle more than %d databases. Exiting", ndb)
			}
			return nil
		},
		Function: func(code []byte) error { return sink.Function(code, opt.Merge) },
		EmptyKey: func(db int, key []byte) {
			if empty++; empty <= 10 {
				sink.Warnf("rdbLoadObject skipping empty key: %s", key)
			}
		},
		Key: func(r *rdb.Record) error {
			st.Loaded.Store(r.End)
			if keys++; opt.Yield != nil && (keys%1024 == 0 || opt.YieldBytes > 0 && r.End-yielded >= opt.YieldBytes) {
				yielded = r.End
				opt.Yield()
			}
			delay.Key(opt.Sleep)
			if r.HasExpire && r.Expire < now && sink.DropExpired(r.DB, r.Key) {
				st.ExpiredKeys.Add(1)
				return nil
			}
			e := rdb.NewEntry(r.Value, sink.Limits())
			if e == nil {
				return fmt.Errorf("Bad data format of key '%s' in DB %d (duplicate members or fields)", r.Key, r.DB)
			}
			db := ks.DB(r.DB)
			if db.Exists(r.Key) {
				if !opt.Merge {
					return fmt.Errorf("RDB has duplicated key '%s' in DB %d", r.Key, r.DB)
				}
				db.Delete(r.Key)
			}
			var exp int64
			if r.HasExpire {
				exp = max(r.Expire, 1)
			}
			db.AddExpire(r.Key, e, exp)
			if r.Freq >= 0 && sink.LFU() {
				e.SetLRU(ks.LFUValue(uint32(r.Freq)))
			} else if r.Idle >= 0 && !sink.LFU() {
				clock := ks.LRUClock()
				idle := uint32(min(r.Idle, lruClockMax))
				if idle <= clock {
					e.SetLRU(clock - idle)
				}
			}
			st.LoadedKeys.Add(1)
			return nil
		},
	}
	n, err := rdb.ReadPrefix(b, opt.Verify, h)
	if err != nil {
		var fe *rdb.FileError
		if errors.As(err, &fe) {
			if errors.Is(err, rdb.ErrChecksum) {
				return n, fmt.Errorf("Wrong RDB checksum. Aborting now.\nInternal error in RDB reading offset %d: %s (CRC error)\nTerminating server after rdb file reading failure.", fe.Off, fe.Msg)
			}
			report := ""
			if reason := rdb.Reason(err); reason != "" {
				// Redis runs its RDB check here, which reports the error
				// again with what it was reading.
				report = fmt.Sprintf("\n--- RDB ERROR DETECTED ---\n[offset %d] %s\n[additional info] %s", fe.Off, reason, fe.Msg)
			}
			return n, fmt.Errorf("Internal error in RDB reading offset %d: %s%s\nTerminating server after rdb file reading failure.", fe.Off, fe.Msg, report)
		}
		return n, err
	}
	if empty > 0 {
		sink.Logf("Done loading RDB, keys loaded: %d, keys expired: %d, empty keys skipped: %d.", st.LoadedKeys.Load(), st.ExpiredKeys.Load(), empty)
	} else {
		sink.Logf("Done loading RDB, keys loaded: %d, keys expired: %d.", st.LoadedKeys.Load(), st.ExpiredKeys.Load())
	}
	// A freshly loaded dataset is the one on disk.
	ks.MarkSaved()
	return n, nil
}
