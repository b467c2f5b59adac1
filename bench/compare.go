package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// CompareConfig drives `sluice-bench compare`.
type CompareConfig struct {
	Target        string // address of the server under test; empty: build and start sluice-server
	Reference     string // address of the reference; empty: start redis-server from PATH
	TargetName    string
	ReferenceName string
	SluiceBin     string // prebuilt sluice-server (skips the build)
	RedisServer   string // redis-server binary (default: from PATH)
	Benchmark     string // redis-benchmark binary (default: from PATH)
	SourceDir     string // where to look for the module root (default: working directory)

	Suite    string  // default, concurrency, value-size, pipeline, mixed, commands, all (comma-separated list allowed)
	Rounds   int     // rounds per case; medians are reported
	Seconds  float64 // target length of one redis-benchmark run / one mixed run
	Keyspace int     // redis-benchmark -r
	Out      string  // output directory
	Label    string  // free-text description of the machine, printed in the report

	Log io.Writer // progress messages (stderr)
}

// DefaultCompareConfig returns compare's defaults.
func DefaultCompareConfig() CompareConfig {
	return CompareConfig{
		TargetName: "Sluice", ReferenceName: "Redis",
		Suite: "default", Rounds: 3, Seconds: 1.5, Keyspace: 100000, Out: "out/compare",
	}
}

// Case is one configuration measured on both servers.
type Case struct {
	Suite string
	Param string // swept parameter: clients, value_size, pipeline, read_pct; "" for none
	Value int
	Bench *BenchArgs // redis-benchmark case
	Mixed float64    // read ratio for a throughput-driver case (when Bench is nil)
	Name  string     // test name for a driver case
}

func (c Case) String() string {
	s := c.Suite
	if c.Bench != nil && c.Param == "" {
		s += " " + c.Bench.Tests
	}
	if c.Bench == nil {
		s += " " + c.Name
	} else if c.Param != "" {
		s += fmt.Sprintf(" %s=%d", c.Param, c.Value)
	}
	return s
}

// Result is the median over rounds of one server × test × parameter.
type Result struct {
	Server string
	Suite  string
	Test   string
	Param  string
	Value  int
	Rounds int // rounds that succeeded
	Measurement
	PerRound []Measurement
	Command  string // how the numbers were produced (for the report)
}

// Key identifies the test and parameter regardless of server.
func (r Result) Key() string { return fmt.Sprintf("%s|%s|%s|%d", r.Suite, r.Test, r.Param, r.Value) }

// Failure records a case that could not be measured on a server.
type Failure struct {
	Server, Case, Err string
}

// Suites lists the suite names in the order `all` runs them.
var Suites = []string{"default", "concurrency", "value-size", "pipeline", "mixed", "commands"}

// benchmarkTests are the -t tests redis-benchmark 7.0 knows, each with a
// command that shows whether the server implements what it needs.
var benchmarkTests = []struct {
	name  string
	probe [][]string
}{
	{"ping_inline", [][]string{{"PING"}}},
	{"ping_mbulk", [][]string{{"PING"}}},
	{"set", [][]string{{"SET", "sluice-bench:probe:str", "x"}}},
	{"get", [][]string{{"GET", "sluice-bench:probe:str"}}},
	{"incr", [][]string{{"INCR", "sluice-bench:probe:counter"}}},
	{"lpush", [][]string{{"LPUSH", "sluice-bench:probe:list", "x"}}},
	{"rpush", [][]string{{"RPUSH", "sluice-bench:probe:list", "x"}}},
	{"lpop", [][]string{{"LPOP", "sluice-bench:probe:list"}}},
	{"rpop", [][]string{{"RPOP", "sluice-bench:probe:list"}}},
	{"sadd", [][]string{{"SADD", "sluice-bench:probe:set", "x"}}},
	{"hset", [][]string{{"HSET", "sluice-bench:probe:hash", "f", "x"}}},
	{"spop", [][]string{{"SPOP", "sluice-bench:probe:set"}}},
	{"zadd", [][]string{{"ZADD", "sluice-bench:probe:zset", "0", "x"}}},
	{"zpopmin", [][]string{{"ZPOPMIN", "sluice-bench:probe:zset"}}},
	{"lrange_100", [][]string{{"LPUSH", "sluice-bench:probe:list", "x"}, {"LRANGE", "sluice-bench:probe:list", "0", "99"}}},
	{"lrange_300", [][]string{{"LPUSH", "sluice-bench:probe:list", "x"}, {"LRANGE", "sluice-bench:probe:list", "0", "299"}}},
	{"lrange_500", [][]string{{"LPUSH", "sluice-bench:probe:list", "x"}, {"LRANGE", "sluice-bench:probe:list", "0", "499"}}},
	{"lrange_600", [][]string{{"LPUSH", "sluice-bench:probe:list", "x"}, {"LRANGE", "sluice-bench:probe:list", "0", "599"}}},
	{"mset", [][]string{{"MSET", "sluice-bench:probe:str", "x"}}},
}

