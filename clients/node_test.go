package clients

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// nodeModules is where scripts/ensure-redis.sh installs node-redis:
// $SLUICE_NODE_DIR, or sluice-node in the user's cache directory.
func nodeModules() string {
	dir := os.Getenv("SLUICE_NODE_DIR")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "sluice-node")
	}
	return filepath.Join(dir, "node_modules")
}

// requireNode returns node and the node_modules holding the redis package,
// or skips the test (fails it on CI, where scripts/ensure-redis.sh
// installs the package).
func requireNode(t *testing.T) (string, string) {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true: scripts/ensure-redis.sh installs it)", why)
		}
		t.Skipf("%s: run scripts/ensure-redis.sh to install it", why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found in PATH")
	}
	mods := nodeModules()
	cmd := exec.Command(node, "-e", "require('redis')")
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	if out, err := cmd.CombinedOutput(); err != nil {
		missing("node-redis not found in " + mods + " (" + firstLine(out) + ")")
	}
	return node, mods
}

func runNode(t *testing.T, node, mods, script, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, addr)
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(script), addr, err, out)
	}
	t.Logf("%s", out)
}

// TestNodeRedis runs tests/node/test_noderedis.js (node-redis v5 over RESP2
// and RESP3: transactions, WATCH, SCAN, EVAL, blocking pops, pub/sub and
// its client side cache, which needs CLIENT TRACKING) against Sluice and
// against redis-server.
func TestNodeRedis(t *testing.T) {
	node, mods := requireNode(t)
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "tests", "node", "test_noderedis.js")
	if _, err := os.Stat(script); err != nil {
		t.Fatal(err)
	}
	t.Run("sluice", func(t *testing.T) {
		_, addr := redistest.StartSluice(t)
		runNode(t, node, mods, script, addr)
	})
	t.Run("redis", func(t *testing.T) {
		addr := redistest.StartRedis(t)
		runNode(t, node, mods, script, addr)
	})
}
