package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/rdb"
)

// A BGSAVE taken while clients write, delete, rename, expire, flush and
// swap keys holds exactly the dataset of its cut. Each client applies a
// deterministic sequence of operations, each in a transaction that also
// records its number, so the file itself says how many of each client's
// operations it holds: replaying that many gives the expected dataset,
// which the file's keys, redis-server loading the file, and Sluice
// loading it must all show.

// ptItem is a key of the model: a string, list or hash, and its expiry.
type ptItem struct {
	str  string
	list []string
	hash map[string]string
	kind byte // 's', 'l', 'h'
	exp  int64
}

func (it ptItem) String() string {
	switch it.kind {
	case 'l':
		return fmt.Sprintf("list%q exp=%d", it.list, it.exp)
	case 'h':
		keys := make([]string, 0, len(it.hash))
		for k := range it.hash {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%s,", k, it.hash[k])
		}
		return fmt.Sprintf("hash{%s} exp=%d", b.String(), it.exp)
	}
	return fmt.Sprintf("str%q exp=%d", it.str, it.exp)
}

type ptDB map[string]ptItem

// ptOp is one operation of a client: what it sends (inside MULTI, before
// the SET of its sequence number) and what it does to the model.
type ptOp struct {
	cmd   []any
	apply func(dbs []ptDB)
}

// ptWorker is a client with its own keys, database(s) and sequence key.
type ptWorker struct {
	name string
	db   int // the client's database
	seq  string
	ops  []ptOp
	r    *rand.Rand
	t0   int64 // base of the long expiries
}

func (w *ptWorker) key(pool string, n int) string { return fmt.Sprintf("%s:%s%d", w.name, pool, n) }

// next makes operation n (0-based) of a worker whose model databases
// are dbs[0] (its own) and, for the swapping worker, dbs[1].
func (w *ptWorker) next(n int, swap bool) ptOp {
	r := w.r
	val := fmt.Sprintf("%s-%d", w.name, n)
	k := w.key("k", r.IntN(300))
	switch op := r.IntN(11); {
	case op == 0 && swap:
		return ptOp{[]any{"swapdb", w.db, w.db + 1}, func(d []ptDB) { d[0], d[1] = d[1], d[0] }}
	case op == 0:
		return ptOp{[]any{"set", k, val}, func(d []ptDB) { d[0][k] = ptItem{kind: 's', str: val} }}
	case op == 1:
		return ptOp{[]any{"del", k}, func(d []ptDB) { delete(d[0], k) }}
	case op == 2:
		k2 := w.key("k", r.IntN(300))
		return ptOp{[]any{"rename", k, k2}, func(d []ptDB) {
			if it, ok := d[0][k]; ok {
				delete(d[0], k)
				d[0][k2] = it
			}
		}}
	case op == 3:
		return ptOp{[]any{"append", k, "+"}, func(d []ptDB) {
			it, ok := d[0][k]
			if !ok {
				it = ptItem{kind: 's'}
			}
			it.str += "+"
			d[0][k] = it
		}}
	case op == 4:
		l := w.key("l", r.IntN(100))
		return ptOp{[]any{"rpush", l, val}, func(d []ptDB) {
			it, ok := d[0][l]
			if !ok {
				it = ptItem{kind: 'l'}
			}
			it.list = append(slices.Clone(it.list), val)
			d[0][l] = it
		}}
	case op == 5:
		l := w.key("l", r.IntN(100))
		return ptOp{[]any{"lpop", l}, func(d []ptDB) {
			if it, ok := d[0][l]; ok {
				if it.list = it.list[1:]; len(it.list) == 0 {
					delete(d[0], l)
				} else {
					d[0][l] = it
				}
			}
		}}
	case op == 6:
		h := w.key("h", r.IntN(100))
		f := fmt.Sprint("f", r.IntN(20))
		return ptOp{[]any{"hset", h, f, val}, func(d []ptDB) {
			it, ok := d[0][h]
			if !ok {
				it = ptItem{kind: 'h'}
			}
			m := make(map[string]string, len(it.hash)+1)
			for a, b := range it.hash {
				m[a] = b
			}
			m[f] = val
			it.hash = m
			d[0][h] = it
		}}
	case op == 7:
		exp := w.t0 + 3_600_000 + int64(n)
		return ptOp{[]any{"pexpireat", k, exp}, func(d []ptDB) {
			if it, ok := d[0][k]; ok {
				it.exp = exp
				d[0][k] = it
			}
		}}
	case op == 8:
		return ptOp{[]any{"persist", k}, func(d []ptDB) {
			if it, ok := d[0][k]; ok {
				it.exp = 0
				d[0][k] = it
			}
		}}
	case op == 9:
		// Expiring soon, maybe while the snapshot is written: its own
		// keys, only ever set with their expiry.
		e := w.key("e", r.IntN(100))
		exp := time.Now().UnixMilli() + int64(20+r.IntN(400))
		return ptOp{[]any{"set", e, val, "pxat", exp}, func(d []ptDB) { d[0][e] = ptItem{kind: 's', str: val, exp: exp} }}
	default:
		if w.name == "flusher" && r.IntN(4) == 0 {
			return ptOp{[]any{"flushdb"}, func(d []ptDB) { clear(d[0]) }}
		}
		return ptOp{[]any{"set", k, val}, func(d []ptDB) { d[0][k] = ptItem{kind: 's', str: val} }}
	}
}

