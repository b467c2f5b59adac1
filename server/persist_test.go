package server_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
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
	"github.com/sluicedb/sluice/server"
)

// RDB files move both ways between Sluice and redis-server 7.0: a file
// Sluice saves is loaded by redis-server, and one redis-server saves is
// loaded by Sluice, with the same keys, values, encodings and TTLs.

const persistDBs = 4 // databases the tests populate (0..3)

// populate fills a server with every type and encoding, in several
// databases, with TTLs.
func populate(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	for db := 0; db < persistDBs; db += 2 { // databases 0 and 2; 1 and 3 stay empty
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db})
		must := func(cmd redis.Cmder) {
			t.Helper()
			if err := cmd.Err(); err != nil {
				t.Fatalf("%v: %v", cmd.Args(), err)
			}
		}
		p := fmt.Sprintf("d%d:", db)
		must(c.Set(ctx, p+"int", "12345", 0))
		must(c.Set(ctx, p+"negint", "-9223372036854775808", 0))
		must(c.Set(ctx, p+"embstr", "hello world", 0))
		must(c.Set(ctx, p+"empty", "", 0))
		must(c.Set(ctx, p+"raw", strings.Repeat("raw-", 40), 0))
		must(c.Set(ctx, p+"binary", "\x00\x01\xff\r\n", 0))
		must(c.Set(ctx, p+"ttl", "v", time.Hour))
		must(c.SetArgs(ctx, p+"ttlms", "v", redis.SetArgs{ExpireAt: time.Now().Add(90 * time.Minute)}))
		must(c.Append(ctx, p+"appended", "12"))
		must(c.Append(ctx, p+"appended", "34"))
		must(c.RPush(ctx, p+"list", "a", "1", "b", "-5", strings.Repeat("x", 100)))
		big := make([]any, 0, 2000)
		for i := range 2000 {
			big = append(big, fmt.Sprintf("element-%d", i))
		}
		must(c.RPush(ctx, p+"biglist", big...))
		must(c.RPush(ctx, p+"hugeelem", strings.Repeat("h", 10000), "tail"))
		must(c.SAdd(ctx, p+"intset", 1, 2, 3, -70000, 1<<40))
		must(c.SAdd(ctx, p+"set", "a", "b", "c"))
		must(c.SAdd(ctx, p+"bigintset", big[:600]...)) // > 512: hashtable
		must(c.HSet(ctx, p+"hash", "f1", "v1", "f2", "2"))
		must(c.HSet(ctx, p+"bighash", big[:300]...)) // > 128 fields: hashtable
		must(c.HSet(ctx, p+"longhash", "f", strings.Repeat("v", 100)))
		must(c.ZAdd(ctx, p+"zset", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2.5, Member: "b"}, redis.Z{Score: -3, Member: "c"}))
		zs := make([]redis.Z, 200)
		for i := range zs {
			zs[i] = redis.Z{Score: float64(i) / 3, Member: fmt.Sprintf("m%d", i)}
		}
		must(c.ZAdd(ctx, p+"bigzset", zs...))
		must(c.ZAdd(ctx, p+"infzset", redis.Z{Score: math.Inf(1), Member: "inf"}, redis.Z{Score: math.Inf(-1), Member: "-inf"}))
		must(c.Expire(ctx, p+"hash", 2*time.Hour))
		must(c.Expire(ctx, p+"biglist", 3*time.Hour))
		c.Close()
	}
}

