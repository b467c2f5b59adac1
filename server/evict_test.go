package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// maxmemory tests. Limits are set relative to the used_memory measured
// when the test starts.

const oomErr = "OOM command not allowed when used memory > 'maxmemory'."

func infoInt(t *testing.T, rdb *redis.Client, field string) int64 {
	t.Helper()
	n, _ := strconv.ParseInt(infoString(t, rdb, field), 10, 64)
	return n
}

// infoString is the value of an INFO field.
func infoString(t *testing.T, rdb *redis.Client, field string) string {
	t.Helper()
	s, err := rdb.Info(context.Background(), "everything").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO has no %s", field)
	return ""
}

// fill writes n keys prefix:i of size bytes (with a TTL when ttl > 0) in
// pipelines, returning the first error reply.
func fill(rdb *redis.Client, prefix string, n, size int, ttl time.Duration) error {
	ctx := context.Background()
	val := strings.Repeat("v", size)
	for i := 0; i < n; i += 100 {
		p := rdb.Pipeline()
		for j := i; j < min(n, i+100); j++ {
			p.Set(ctx, prefix+":"+strconv.Itoa(j), val, ttl)
		}
		if _, err := p.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

func countKeys(t *testing.T, rdb *redis.Client, prefix string, n int) int {
	t.Helper()
	ctx := context.Background()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + ":" + strconv.Itoa(i)
	}
	got := 0
	for i := 0; i < n; i += 500 {
		c, err := rdb.Exists(ctx, keys[i:min(n, i+500)]...).Result()
		if err != nil {
			t.Fatal(err)
		}
		got += int(c)
	}
	return got
}

// setLimit sets maxmemory to used_memory plus extra bytes.
func setLimit(t *testing.T, rdb *redis.Client, policy string, extra int64) int64 {
	t.Helper()
	ctx := context.Background()
	limit := infoInt(t, rdb, "used_memory") + extra
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", policy).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.ConfigSet(context.Background(), "maxmemory", "0") })
	return limit
}

func TestMaxmemoryAllkeys(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "allkeys-lfu", "allkeys-random"} {
		t.Run(policy, func(t *testing.T) {
			_, addr := redistest.StartSluice(t)
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			defer rdb.Close()
			limit := setLimit(t, rdb, policy, 8<<20)
			// 24 MB of 1 KB values into 8 MB.
			if err := fill(rdb, "k", 24000, 1000, 0); err != nil {
				t.Fatal(err)
			}
			evicted := infoInt(t, rdb, "evicted_keys")
			used := infoInt(t, rdb, "used_memory")
			dbsize := rdb.DBSize(context.Background()).Val()
			t.Logf("limit %d used %d evicted %d dbsize %d", limit, used, evicted, dbsize)
			if evicted == 0 || dbsize >= 24000 {
				t.Fatalf("no eviction: evicted_keys %d dbsize %d", evicted, dbsize)
			}
			// Eviction that runs past its time limit goes on in the
			// background (as in Redis), and garbage counts until the
			// next collection: allow a moment to settle.
			for deadline := time.Now().Add(2 * time.Second); used > limit+limit/10 && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
				used = infoInt(t, rdb, "used_memory")
			}
			if used > limit+limit/10 {
				t.Errorf("used_memory %d far above maxmemory %d", used, limit)
			}
			if dbsize < 2000 {
				t.Errorf("only %d keys left: eviction went far below the limit", dbsize)
			}
		})
	}
}

func TestMaxmemoryVolatile(t *testing.T) {
	for _, policy := range []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			_, addr := redistest.StartSluice(t)
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			defer rdb.Close()
			ctx := context.Background()
			setLimit(t, rdb, policy, 8<<20)
			// Persistent keys first, then keys with a TTL past the limit.
			if err := fill(rdb, "p", 3000, 1000, 0); err != nil {
				t.Fatal(err)
			}
			if err := fill(rdb, "v", 12000, 1000, time.Hour); err != nil {
				t.Fatal(err)
			}
			if got := countKeys(t, rdb, "p", 3000); got != 3000 {
				t.Fatalf("%d of 3000 keys without a TTL left: %s evicted them", got, policy)
			}
			if infoInt(t, rdb, "evicted_keys") == 0 {
				t.Fatal("no eviction")
			}
			// Without volatile keys nothing can be evicted: OOM.
			err := fill(rdb, "p2", 20000, 1000, 0)
			t.Logf("used %d max %d dbsize %d", infoInt(t, rdb, "used_memory"), infoInt(t, rdb, "maxmemory"), rdb.DBSize(ctx).Val())
			if err == nil || err.Error() != oomErr {
				t.Fatalf("err %v, want %q", err, oomErr)
			}
			if got := countKeys(t, rdb, "p", 3000); got != 3000 {
				t.Fatalf("%d of 3000 keys without a TTL left", got)
			}
			if v := rdb.Get(ctx, "p:1").Val(); len(v) != 1000 {
				t.Fatalf("GET under OOM: %q", v)
			}
		})
	}
}

