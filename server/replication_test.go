package server_test

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

func replClient(t *testing.T, addr string, db int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 2, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// replDump renders every key of databases 0..3 with its type, value and
// whether it has a TTL, in a form equal on equal datasets.
func replDump(t *testing.T, addr string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for db := 0; db < 4; db++ {
		c := replClient(t, addr, db)
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatalf("%s KEYS: %v", addr, err)
		}
		sort.Strings(keys)
		for _, k := range keys {
			typ := c.Type(ctx, k).Val()
			var v any
			switch typ {
			case "string":
				v = c.Get(ctx, k).Val()
			case "list":
				v = c.LRange(ctx, k, 0, -1).Val()
			case "set":
				m := c.SMembers(ctx, k).Val()
				sort.Strings(m)
				v = m
			case "zset":
				v = c.ZRangeWithScores(ctx, k, 0, -1).Val()
			case "hash":
				h := c.HGetAll(ctx, k).Val()
				var kv []string
				for f, x := range h {
					kv = append(kv, f+"="+x)
				}
				sort.Strings(kv)
				v = kv
			case "stream":
				v = c.XRange(ctx, k, "-", "+").Val()
			}
			ttl := c.PTTL(ctx, k).Val()
			fmt.Fprintf(&b, "db%d %s %s ttl=%v %v\n", db, k, typ, ttl > 0, v)
		}
	}
	return b.String()
}

// waitSame waits until both servers hold the same dataset.
func waitSame(t *testing.T, master, replica string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var a, b string
	for time.Now().Before(deadline) {
		a, b = replDump(t, master), replDump(t, replica)
		if a == b && a != "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("datasets differ:\nmaster:\n%s\nreplica:\n%s", a, b)
}

func waitInfo(t *testing.T, addr, pattern string) {
	t.Helper()
	waitInfoWithin(t, addr, pattern, 15*time.Second)
}

// waitInfoWithin is waitInfo with its deadline.
func waitInfoWithin(t *testing.T, addr, pattern string, within time.Duration) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	c := replClient(t, addr, 0)
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if s, _ := c.Info(context.Background(), "replication").Result(); re.MatchString(s) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s, _ := c.Info(context.Background(), "replication").Result()
	t.Fatalf("%s: INFO replication never matched %q:\n%s", addr, pattern, s)
}

func hostPort(addr string) (string, string) {
	h, p, _ := net.SplitHostPort(addr)
	return h, p
}

// replSeed writes data before the replica attaches (full sync).
func replSeed(t *testing.T, addr string) {
	ctx := context.Background()
	m := replClient(t, addr, 0)
	m.Set(ctx, "seed:str", "v", 0)
	m.Set(ctx, "seed:ttl", "v", time.Hour)
	m.RPush(ctx, "seed:list", "a", "b", "c")
	m.SAdd(ctx, "seed:set", "a", "b")
	m.ZAdd(ctx, "seed:zset", redis.Z{Score: 1, Member: "a"})
	m.HSet(ctx, "seed:hash", "f", "v")
	m.XAdd(ctx, &redis.XAddArgs{Stream: "seed:stream", ID: "1-1", Values: []string{"a", "1"}})
	replClient(t, addr, 2).Set(ctx, "seed:db2", "x", 0)
}