// ptModel replays the first n operations of w.
func ptModel(w *ptWorker, n int) []ptDB {
	d := []ptDB{{}, {}}
	for i := 0; i < n; i++ {
		w.ops[i].apply(d)
		d[0][w.seq] = ptItem{kind: 's', str: strconv.Itoa(i + 1)}
	}
	return d
}

// rdbKeys reads an RDB file into the model's form, per database.
func rdbKeys(t *testing.T, path string) (map[int]ptDB, int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]ptDB{}
	var ctime int64
	err = rdb.ReadFile(b, true, &rdb.Handler{
		Aux: func(k, v []byte) {
			if string(k) == "ctime" {
				ctime, _ = strconv.ParseInt(string(v), 10, 64)
			}
		},
		Key: func(r *rdb.Record) error {
			it := ptItem{}
			if r.HasExpire {
				it.exp = r.Expire
			}
			v := r.Value
			switch v.Kind() {
			case rdb.KindString:
				it.kind = 's'
				if v.IsInt {
					it.str = strconv.FormatInt(v.Int, 10)
				} else {
					it.str = string(v.Str)
				}
			case rdb.KindList:
				it.kind = 'l'
				for _, e := range v.Elems {
					it.list = append(it.list, string(e))
				}
			case rdb.KindHash:
				it.kind = 'h'
				it.hash = map[string]string{}
				for i := range v.Fields {
					it.hash[string(v.Fields[i])] = string(v.Values[i])
				}
			default:
				return fmt.Errorf("unexpected type of %s", r.Key)
			}
			if out[r.DB] == nil {
				out[r.DB] = ptDB{}
			}
			if _, dup := out[r.DB][string(r.Key)]; dup {
				return fmt.Errorf("key %s twice in db %d", r.Key, r.DB)
			}
			out[r.DB][string(r.Key)] = it
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, ctime
}

// serverKeys reads every key of databases dbs from a server that loaded
// the file, in the model's form.
func serverKeys(t *testing.T, addr string, dbs []int) map[int]ptDB {
	t.Helper()
	ctx := context.Background()
	out := map[int]ptDB{}
	for _, db := range dbs {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db})
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		m := ptDB{}
		for _, k := range keys {
			it := ptItem{}
			switch c.Type(ctx, k).Val() {
			case "string":
				it.kind, it.str = 's', c.Get(ctx, k).Val()
			case "list":
				it.kind, it.list = 'l', c.LRange(ctx, k, 0, -1).Val()
			case "hash":
				it.kind, it.hash = 'h', c.HGetAll(ctx, k).Val()
			}
			if ms := c.PExpireTime(ctx, k).Val(); ms > 0 {
				it.exp = ms.Milliseconds()
			}
			m[k] = it
		}
		out[db] = m
		c.Close()
	}
	return out
}