// oomSequence runs commands on a server that is over maxmemory with
// noeviction and returns the replies as text.
func oomSequence(t *testing.T, addr string) []string {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer rdb.Close()
	rdb.Set(ctx, "k", "v", 0)
	rdb.Set(ctx, "n", 1, 0)
	rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction")
	rdb.ConfigSet(ctx, "maxmemory", "1")
	defer rdb.ConfigSet(ctx, "maxmemory", "0")
	var out []string
	do := func(args ...any) {
		v, err := rdb.Do(ctx, args...).Result()
		if err != nil {
			out = append(out, fmt.Sprintf("%v -> err %v", args, err))
		} else {
			out = append(out, fmt.Sprintf("%v -> %v", args, v))
		}
	}
	do("set", "k2", "v")
	do("get", "k")
	do("incr", "n")
	do("lpush", "l", "x")
	do("decr", "n") // not denyoom
	do("eval", "redis.call('set','x',1)", "0")
	do("eval", "return redis.call('get','k')", "0")
	do("eval", "#!lua flags=allow-oom\nreturn redis.call('set','x','y')", "0")
	do("eval", "#!lua\nreturn 1", "0")
	do("del", "x")
	do("del", "k")
	do("exists", "k")
	// MULTI: queuing is refused while over the limit; EXEC then aborts.
	conn := rdb.Conn()
	defer conn.Close()
	for _, args := range [][]any{{"multi"}, {"get", "n"}, {"exec"}} {
		v, err := conn.Do(ctx, args...).Result()
		out = append(out, fmt.Sprintf("tx %v -> %v %v", args, v, err))
	}
	return out
}

func TestMaxmemoryOOMLikeRedis(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	want := oomSequence(t, raddr)
	got := oomSequence(t, saddr)
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("reply %d:\n sluice %q\n redis  %q", i, got[min(i, len(got)-1)], want[i])
		}
	}
	if !strings.Contains(strings.Join(want, "\n"), oomErr) {
		t.Fatalf("redis-server never replied OOM: %q", want)
	}
}

// lruSurvivors writes hot and cold keys, waits, reads the hot ones, then
// writes new keys past the limit: LRU should evict cold keys first. It
// returns how many of the hot keys survived.
func lruSurvivors(t *testing.T, addr string) (hot, cold int) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	setLimit(t, rdb, "allkeys-lru", 6<<20)
	if err := fill(rdb, "hot", 1000, 1000, 0); err != nil {
		t.Fatal(err)
	}
	if err := fill(rdb, "cold", 3000, 1000, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // the LRU clock counts seconds
	p := rdb.Pipeline()
	for i := 0; i < 1000; i++ {
		p.Get(ctx, "hot:"+strconv.Itoa(i))
	}
	p.Exec(ctx)
	if err := fill(rdb, "new", 4000, 1000, 0); err != nil {
		t.Fatal(err)
	}
	return countKeys(t, rdb, "hot", 1000), countKeys(t, rdb, "cold", 3000)
}

func TestMaxmemoryLRUPrefersOldKeys(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	rh, rc := lruSurvivors(t, raddr)
	sh, sc := lruSurvivors(t, saddr)
	t.Logf("survivors: redis-server hot %d/1000 cold %d/3000, sluice hot %d/1000 cold %d/3000", rh, rc, sh, sc)
	// Sluice's estimate counts garbage until a collection, so it evicts
	// somewhat more than redis-server: compare the survival rates.
	hotRate, coldRate := float64(sh)/1000, float64(sc)/3000
	if hotRate < 0.6 || hotRate < coldRate+0.3 {
		t.Errorf("sluice kept %d of 1000 recently used keys and %d of 3000 idle ones (redis-server %d, %d)", sh, sc, rh, rc)
	}
}

