package server_test

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
)

// redis-cli --functions-rdb (REPLCONF rdb-only 1, rdb-filter-only
// functions, then SYNC) gets an RDB with the functions and no keys, and
// --rdb one with both; redis-server loads either.
func TestRedisCliFunctionsRDB(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli not installed")
	}
	_, addr := redistest.StartSluice(t, "enable-debug-command", "yes")
	c := newClient(t, addr)
	ctx := context.Background()
	c.Do(ctx, "debug", "populate", "100")
	if err := c.FunctionLoad(ctx, "#!lua name=lib1\nredis.register_function('func1', function() return 123 end)").Err(); err != nil {
		t.Fatal(err)
	}
	h, p, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		flag string
		keys int64
	}{{"--functions-rdb", 0}, {"--rdb", 100}} {
		dir := t.TempDir()
		out, err := exec.Command("redis-cli", "-h", h, "-p", p, tc.flag, filepath.Join(dir, "cli.rdb")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Transfer finished with success") {
			t.Fatalf("redis-cli %s: %v %s", tc.flag, err, out)
		}
		r := newClient(t, redistest.StartRedis(t, "--dir", dir, "--dbfilename", "cli.rdb"))
		if n := r.DBSize(ctx).Val(); n != tc.keys {
			t.Errorf("%s: redis-server loaded %d keys, want %d", tc.flag, n, tc.keys)
		}
		if v, err := r.FCall(ctx, "func1", nil).Int(); err != nil || v != 123 {
			t.Errorf("%s: FCALL func1 on the loaded file: %v %v", tc.flag, v, err)
		}
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}
