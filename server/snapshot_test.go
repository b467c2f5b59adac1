package server

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// Snapshots taken while clients run every kind of write: the RDB written
// from a snapshot must hold exactly the dataset of its cut. The expected
// dataset is read under the exclusive lock at the cut (a digest of every
// key's value and expiry); the written file is decoded and each key
// digested the same way.

const snapTestDBs = 4

// snapKey returns a key of type family t ("s", "l", "h", ...) numbered n.
func snapKey(t string, n int) string { return t + ":" + strconv.Itoa(n) }

// snapOps are the writes the workload chooses from: each gets a client on
// some database and a random source.
var snapOps = []func(ctx context.Context, c *redis.Client, r *rand.Rand){
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Set(ctx, snapKey("s", r.IntN(400)), fmt.Sprint("v", r.Int()), 0)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Append(ctx, snapKey("s", r.IntN(400)), "app")
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.SetRange(ctx, snapKey("s", r.IntN(400)), int64(r.IntN(20)), "RANGE")
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Incr(ctx, snapKey("n", r.IntN(200)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.IncrByFloat(ctx, snapKey("f", r.IntN(100)), 1.5)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.SetBit(ctx, snapKey("b", r.IntN(100)), int64(r.IntN(2000)), r.IntN(2))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Do(ctx, "bitfield", snapKey("b", r.IntN(100)), "incrby", "u8", r.IntN(100), 7)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.BitOpOr(ctx, snapKey("b", r.IntN(100)), snapKey("b", r.IntN(100)), snapKey("b", r.IntN(100)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.PFAdd(ctx, snapKey("p", r.IntN(50)), r.Int(), r.Int())
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.PFCount(ctx, snapKey("p", r.IntN(50)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.PFMerge(ctx, snapKey("p", r.IntN(50)), snapKey("p", r.IntN(50)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.RPush(ctx, snapKey("l", r.IntN(300)), r.Int(), "x")
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.LPop(ctx, snapKey("l", r.IntN(300)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.LSet(ctx, snapKey("l", r.IntN(300)), 0, "lset")
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.LInsertBefore(ctx, snapKey("l", r.IntN(300)), "x", "ins")
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.LTrim(ctx, snapKey("l", r.IntN(300)), 1, -2)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.LMove(ctx, snapKey("l", r.IntN(300)), snapKey("l", r.IntN(300)), "LEFT", "RIGHT")
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.HSet(ctx, snapKey("h", r.IntN(300)), fmt.Sprint("f", r.IntN(300)), r.Int())
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.HDel(ctx, snapKey("h", r.IntN(300)), fmt.Sprint("f", r.IntN(300)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.HIncrBy(ctx, snapKey("h", r.IntN(300)), "cnt", 3)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.SAdd(ctx, snapKey("t", r.IntN(300)), r.IntN(1000), fmt.Sprint("m", r.IntN(1000)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.SRem(ctx, snapKey("t", r.IntN(300)), r.IntN(1000))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.SPop(ctx, snapKey("t", r.IntN(300)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.SMove(ctx, snapKey("t", r.IntN(300)), snapKey("t", r.IntN(300)), r.IntN(1000))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.SInterStore(ctx, snapKey("t", r.IntN(300)), snapKey("t", r.IntN(300)), snapKey("t", r.IntN(300)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.ZAdd(ctx, snapKey("z", r.IntN(300)), redis.Z{Score: float64(r.IntN(100)), Member: fmt.Sprint("m", r.IntN(400))})
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.ZIncrBy(ctx, snapKey("z", r.IntN(300)), 2.5, fmt.Sprint("m", r.IntN(400)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.ZPopMin(ctx, snapKey("z", r.IntN(300)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.ZRemRangeByRank(ctx, snapKey("z", r.IntN(300)), 0, 1)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.ZUnionStore(ctx, snapKey("z", r.IntN(300)), &redis.ZStore{Keys: []string{snapKey("z", r.IntN(300)), snapKey("z", r.IntN(300))}})
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.XAdd(ctx, &redis.XAddArgs{Stream: snapKey("x", r.IntN(60)), Values: []string{"f", fmt.Sprint(r.Int())}})
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.XTrimMaxLen(ctx, snapKey("x", r.IntN(60)), 5)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		k := snapKey("x", r.IntN(60))
		c.XGroupCreateMkStream(ctx, k, "g", "0")
		c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: fmt.Sprint("c", r.IntN(3)), Streams: []string{k, ">"}, Count: 2, Block: -1})
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		k := snapKey("x", r.IntN(60))
		if p, err := c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: k, Group: "g", Start: "-", End: "+", Count: 1}).Result(); err == nil && len(p) > 0 {
			c.XAck(ctx, k, "g", p[0].ID)
		}
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Del(ctx, snapKey([]string{"s", "l", "h", "t", "z"}[r.IntN(5)], r.IntN(300)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Unlink(ctx, snapKey("h", r.IntN(300)), snapKey("l", r.IntN(300)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Rename(ctx, snapKey("s", r.IntN(400)), snapKey("s", r.IntN(400)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.RenameNX(ctx, snapKey("h", r.IntN(300)), snapKey("h", r.IntN(300)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Copy(ctx, snapKey("z", r.IntN(300)), snapKey("z", r.IntN(300)), r.IntN(snapTestDBs), true)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Move(ctx, snapKey("l", r.IntN(300)), r.IntN(snapTestDBs))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.PExpire(ctx, snapKey("s", r.IntN(400)), time.Duration(1+r.IntN(300))*time.Millisecond)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Expire(ctx, snapKey("h", r.IntN(300)), time.Hour)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Persist(ctx, snapKey("h", r.IntN(300)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.GetEx(ctx, snapKey("s", r.IntN(400)), time.Duration(1+r.IntN(200))*time.Millisecond)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.GetDel(ctx, snapKey("s", r.IntN(400)))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		// A transaction across keys of different shards.
		p := c.TxPipeline()
		p.Incr(ctx, snapKey("n", r.IntN(200)))
		p.RPush(ctx, snapKey("l", r.IntN(300)), "tx")
		p.HSet(ctx, snapKey("h", r.IntN(300)), "tx", r.Int())
		p.Exec(ctx)
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		// A script changing keys in place.
		c.Eval(ctx, "redis.call('incr', KEYS[1]); redis.call('rpush', KEYS[2], ARGV[1]); return redis.call('zadd', KEYS[3], 1, ARGV[1])",
			[]string{snapKey("n", r.IntN(200)), snapKey("l", r.IntN(300)), snapKey("z", r.IntN(300))}, r.IntN(100))
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.Sort(ctx, snapKey("t", r.IntN(300)), &redis.Sort{Alpha: true}).Err()
		c.SortStore(ctx, snapKey("t", r.IntN(300)), snapKey("l", r.IntN(300)), &redis.Sort{Alpha: true})
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		k := snapKey("s", r.IntN(400))
		if d, err := c.Dump(ctx, k).Result(); err == nil {
			c.RestoreReplace(ctx, snapKey("s", r.IntN(400)), 0, d)
		}
	},
	func(ctx context.Context, c *redis.Client, r *rand.Rand) {
		c.GeoAdd(ctx, snapKey("g", r.IntN(30)), &redis.GeoLocation{Name: fmt.Sprint("p", r.IntN(50)), Longitude: float64(r.IntN(100)), Latitude: float64(r.IntN(60))})
	},
}

func TestSnapshotPointInTimeCommands(t *testing.T) {
	s, addr := hsStart(t)
	ctx := context.Background()
	clients := make([]*redis.Client, snapTestDBs)
	for i := range clients {
		clients[i] = redis.NewClient(&redis.Options{Addr: addr, DB: i, PoolSize: 4, Protocol: 2, MaxRetries: -1})
		defer clients[i].Close()
	}
	// A starting dataset of every type in every database.
	r0 := rand.New(rand.NewPCG(1, 2))
	for d, c := range clients {
		p := c.Pipeline()
		for i := range 400 {
			p.Set(ctx, snapKey("s", i), fmt.Sprint("value", d, i), 0)
			if i%5 == 0 {
				p.Expire(ctx, snapKey("s", i), time.Hour)
			}
		}
		for i := range 300 {
			n := 3 + r0.IntN(200) // some listpack, some not
			for j := range n {
				p.RPush(ctx, snapKey("l", i), j)
				p.HSet(ctx, snapKey("h", i), fmt.Sprint("f", j), j)
				p.SAdd(ctx, snapKey("t", i), j)
				p.ZAdd(ctx, snapKey("z", i), redis.Z{Score: float64(j), Member: fmt.Sprint("m", j)})
			}
		}
		for i := range 60 {
			for j := range 10 {
				p.XAdd(ctx, &redis.XAddArgs{Stream: snapKey("x", i), Values: []string{"f", strconv.Itoa(j)}})
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}

	var stop atomic.Bool
	var ops atomic.Int64
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for !stop.Load() {
				c := clients[r.IntN(snapTestDBs)]
				snapOps[r.IntN(len(snapOps))](ctx, c, r)
				ops.Add(1)
			}
		}()
	}
	// Blocked clients served by the writers' pushes.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(9, 9))
		for !stop.Load() {
			c := clients[r.IntN(snapTestDBs)]
			c.Do(ctx, "blmove", snapKey("l", r.IntN(300)), snapKey("l", r.IntN(300)), "right", "left", "0.01")
			c.Do(ctx, "bzpopmin", snapKey("z", r.IntN(300)), "0.01")
		}
	}()
	// Keyspace-wide changes now and then.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(3, 3))
		for !stop.Load() {
			time.Sleep(time.Duration(20+r.IntN(40)) * time.Millisecond)
			if r.IntN(3) == 0 {
				clients[3].FlushDB(ctx)
			} else {
				clients[0].Do(ctx, "swapdb", 2, 3)
			}
		}
	}()

	for round := range 4 {
		time.Sleep(100 * time.Millisecond)
		before := ops.Load()
		s.ks.Lock.Lock()
		img, err := s.cutImage(persist.ImageMeta{})
		if err != nil {
			s.ks.Lock.Unlock()
			t.Fatal(err)
		}
		// Keys expired at the cut but not reclaimed are in the image
		// too, as in Redis's saves.
		want := s.snapDigests(math.MinInt64)
		s.ks.Lock.Unlock()
		img.Snapshot().ChunkKeys = 8
		var buf bytes.Buffer
		slow := &slowWriter{w: &buf}
		if err := persist.WriteRDB(slow, img, persist.RDBOptions{Version: Version, Checksum: true}); err != nil {
			t.Fatal(err)
		}
		got := s.rdbDigests(t, buf.Bytes())
		during := ops.Load() - before
		t.Logf("round %d: %d keys at the cut, %d commands during the walk, %d keys captured by writers, COW peak %d bytes",
			round, img.Meta().Keys, during, img.Snapshot().Captured(), img.Snapshot().COWPeak())
		if during < 50 || img.Snapshot().Captured() == 0 {
			t.Errorf("round %d: too little happened during the walk to test anything (%d commands, %d captures)", round, during, img.Snapshot().Captured())
		}
		bad := 0
		for k, w := range want {
			if g, ok := got[k]; !ok || g != w {
				if bad++; bad <= 10 {
					t.Errorf("round %d: %s: in file %v %s, at the cut %s", round, k, ok, hex.EncodeToString(g[:]), hex.EncodeToString(w[:]))
				}
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				if bad++; bad <= 10 {
					t.Errorf("round %d: %s in the file, not in the dataset at the cut", round, k)
				}
			}
		}
		if bad > 0 {
			t.Fatalf("round %d: %d keys differ", round, bad)
		}
	}
	stop.Store(true)
	wg.Wait()
}

// slowWriter writes through, pausing now and then so the workload gets
// ahead of the walk.
type slowWriter struct {
	w *bytes.Buffer
	n int
}

func (w *slowWriter) Write(p []byte) (int, error) {
	if w.n++; w.n%8 == 0 {
		time.Sleep(time.Millisecond)
	}
	return w.w.Write(p)
}

// snapDigest is DEBUG DIGEST-VALUE's digest of e, made to tell apart
// what that digest does not: the expiry's time, and a stream's groups
// (its RDB encoding is taken whole).
func (s *Server) snapDigest(e *store.Entry, exp int64) [20]byte {
	d := store.Digest(e, exp)
	b := strconv.AppendInt(d[:], exp, 10)
	if e.Kind() == store.KindStream {
		b = rdb.Enc{}.Entry(b, e, int(s.cfg.ListPackSize.Load()))
	}
	return sha1.Sum(b)
}

// snapDigests digests every key live at now (the exclusive lock held).
func (s *Server) snapDigests(now int64) map[string][20]byte {
	out := map[string][20]byte{}
	for i := 0; i < s.ks.NumDBs(); i++ {
		s.ks.DB(i).EachLive(now, func(key string, e *store.Entry, exp int64) bool {
			out[strconv.Itoa(i)+"/"+key] = s.snapDigest(e, exp)
			return true
		})
	}
	return out
}

// rdbDigests digests every key of an RDB file, expired or not.
func (s *Server) rdbDigests(t *testing.T, b []byte) map[string][20]byte {
	out := map[string][20]byte{}
	err := rdb.ReadFile(b, true, &rdb.Handler{Key: func(r *rdb.Record) error {
		e := s.entryFromRDB(r.Value)
		if e == nil {
			return fmt.Errorf("bad value for %s", r.Key)
		}
		k := strconv.Itoa(r.DB) + "/" + string(r.Key)
		if _, dup := out[k]; dup {
			return fmt.Errorf("duplicate key %s", k)
		}
		var exp int64
		if r.HasExpire {
			exp = r.Expire
		}
		out[k] = s.snapDigest(e, exp)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