func TestMaxmemoryEvictedEvents(t *testing.T) {
	_, addr := redistest.StartSluice(t, "notify-keyspace-events", "Ee")
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	sub := rdb.Subscribe(ctx, "__keyevent@0__:evicted")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-random")
	rdb.Set(ctx, "victim", "x", 0)
	rdb.ConfigSet(ctx, "maxmemory", "1")
	defer rdb.ConfigSet(ctx, "maxmemory", "0")
	select {
	case m := <-sub.Channel():
		if m.Payload != "victim" {
			t.Fatalf("evicted %q", m.Payload)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no evicted event")
	}
	rdb.ConfigSet(ctx, "maxmemory", "0")
	if n := infoInt(t, rdb, "evicted_keys"); n != 1 {
		t.Fatalf("evicted_keys %d", n)
	}
	rdb.ConfigResetStat(ctx)
	if n := infoInt(t, rdb, "evicted_keys"); n != 0 {
		t.Fatalf("evicted_keys after RESETSTAT %d", n)
	}
}

func TestObjectFreqLFU(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	rdb.Set(ctx, "k", "v", 0)
	if err := rdb.ObjectFreq(ctx, "k").Err(); err == nil || !strings.Contains(err.Error(), "An LFU maxmemory policy is not selected") {
		t.Fatalf("OBJECT FREQ under LRU: %v", err)
	}
	rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-lfu")
	rdb.Set(ctx, "k", "v", 0) // an existing key keeps its lru field
	rdb.Set(ctx, "k2", "v", 0)
	if f := rdb.ObjectFreq(ctx, "k2").Val(); f != 5 {
		t.Fatalf("new key freq %d, want 5", f)
	}
	for i := 0; i < 2000; i++ {
		rdb.Get(ctx, "k")
	}
	if f := rdb.ObjectFreq(ctx, "k").Val(); f <= 10 {
		t.Fatalf("freq after 2000 reads %d", f)
	}
	if err := rdb.ObjectIdleTime(ctx, "k").Err(); err == nil || !strings.Contains(err.Error(), "An LFU maxmemory policy is selected") {
		t.Fatalf("OBJECT IDLETIME under LFU: %v", err)
	}
	dump := rdb.Dump(ctx, "k").Val()
	if err := rdb.Do(ctx, "restore", "r", 0, dump, "freq", 100).Err(); err != nil {
		t.Fatal(err)
	}
	if f := rdb.ObjectFreq(ctx, "r").Val(); f != 100 {
		t.Fatalf("RESTORE FREQ 100: freq %d", f)
	}
	rdb.ConfigSet(ctx, "lfu-log-factor", "0") // every access counts
	rdb.Set(ctx, "c", "v", 0)
	for i := 0; i < 20; i++ {
		rdb.Get(ctx, "c")
	}
	if f := rdb.ObjectFreq(ctx, "c").Val(); f != 25 {
		t.Fatalf("lfu-log-factor 0: freq %d after 20 reads, want 25", f)
	}
	rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction")
}

// TestMaxmemoryEvictsKeyGainedAfterEmpty: a database that eviction found
// without candidates (no volatile keys, so OOM) is looked at again as
// soon as it changes. A key given a TTL right after must be the next
// victim, not answered with OOM for a while.
func TestMaxmemoryEvictsKeyGainedAfterEmpty(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	setLimit(t, rdb, "volatile-random", 4<<20)
	big := strings.Repeat("x", 256<<10)
	var err error
	n := 0
	for ; n < 200 && err == nil; n++ {
		err = rdb.Set(ctx, "p:"+strconv.Itoa(n), big, 0).Err()
	}
	if err == nil || err.Error() != oomErr {
		t.Fatalf("filling with persistent keys: err %v after %d, want OOM", err, n)
	}
	// EXPIRE is not deny-oom: keys given a TTL become the candidates (24
	// of them, 6 MB, more than the margin and whatever garbage the heap
	// holds), and the very next command must evict what it needs (all in
	// one pipeline, well inside any cache of empty databases).
	p := rdb.Pipeline()
	const volatile = 24
	for i := range volatile {
		p.Expire(ctx, "p:"+strconv.Itoa(i), time.Hour)
	}
	set := p.Set(ctx, "after", "v", 0)
	p.Exec(ctx)
	if set.Err() != nil {
		t.Fatalf("SET after giving keys a TTL: %v (want keys evicted)", set.Err())
	}
	left := 0
	for i := range volatile {
		left += int(rdb.Exists(ctx, "p:"+strconv.Itoa(i)).Val())
	}
	if left == volatile {
		t.Fatal("none of the keys given a TTL was evicted")
	}
}

// TestMaxmemoryCountsGrowthAtOnce: a string grown in place (SETBIT here)
// counts at once, so the very next command evicts for it, as in Redis,
// rather than after the next sample of the heap.
func TestMaxmemoryCountsGrowthAtOnce(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		setLimit(t, rdb, "volatile-random", 1<<20)
		rdb.Set(ctx, "volatile", "x", time.Hour)
		p := rdb.Pipeline()
		p.SetBit(ctx, "big"+strconv.Itoa(i), 8*(2<<20), 1) // 2 MB
		exists := p.Exists(ctx, "volatile")
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if exists.Val() != 0 {
			t.Fatalf("round %d: the volatile key survived the command after a 2 MB SETBIT over a 1 MB margin", i)
		}
		rdb.ConfigSet(ctx, "maxmemory", "0")
		rdb.FlushAll(ctx)
	}
}