// replWorkload runs writes of every kind on the master.
func replWorkload(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	m := replClient(t, addr, 0)
	must := func(err error) {
		t.Helper()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
	}
	must(m.Set(ctx, "s1", "hello", 0).Err())
	must(m.Append(ctx, "s1", " world").Err())
	must(m.Incr(ctx, "n").Err())
	must(m.IncrBy(ctx, "n", 41).Err())
	must(m.IncrByFloat(ctx, "fl", 1.25).Err())
	must(m.Expire(ctx, "fl", time.Hour).Err())
	must(m.IncrByFloat(ctx, "fl", 1.25).Err())
	must(m.SetEx(ctx, "ex1", "v", time.Hour).Err())
	must(m.Set(ctx, "ex2", "v", 90*time.Second).Err())
	must(m.Set(ctx, "ex3", "v", 0).Err())
	must(m.Expire(ctx, "ex3", 100*time.Second).Err())
	must(m.Set(ctx, "gone", "v", 0).Err())
	must(m.Expire(ctx, "gone", -time.Second).Err())
	must(m.Set(ctx, "short", "v", 150*time.Millisecond).Err())
	must(m.Do(ctx, "GETEX", "ex3", "PERSIST").Err())
	must(m.RPush(ctx, "l", "1", "2", "3", "4").Err())
	must(m.LPop(ctx, "l").Err())
	must(m.LSet(ctx, "l", 0, "x").Err())
	must(m.SAdd(ctx, "st", "a", "b", "c", "d", "e").Err())
	must(m.SPop(ctx, "st").Err())
	must(m.SPopN(ctx, "st", 2).Err())
	must(m.SAdd(ctx, "st2", "a", "b").Err())
	must(m.SPopN(ctx, "st2", 10).Err())
	must(m.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"}).Err())
	must(m.ZIncrBy(ctx, "z", 2.5, "a").Err())
	must(m.ZPopMin(ctx, "z").Err())
	must(m.HSet(ctx, "h", "a", "1", "b", "2").Err())
	must(m.HIncrByFloat(ctx, "h", "a", 0.5).Err())
	must(m.HDel(ctx, "h", "b").Err())
	must(m.XAdd(ctx, &redis.XAddArgs{Stream: "x", ID: "5-1", Values: []string{"f", "v"}}).Err())
	must(m.XGroupCreate(ctx, "x", "g", "0").Err())
	must(m.PFAdd(ctx, "hll", "a", "b", "c").Err())
	must(m.SetBit(ctx, "bits", 7, 1).Err())
	must(m.Del(ctx, "seed:str").Err())
	must(m.Rename(ctx, "seed:list", "renamed").Err())
	// Other databases.
	d1 := replClient(t, addr, 1)
	must(d1.Set(ctx, "in1", "one", 0).Err())
	must(d1.RPush(ctx, "l1", "a").Err())
	must(m.Move(ctx, "s1", 3).Err())
	// MULTI/EXEC.
	_, err := m.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "tx1", "1", 0)
		p.Incr(ctx, "tx1")
		p.Expire(ctx, "tx1", time.Hour)
		p.SPop(ctx, "st")
		return nil
	})
	must(err)
	// Scripts.
	must(m.Eval(ctx, "redis.call('set', KEYS[1], ARGV[1]); redis.call('incr', KEYS[2]); redis.call('expire', KEYS[1], 1000); return 1", []string{"ev1", "ev2"}, "val").Err())
	must(m.Eval(ctx, "redis.call('select', 2); redis.call('set', 'ev-db2', 'x'); return redis.call('spop', KEYS[1])", []string{"st"}).Err())
	// A blocked pop served by a push.
	done := make(chan error, 1)
	go func() {
		c := replClient(t, addr, 0)
		done <- c.BLPop(ctx, 5*time.Second, "bl").Err()
	}()
	time.Sleep(100 * time.Millisecond)
	must(m.RPush(ctx, "bl", "x", "y").Err())
	must(<-done)
	must(m.RPush(ctx, "bl2", "x").Err())
	must(m.BRPop(ctx, time.Second, "bl2").Err())
	must(m.LMove(ctx, "bl", "bl3", "LEFT", "RIGHT").Err())
	time.Sleep(300 * time.Millisecond) // "short" expires; reading it makes the master delete it
	must(m.Get(ctx, "short").Err())
}