// dataset reads every key of every database: type, encoding, value and
// TTL (in minutes, so the two reads need not be at the same instant).
func dataset(t *testing.T, addr string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for db := 0; db < persistDBs; db++ {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db})
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			typ := c.Type(ctx, k).Val()
			enc := c.ObjectEncoding(ctx, k).Val()
			var val any
			switch typ {
			case "string":
				val = c.Get(ctx, k).Val()
			case "list":
				val = c.LRange(ctx, k, 0, -1).Val()
			case "set":
				m := c.SMembers(ctx, k).Val()
				slices.Sort(m)
				val = m
			case "hash":
				val = c.HGetAll(ctx, k).Val()
			case "zset":
				val = c.ZRangeWithScores(ctx, k, 0, -1).Val()
			}
			if typ == "string" && enc == "raw" {
				if n, err := strconv.ParseInt(val.(string), 10, 64); err == nil && strconv.FormatInt(n, 10) == val {
					// An integer made by APPEND or SETRANGE is raw, but
					// RDB files hold it as an integer, and redis-server
					// loads it as one too.
					enc = "int"
				}
			}
			ttl := c.PTTL(ctx, k).Val()
			if ttl > 0 {
				ttl = (ttl + 30*time.Second).Truncate(time.Minute)
			}
			out[fmt.Sprintf("%d:%s", db, k)] = fmt.Sprintf("%s/%s ttl=%v %q", typ, enc, ttl, fmt.Sprint(val))
		}
		c.Close()
	}
	return out
}

func compareDatasets(t *testing.T, want, got map[string]string) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%d keys, want %d", len(got), len(want))
	}
	for k, w := range want {
		if g := got[k]; g != w {
			t.Errorf("%s:\n got %.300s\nwant %.300s", k, g, w)
		}
	}
}

// startLoaded starts a Sluice server that loads dir/dump.rdb, as
// sluice-server does at start-up.
func startLoaded(t *testing.T, directives ...string) (*server.Server, string, error) {
	t.Helper()
	cfg := server.NewConfig()
	cfg.Set("port", "0")
	for i := 0; i+1 < len(directives); i += 2 {
		if err := cfg.Set(directives[i], directives[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	srv := server.New(cfg)
	srv.SetLogger(nil)
	if err := srv.LoadDataFile(); err != nil {
		return nil, "", err
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv, srv.Addrs()[0].String(), nil
}

func TestRDBSluiceToRedis(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, addr := redistest.StartSluice(t)
	populate(t, addr)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	lib := "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return args[1] end)"
	if err := c.FunctionLoad(ctx, lib).Err(); err != nil {
		t.Fatal(err)
	}
	before := c.LastSave(ctx).Val()
	if r, err := c.Save(ctx).Result(); r != "OK" {
		t.Fatalf("SAVE: %q %v", r, err)
	}
	if c.LastSave(ctx).Val() < before {
		t.Error("LASTSAVE went back")
	}
	info := c.Info(ctx, "persistence").Val()
	for _, f := range []string{"rdb_changes_since_last_save:0\r\n", "rdb_saves:1\r\n", "rdb_last_bgsave_status:ok\r\n"} {
		if !strings.Contains(info, f) {
			t.Errorf("INFO persistence lacks %q:\n%s", f, info)
		}
	}
	want := dataset(t, addr)
	if len(want) < 40 {
		t.Fatalf("only %d keys populated", len(want))
	}
	b, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("REDIS0010\xfa\x09redis-ver\x067.0.15")) {
		t.Errorf("header %q", b[:min(len(b), 40)])
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "temp-*.rdb")); len(ents) != 0 {
		t.Errorf("temporary files left: %v", ents)
	}

	raddr := redistest.StartRedis(t, "--dir", dir, "--dbfilename", "dump.rdb")
	compareDatasets(t, want, dataset(t, raddr))
	rc := redis.NewClient(&redis.Options{Addr: raddr})
	defer rc.Close()
	if r, err := rc.FCall(ctx, "myfunc", nil, "hi").Result(); r != "hi" {
		t.Errorf("function after load in redis-server: %v %v", r, err)
	}

	// And back: Sluice loads its own file.
	_, saddr, err := startLoaded(t)
	if err != nil {
		t.Fatal(err)
	}
	compareDatasets(t, want, dataset(t, saddr))
}

func TestRDBRedisToSluice(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	raddr := redistest.StartRedis(t, "--dir", dir, "--dbfilename", "dump.rdb")
	populate(t, raddr)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: raddr})
	defer rc.Close()
	lib := "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return args[1] end)"
	if err := rc.FunctionLoad(ctx, lib).Err(); err != nil {
		t.Fatal(err)
	}
	// A key that expires between SAVE and the load: skipped.
	rc.Set(ctx, "shortlived", "x", 300*time.Millisecond)
	if err := rc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	want := dataset(t, raddr)
	delete(want, "0:shortlived")
	time.Sleep(400 * time.Millisecond)

	srv, addr, err := startLoaded(t)
	if err != nil {
		t.Fatal(err)
	}
	compareDatasets(t, want, dataset(t, addr))
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if r, err := c.FCall(ctx, "myfunc", nil, "hi").Result(); r != "hi" {
		t.Errorf("function after load: %v %v", r, err)
	}
	info := srv.Info("persistence")
	n := len(want)
	for _, f := range []string{fmt.Sprintf("rdb_last_load_keys_loaded:%d\r\n", n), "rdb_last_load_keys_expired:1\r\n", "rdb_changes_since_last_save:0\r\n"} {
		if !strings.Contains(info, f) {
			t.Errorf("INFO persistence lacks %q:\n%s", f, info)
		}
	}
}

func TestRDBLoadErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	raddr := redistest.StartRedis(t, "--dir", dir, "--dbfilename", "dump.rdb")
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: raddr})
	defer rc.Close()
	for i := range 100 {
		rc.Set(ctx, fmt.Sprint("k", i), strings.Repeat("v", i), 0)
	}
	rc.Save(ctx)
	good, err := os.ReadFile("dump.rdb")
	if err != nil {
		t.Fatal(err)
	}
	load := func(b []byte, directives ...string) error {
		t.Helper()
		os.WriteFile("dump.rdb", b, 0o644)
		_, _, err := startLoaded(t, directives...)
		return err
	}
	if err := load(good); err != nil {
		t.Fatalf("good file: %v", err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x01
	// Where the flipped bit lands depends on Redis's key order: a value or
	// length (bad data, EOF), a key name turned into another's (duplicated
	// key: Redis checks the checksum only at the end), or plain bytes.
	if err := load(flipped); err == nil || !strings.Contains(err.Error(), "checksum") && !strings.Contains(err.Error(), "Bad data") && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "duplicated key") {
		t.Errorf("corrupt file: %v", err)
	}
	if err := load(good[:len(good)-20]); err == nil || !strings.Contains(err.Error(), "Unexpected EOF") {
		t.Errorf("truncated file: %v", err)
	}
	if err := load([]byte("NOTREDIS0010")); err == nil || !strings.Contains(err.Error(), "Wrong signature") {
		t.Errorf("not an RDB file: %v", err)
	}
	if err := load(good, "databases", "1"); err != nil {
		t.Errorf("db 0 only into 1 database: %v", err)
	}

	rc.FlushAll(ctx)
	rc.XAdd(ctx, &redis.XAddArgs{Stream: "mystream", Values: []string{"a", "1"}})
	rc.Save(ctx)
	stream, _ := os.ReadFile("dump.rdb")
	if err := load(stream); err != nil { // streams load (RDB_TYPE_STREAM_LISTPACKS_2)
		t.Errorf("stream: %v", err)
	}

	rc.FlushAll(ctx)
	rc.Do(ctx, "select", 5)
	rc.Set(ctx, "k", "v", 0)
	rc.Save(ctx)
	db5, _ := os.ReadFile("dump.rdb")
	if err := load(db5, "databases", "4"); err == nil || !strings.Contains(err.Error(), "more than 4 databases") {
		t.Errorf("database out of range: %v", err)
	}
}