// SuiteCases expands a -suite value into cases.
func SuiteCases(suite string) ([]Case, error) {
	var names []string
	for _, s := range strings.Split(suite, ",") {
		s = strings.TrimSpace(s)
		if s == "all" {
			names = append(names, Suites...)
			continue
		}
		ok := false
		for _, k := range Suites {
			ok = ok || k == s
		}
		if !ok {
			return nil, fmt.Errorf("unknown suite %q (want one of %s, all)", s, strings.Join(Suites, ", "))
		}
		names = append(names, s)
	}
	var cases []Case
	setget := func(suite, param string, v, clients, size, pipe int) Case {
		return Case{Suite: suite, Param: param, Value: v,
			Bench: &BenchArgs{Tests: "set,get", Clients: clients, DataSize: size, Pipeline: pipe}}
	}
	for _, s := range names {
		switch s {
		case "default":
			cases = append(cases, setget(s, "", 0, 50, 3, 1))
		case "concurrency":
			for _, c := range []int{1, 10, 50, 100, 500, 1000} {
				cases = append(cases, setget(s, "clients", c, c, 3, 1))
			}
		case "value-size":
			for _, d := range []int{10, 100, 1000, 10000} {
				cases = append(cases, setget(s, "value_size", d, 50, d, 1))
			}
		case "pipeline":
			for _, p := range []int{1, 16, 64} {
				cases = append(cases, setget(s, "pipeline", p, 50, 3, p))
			}
		case "mixed":
			cases = append(cases,
				Case{Suite: s, Param: "read_pct", Value: 90, Mixed: 0.9, Name: "MIXED 90/10"},
				Case{Suite: s, Param: "read_pct", Value: 50, Mixed: 0.5, Name: "MIXED 50/50"})
		case "commands":
			for _, t := range benchmarkTests {
				cases = append(cases, Case{Suite: s, Bench: &BenchArgs{Tests: t.name, Clients: 50, DataSize: 3, Pipeline: 1}})
			}
		}
	}
	return cases, nil
}

func needsBenchmark(cases []Case) bool {
	for _, c := range cases {
		if c.Bench != nil {
			return true
		}
	}
	return false
}

// Report is everything a compare run produced.
type Report struct {
	Config    CompareConfig
	Started   time.Time
	Elapsed   time.Duration
	Env       map[string]string
	Results   []Result
	Failures  []Failure
	Skipped   []string // commands-suite tests the target does not implement
	Requests  map[string]int
	Artifacts []string
}