func TestReplicationSluiceMasterRedisReplica(t *testing.T) {
	_, maddr := redistest.StartSluice(t)
	replSeed(t, maddr)
	h, p := hostPort(maddr)
	raddr := redistest.StartRedis(t, "--replicaof", h, p, "--dir", t.TempDir())
	waitInfo(t, raddr, `master_link_status:up`)
	waitSame(t, maddr, raddr)
	replWorkload(t, maddr)
	m := replClient(t, maddr, 0)
	ctx := context.Background()
	if n, err := m.Do(ctx, "WAIT", "1", "5000").Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %v, %v", n, err)
	}
	waitSame(t, maddr, raddr)
	if v := replClient(t, raddr, 0).Exists(ctx, "short", "gone").Val(); v != 0 {
		t.Fatalf("expired keys still on the replica: %d", v)
	}
	info := m.Info(ctx, "replication").Val()
	for _, want := range []string{"role:master", "connected_slaves:1", "slave0:ip=127.0.0.1", "repl_backlog_active:1"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO replication lacks %q:\n%s", want, info)
		}
	}
	role := m.Do(ctx, "ROLE").Val().([]any)
	if role[0] != "master" || len(role[2].([]any)) != 1 {
		t.Fatalf("ROLE = %v", role)
	}
	// The replica's link dropped: it continues from the backlog.
	killReplicaLinks(t, maddr)
	m.Set(ctx, "after-drop", "1", 0)
	waitInfo(t, maddr, `connected_slaves:1`)
	waitSame(t, maddr, raddr)
}

// killReplicaLinks closes the master's replica connections.
func killReplicaLinks(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	m := replClient(t, addr, 0)
	list := m.ClientList(ctx).Val()
	n := 0
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, "cmd=psync") || strings.Contains(line, "cmd=replconf") || strings.Contains(line, "cmd=sync") {
			for _, f := range strings.Fields(line) {
				if id, ok := strings.CutPrefix(f, "id="); ok {
					m.Do(ctx, "CLIENT", "KILL", "ID", id)
					n++
				}
			}
		}
	}
	if n == 0 {
		t.Fatalf("no replica connection in CLIENT LIST:\n%s", list)
	}
}

func TestReplicationRedisMasterSluiceReplica(t *testing.T) {
	t.Chdir(t.TempDir()) // disk-based full syncs write dump.rdb here
	maddr := redistest.StartRedis(t, "--repl-diskless-sync-delay", "0", "--dir", t.TempDir())
	replSeed(t, maddr)
	h, p := hostPort(maddr)
	_, saddr := redistest.StartSluice(t, "replicaof", h+" "+p)
	waitInfo(t, saddr, `master_link_status:up`)
	waitSame(t, maddr, saddr)
	replWorkload(t, maddr)
	ctx := context.Background()
	m := replClient(t, maddr, 0)
	if n, err := m.Do(ctx, "WAIT", "1", "5000").Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %v, %v (the Sluice replica acks)", n, err)
	}
	waitSame(t, maddr, saddr)
	r := replClient(t, saddr, 0)
	if err := r.Set(ctx, "k", "v", 0).Err(); err == nil || err.Error() != "READONLY You can't write against a read only replica." {
		t.Fatalf("write on replica: %v", err)
	}
	role := r.Do(ctx, "ROLE").Val().([]any)
	if role[0] != "slave" || role[3] != "connected" {
		t.Fatalf("ROLE = %v", role)
	}
	info := r.Info(ctx, "replication").Val()
	for _, want := range []string{"role:slave", "master_host:" + h, "master_port:" + p, "master_sync_in_progress:0"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO replication lacks %q:\n%s", want, info)
		}
	}
	// Link loss: the replica reconnects and catches up.
	killReplicaLinks(t, maddr)
	m.Set(ctx, "during-drop", "1", 0)
	waitSame(t, maddr, saddr)
	// Promotion keeps the data and accepts writes.
	if err := r.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if v := r.Get(ctx, "during-drop").Val(); v != "1" {
		t.Fatalf("after promotion during-drop = %q", v)
	}
	if err := r.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("write after promotion: %v", err)
	}
	if !strings.Contains(r.Info(ctx, "replication").Val(), "role:master") {
		t.Fatal("not a master after REPLICAOF NO ONE")
	}
}