// TestBGSAVEPointInTime is the test described above.
func TestBGSAVEPointInTime(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, addr := redistest.StartSluice(t)
	ctx := context.Background()
	// Filler keys make the walk take a while (with rdb-key-save-delay).
	fill := redis.NewClient(&redis.Options{Addr: addr})
	defer fill.Close()
	for i := 0; i < 20000; i += 1000 {
		args := make([]any, 0, 2000)
		for j := i; j < i+1000; j++ {
			args = append(args, fmt.Sprint("filler:", j), j)
		}
		fill.MSet(ctx, args...)
	}
	t0 := time.Now().UnixMilli()
	workers := []*ptWorker{
		{name: "a", db: 0}, {name: "b", db: 0}, {name: "c", db: 1},
		{name: "flusher", db: 2}, {name: "swapper", db: 3}, // and 4
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, len(workers))
	for i, w := range workers {
		w.seq = w.name + ":seq"
		w.r = rand.New(rand.NewPCG(uint64(i), 42))
		w.t0 = t0
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: addr, DB: w.db, PoolSize: 1})
			defer c.Close()
			for n := 0; !stop.Load(); n++ {
				op := w.next(n, w.name == "swapper")
				w.ops = append(w.ops, op)
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Do(ctx, op.cmd...)
					p.Set(ctx, w.seq, n+1, 0)
					return nil
				})
				if err != nil && err != redis.Nil && !strings.Contains(err.Error(), "no such key") {
					errs <- fmt.Errorf("%s op %d %v: %v", w.name, n, op.cmd, err)
					return
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	fill.ConfigSet(ctx, "rdb-key-save-delay", "40")
	if err := fill.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitBgsave(t, fill)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	info := fill.Info(ctx, "persistence").Val()
	if !strings.Contains(info, "rdb_last_bgsave_status:ok") {
		t.Fatalf("BGSAVE failed:\n%s", info)
	}

	file, ctime := rdbKeys(t, "dump.rdb")
	// What the file should hold, from the sequence numbers it holds.
	want := map[int]ptDB{}
	captured := 0
	for _, w := range workers {
		n := 0
		for _, db := range []int{w.db, w.db + 1} {
			if it, ok := file[db][w.seq]; ok {
				v, _ := strconv.Atoi(it.str)
				n = max(n, v)
			}
		}
		if n == 0 || n >= len(w.ops) {
			t.Fatalf("%s: %d operations in the file of %d done: the save did not overlap the writes", w.name, n, len(w.ops))
		}
		captured += len(w.ops) - n
		nf := 0
		for _, op := range w.ops[n:] {
			if op.cmd[0] == "flushdb" {
				nf++
			}
		}
		t.Logf("%s: %d of %d ops in the file, %d flushes after", w.name, n, len(w.ops), nf)
		m := ptModel(w, n)
		if want[w.db] == nil {
			want[w.db] = ptDB{}
		}
		for k, it := range m[0] {
			want[w.db][k] = it
		}
		if w.name == "swapper" {
			want[w.db+1] = m[1]
			// The sequence key swapped away is an older one.
			for _, db := range []int{w.db, w.db + 1} {
				if it, ok := file[db][w.seq]; ok {
					want[db][w.seq] = it
				}
			}
		}
	}
	want[0] = mergeFiller(want[0])
	t.Logf("%d operations after the cut; file ctime %d", captured, ctime)
	// Keys expiring around the cut may or may not be in the file.
	cutMs := ctime * 1000
	uncertain := func(it ptItem) bool { return it.exp != 0 && it.exp < cutMs+5000 }
	comparePT(t, "file", file, want, uncertain)

	// redis-server and Sluice load the file and hold the same (minus keys
	// expired since).
	if out, err := exec.Command("redis-check-rdb", "dump.rdb").CombinedOutput(); err != nil {
		if _, lerr := exec.LookPath("redis-check-rdb"); lerr == nil {
			t.Fatalf("redis-check-rdb: %v\n%s", err, out)
		}
	}
	loadDir := t.TempDir()
	b, _ := os.ReadFile("dump.rdb")
	os.WriteFile(filepath.Join(loadDir, "dump.rdb"), b, 0o644)
	dbs := []int{0, 1, 2, 3, 4}
	now := time.Now().UnixMilli()
	soon := func(it ptItem) bool { return it.exp != 0 && it.exp < now+5000 }
	if _, err := exec.LookPath("redis-server"); err == nil {
		raddr := redistest.StartRedis(t, "--dir", loadDir, "--dbfilename", "dump.rdb")
		comparePT(t, "redis-server", serverKeys(t, raddr, dbs), want, soon)
	}
	_, saddr, err := startLoaded(t, "dir", loadDir)
	if err != nil {
		t.Fatal(err)
	}
	comparePT(t, "sluice", serverKeys(t, saddr, dbs), want, soon)
}