// ExitError carries the exit status the CLI should use.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Compare runs the configured suites and writes results.csv, rounds.csv,
// report.md and the charts into cfg.Out.
func Compare(ctx context.Context, cfg CompareConfig) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Rounds < 1 {
		return nil, errors.New("-rounds must be at least 1")
	}
	if cfg.Seconds <= 0 {
		return nil, errors.New("-seconds must be positive")
	}
	cases, err := SuiteCases(cfg.Suite)
	if err != nil {
		return nil, err
	}
	benchBin := cfg.Benchmark
	if needsBenchmark(cases) {
		if benchBin == "" {
			benchBin = "redis-benchmark"
		}
		if benchBin, err = lookTool(benchBin, ErrNoRedisBenchmark); err != nil {
			return nil, &ExitError{Code: 3, Err: err}
		}
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	rep := &Report{Config: cfg, Started: time.Now(), Requests: map[string]int{}, Env: map[string]string{}}

	tmp, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	targetAddr, refAddr := cfg.Target, cfg.Reference
	var started []*Process
	defer func() {
		for _, p := range started {
			p.Stop()
		}
	}()
	if refAddr == "" {
		bin := cfg.RedisServer
		if bin == "" {
			bin = "redis-server"
		}
		if bin, err = lookTool(bin, errNoRedisServer); err != nil {
			return nil, &ExitError{Code: 3, Err: err}
		}
		p, err := StartServer(cfg.ReferenceName, bin, filepath.Join(cfg.Out, "reference.log"))
		if err != nil {
			return nil, err
		}
		started = append(started, p)
		refAddr = p.Addr
		fmt.Fprintf(cfg.Log, "started %s (%s) on %s\n", cfg.ReferenceName, bin, refAddr)
	}
	if targetAddr == "" {
		bin := cfg.SluiceBin
		if bin == "" {
			src := cfg.SourceDir
			if src == "" {
				src = "."
			}
			root, err := ModuleRoot(src)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(cfg.Log, "building sluice-server from %s ...\n", root)
			if bin, err = BuildSluice(ctx, root, tmp); err != nil {
				return nil, err
			}
		}
		p, err := StartServer(cfg.TargetName, bin, filepath.Join(cfg.Out, "target.log"))
		if err != nil {
			return nil, err
		}
		started = append(started, p)
		targetAddr = p.Addr
		fmt.Fprintf(cfg.Log, "started %s (%s) on %s\n", cfg.TargetName, bin, targetAddr)
		rep.Env["target_bin"] = bin
	}
	rep.Env = environment(rep.Env, cfg, benchBin, targetAddr, refAddr)

	servers := []struct{ name, addr string }{{cfg.TargetName, targetAddr}, {cfg.ReferenceName, refAddr}}
	for i, c := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		prefix := fmt.Sprintf("[%d/%d] %s", i+1, len(cases), c)
		if c.Suite == "commands" {
			if why := unsupported(targetAddr, c.Bench.Tests); why != "" {
				rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s (%s)", strings.ToUpper(c.Bench.Tests), why))
				fmt.Fprintf(cfg.Log, "%s: skipped, %s answers %s\n", prefix, cfg.TargetName, why)
				continue
			}
		}
		if c.Bench != nil {
			n, err := calibrate(ctx, benchBin, c, cfg, servers[0].addr, servers[1].addr)
			if err != nil {
				fmt.Fprintf(cfg.Log, "%s: calibration: %v\n", prefix, err)
			}
			c.Bench.Requests = n
			c.Bench.Keyspace = cfg.Keyspace
			rep.Requests[c.String()] = n
		}
		command := fmt.Sprintf("sluice-bench throughput -workers 50 -read-ratio %g -keyspace %d -duration %gs", c.Mixed, cfg.Keyspace, cfg.Seconds)
		if c.Bench != nil {
			a := *c.Bench
			command = fmt.Sprintf("redis-benchmark -t %s -n %d -c %d -d %d -P %d -r %d --csv", a.Tests, a.Requests, a.Clients, a.DataSize, a.Pipeline, a.Keyspace)
		}
		// rounds[server][test] = measurements
		per := make([]map[string][]Measurement, len(servers))
		order := make([][]string, len(servers))
		for s := range servers {
			per[s] = map[string][]Measurement{}
		}
		for r := 0; r < cfg.Rounds; r++ {
			for s, srv := range servers { // interleaved: A B A B ...
				rows, err := runCase(ctx, benchBin, c, cfg, srv.addr)
				if err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					rep.Failures = append(rep.Failures, Failure{Server: srv.name, Case: c.String(), Err: err.Error()})
					fmt.Fprintf(cfg.Log, "%s: %s round %d/%d: %v\n", prefix, srv.name, r+1, cfg.Rounds, err)
					continue
				}
				var parts []string
				for _, row := range rows {
					if _, ok := per[s][row.Test]; !ok {
						order[s] = append(order[s], row.Test)
					}
					per[s][row.Test] = append(per[s][row.Test], row.Measurement)
					parts = append(parts, fmt.Sprintf("%s %s rps p99 %.3fms", row.Test, groupDigits(row.RPS), row.P99Ms))
				}
				fmt.Fprintf(cfg.Log, "%s: %s round %d/%d: %s\n", prefix, srv.name, r+1, cfg.Rounds, strings.Join(parts, ", "))
			}
		}
		for s, srv := range servers {
			for _, test := range order[s] {
				ms := per[s][test]
				rep.Results = append(rep.Results, Result{
					Server: srv.name, Suite: c.Suite, Test: test, Param: c.Param, Value: c.Value,
					Rounds: len(ms), Measurement: medianOf(ms), PerRound: ms, Command: command,
				})
			}
		}
	}
	rep.Elapsed = time.Since(rep.Started)
	if err := rep.WriteAll(cfg.Out); err != nil {
		return rep, err
	}
	return rep, nil
}

