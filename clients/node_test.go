package clients

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
	missing := func(why string) { missingTool(t, why, "run scripts/ensure-redis.sh to install it") }
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

// TestNodeRedis runs tests/node/test_noderedis.js (node-redis v5 over RESP2
// and RESP3: transactions, WATCH, SCAN, EVAL, blocking pops, pub/sub and
// its client side cache, which needs CLIENT TRACKING) against Sluice and
// against redis-server.
func TestNodeRedis(t *testing.T) {
	node, mods := requireNode(t)
	runScriptOnBoth(t, []string{"NODE_PATH=" + mods}, node, scriptPath(t, "node", "test_noderedis.js"))
}