func TestReplicationSluiceToSluice(t *testing.T) {
	t.Chdir(t.TempDir()) // disk-based full syncs write dump.rdb here
	_, maddr := redistest.StartSluice(t)
	replSeed(t, maddr)
	_, saddr := redistest.StartSluice(t)
	h, p := hostPort(maddr)
	ctx := context.Background()
	r := replClient(t, saddr, 0)
	if err := r.Do(ctx, "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	waitInfo(t, saddr, `master_link_status:up`)
	replWorkload(t, maddr)
	m := replClient(t, maddr, 0)
	if n, err := m.Do(ctx, "WAIT", "1", "5000").Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %v, %v", n, err)
	}
	waitSame(t, maddr, saddr)
	// A key with a TTL expires on the master; the replica keeps it hidden
	// until the master's DEL.
	m.Set(ctx, "exp", "v", 200*time.Millisecond)
	time.Sleep(400 * time.Millisecond)
	if v := r.Exists(ctx, "exp").Val(); v != 0 {
		t.Fatalf("expired key visible on the replica")
	}
	killReplicaLinks(t, maddr)
	for i := 0; i < 20; i++ {
		m.Incr(ctx, "counter")
	}
	waitSame(t, maddr, saddr)
	if v := r.Get(ctx, "counter").Val(); v != "20" {
		t.Fatalf("counter = %q", v)
	}
	if err := r.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Fatalf("write on replica: %v", err)
	}
	// Scripts on a read-only replica, as redis-server answers: a write
	// from an old-style script fails at the call (the error names the
	// script), a script that may write (flags) does not start,
	// and a no-writes script runs.
	const readOnly = "READONLY You can't write against a read only replica."
	if err := r.Eval(ctx, "return redis.call('set', 'k', 'v')", nil).Err(); err == nil || !strings.HasPrefix(err.Error(), readOnly+" script: ") {
		t.Errorf("EVAL writing on the replica: %v", err)
	}
	if err := r.Eval(ctx, "#!lua\nreturn 1", nil).Err(); err == nil || err.Error() != readOnly {
		t.Errorf("EVAL of a write-flagged script on the replica: %v", err)
	}
	if v, err := r.Eval(ctx, "#!lua flags=no-writes\nreturn redis.call('get', 'counter')", nil).Result(); err != nil || v != "20" {
		t.Errorf("no-writes script on the replica: %v %v", v, err)
	}
	// min-replicas-to-write counts the replica.
	m.ConfigSet(ctx, "min-replicas-to-write", "1")
	if err := m.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("write with 1 good replica: %v", err)
	}
	m.ConfigSet(ctx, "min-replicas-to-write", "2")
	if err := m.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
		t.Fatalf("write with too few replicas: %v", err)
	}
	m.ConfigSet(ctx, "min-replicas-to-write", "0")
	off := m.Do(ctx, "ROLE").Val().([]any)[1].(int64)
	if off <= 0 {
		t.Fatalf("master offset %d", off)
	}
	if err := r.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("write after promotion: %v", err)
	}
	_ = strconv.Itoa
}

// bind-source-addr is the address a replica connects to its master from.
func TestReplicaBindSourceAddr(t *testing.T) {
	t.Chdir(t.TempDir()) // disk-based full syncs write dump.rdb here
	_, maddr := redistest.StartSluice(t)
	_, saddr := redistest.StartSluice(t, "bind-source-addr", "127.0.0.2")
	h, p := hostPort(maddr)
	ctx := context.Background()
	if err := replClient(t, saddr, 0).Do(ctx, "REPLICAOF", h, p).Err(); err != nil {
		t.Fatal(err)
	}
	waitInfo(t, saddr, `master_link_status:up`)
	waitInfo(t, maddr, `slave0:ip=127\.0\.0\.2,`)
}

