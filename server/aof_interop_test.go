package server_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// The AOF moves both ways between Sluice and redis-server 7.0: an
// appendonlydir Sluice wrote (a rewritten base in RDB or command form,
// incremental files with timestamps) passes redis-check-aof and starts
// redis-server with the same dataset, and one redis-server wrote starts
// Sluice with the same dataset.

// moreWrites adds effects that are rewritten before they are recorded
// (relative expiries, INCRBYFLOAT, SPOP, a transaction, a script).
func moreWrites(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for _, cmd := range [][]any{
		{"set", "after:ex", "v", "ex", "5000"},
		{"incrbyfloat", "after:float", "1.5"},
		{"sadd", "after:set", "a", "b", "c", "d"},
		{"spop", "after:set"},
		{"expire", "d0:set", "9000"},
		{"del", "d0:int"},
		{"eval", "redis.call('incr', KEYS[1]); return redis.call('rpush', KEYS[2], 'x')", "2", "after:n", "after:list"},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	pipe := c.TxPipeline()
	pipe.Incr(ctx, "after:n")
	pipe.LPush(ctx, "after:list", "y")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitLoaded waits until addr answers PING (not -LOADING).
func waitLoaded(t *testing.T, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the server did not finish loading")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkAOF(t *testing.T, dir string) {
	t.Helper()
	tool, err := exec.LookPath("redis-check-aof")
	if err != nil {
		t.Log("redis-check-aof not installed")
		return
	}
	out, err := exec.Command(tool, filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "All AOF files and manifest are valid") {
		t.Errorf("redis-check-aof: %v\n%s", err, out)
	}
}

func TestAOFSluiceToRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	bin := buildServer(t)
	for _, preamble := range []string{"yes", "no"} {
		t.Run("aof-use-rdb-preamble "+preamble, func(t *testing.T) {
			dir := t.TempDir()
			srv := &aofServer{t: t, bin: bin, dir: dir, args: []string{"--appendonly", "yes", "--aof-use-rdb-preamble", preamble, "--aof-timestamp-enabled", "yes"}}
			srv.start()
			populate(t, srv.addr)
			c := redis.NewClient(&redis.Options{Addr: srv.addr})
			c.BgRewriteAOF(context.Background())
			waitRewrite(t, c)
			c.Close()
			moreWrites(t, srv.addr)
			want := dataset(t, srv.addr)
			srv.kill()
			checkAOF(t, dir)
			addr := redistest.StartRedis(t, "--dir", dir, "--appendonly", "yes")
			waitLoaded(t, addr)
			compareDatasets(t, want, dataset(t, addr))
		})
	}
}

func TestAOFRedisToSluice(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	bin := buildServer(t)
	for _, preamble := range []string{"yes", "no"} {
		t.Run("aof-use-rdb-preamble "+preamble, func(t *testing.T) {
			dir := t.TempDir()
			addr := redistest.StartRedis(t, "--dir", dir, "--appendonly", "yes", "--aof-use-rdb-preamble", preamble, "--aof-timestamp-enabled", "yes")
			waitLoaded(t, addr)
			populate(t, addr)
			c := redis.NewClient(&redis.Options{Addr: addr})
			c.BgRewriteAOF(context.Background())
			waitRewrite(t, c)
			moreWrites(t, addr)
			want := dataset(t, addr)
			c.Shutdown(context.Background()) // appendfsync everysec: written at exit
			c.Close()
			srv := &aofServer{t: t, bin: bin, dir: dir, args: []string{"--appendonly", "yes"}}
			srv.start()
			defer srv.kill()
			compareDatasets(t, want, dataset(t, srv.addr))
			// Sluice goes on appending to redis-server's last file.
			c2 := redis.NewClient(&redis.Options{Addr: srv.addr})
			c2.Set(context.Background(), "from:sluice", "1", 0)
			c2.Close()
			srv.kill()
			checkAOF(t, dir)
		})
	}
}