func mergeFiller(m ptDB) ptDB {
	for j := range 20000 {
		m[fmt.Sprint("filler:", j)] = ptItem{kind: 's', str: strconv.Itoa(j)}
	}
	return m
}

func comparePT(t *testing.T, what string, got, want map[int]ptDB, uncertain func(ptItem) bool) {
	t.Helper()
	bad := 0
	report := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf(what+": "+format, args...)
		}
	}
	for db, wm := range want {
		for k, w := range wm {
			g, ok := got[db][k]
			switch {
			case !ok && uncertain(w):
			case !ok:
				report("db %d %s missing, want %v", db, k, w)
			case g.String() != w.String():
				report("db %d %s = %v, want %v", db, k, g, w)
			}
		}
	}
	for db, gm := range got {
		for k, g := range gm {
			if _, ok := want[db][k]; !ok {
				report("db %d %s = %v, not in the dataset at the cut", db, k, g)
			}
		}
	}
	if bad > 10 {
		t.Errorf("%s: %d differences", what, bad)
	}
}

// A replica's full sync streams a point-in-time image while the master
// keeps taking writes, and waits for a running BGSAVE to end first: the
// replicas (redis-server and Sluice, both taking the payload streamed)
// end up with the master's dataset.
func TestReplicationFullSyncDuringWrites(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, maddr := redistest.StartSluice(t)
	ctx := context.Background()
	m := redis.NewClient(&redis.Options{Addr: maddr, PoolSize: 8})
	defer m.Close()
	for i := 0; i < 20000; i += 1000 {
		args := make([]any, 0, 2000)
		for j := i; j < i+1000; j++ {
			args = append(args, fmt.Sprint("k", j), j)
		}
		m.MSet(ctx, args...)
	}
	for i := range 200 {
		m.RPush(ctx, fmt.Sprint("list", i), 1, 2, 3)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 5))
			for n := 0; !stop.Load(); n++ {
				switch r.IntN(4) {
				case 0:
					m.Set(ctx, fmt.Sprint("k", r.IntN(40000)), n, 0)
				case 1:
					m.Del(ctx, fmt.Sprint("k", r.IntN(40000)))
				case 2:
					m.RPush(ctx, fmt.Sprint("list", r.IntN(200)), n)
				default:
					m.LPop(ctx, fmt.Sprint("list", r.IntN(200)))
				}
			}
		}()
	}
	// A BGSAVE that takes a while: the first replica waits for it.
	m.ConfigSet(ctx, "rdb-key-save-delay", "50")
	if err := m.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	h, p := hostPort(maddr)
	var replicas []string
	if _, err := exec.LookPath("redis-server"); err == nil {
		replicas = append(replicas, redistest.StartRedis(t, "--replicaof", h, p, "--dir", t.TempDir()))
	}
	_, saddr := redistest.StartSluice(t, "replicaof", h+" "+p)
	replicas = append(replicas, saddr)
	for _, r := range replicas {
		// A BGSAVE, then a full sync, both slowed down by
		// rdb-key-save-delay: a loaded machine may take a while.
		waitInfoWithin(t, r, `master_link_status:up`, 60*time.Second)
	}
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	for _, r := range replicas {
		// Under a loaded machine a replica may take a while to apply
		// the stream buffered during its sync.
		deadline := time.Now().Add(60 * time.Second)
		for replDump(t, maddr) != replDump(t, r) && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
		}
		waitSame(t, maddr, r)
	}
	if !strings.Contains(m.Info(ctx, "persistence").Val(), "rdb_last_bgsave_status:ok") {
		t.Error("the BGSAVE failed")
	}
}