// TestRDBStartupBinary: sluice-server loads dump.rdb at start-up, saves it
// on SIGTERM with the default save points, and refuses to start on a
// corrupt file (exit status 1, "Terminating server after rdb file
// reading failure").
func TestRDBStartupBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	dir := t.TempDir()
	start := func(extra ...string) (*exec.Cmd, string, *syncBuffer) {
		port := redistest.FreePort(t)
		cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--dir", dir}, extra...)...)
		logs := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = logs, logs // the log goes to stdout, as redis-server's does
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if c, err := redis.NewClient(&redis.Options{Addr: addr}).Ping(context.Background()).Result(); err == nil && c == "PONG" {
				return cmd, addr, logs
			}
		}
		cmd.Process.Kill()
		t.Fatalf("server did not start: %s", logs.String())
		return nil, "", nil
	}
	ctx := context.Background()
	// By default sluice-server keeps its data in memory only: no save
	// points, so SIGINT writes nothing.
	cmd, addr, logs := start()
	c := redis.NewClient(&redis.Options{Addr: addr})
	c.Set(ctx, "k", "old", 0)
	c.Close()
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err == nil || strings.Contains(logs.String(), "DB saved on disk") {
		t.Fatalf("a file was saved without save points: %s", logs)
	}
	// With save points, SIGINT saves, as redis-server does.
	cmd, addr, logs = start("--save", "3600 1")
	c = redis.NewClient(&redis.Options{Addr: addr})
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("%d keys at start with no file", n)
	}
	c.Set(ctx, "k", "v", 0)
	c.Close()
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if !strings.Contains(logs.String(), "DB saved on disk") {
		t.Fatalf("no save on SIGINT with save points: %s", logs)
	}
	cmd, addr, logs = start()
	c = redis.NewClient(&redis.Options{Addr: addr})
	if v := c.Get(ctx, "k").Val(); v != "v" {
		t.Errorf("after restart: %q", v)
	}
	c.Close()
	if !strings.Contains(logs.String(), "DB loaded from disk") {
		t.Errorf("log: %s", logs)
	}
	cmd.Process.Kill()
	cmd.Wait()

	// A plain sluice-server (no save points, no dir or dbfilename given)
	// keeps to memory: the dump.rdb in its working directory is not read.
	port := redistest.FreePort(t)
	plain := exec.Command(bin, "--port", strconv.Itoa(port))
	plain.Dir = dir
	plainLogs := &syncBuffer{}
	plain.Stdout, plain.Stderr = plainLogs, plainLogs
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	pc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
	for deadline := time.Now().Add(10 * time.Second); pc.Ping(ctx).Err() != nil && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if n, err := pc.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("plain start beside a dump.rdb: dbsize %d, %v (want an empty server)", n, err)
	}
	pc.Close()
	plain.Process.Kill()
	plain.Wait()

	b, _ := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	b[len(b)-1] ^= 0xff // the checksum
	os.WriteFile(filepath.Join(dir, "dump.rdb"), b, 0o644)
	out, err := exec.Command(bin, "--port", strconv.Itoa(redistest.FreePort(t)), "--dir", dir).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("corrupt file: exit %v, output %s", err, out)
	}
	if !strings.Contains(string(out), "Wrong RDB checksum") || !strings.Contains(string(out), "Terminating server after rdb file reading failure") {
		t.Errorf("corrupt file output: %s", out)
	}
}

