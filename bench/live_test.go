package bench

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

func shortConfig(addr string) ThroughputConfig {
	c := DefaultThroughputConfig()
	c.Addr = addr
	c.Workers = 8
	c.Duration = 200 * time.Millisecond
	c.Keyspace = 1000
	return c
}

func TestThroughputAgainstSluice(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	for _, ap := range []bool{false, true} {
		c := shortConfig(addr)
		c.Autopipeline = ap
		c.PipelineSize = 50
		c.ReadRatio = 0.5
		res, err := RunThroughput(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if res.Ops == 0 || res.Errors != 0 || res.ErrorRate != 0 {
			t.Fatalf("autopipeline=%v: %+v", ap, res)
		}
		if res.hist.Count() != res.Ops {
			t.Errorf("latencies recorded %d, ops %d", res.hist.Count(), res.Ops)
		}
		if !(res.P50Us <= res.P99Us && res.P99Us <= res.P999Us && res.P999Us <= res.MaxUs) || res.P50Us <= 0 {
			t.Errorf("percentiles out of order: %+v", res)
		}
	}
	// Prefill wrote every key with a value of -value-size bytes, keys of
	// -key-size bytes.
	conn := redistest.Dial(t, addr)
	for _, k := range []string{"k00000000000000", "k00000000000999"} {
		if len(k) != 15 {
			t.Fatal("test key length")
		}
	}
	key := newKeyGen(16, 1000).key(999)
	if len(key) != 16 {
		t.Fatalf("key %q is not 16 bytes", key)
	}
	reply, err := conn.Do("GET", key)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(reply, "$64\r\n") {
		t.Errorf("GET %s = %q, want a 64-byte value", key, reply)
	}
}

func TestThroughputCLIJSON(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	var stdout, stderr strings.Builder
	code := CLI([]string{"throughput", "-addr", addr, "-workers", "4", "-duration", "500ms", "-keyspace", "100",
		"-autopipeline", "-pipeline-size", "10", "-pipeline-delay", "0", "-json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout.String()), &m); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	for _, f := range []string{"ops_per_sec", "us_per_op", "p50_us", "p99_us", "p999_us", "errors", "error_rate"} {
		if _, ok := m[f].(float64); !ok {
			t.Errorf("JSON lacks numeric %s: %v", f, m)
		}
	}
	if m["ops_per_sec"].(float64) <= 0 {
		t.Errorf("ops_per_sec = %v", m["ops_per_sec"])
	}
	if !strings.Contains(stderr.String(), "ops/s") || !strings.Contains(stderr.String(), "\r") {
		t.Errorf("no live progress line on stderr: %q", stderr.String())
	}

	// A dead address fails with a clear message, not a hang.
	stdout.Reset()
	stderr.Reset()
	if code := CLI([]string{"throughput", "-addr", "127.0.0.1:1", "-duration", "100ms", "-quiet"}, &stdout, &stderr); code != 1 {
		t.Errorf("dead server: exit %d, want 1", code)
	}
	if code := CLI([]string{"throughput", "-read-ratio", "2"}, &stdout, &stderr); code != 1 {
		t.Errorf("bad read ratio: exit %d", code)
	}
	if code := CLI([]string{"nope"}, &stdout, &stderr); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

func TestSweetSpot(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	base := shortConfig(addr)
	base.Duration = 100 * time.Millisecond
	rep, err := RunSweetSpot(context.Background(), SweetSpotConfig{
		Base: base, Workers: []int{2, 6}, Sizes: []int{16}, Delays: []time.Duration{0, 50 * time.Microsecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 6 {
		t.Fatalf("%d rows, want 2 workers × (1 + 1×2)", len(rep.Rows))
	}
	if rep.Best == nil || !rep.Best.Autopipeline || rep.BestBaseline == nil || rep.BestBaseline.Autopipeline {
		t.Fatalf("best %+v baseline %+v", rep.Best, rep.BestBaseline)
	}
	for _, r := range rep.Rows {
		if r.Autopipeline && r.OpsPerSec > rep.Best.OpsPerSec {
			t.Errorf("row %+v beats best", r)
		}
	}
	var base0 float64
	for _, r := range rep.Rows {
		if !r.Autopipeline && r.Workers == rep.Best.Workers {
			base0 = r.OpsPerSec
		}
	}
	if want := rep.Best.OpsPerSec / base0; rep.Multiplier != want {
		t.Errorf("multiplier %v, want %v", rep.Multiplier, want)
	}
	var b strings.Builder
	rep.Write(&b)
	if !strings.Contains(b.String(), "Best: -workers") || !strings.Contains(b.String(), "over no autopipelining") {
		t.Errorf("table:\n%s", b.String())
	}
}

// fakeServer answers every command with the unknown-command error.
func fakeServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				r.ReadString('\n')
				c.Write([]byte("-ERR unknown command 'LPUSH', with args beginning with: \r\n"))
			}()
		}
	}()
	return l.Addr().String()
}

func TestProbeUnknownCommand(t *testing.T) {
	if why := unsupported(fakeServer(t), "lpush"); !strings.Contains(why, "unknown command") {
		t.Errorf("unsupported = %q", why)
	}
	_, addr := redistest.StartSluice(t)
	for _, test := range []string{"set", "get", "ping_inline"} {
		if why := unsupported(addr, test); why != "" {
			t.Errorf("Sluice %s: %s", test, why)
		}
	}
}

func TestCompareMissingTool(t *testing.T) {
	var stdout, stderr strings.Builder
	code := CLI([]string{"compare", "-redis-benchmark", filepath.Join(t.TempDir(), "redis-benchmark"), "-out", t.TempDir()}, &stdout, &stderr)
	if code != 3 {
		t.Errorf("exit %d, want 3 (%s)", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "redis-benchmark not found") {
		t.Errorf("message: %q", stderr.String())
	}
}

func requireTools(t *testing.T, tools ...string) {
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not in PATH", tool)
			}
			t.Skipf("%s not installed", tool)
		}
	}
}

// TestCompareEndToEnd builds sluice-server, starts it and redis-server, and
// runs `sluice-bench compare -suite default` briefly.
func TestCompareEndToEnd(t *testing.T) {
	requireTools(t, "redis-benchmark", "redis-server", "go")
	out := t.TempDir()
	var stdout, stderr strings.Builder
	code := CLI([]string{"compare", "-suite", "default", "-rounds", "2", "-seconds", "0.2", "-out", out, "-label", "test"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	for _, f := range []string{"results.csv", "rounds.csv", "report.md", "throughput_summary.png", "p99_summary.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	f, err := os.Open(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range recs[1:] {
		seen[r[0]+" "+r[2]] = true
		if r[5] != "2" {
			t.Errorf("row %v: %s rounds, want 2", r, r[5])
		}
		if r[6] == "" || r[6] == "0.00" {
			t.Errorf("row %v has no throughput", r)
		}
	}
	for _, want := range []string{"Sluice SET", "Sluice GET", "Redis SET", "Redis GET"} {
		if !seen[want] {
			t.Errorf("results.csv has no %s row: %v", want, recs)
		}
	}
	if len(recs) != 5 {
		t.Errorf("%d rows, want header + 4", len(recs))
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "redis_version 7.") || !strings.Contains(string(md), "| Throughput (req/s) |") {
		t.Errorf("report.md:\n%s", md)
	}
	// Both servers were stopped.
	if !strings.Contains(stderr.String(), "started Redis") || !strings.Contains(stderr.String(), "started Sluice") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
