package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MultiConfig drives `sluice-bench multi`: what `redis-benchmark -P 16`
// would do with a MULTI/SET/EXEC transaction if it could send one.
// redis-benchmark's custom-command mode sends a single command per
// request (`redis-benchmark -P 16 MULTI` pipelines 16 MULTIs, most of
// them "ERR MULTI calls can not be nested"), so this driver does it: every
// connection writes Pipeline transactions (MULTI, SET key value, EXEC) in
// one write and reads their 3×Pipeline replies, like redis-benchmark -P.
// A plain pipelined SET case with the same driver is the baseline.
type MultiConfig struct {
	Pair      PairConfig
	Clients   int           // connections (redis-benchmark -c)
	Pipeline  int           // transactions per round trip (redis-benchmark -P)
	Keyspace  int           // random keys (redis-benchmark -r)
	ValueSize int           // bytes (redis-benchmark -d)
	Duration  time.Duration // measured length of one run
	Rounds    int           // interleaved rounds; medians are reported
	Plain     bool          // also measure pipelined SET without MULTI/EXEC
	Log       io.Writer     `json:"-"`
}

// DefaultMultiConfig returns multi's defaults (redis-benchmark's -c 50 -d 3, -P 16).
func DefaultMultiConfig() MultiConfig {
	return MultiConfig{Pair: defaultPair(), Clients: 50, Pipeline: 16, Keyspace: 100000, ValueSize: 3,
		Duration: 2 * time.Second, Rounds: 3, Plain: true}
}

// MultiRun is one run against one server.
type MultiRun struct {
	PerSec float64 `json:"per_sec"` // transactions (or SETs) per second
	P50Ms  float64 `json:"p50_ms"`  // round-trip latency of one pipeline
	P99Ms  float64 `json:"p99_ms"`
}

// MultiResult is one case on both servers.
type MultiResult struct {
	Case      string     `json:"case"`
	Target    []MultiRun `json:"target"`
	Reference []MultiRun `json:"reference"`
}

// MultiReport is the whole comparison.
type MultiReport struct {
	Config  MultiConfig
	Results []MultiResult
	Env     map[string]string
}

func medianMulti(rs []MultiRun) MultiRun {
	var a, b, c []float64
	for _, r := range rs {
		a, b, c = append(a, r.PerSec), append(b, r.P50Ms), append(c, r.P99Ms)
	}
	return MultiRun{PerSec: Median(a), P50Ms: Median(b), P99Ms: Median(c)}
}

const (
	caseMulti = "MULTI/SET/EXEC"
	casePlain = "SET"
)

// RunMulti measures the transaction case (and the plain SET baseline) on
// both servers, rounds interleaved.
func RunMulti(ctx context.Context, cfg MultiConfig) (*MultiReport, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Rounds < 1 || cfg.Clients < 1 || cfg.Pipeline < 1 || cfg.Keyspace < 1 || cfg.Duration <= 0 {
		return nil, errors.New("-rounds, -clients, -pipeline, -keyspace and -duration must be positive")
	}
	cfg.Pair.Log = cfg.Log
	target, ref, stop, err := StartPair(ctx, cfg.Pair)
	if err != nil {
		return nil, err
	}
	defer stop()
	rep := &MultiReport{Config: cfg, Env: map[string]string{
		"target": target, "reference": ref,
		"target_version":    ServerInfo(target)["redis_version"],
		"reference_version": ServerInfo(ref)["redis_version"],
	}}
	cases := []string{caseMulti}
	if cfg.Plain {
		cases = append(cases, casePlain)
	}
	for _, name := range cases {
		res := MultiResult{Case: name}
		for r := 0; r < cfg.Rounds; r++ {
			for i, addr := range []string{target, ref} {
				run, err := MultiOnce(ctx, addr, name == caseMulti, cfg)
				if err != nil {
					return rep, fmt.Errorf("%s on %s: %w", name, addr, err)
				}
				sname := cfg.Pair.TargetName
				if i == 0 {
					res.Target = append(res.Target, run)
				} else {
					sname = cfg.Pair.ReferenceName
					res.Reference = append(res.Reference, run)
				}
				fmt.Fprintf(cfg.Log, "%s round %d %s: %s/s, p50 %.3f ms, p99 %.3f ms\n",
					name, r+1, sname, groupDigits(run.PerSec), run.P50Ms, run.P99Ms)
			}
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// MultiOnce runs Clients connections for Duration (after a short
// warm-up) and checks every reply.
func MultiOnce(ctx context.Context, addr string, tx bool, cfg MultiConfig) (MultiRun, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	value := strings.Repeat("x", cfg.ValueSize)
	var measuring atomic.Bool
	var done atomic.Int64
	var mu sync.Mutex
	var lat []float64
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	var conns []net.Conn
	for i := 0; i < cfg.Clients; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return MultiRun{}, err
		}
		conns = append(conns, c)
	}
	go func() {
		<-ctx.Done()
		for _, c := range conns {
			c.SetDeadline(time.Now())
		}
	}()
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func(c net.Conn, seed int64) {
			defer wg.Done()
			defer c.Close()
			rng := rand.New(rand.NewSource(seed))
			r := bufio.NewReaderSize(c, 16<<10)
			var buf []byte
			var mine []float64
			defer func() { mu.Lock(); lat = append(lat, mine...); mu.Unlock() }()
			for ctx.Err() == nil {
				buf = buf[:0]
				for k := 0; k < cfg.Pipeline; k++ {
					key := "key:" + fmt.Sprintf("%012d", rng.Intn(cfg.Keyspace))
					if tx {
						buf = append(buf, "*1\r\n$5\r\nMULTI\r\n"...)
					}
					buf = append(buf, respCommand("SET", key, value)...)
					if tx {
						buf = append(buf, "*1\r\n$4\r\nEXEC\r\n"...)
					}
				}
				start := time.Now()
				if _, err := c.Write(buf); err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					return
				}
				for k := 0; k < cfg.Pipeline; k++ {
					want := []string{"+OK"}
					if tx {
						want = []string{"+OK", "+QUEUED", "*1", "+OK"}
					}
					for _, w := range want {
						line, err := r.ReadSlice('\n')
						if err != nil {
							if ctx.Err() == nil {
								fail(err)
							}
							return
						}
						if string(line) != w+"\r\n" {
							fail(fmt.Errorf("reply %q, want %q", line, w))
							return
						}
					}
				}
				if measuring.Load() {
					mine = append(mine, float64(time.Since(start).Microseconds())/1000)
					done.Add(int64(cfg.Pipeline))
				}
			}
		}(c, int64(i)+time.Now().UnixNano())
	}
	warm := min(cfg.Duration/4, 500*time.Millisecond)
	select {
	case <-time.After(warm):
	case <-ctx.Done():
	}
	measuring.Store(true)
	t0 := time.Now()
	select {
	case <-time.After(cfg.Duration):
	case <-ctx.Done():
	}
	measuring.Store(false)
	n, secs := done.Load(), time.Since(t0).Seconds()
	cancel()
	wg.Wait()
	if firstErr != nil {
		return MultiRun{}, firstErr
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return MultiRun{}, err
	}
	return MultiRun{PerSec: float64(n) / secs, P50Ms: Percentile(lat, 50), P99Ms: Percentile(lat, 99)}, nil
}