func TestBGSAVE(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, addr := redistest.StartSluice(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for i := range 100 {
		c.Set(ctx, fmt.Sprint("k", i), i, 0)
	}
	// 100 keys × 20 ms: the save takes about 2 s.
	c.ConfigSet(ctx, "rdb-key-save-delay", "20000")
	if r, err := c.BgSave(ctx).Result(); r != "Background saving started" {
		t.Fatalf("BGSAVE: %q %v", r, err)
	}
	if err := c.BgSave(ctx).Err(); err == nil || err.Error() != "ERR Background save already in progress" {
		t.Errorf("second BGSAVE: %v", err)
	}
	if err := c.Save(ctx).Err(); err == nil || err.Error() != "ERR Background save already in progress" {
		t.Errorf("SAVE during BGSAVE: %v", err)
	}
	// The server keeps serving, and writes after the snapshot stay dirty.
	c.Set(ctx, "after", "1", 0)
	info := c.Info(ctx, "persistence").Val()
	if !strings.Contains(info, "rdb_bgsave_in_progress:1\r\n") || !strings.Contains(info, "current_save_keys_total:100\r\n") {
		t.Errorf("INFO during BGSAVE:\n%s", info)
	}
	waitBgsave(t, c)
	info = c.Info(ctx, "persistence").Val()
	for _, f := range []string{"rdb_bgsave_in_progress:0\r\n", "rdb_last_bgsave_status:ok\r\n", "rdb_changes_since_last_save:1\r\n", "rdb_last_bgsave_time_sec:"} {
		if !strings.Contains(info, f) {
			t.Errorf("INFO after BGSAVE lacks %q:\n%s", f, info)
		}
	}
	if strings.Contains(info, "rdb_last_bgsave_time_sec:-1") {
		t.Error("rdb_last_bgsave_time_sec not set")
	}
	n := 0
	readRDB(t, "dump.rdb", func(r *rdb.Record) { n++ })
	if n != 100 {
		t.Errorf("%d keys in the file, want 100 (the key set after the snapshot must not be there)", n)
	}

	// FLUSHALL aborts a running BGSAVE (and with no save points does not
	// save), leaving the previous file.
	c.ConfigSet(ctx, "rdb-key-save-delay", "1000000")
	c.BgSave(ctx)
	c.FlushAll(ctx)
	waitBgsave(t, c)
	n = 0
	readRDB(t, "dump.rdb", func(r *rdb.Record) { n++ })
	if n != 100 {
		t.Errorf("after an aborted BGSAVE: %d keys in the file", n)
	}
	if ents, _ := filepath.Glob("temp-*.rdb"); len(ents) != 0 {
		t.Errorf("temporary files left: %v", ents)
	}
	// With save points, FLUSHALL saves the empty dataset.
	c.ConfigSet(ctx, "rdb-key-save-delay", "0")
	c.ConfigSet(ctx, "save", "3600 1")
	c.Set(ctx, "x", "1", 0)
	c.FlushAll(ctx)
	if v := c.Info(ctx, "persistence").Val(); !strings.Contains(v, "rdb_changes_since_last_save:0\r\n") {
		t.Errorf("FLUSHALL with save points: %s", v)
	}
	n = 0
	readRDB(t, "dump.rdb", func(r *rdb.Record) { n++ })
	if n != 0 {
		t.Errorf("after FLUSHALL with save points: %d keys in the file", n)
	}
	c.ConfigSet(ctx, "save", "")

	// Inside MULTI: SAVE is refused, BGSAVE is scheduled.
	pipe := c.TxPipeline()
	pipe.Save(ctx)
	if _, err := pipe.Exec(ctx); err == nil || !strings.Contains(err.Error(), "EXECABORT") {
		t.Errorf("SAVE in MULTI: %v", err)
	}
	pipe = c.TxPipeline()
	bg := pipe.BgSave(ctx)
	pipe.Exec(ctx)
	if bg.Val() != "Background saving scheduled" {
		t.Errorf("BGSAVE in MULTI: %q %v", bg.Val(), bg.Err())
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(c.Info(ctx, "persistence").Val(), "rdb_saves:3\r\n") { // FLUSHALL's save is not counted, as in Redis
		if time.Now().After(deadline) {
			t.Fatalf("scheduled BGSAVE did not run:\n%s", c.Info(ctx, "persistence").Val())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.Do(ctx, "bgsave", "now").Err(); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("BGSAVE NOW: %v", err)
	}
}

// TestAutoSave: a save point reached starts a BGSAVE.
func TestAutoSave(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, addr := redistest.StartSluice(t, "save", "1 3")
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	c.Set(ctx, "a", "1", 0)
	c.Set(ctx, "b", "1", 0)
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat("dump.rdb"); err == nil {
		t.Fatal("saved after 2 changes with save 1 3")
	}
	c.Set(ctx, "c", "1", 0)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat("dump.rdb"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no automatic save")
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitBgsave(t, c)
	if v := c.Info(ctx, "persistence").Val(); !strings.Contains(v, "rdb_changes_since_last_save:0\r\n") {
		t.Errorf("after the automatic save: %s", v)
	}
}

// TestEmbeddedWritesNoFiles: an embedded server (sluicetest,
// redistest.StartSluice) with many changes and a SHUTDOWN leaves no file.
func TestEmbeddedWritesNoFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	srv, addr := redistest.StartSluice(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	ctx := context.Background()
	for i := range 20000 {
		c.Set(ctx, fmt.Sprint("k", i), i, 0)
	}
	if v := c.ConfigGet(ctx, "save").Val()["save"]; v != "" {
		t.Errorf("CONFIG GET save: %q", v)
	}
	c.Shutdown(ctx)
	c.Close()
	<-srv.Done()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files written: %v", ents)
	}
}

// TestBGSAVEConsistent: snapshots taken while clients write are points in
// time: transactions that change two keys of different shards, and values
// rewritten in place, are never torn.
func TestBGSAVEConsistent(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	srv, addr := redistest.StartSluice(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 8})
	defer c.Close()
	for i := range 20000 {
		c.Set(ctx, fmt.Sprint("filler", i), strings.Repeat("f", i%50), 0)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, b := fmt.Sprintf("a%d", w), fmt.Sprintf("b%d", w)
			for i := 0; !stop.Load(); i++ {
				pipe := c.TxPipeline()
				pipe.Incr(ctx, a)
				pipe.RPush(ctx, "list"+b, i)
				pipe.Incr(ctx, b)
				pipe.Exec(ctx)
				// Rewritten in place: always 1000 copies of one byte.
				c.Set(ctx, "same"+a, strings.Repeat(string(rune('a'+i%26)), 1000), 0)
			}
		}()
	}
	for range 5 {
		time.Sleep(50 * time.Millisecond)
		if err := srv.BGSave(); err != nil {
			t.Fatal(err)
		}
		waitBgsave(t, c)
		vals := map[string]string{}
		lists := map[string]int{}
		readRDB(t, "dump.rdb", func(r *rdb.Record) {
			k := string(r.Key)
			if r.Value.Kind() == rdb.KindList {
				lists[k] = len(r.Value.Elems)
			} else if !strings.HasPrefix(k, "filler") {
				vals[k] = string(r.Value.Str)
			}
		})
		for w := range 4 {
			a, b := vals[fmt.Sprintf("a%d", w)], vals[fmt.Sprintf("b%d", w)]
			if a != b || strconv.Itoa(lists[fmt.Sprintf("listb%d", w)]) != orZero(b) {
				t.Errorf("torn transaction in snapshot: a=%q b=%q list=%d", a, b, lists[fmt.Sprintf("listb%d", w)])
			}
			if s := vals[fmt.Sprintf("samea%d", w)]; s != "" && s != strings.Repeat(s[:1], 1000) {
				t.Errorf("torn value in snapshot: %.40q...", s)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

func waitBgsave(t *testing.T, c *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Contains(c.Info(context.Background(), "persistence").Val(), "rdb_bgsave_in_progress:1") {
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readRDB(t *testing.T, path string, fn func(r *rdb.Record)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.ReadFile(b, true, &rdb.Handler{Key: func(r *rdb.Record) error { fn(r); return nil }}); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer collects a child process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
