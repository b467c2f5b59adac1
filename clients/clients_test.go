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
	"github.com/sluicedb/sluice/internal/tlstest"
)

// requirePython returns the python3 that has the redis package, or skips
// the test (fails it on CI, where scripts/ensure-redis.sh installs both).
func requirePython(t *testing.T) string {
	t.Helper()
	missing := func(why string) { missingTool(t, why, "install it with `pip install redis`") }
	py, err := exec.LookPath("python3")
	if err != nil {
		missing("python3 not found in PATH")
	}
	if out, err := exec.Command(py, "-c", "import redis").CombinedOutput(); err != nil {
		missing("python3 has no redis module (" + firstLine(out) + ")")
	}
	return py
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}

// missingTool skips the test for want of a client library, or fails it on
// CI, where scripts/ensure-redis.sh installs them all.
func missingTool(t *testing.T, why, hint string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: scripts/ensure-redis.sh installs it)", why)
	}
	t.Skipf("%s: %s to run this test", why, hint)
}

// scriptPath returns tests/<lang>/<name> in the repository.
func scriptPath(t *testing.T, lang, name string) string {
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "tests", lang, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// runScript runs `prog script addr` with env added to the environment
// and fails the test if it exits non-zero.
func runScript(t *testing.T, env []string, prog, script, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, script, addr)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(script), addr, err, out)
	}
	t.Logf("%s", out)
}

// runScriptOnBoth runs script against Sluice and against redis-server, the
// second to show that the script's expectations are Redis's.
func runScriptOnBoth(t *testing.T, env []string, prog, script string) {
	t.Run("sluice", func(t *testing.T) {
		_, addr := redistest.StartSluice(t)
		runScript(t, env, prog, script, addr)
	})
	t.Run("redis", func(t *testing.T) {
		runScript(t, env, prog, script, redistest.StartRedis(t))
	})
}

// TestRedisPy runs tests/python/test_redispy.py (redis-py: transactional
// pipelines, WATCH with transaction(), pub/sub, RESP3) against Sluice, and
// against redis-server to show the script's expectations are Redis's.
func TestRedisPy(t *testing.T) {
	py := requirePython(t)
	runScriptOnBoth(t, nil, py, scriptPath(t, "python", "test_redispy.py"))
}

// TestRedisPyTLS runs the same script with ssl=True (a client certificate
// and the CA) against Sluice and redis-server, each on a TLS port only.
func TestRedisPyTLS(t *testing.T) {
	py := requirePython(t)
	c := tlstest.New(t)
	env := []string{"REDIS_TLS_CA=" + c.CACert, "REDIS_TLS_CERT=" + c.ClientCert, "REDIS_TLS_KEY=" + c.ClientKey}
	script := scriptPath(t, "python", "test_redispy.py")
	t.Run("sluice", func(t *testing.T) {
		_, addr := redistest.StartSluiceTLS(t, c)
		runScript(t, env, py, script, addr)
	})
	t.Run("redis", func(t *testing.T) {
		runScript(t, env, py, script, redistest.StartRedisTLS(t, c))
	})
}