// A replica that does not announce "capa eof" (an old one, or a tool that
// sends a bare SYNC) gets the payload with its length first.
func TestSyncWithoutEOFCapa(t *testing.T) {
	t.Chdir(t.TempDir()) // its payload is a BGSAVE's dump.rdb, as Redis sends it
	_, addr := redistest.StartSluice(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for i := range 1000 {
		c.Set(ctx, fmt.Sprint("k", i), i, 0)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	conn.Write([]byte("SYNC\r\n"))
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	for err == nil && line == "\n" {
		line, err = br.ReadString('\n')
	}
	if err != nil || !strings.HasPrefix(line, "$") || strings.HasPrefix(line, "$EOF:") {
		t.Fatalf("payload header %q %v", line, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	payload := make([]byte, n)
	if _, err := io.ReadFull(br, payload); err != nil {
		t.Fatal(err)
	}
	keys := 0
	if err := rdb.ReadFile(payload, true, &rdb.Handler{Key: func(*rdb.Record) error { keys++; return nil }}); err != nil {
		t.Fatal(err)
	}
	if keys != 1000 {
		t.Errorf("%d keys in the payload", keys)
	}
}

// INFO persistence reports the running snapshot's extra memory (the values
// clients captured before changing keys the walk had not reached) under
// Redis's names, and the last one's peak after it.
func TestSnapshotINFO(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, addr := redistest.StartSluice(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	val := strings.Repeat("x", 1000)
	for i := 0; i < 2000; i += 100 {
		args := make([]any, 0, 200)
		for j := i; j < i+100; j++ {
			args = append(args, fmt.Sprint("k", j), val)
		}
		c.MSet(ctx, args...)
	}
	info := func() map[string]int64 {
		out := map[string]int64{}
		for _, line := range strings.Split(c.Info(ctx, "persistence", "stats").Val(), "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					out[k] = n
				}
			}
		}
		return out
	}
	if i := info(); i["current_cow_size"] != 0 || i["rdb_last_cow_size"] != 0 {
		t.Fatalf("COW figures before any snapshot: %v", i)
	}
	c.ConfigSet(ctx, "rdb-key-save-delay", "2000") // 2000 keys × 2 ms: 4 s
	if err := c.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Change every key: those the walk has not reached are captured.
	for i := range 2000 {
		c.SetRange(ctx, fmt.Sprint("k", i), 0, "y")
	}
	during := info()
	if during["rdb_bgsave_in_progress"] != 1 {
		t.Skip("the save ended before the keys were changed (a very slow machine)")
	}
	if during["current_cow_size"] < 100_000 || during["current_cow_peak"] < during["current_cow_size"] {
		t.Errorf("COW during the save after changing most keys: %v", during)
	}
	if during["current_save_keys_total"] != 2000 || during["total_forks"] != 1 {
		t.Errorf("INFO during the save: %v", during)
	}
	waitBgsave(t, c)
	after := info()
	if after["current_cow_size"] != 0 || after["current_cow_peak"] != 0 || after["rdb_last_cow_size"] < during["current_cow_peak"] {
		t.Errorf("COW after the save: %v (peak seen during it %d)", after, during["current_cow_peak"])
	}
	// The file holds the values of the cut, not the changed ones.
	n := 0
	readRDB(t, "dump.rdb", func(r *rdb.Record) {
		n++
		if string(r.Value.Str) != val {
			t.Fatalf("%s changed in the file", r.Key)
		}
	})
	if n != 2000 {
		t.Errorf("%d keys in the file", n)
	}
}

// A replica that asks for a full sync while a BGSAVE runs waits for it
// (INFO: state=wait_bgsave) and gets its own image when it ends, streamed
// with an EOF mark; the stream since its cut follows its first REPLCONF
// ACK.
func TestSyncWaitsForBGSAVE(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, addr := redistest.StartSluice(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for i := range 100 {
		c.Set(ctx, fmt.Sprint("k", i), i, 0)
	}
	c.ConfigSet(ctx, "rdb-key-save-delay", "1000000") // a second per key: it never ends by itself
	if err := c.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	send := func(args ...string) {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		conn.Write([]byte(b.String()))
	}
	readLine := func() string {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if l != "\n" {
				return strings.TrimRight(l, "\r\n")
			}
		}
	}
	send("REPLCONF", "capa", "eof", "capa", "psync2")
	if l := readLine(); l != "+OK" {
		t.Fatalf("REPLCONF: %q", l)
	}
	send("PSYNC", "?", "-1")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.Info(ctx, "replication").Val(), "state=wait_bgsave") {
		if time.Now().After(deadline) {
			t.Fatalf("no waiting replica in INFO:\n%s", c.Info(ctx, "replication").Val())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Set(ctx, "during-wait", "1", 0) // before the replica's cut: in its image
	// FLUSHALL aborts the BGSAVE (and empties the dataset): the replica's
	// own image is cut then.
	c.ConfigSet(ctx, "rdb-key-save-delay", "0")
	c.FlushAll(ctx)
	if l := readLine(); !strings.HasPrefix(l, "+FULLRESYNC ") {
		t.Fatalf("PSYNC reply %q", l)
	}
	c.Set(ctx, "after", "1", 0) // after the cut: in the stream
	l := readLine()
	mark, ok := strings.CutPrefix(l, "$EOF:")
	if !ok || len(mark) != 40 {
		t.Fatalf("payload header %q", l)
	}
	var payload []byte
	buf := make([]byte, 4096)
	for !bytes.HasSuffix(payload, []byte(mark)) {
		n, err := br.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		payload = append(payload, buf[:n]...)
	}
	keys := map[string]bool{}
	if err := rdb.ReadFile(payload[:len(payload)-40], true, &rdb.Handler{Key: func(r *rdb.Record) error { keys[string(r.Key)] = true; return nil }}); err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		t.Errorf("keys in the image: %v (the flushed dataset was taken)", keys)
	}
	// Nothing follows the mark until the replica acknowledges the load.
	conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _ := br.Read(buf); n > 0 {
		t.Fatalf("stream sent before the replica's ACK: %q", buf[:n])
	}
	if strings.Contains(c.Info(ctx, "replication").Val(), "state=wait_bgsave") {
		t.Errorf("INFO once the payload was sent:\n%s", c.Info(ctx, "replication").Val())
	}
	send("REPLCONF", "ACK", "0")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var stream []byte
	for !bytes.Contains(stream, []byte("after")) {
		n, err := br.Read(buf)
		if err != nil {
			t.Fatalf("stream after the ACK: %v (got %q)", err, stream)
		}
		stream = append(stream, buf[:n]...)
	}
	if !strings.Contains(c.Info(ctx, "replication").Val(), "state=online") {
		t.Errorf("INFO after the ACK:\n%s", c.Info(ctx, "replication").Val())
	}
}
