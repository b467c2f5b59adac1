package server_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/server"
)

// The AOF at run time: what it records (the same commands redis-server
// records for the same writes), CONFIG SET appendonly, rewrites and their
// manifests, automatic rewrites, and which file wins at start-up.

// aofCommands reads the commands of an AOF file (annotations dropped).
func aofCommands(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var out [][]string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return out
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		cmd := make([]string, n)
		for i := range cmd {
			l, _ := br.ReadString('\n')
			size, _ := strconv.Atoi(strings.TrimSpace(l[1:]))
			b := make([]byte, size+2)
			if _, err := ioReadFull(br, b); err != nil {
				t.Fatal(err)
			}
			cmd[i] = string(b[:size])
		}
		out = append(out, cmd)
	}
}

func ioReadFull(br *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := br.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// lastIncr returns the path of the last incremental file dir's manifest
// lists.
func lastIncr(t *testing.T, dir string) string {
	t.Helper()
	m, _, err := persist.LoadManifest(filepath.Join(dir, "appendonlydir"), "appendonly.aof")
	if err != nil || len(m.Incr) == 0 {
		t.Fatalf("manifest: %v %+v", err, m)
	}
	return filepath.Join(dir, "appendonlydir", m.Incr[len(m.Incr)-1].Name)
}

var digits = regexp.MustCompile(`^1[0-9]{12}$`)

// normalize hides what differs between two runs: absolute times and SPOP's
// random member.
func normalize(cmds [][]string) []string {
	var out []string
	for _, c := range cmds {
		parts := make([]string, len(c))
		for i, a := range c {
			parts[i] = a
			if digits.MatchString(a) {
				parts[i] = "<ms>"
			}
		}
		if strings.EqualFold(c[0], "srem") {
			parts = parts[:2]
			parts = append(parts, "<member>")
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// The same writes leave the same commands in the AOF of redis-server and
// of Sluice: relative expiries as absolute ones, INCRBYFLOAT as SET,
// SPOP as SREM, scripts and transactions as MULTI/EXEC of their effects,
// blocking pops as plain ones, lazily expired keys as DEL, nothing for
// PUBLISH or writes that change nothing.
func TestAOFRecordsWhatRedisRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	rdir := t.TempDir()
	raddr := redistest.StartRedis(t, "--dir", rdir, "--appendonly", "yes", "--appendfsync", "always")
	waitLoaded(t, raddr)
	sdir := t.TempDir()
	srv := &aofServer{t: t, bin: buildServer(t), dir: sdir, args: []string{"--appendonly", "yes", "--appendfsync", "always"}}
	srv.start()
	defer srv.kill()
	ctx := context.Background()
	// A DUMP payload both servers restore (a string), from a third server.
	_, daddr := redistest.StartSluice(t)
	rc := redis.NewClient(&redis.Options{Addr: daddr})
	rc.Set(ctx, "tmp", "payload", 0)
	dumpPayload := rc.Dump(ctx, "tmp").Val()
	rc.Close()
	run := func(addr string) {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		for _, cmd := range [][]any{
			{"set", "k", "v", "ex", "100"},
			{"setex", "k2", "100", "v"},
			{"psetex", "k3", "100000", "v"},
			{"set", "k4", "v", "px", "100000", "get"},
			{"set", "k5", "v", "pxat", strconv.FormatInt(time.Now().UnixMilli()+100000, 10)},
			{"set", "k6", "v", "get"},
			{"set", "k7", "v", "nx", "ex", "100"},
			{"set", "k7", "v2", "xx", "keepttl"},
			{"expire", "k", "200"},
			{"pexpire", "k", "300000"},
			{"expireat", "k", "4000000000"},
			{"getex", "k4", "ex", "500"},
			{"getex", "k4"},
			{"getex", "k4", "persist"},
			{"incrbyfloat", "f", "1.5"},
			{"hincrbyfloat", "h", "x", "2.5"},
			{"sadd", "s", "a", "b", "c"},
			{"spop", "s"},
			{"del", "nosuchkey"},
			{"publish", "ch", "msg"},
			{"eval", "redis.call('incr', KEYS[1]); redis.call('rpush', KEYS[2], 'x'); return 1", "2", "n", "l"},
			{"eval", "return redis.call('get', KEYS[1])", "1", "n"},
			{"lpush", "bl", "a", "b"},
			{"blpop", "bl", "0"},
			{"brpoplpush", "bl", "bl2", "0"},
			{"zadd", "z", "1", "a", "2", "b"},
			{"restore", "rs", "100000", dumpPayload},
			{"restore", "rs2", "0", dumpPayload},
			{"bzpopmin", "z", "0"},
			{"select", "3"},
			{"set", "in3", "v"},
			{"select", "0"},
		} {
			if err := c.Do(ctx, cmd...).Err(); err != nil && err != redis.Nil {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
		pipe := c.TxPipeline()
		pipe.Incr(ctx, "n")
		pipe.Set(ctx, "t", "1", 0)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		// Last before its expiry, so that the DEL (by the expiry cycle or
		// on access) comes right after it in either server's file.
		c.Do(ctx, "set", "gone", "v", "px", "1")
		time.Sleep(20 * time.Millisecond)
		c.Get(ctx, "gone") // expired: deleted on access
		c.FlushDB(ctx)
	}
	run(raddr)
	run(srv.addr)
	want := normalize(aofCommands(t, lastIncr(t, rdir)))
	got := normalize(aofCommands(t, lastIncr(t, sdir)))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("AOF commands differ from redis-server's\nsluice:\n%s\nredis:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// CONFIG SET appendonly yes writes a first base, then records; BGREWRITEAOF
// moves to a new base and incremental file and deletes the old ones; the
// base is in RDB or command form as aof-use-rdb-preamble says; DEBUG
// LOADAOF reloads the same dataset; appendonly no stops recording.
func TestAOFRewriteAtRunTime(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, addr := redistest.StartSluice(t, "enable-debug-command", "yes")
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	c.Set(ctx, "before", "1", 0)
	if err := c.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	waitRewrite(t, c)
	manifest := func() string {
		b, _ := os.ReadFile(filepath.Join("appendonlydir", "appendonly.aof.manifest"))
		return string(b)
	}
	if m := manifest(); m != "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n" {
		t.Fatalf("manifest after appendonly yes:\n%s", m)
	}
	c.Set(ctx, "after", "2", 0)
	c.RPush(ctx, "list", "a", "b")
	digest := c.Do(ctx, "debug", "digest").Val()
	c.ConfigSet(ctx, "aof-use-rdb-preamble", "no")
	c.BgRewriteAOF(ctx)
	waitRewrite(t, c)
	if m := manifest(); m != "file appendonly.aof.2.base.aof seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n" {
		t.Fatalf("manifest after BGREWRITEAOF:\n%s", m)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, e1 := os.Stat(filepath.Join("appendonlydir", "appendonly.aof.1.base.rdb"))
		_, e2 := os.Stat(filepath.Join("appendonlydir", "appendonly.aof.1.incr.aof"))
		if os.IsNotExist(e1) && os.IsNotExist(e2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("history files were not deleted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	base := aofCommands(t, filepath.Join("appendonlydir", "appendonly.aof.2.base.aof"))
	if len(base) < 4 || !strings.EqualFold(base[0][0], "select") {
		t.Errorf("base in command form: %q", base)
	}
	if err := c.Do(ctx, "debug", "loadaof").Err(); err != nil {
		t.Fatal(err)
	}
	if d := c.Do(ctx, "debug", "digest").Val(); d != digest {
		t.Errorf("digest after DEBUG LOADAOF %s, before %s", d, digest)
	}
	info := c.Info(ctx, "persistence").Val()
	for _, f := range []string{"aof_enabled:1", "aof_rewrites:2", "aof_last_bgrewrite_status:ok", "aof_last_write_status:ok", "aof_base_size:"} {
		if !strings.Contains(info, f) {
			t.Errorf("INFO lacks %q:\n%s", f, info)
		}
	}
	c.ConfigSet(ctx, "appendonly", "no")
	incr := filepath.Join("appendonlydir", "appendonly.aof.2.incr.aof")
	st, _ := os.Stat(incr)
	c.Set(ctx, "off", "1", 0)
	if st2, _ := os.Stat(incr); st2.Size() != st.Size() {
		t.Error("a write was recorded with appendonly no")
	}
	if info := c.Info(ctx, "persistence").Val(); !strings.Contains(info, "aof_enabled:0") {
		t.Errorf("INFO after appendonly no:\n%s", info)
	}
}

// auto-aof-rewrite-percentage and -min-size start a rewrite once the AOF
// grew enough.
func TestAOFAutoRewrite(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, addr := redistest.StartSluice(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	c.ConfigSet(ctx, "appendonly", "yes")
	waitRewrite(t, c)
	c.ConfigSet(ctx, "auto-aof-rewrite-min-size", "10kb")
	c.ConfigSet(ctx, "auto-aof-rewrite-percentage", "100")
	val := strings.Repeat("x", 1000)
	for i := range 30 {
		c.Set(ctx, "k"+strconv.Itoa(i), val, 0)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.Info(ctx, "persistence").Val(), "aof_rewrites:2") {
		if time.Now().After(deadline) {
			t.Fatalf("no automatic rewrite:\n%s", c.Info(ctx, "persistence").Val())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With appendonly yes the AOF is loaded even when a dump.rdb is there too;
// with appendonly no the RDB file is.
func TestAOFWinsOverRDB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildServer(t)
	ctx := context.Background()
	srv := &aofServer{t: t, bin: bin, dir: dir}
	srv.start()
	c := redis.NewClient(&redis.Options{Addr: srv.addr})
	c.Set(ctx, "from", "rdb", 0)
	c.Save(ctx)
	c.ConfigSet(ctx, "appendonly", "yes")
	waitRewrite(t, c)
	c.Set(ctx, "from", "aof", 0)
	c.Close()
	srv.kill()
	for _, tc := range []struct{ appendonly, want string }{{"yes", "aof"}, {"no", "rdb"}} {
		srv.args = []string{"--appendonly", tc.appendonly}
		srv.start()
		c := redis.NewClient(&redis.Options{Addr: srv.addr})
		if v := c.Get(ctx, "from").Val(); v != tc.want {
			t.Errorf("appendonly %s: loaded from %q", tc.appendonly, v)
		}
		c.Close()
		srv.kill()
	}
}

// While the AOF loads, commands get -LOADING and INFO says so.
func TestAOFLoadingReply(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "appendonlydir"), 0o755)
	var b strings.Builder
	for i := range 3000 {
		b.Write(redistest.Encode("SET", "k"+strconv.Itoa(i), "v"))
	}
	os.WriteFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof"), []byte(b.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest"), []byte("file appendonly.aof.1.incr.aof seq 1 type i\n"), 0o644)
	// 3000 commands × 1 ms: three seconds of loading.
	srv := &aofServer{t: t, bin: buildServer(t), dir: dir, args: []string{"--appendonly", "yes", "--key-load-delay", "1000"}}
	port := redistest.FreePort(t)
	srv.cmd = exec.Command(srv.bin, "--port", strconv.Itoa(port), "--dir", dir, "--appendonly", "yes", "--key-load-delay", "1000")
	srv.logs = &syncBuffer{}
	srv.cmd.Stdout, srv.cmd.Stderr = srv.logs, srv.logs
	if err := srv.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.kill()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		err = c.Get(ctx, "k1").Err()
		if err != nil && strings.HasPrefix(err.Error(), "LOADING") || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err == nil || err.Error() != "LOADING Redis is loading the dataset in memory" {
		t.Fatalf("GET while loading: %v", err)
	}
	if info := c.Info(ctx, "persistence").Val(); !strings.Contains(info, "loading:1") || !strings.Contains(info, "loading_total_bytes:") {
		t.Errorf("INFO while loading:\n%s", info)
	}
	waitLoaded(t, addr)
	if n := c.DBSize(ctx).Val(); n != 3000 {
		t.Errorf("%d keys after loading", n)
	}
}

// An embedded server that serves its sockets on goroutines keeps
// appendfsync always's promise too: a write's reply goes out only once the
// write is in the AOF, whichever goroutine wrote it, and a new server
// started from the directory has every acknowledged write.
func TestAOFAlwaysOnGoroutines(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	start := func() *server.Server {
		cfg := server.NewConfig()
		cfg.ServeOnGoroutines()
		for _, kv := range [][2]string{{"port", "0"}, {"bind", "127.0.0.1"}, {"dir", dir}, {"appendonly", "yes"}, {"appendfsync", "always"}} {
			if err := cfg.Set(kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		srv := server.New(cfg)
		srv.SetLogger(nil)
		if err := srv.LoadDataFile(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start()
	addr := srv.Addrs()[0].String()
	const clients, writes = 4, 100
	errs := make(chan error, clients)
	for g := range clients {
		go func() {
			c := redistest.Dial(t, addr)
			for i := range writes {
				key := "g" + strconv.Itoa(g) + ":" + strconv.Itoa(i) + "."
				if r, err := c.Do("SET", key, "v"); err != nil || r != "+OK\r\n" {
					errs <- fmt.Errorf("SET %s: %q %v", key, r, err)
					return
				}
				b, err := os.ReadFile(lastIncr(t, dir))
				if err != nil || !strings.Contains(string(b), key) {
					errs <- fmt.Errorf("SET %s acknowledged before it was in the AOF (%v)", key, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	srv.Stop()
	srv = start()
	defer srv.Stop()
	c := redistest.Dial(t, srv.Addrs()[0].String())
	if r, _ := c.Do("DBSIZE"); r != ":"+strconv.Itoa(clients*writes)+"\r\n" {
		t.Fatalf("DBSIZE after restart = %q", r)
	}
}