// unsupported probes addr with the commands a redis-benchmark test needs
// and returns the unknown-command reply, if any.
func unsupported(addr, test string) string {
	for _, t := range benchmarkTests {
		if t.name != test {
			continue
		}
		for _, args := range t.probe {
			reply, err := RawCommand(addr, 2*time.Second, args...)
			if err != nil {
				return err.Error()
			}
			if IsUnknownCommand(reply) {
				return strings.TrimSpace(strings.TrimPrefix(reply, "-"))
			}
		}
	}
	return ""
}

// calibrate picks -n so one run lasts about cfg.Seconds per test: a short
// probe run on each server measures its rate; the mean rate of the slowest
// test sets n.
func calibrate(ctx context.Context, bin string, c Case, cfg CompareConfig, addrs ...string) (int, error) {
	a := *c.Bench
	p := max(a.Pipeline, 1)
	floor := max(1000, 10*a.Clients*p)
	a.Requests = max(2000*p, 10*a.Clients, 2000)
	a.Keyspace = cfg.Keyspace
	var sum float64
	var got int
	var firstErr error
	for _, addr := range addrs {
		rows, err := RunRedisBenchmark(ctx, bin, addr, a)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		slowest := math.Inf(1)
		for _, r := range rows {
			slowest = math.Min(slowest, r.RPS)
		}
		sum += slowest
		got++
	}
	if got == 0 {
		return floor * 10, firstErr
	}
	n := int(sum / float64(got) * cfg.Seconds)
	return min(max(n, floor), 50_000_000), nil
}

func runCase(ctx context.Context, bin string, c Case, cfg CompareConfig, addr string) ([]BenchRow, error) {
	if c.Bench != nil {
		return RunRedisBenchmark(ctx, bin, addr, *c.Bench)
	}
	tc := DefaultThroughputConfig()
	tc.Addr = addr
	tc.Workers = 50
	tc.ReadRatio = c.Mixed
	tc.Keyspace = cfg.Keyspace
	tc.Duration = time.Duration(cfg.Seconds * float64(time.Second))
	res, err := RunThroughput(ctx, tc)
	if err != nil {
		return nil, err
	}
	if res.Ops == 0 {
		return nil, fmt.Errorf("no successful commands (first error: %s)", res.FirstError)
	}
	if res.Errors > 0 {
		return nil, fmt.Errorf("%d errors (first: %s)", res.Errors, res.FirstError)
	}
	return []BenchRow{{Test: c.Name, Measurement: res.Measurement()}}, nil
}

// medianOf takes the median of each metric on its own.
func medianOf(ms []Measurement) Measurement {
	col := func(f func(Measurement) float64) float64 {
		xs := make([]float64, len(ms))
		for i, m := range ms {
			xs[i] = f(m)
		}
		return Median(xs)
	}
	return Measurement{
		RPS:   col(func(m Measurement) float64 { return m.RPS }),
		AvgMs: col(func(m Measurement) float64 { return m.AvgMs }),
		P50Ms: col(func(m Measurement) float64 { return m.P50Ms }),
		P95Ms: col(func(m Measurement) float64 { return m.P95Ms }),
		P99Ms: col(func(m Measurement) float64 { return m.P99Ms }),
		MaxMs: col(func(m Measurement) float64 { return m.MaxMs }),
	}
}

func environment(env map[string]string, cfg CompareConfig, benchBin, target, ref string) map[string]string {
	if env == nil {
		env = map[string]string{}
	}
	env["go"] = runtime.Version()
	env["os"] = runtime.GOOS + "/" + runtime.GOARCH
	env["cpus"] = fmt.Sprint(runtime.NumCPU())
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		env["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				env["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if benchBin != "" {
		if out, err := exec.Command(benchBin, "--version").Output(); err == nil {
			env["redis_benchmark"] = strings.TrimSpace(string(out))
		}
	}
	for _, s := range []struct{ key, addr string }{{"target", target}, {"reference", ref}} {
		env[s.key+"_addr"] = s.addr
		info := ServerInfo(s.addr)
		if v := info["redis_version"]; v != "" {
			env[s.key+"_version"] = "redis_version " + v
		}
		if v := info["sluice_version"]; v != "" {
			env[s.key+"_version"] = "sluice_version " + v + ", " + env[s.key+"_version"]
		}
	}
	if bin := env["target_bin"]; bin != "" && env["target_version"] == "" {
		if out, err := exec.Command(bin, "--version").Output(); err == nil {
			env["target_version"] = strings.TrimSpace(string(out))
		}
	}
	return env
}
