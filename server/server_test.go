package server_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// infoFields parses INFO text into section -> field names, checking the
// "# Section\r\nfield:value\r\n" shape redis-cli and exporters rely on.
func infoFields(t *testing.T, raw string) map[string]map[string]string {
	t.Helper()
	if !strings.HasPrefix(raw, "$") {
		t.Fatalf("INFO reply is not a bulk string: %q", raw[:min(len(raw), 40)])
	}
	body := raw[strings.Index(raw, "\r\n")+2 : len(raw)-2]
	out := map[string]map[string]string{}
	var cur map[string]string
	for _, line := range strings.Split(body, "\r\n") {
		switch {
		case line == "":
			cur = nil
		case strings.HasPrefix(line, "# "):
			cur = map[string]string{}
			out[strings.ToLower(line[2:])] = cur
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok || cur == nil {
				t.Fatalf("bad INFO line %q", line)
			}
			cur[k] = v
		}
	}
	return out
}

func TestInfoMatchesRedisFields(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	rc, sc := redistest.Dial(t, raddr), redistest.Dial(t, saddr)
	for _, c := range []*redistest.Conn{rc, sc} {
		c.Do("SET", "k", "v")
		c.Do("SET", "e", "v", "EX", "100")
		c.Do("GET", "k")
		c.Do("NOSUCH")
	}
	for _, args := range [][]string{{"INFO"}, {"INFO", "all"}, {"INFO", "commandstats"}, {"INFO", "server", "keyspace"}, {"INFO", "everything"}} {
		rr, _ := rc.Do(args...)
		sr, _ := sc.Do(args...)
		want, got := infoFields(t, rr), infoFields(t, sr)
		for sec, fields := range want {
			gs, ok := got[sec]
			if !ok {
				t.Errorf("%v: section %q missing", args, sec)
				continue
			}
			for f := range fields {
				// Sluice keeps no latency histograms: latencystats is empty.
				if _, ok := gs[f]; !ok && !strings.HasPrefix(f, "cmdstat_") && !strings.HasPrefix(f, "errorstat_") && sec != "latencystats" {
					t.Errorf("%v: %s field %q missing", args, sec, f)
				}
			}
		}
		for sec := range got {
			if _, ok := want[sec]; !ok {
				t.Errorf("%v: extra section %q", args, sec)
			}
		}
	}
	// avg_ttl is an estimate both servers refresh in their 100 ms cron:
	// give both a few cron runs, then compare it within the test's time.
	time.Sleep(300 * time.Millisecond)
	rr, _ := rc.Do("INFO", "all")
	sr, _ := sc.Do("INFO", "all")
	want, got := infoFields(t, rr), infoFields(t, sr)
	avgTTL := regexp.MustCompile(`,avg_ttl=(\d+)$`)
	for name, fields := range map[string]map[string]map[string]string{"redis": want, "sluice": got} {
		m := avgTTL.FindStringSubmatch(fields["keyspace"]["db0"])
		if m == nil {
			t.Fatalf("%s keyspace db0: %q", name, fields["keyspace"]["db0"])
		}
		if ms, _ := strconv.Atoi(m[1]); ms < 90000 || ms > 100000 {
			t.Errorf("%s keyspace db0 avg_ttl %d, want the TTL of 100 s less the test's time", name, ms)
		}
		fields["keyspace"]["db0"] = avgTTL.ReplaceAllString(fields["keyspace"]["db0"], "")
	}
	for _, f := range [][2]string{{"server", "redis_version"}, {"server", "redis_mode"}, {"replication", "role"}, {"replication", "connected_slaves"}, {"keyspace", "db0"}, {"errorstats", "errorstat_ERR"}, {"memory", "maxmemory_policy"}} {
		if got[f[0]][f[1]] != want[f[0]][f[1]] {
			t.Errorf("%s %s: redis %q sluice %q", f[0], f[1], want[f[0]][f[1]], got[f[0]][f[1]])
		}
	}
	// cmdstat lines have the same shape and counts.
	for _, cmd := range []string{"cmdstat_set", "cmdstat_get"} {
		w, g := want["commandstats"][cmd], got["commandstats"][cmd]
		if !strings.HasPrefix(g, "calls=") || strings.Split(g, ",")[0] != strings.Split(w, ",")[0] || !strings.HasSuffix(g, ",rejected_calls=0,failed_calls=0") {
			t.Errorf("%s: redis %q sluice %q", cmd, w, g)
		}
	}
	if n, _ := strconv.Atoi(got["server"]["tcp_port"]); n == 0 {
		t.Errorf("tcp_port %q", got["server"]["tcp_port"])
	}
	if r, _ := sc.Do("CONFIG", "RESETSTAT"); r != "+OK\r\n" {
		t.Fatal(r)
	}
	sr, _ = sc.Do("INFO", "commandstats", "errorstats")
	after := infoFields(t, sr)
	if len(after["errorstats"]) != 0 || after["commandstats"]["cmdstat_set"] != "" {
		t.Errorf("stats after RESETSTAT: %v", after)
	}
}

// packageDir is the package's directory, where the tests start.
var packageDir, _ = os.Getwd()