// WriteMarkdown writes the ratio table and the per-round numbers.
func (rep *MultiReport) WriteMarkdown(w io.Writer, label string) {
	cfg := rep.Config
	tn, rn := cfg.Pair.TargetName, cfg.Pair.ReferenceName
	fmt.Fprintf(w, "## Pipelined transactions: %s vs %s\n\n", tn, rn)
	if label != "" {
		fmt.Fprintf(w, "> **Machine:** %s\n", label)
	}
	fmt.Fprintf(w, "> %d connections, %d transactions (MULTI, SET key value, EXEC) per round trip, %d-byte values, "+
		"%d random keys; runs of %s, %d rounds interleaved, medians. %s %s, %s %s. The SET row is the same driver "+
		"without MULTI/EXEC (%d SETs per round trip).\n\n",
		cfg.Clients, cfg.Pipeline, cfg.ValueSize, cfg.Keyspace, cfg.Duration, cfg.Rounds,
		tn, orDash(rep.Env["target_version"]), rn, orDash(rep.Env["reference_version"]), cfg.Pipeline)
	fmt.Fprintf(w, "| Case | %s (ops/s) | %s (ops/s) | Ratio | %s p50 | %s p50 | %s p99 | %s p99 |\n", tn, rn, tn, rn, tn, rn)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rep.Results {
		t, f := medianMulti(r.Target), medianMulti(r.Reference)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.3f ms | %.3f ms | %.3f ms | %.3f ms |\n", r.Case,
			groupDigits(t.PerSec), groupDigits(f.PerSec), fmtRatio(t.PerSec, f.PerSec), t.P50Ms, f.P50Ms, t.P99Ms, f.P99Ms)
	}
	fmt.Fprintln(w, "\nThroughput per round:")
	fmt.Fprintln(w)
	for _, r := range rep.Results {
		fmt.Fprintf(w, "- %s: %s %s; %s %s\n", r.Case, tn, multiList(r.Target), rn, multiList(r.Reference))
	}
	fmt.Fprintf(w, "\nOps = transactions (one SET each) per second; p50/p99: round trip of one pipeline of %d. Ratio = %s / %s.\n", cfg.Pipeline, tn, rn)
}

func multiList(rs []MultiRun) string {
	var s []string
	for _, r := range rs {
		s = append(s, groupDigits(r.PerSec))
	}
	return strings.Join(s, " / ")
}

func cliMulti(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := DefaultMultiConfig()
	fs := flag.NewFlagSet("sluice-bench multi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pairFlags(fs, &c.Pair)
	fs.IntVar(&c.Clients, "c", c.Clients, "connections (as redis-benchmark -c)")
	fs.IntVar(&c.Pipeline, "P", c.Pipeline, "transactions per round trip (as redis-benchmark -P)")
	fs.IntVar(&c.Keyspace, "r", c.Keyspace, "random keys (as redis-benchmark -r)")
	fs.IntVar(&c.ValueSize, "d", c.ValueSize, "value size in bytes (as redis-benchmark -d)")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "measured length of one run")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds per case, interleaved target/reference; medians are reported")
	fs.BoolVar(&c.Plain, "plain", c.Plain, "also measure plain pipelined SET with the same driver")
	label := fs.String("label", "", "description of the machine for the report")
	asJSON := fs.Bool("json", false, "print the results as JSON instead of Markdown")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !*quiet {
		c.Log = stderr
	}
	rep, err := RunMulti(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "sluice-bench multi: %v\n", err)
		var ee *ExitError
		if errors.As(err, &ee) {
			return ee.Code
		}
		return 1
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return 1
		}
		return 0
	}
	rep.WriteMarkdown(stdout, *label)
	return 0
}
