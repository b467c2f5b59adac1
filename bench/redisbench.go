package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
)

// Measurement is one test's numbers as redis-benchmark reports them:
// requests per second and latencies in milliseconds.
type Measurement struct {
	RPS   float64
	AvgMs float64
	P50Ms float64
	P95Ms float64
	P99Ms float64
	MaxMs float64
}

// BenchRow is one line of redis-benchmark --csv output.
type BenchRow struct {
	Test string
	Measurement
}

// ErrNoRedisBenchmark is returned when redis-benchmark is not in PATH.
var ErrNoRedisBenchmark = errors.New("redis-benchmark not found in PATH (install redis-tools, e.g. `apt-get install redis-tools`, or put redis-benchmark in PATH)")

// ParseBenchmarkCSV reads redis-benchmark --csv output: a header line
// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
// "p95_latency_ms","p99_latency_ms","max_latency_ms" and one line per test.
// Lines that are not CSV records of that shape (warnings) are ignored.
// Helper tests such as "LPUSH (needed to benchmark LRANGE)" are dropped.
func ParseBenchmarkCSV(r io.Reader) ([]BenchRow, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var rows []BenchRow
	col := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, `"`) {
			continue
		}
		rec, err := csv.NewReader(strings.NewReader(line)).Read()
		if err != nil {
			continue
		}
		if rec[0] == "test" {
			for i, name := range rec {
				col[name] = i
			}
			continue
		}
		if len(col) == 0 {
			return nil, fmt.Errorf("redis-benchmark CSV: data before header: %q", line)
		}
		if strings.Contains(rec[0], "(needed") {
			continue
		}
		get := func(name string) (float64, error) {
			i, ok := col[name]
			if !ok || i >= len(rec) {
				return 0, fmt.Errorf("redis-benchmark CSV: no %s column in %q", name, line)
			}
			return strconv.ParseFloat(rec[i], 64)
		}
		var m Measurement
		for _, f := range []struct {
			name string
			dst  *float64
		}{{"rps", &m.RPS}, {"avg_latency_ms", &m.AvgMs}, {"p50_latency_ms", &m.P50Ms},
			{"p95_latency_ms", &m.P95Ms}, {"p99_latency_ms", &m.P99Ms}, {"max_latency_ms", &m.MaxMs}} {
			v, err := get(f.name)
			if err != nil {
				return nil, err
			}
			*f.dst = v
		}
		rows = append(rows, BenchRow{Test: rec[0], Measurement: m})
	}
	if len(rows) == 0 {
		return nil, errors.New("redis-benchmark printed no results")
	}
	return rows, nil
}

// BenchArgs are the redis-benchmark knobs a compare case varies.
type BenchArgs struct {
	Tests     string // -t
	Requests  int    // -n
	Clients   int    // -c
	DataSize  int    // -d
	Pipeline  int    // -P
	Keyspace  int    // -r
	ExtraArgs []string
}

func (a BenchArgs) argv(addr string) ([]string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	argv := []string{"-h", host, "-p", port, "-t", a.Tests, "-n", strconv.Itoa(a.Requests),
		"-c", strconv.Itoa(a.Clients), "-d", strconv.Itoa(a.DataSize), "-P", strconv.Itoa(a.Pipeline), "--csv"}
	if a.Keyspace > 0 {
		argv = append(argv, "-r", strconv.Itoa(a.Keyspace))
	}
	return append(argv, a.ExtraArgs...), nil
}

// RunRedisBenchmark runs the redis-benchmark binary at path against addr.
func RunRedisBenchmark(ctx context.Context, path, addr string, a BenchArgs) ([]BenchRow, error) {
	argv, err := a.argv(addr)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, argv...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("redis-benchmark %s: %v: %s", strings.Join(argv, " "), err, lastLines(stderr.String(), 3))
	}
	rows, err := ParseBenchmarkCSV(&stdout)
	if err != nil {
		return nil, fmt.Errorf("%v (stderr: %s)", err, lastLines(stderr.String(), 3))
	}
	return rows, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