// buildServer compiles cmd/sluice-server into a temporary directory.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sluice-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/sluicedb/sluice/cmd/sluice-server")
	cmd.Dir = packageDir // a test's CONFIG SET dir may have moved the working directory
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// processServers builds sluice-server and finds redis-server, for tests
// that run both as processes (skipped with -short): name -> binary.
func processServers(t *testing.T) map[string]string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	return map[string]string{"sluice": buildServer(t), "redis": redistest.RedisServerPath(t)}
}

func TestServerBinaryConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	dir := t.TempDir()

	t.Run("invalid config file exits non-zero", func(t *testing.T) {
		for _, conf := range []string{
			"port 7000\nno-such-directive yes\n",
			"maxmemory lots\n",
			"appendonly maybe\n",
			"port \"unbalanced\n",
			"hz 1 2\n",
		} {
			path := filepath.Join(dir, "bad.conf")
			os.WriteFile(path, []byte(conf), 0o644)
			var stderr bytes.Buffer
			cmd := exec.Command(bin, path)
			cmd.Stderr = &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() == 0 {
				t.Fatalf("%q: exit %v, want non-zero", conf, err)
			}
			if !strings.Contains(stderr.String(), "FATAL CONFIG FILE ERROR") {
				t.Fatalf("%q: stderr %q", conf, stderr.String())
			}
		}
		if err := exec.Command(bin, filepath.Join(dir, "missing.conf")).Run(); err == nil {
			t.Fatal("missing config file accepted")
		}
		if err := exec.Command(bin, "--no-such-flag", "1").Run(); err == nil {
			t.Fatal("unknown flag accepted")
		}
	})

	t.Run("config file and flags, then SHUTDOWN", func(t *testing.T) {
		port := redistest.FreePort(t)
		path := filepath.Join(dir, "good.conf")
		os.WriteFile(path, []byte("# comment\nport 1\nmaxmemory 2mb\nsave \"\"\nclient-output-buffer-limit normal 1mb 1mb 0\nlist-max-ziplist-entries 5\n"), 0o644)
		cmd := exec.Command(bin, path, "--port", strconv.Itoa(port), "--maxmemory-policy", "allkeys-lru", "--save")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		defer cmd.Process.Kill()
		addr := "127.0.0.1:" + strconv.Itoa(port)
		deadline := time.Now().Add(10 * time.Second)
		for {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("server did not start")
			}
			time.Sleep(20 * time.Millisecond)
		}
		c := redistest.Dial(t, addr)
		for _, want := range [][2]string{
			{"maxmemory", "2097152"}, {"maxmemory-policy", "allkeys-lru"}, {"save", ""},
			{"client-output-buffer-limit", "normal 1048576 1048576 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
		} {
			r, _ := c.Do("CONFIG", "GET", want[0])
			exp := string(redistest.Encode(want[0], want[1]))
			if r != exp {
				t.Errorf("CONFIG GET %s: %q want %q", want[0], r, exp)
			}
		}
		r, _ := c.Do("INFO", "server")
		if !strings.Contains(r, "config_file:"+path+"\r\n") {
			t.Errorf("INFO config_file: %q", r)
		}
		if r, _ := c.Do("CONFIG", "SET", "maxmemory", "3mb"); r != "+OK\r\n" {
			t.Fatal(r)
		}
		if r, _ := c.Do("CONFIG", "REWRITE"); r != "+OK\r\n" {
			t.Fatalf("CONFIG REWRITE: %q", r)
		}
		b, _ := os.ReadFile(path)
		if !strings.Contains(string(b), "maxmemory 3mb") || !strings.Contains(string(b), "# comment") {
			t.Errorf("rewritten file:\n%s", b)
		}
		c.Do("SHUTDOWN", "NOSAVE")
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("exit after SHUTDOWN: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("server did not exit on SHUTDOWN")
		}
	})
}

// TestMemoryStatsShape: MEMORY STATS has Redis 7.0's fields, in its order,
// with the same reply types (the figures themselves are each server's).
func TestMemoryStatsShape(t *testing.T) {
	shape := func(addr, proto string) []string {
		c := redistest.Dial(t, addr)
		if _, err := c.Do("HELLO", proto); err != nil {
			t.Fatal(err)
		}
		c.Do("SET", "foo", "bar")
		c.Do("SET", "e", "x", "EX", "100")
		r, err := c.Do("MEMORY", "STATS")
		if err != nil {
			t.Fatal(err)
		}
		// Keep field names and each value's type byte; drop the numbers.
		var out []string
		lines := strings.Split(r, "\r\n")
		for i := 0; i < len(lines); i++ {
			l := lines[i]
			switch {
			case l == "":
			case l[0] == '$':
				i++
				if _, err := strconv.ParseFloat(lines[i], 64); err == nil {
					out = append(out, "F") // a RESP2 double
				} else {
					out = append(out, lines[i])
				}
			default:
				out = append(out, l[:1])
			}
		}
		return out
	}
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	for _, proto := range []string{"2", "3"} {
		want, got := shape(raddr, proto), shape(saddr, proto)
		if strings.Join(want, " ") != strings.Join(got, " ") {
			t.Errorf("RESP%s MEMORY STATS\nredis:  %v\nsluice: %v", proto, want, got)
		}
	}
}