// TestReplicaServeStaleData: with replica-serve-stale-data no, a replica
// whose master is unreachable refuses commands without the stale flag
// with MASTERDOWN, and EXEC of a transaction that queued one, as
// redis-server does.
func TestReplicaServeStaleData(t *testing.T) {
	dead := strconv.Itoa(redistest.FreePort(t)) // nothing listens there
	script := [][]string{
		{"SET", "k", "v"},
		{"CONFIG", "SET", "replica-serve-stale-data", "no"},
		{"REPLICAOF", "127.0.0.1", dead},
		{"GET", "k"},
		{"PING"},
		{"INFO", "keyspace"},
		{"MULTI"},
		{"PING"},
		{"EXEC"},
		{"MULTI"},
		{"CONFIG", "GET", "maxmemory"},
		{"EXEC"},
		{"CONFIG", "SET", "replica-serve-stale-data", "yes"},
		{"GET", "k"},
		{"REPLICAOF", "NO", "ONE"},
	}
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		var out []string
		for _, args := range script {
			r, err := c.Do(args...)
			if err != nil {
				t.Fatalf("%s %v: %v", addr, args, err)
			}
			if args[0] == "INFO" {
				r = strconv.FormatBool(strings.HasPrefix(r, "$"))
			}
			out = append(out, r)
		}
		return out
	}
	_, saddr := redistest.StartSluice(t)
	got, want := run(saddr), run(redistest.StartRedis(t))
	for i := range script {
		if got[i] != want[i] {
			t.Errorf("%v: sluice %q, redis %q", script[i], got[i], want[i])
		}
	}
}

// A replica under CLIENT PAUSE WRITE reads its master's writes but applies
// them only when the pause ends, as Redis postpones its master client
// (Redis's unit/pause "Test when replica paused, offset would not grow"):
// run against a redis-server pair and a Sluice pair.
func TestReplicaPausedVsRedis(t *testing.T) {
	t.Chdir(t.TempDir()) // disk-based full syncs write dump.rdb here
	ctx := context.Background()
	offset := func(addr, field string) int64 {
		s, _ := replClient(t, addr, 0).Info(ctx, "replication").Result()
		m := regexp.MustCompile(field + `:(\d+)`).FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("%s: no %s in %s", addr, field, s)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	run := func(maddr, saddr string) []string {
		m, s := replClient(t, maddr, 0), replClient(t, saddr, 0)
		h, p := hostPort(maddr)
		if err := s.Do(ctx, "REPLICAOF", h, p).Err(); err != nil {
			t.Fatal(err)
		}
		waitInfo(t, saddr, `master_link_status:up`)
		m.Set(ctx, "foo", "bar", 0)
		old := offset(maddr, "master_repl_offset")
		waitInfo(t, saddr, `slave_repl_offset:`+strconv.FormatInt(old, 10)+`\r`)
		if err := s.Do(ctx, "CLIENT", "PAUSE", "100000", "WRITE").Err(); err != nil {
			t.Fatal(err)
		}
		m.Set(ctx, "foo2", "bar2", 0)
		now := offset(maddr, "master_repl_offset")
		waitInfo(t, saddr, `slave_read_repl_offset:`+strconv.FormatInt(now, 10)+`\r`)
		var out []string
		out = append(out, strconv.FormatBool(offset(saddr, "slave_repl_offset") == old))
		v, err := s.Get(ctx, "foo2").Result()
		out = append(out, v, fmt.Sprint(err))
		s.Do(ctx, "CLIENT", "UNPAUSE")
		waitInfo(t, saddr, `slave_repl_offset:`+strconv.FormatInt(now, 10)+`\r`)
		v, err = s.Get(ctx, "foo2").Result()
		out = append(out, v, fmt.Sprint(err))
		return out
	}
	want := run(redistest.StartRedis(t, "--repl-diskless-sync-delay", "0"), redistest.StartRedis(t))
	_, sm := redistest.StartSluice(t, "repl-diskless-sync-delay", "0")
	_, ss := redistest.StartSluice(t)
	got := run(sm, ss)
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("redis %q, sluice %q", want, got)
	}
}
