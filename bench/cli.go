package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

type silentLogger struct{}

func (silentLogger) Printf(context.Context, string, ...interface{}) {}

const usage = `usage: sluice-bench <command> [flags]

Commands:
  throughput   drive one server with go-redis workers (GET/SET mix), optionally autopipelined
  sweetspot    sweep workers × pipeline size × pipeline delay and report the best configuration
  compare      run redis-benchmark against Sluice and Redis side by side; write CSV, Markdown and charts
  pubsub       PUBLISH fan-out to 1, 10, 100 subscribers, deliveries/s, Sluice and Redis side by side
  multi        pipelined MULTI/SET/EXEC transactions (-P 16, 50 connections), Sluice and Redis side by side
  snapshot     a client's longest wait during BGSAVE (or BGREWRITEAOF), Sluice and Redis side by side

Run "sluice-bench <command> -h" for the command's flags.
Exit status: 0 ok, 1 failure, 2 bad usage, 3 a required tool (redis-benchmark, redis-server) is missing.
`

// CLI runs sluice-bench with args (without the program name) and returns
// the exit status.
func CLI(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	// go-redis logs every failed dial of every pooled connection; the
	// driver reports errors itself (count, rate and the first one).
	redis.SetLogger(silentLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "throughput":
		return cliThroughput(ctx, args[1:], stdout, stderr)
	case "sweetspot":
		return cliSweetSpot(ctx, args[1:], stdout, stderr)
	case "compare":
		return cliCompare(ctx, args[1:], stdout, stderr)
	case "pubsub":
		return cliPubSub(ctx, args[1:], stdout, stderr)
	case "multi":
		return cliMulti(ctx, args[1:], stdout, stderr)
	case "snapshot":
		return cliSnapshot(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice-bench: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// workloadFlags registers the flags throughput and sweetspot share.
func workloadFlags(fs *flag.FlagSet, c *ThroughputConfig) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "server address host:port (cluster mode: comma-separated seed nodes)")
	fs.StringVar(&c.Mode, "mode", c.Mode, "client mode: single or cluster")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long each run lasts")
	fs.Float64Var(&c.ReadRatio, "read-ratio", c.ReadRatio, "fraction of commands that are GET (the rest are SET)")
	fs.IntVar(&c.KeySize, "key-size", c.KeySize, "key length in bytes")
	fs.IntVar(&c.ValueSize, "value-size", c.ValueSize, "value length in bytes")
	fs.IntVar(&c.Keyspace, "keyspace", c.Keyspace, "number of distinct keys")
	fs.BoolVar(&c.Prefill, "prefill", c.Prefill, "SET every key of the keyspace before measuring (so GETs hit)")
	fs.IntVar(&c.PoolSize, "pool-size", c.PoolSize, "go-redis connection pool size without autopipelining (0 = one per worker)")
	fs.IntVar(&c.Protocol, "protocol", c.Protocol, "RESP protocol version go-redis uses (2 or 3)")
	fs.StringVar(&c.Password, "password", c.Password, "AUTH password")
}

func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %v\n", fs.Args())
		return 2, false
	}
	return 0, true
}

func cliThroughput(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := DefaultThroughputConfig()
	fs := flag.NewFlagSet("sluice-bench throughput", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workloadFlags(fs, &c)
	fs.IntVar(&c.Workers, "workers", c.Workers, "concurrent goroutines issuing commands")
	fs.BoolVar(&c.Autopipeline, "autopipeline", false, "batch concurrent commands into pipelines (go-redis autopipelining)")
	fs.IntVar(&c.PipelineSize, "pipeline-size", c.PipelineSize, "autopipeline: commands per pipeline")
	fs.DurationVar(&c.PipelineDelay, "pipeline-delay", 0, "autopipeline: how long to wait for more commands before a flush (0 = as soon as the writer is free)")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout instead of the text summary")
	quiet := fs.Bool("quiet", false, "no live progress line on stderr")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !*quiet {
		c.Progress = stderr
	}
	res, err := RunThroughput(ctx, c)
	if err != nil && !(errors.Is(err, context.Canceled) && res.Ops > 0) {
		fmt.Fprintf(stderr, "sluice-bench throughput: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(res); err != nil {
			return 1
		}
	} else {
		fmt.Fprint(stdout, res.Summary())
	}
	return 0
}

func cliSweetSpot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := SweetSpotConfig{Base: DefaultThroughputConfig()}
	cfg.Base.Duration = 3 * time.Second
	fs := flag.NewFlagSet("sluice-bench sweetspot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workloadFlags(fs, &cfg.Base)
	workers := fs.String("workers", "10,50,100,300", "worker counts to try (comma-separated)")
	sizes := fs.String("pipeline-sizes", "100,500,1000", "autopipeline sizes to try")
	delays := fs.String("pipeline-delays", "0,100us", "autopipeline delays to try (0 = flush as soon as the writer is free)")
	asJSON := fs.Bool("json", false, "print the sweep as one JSON object on stdout")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	var err error
	if cfg.Workers, err = ParseInts(*workers); err != nil {
		fmt.Fprintf(stderr, "-workers: %v\n", err)
		return 2
	}
	if cfg.Sizes, err = ParseInts(*sizes); err != nil {
		fmt.Fprintf(stderr, "-pipeline-sizes: %v\n", err)
		return 2
	}
	if cfg.Delays, err = ParseDurations(*delays); err != nil {
		fmt.Fprintf(stderr, "-pipeline-delays: %v\n", err)
		return 2
	}
	if !*quiet {
		cfg.Log = stderr
	}
	rep, err := RunSweetSpot(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sluice-bench sweetspot: %v\n", err)
		if len(rep.Rows) == 0 {
			return 1
		}
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return 1
		}
	} else {
		rep.Write(stdout)
	}
	if err != nil {
		return 1
	}
	return 0
}

func cliCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := DefaultCompareConfig()
	fs := flag.NewFlagSet("sluice-bench compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Target, "target", "", "address of the server under test (default: build sluice-server from this tree and start it)")
	fs.StringVar(&c.Reference, "reference", "", "address of the reference server (default: start redis-server from PATH)")
	fs.StringVar(&c.TargetName, "target-name", c.TargetName, "name of the target in the report")
	fs.StringVar(&c.ReferenceName, "reference-name", c.ReferenceName, "name of the reference in the report")
	fs.StringVar(&c.SluiceBin, "sluice-bin", "", "prebuilt sluice-server binary to start instead of building one")
	fs.StringVar(&c.RedisServer, "redis-server", "", "redis-server binary (default: from PATH)")
	fs.StringVar(&c.Benchmark, "redis-benchmark", "", "redis-benchmark binary (default: from PATH)")
	fs.StringVar(&c.Suite, "suite", c.Suite, "default, concurrency, value-size, pipeline, mixed, commands or all (comma-separated list allowed)")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds per case, interleaved target/reference; medians are reported")
	fs.Float64Var(&c.Seconds, "seconds", c.Seconds, "approximate length of one run of one test, seconds (sets redis-benchmark -n)")
	fs.IntVar(&c.Keyspace, "keyspace", c.Keyspace, "redis-benchmark -r (random keys)")
	fs.StringVar(&c.Out, "out", c.Out, "output directory for results.csv, rounds.csv, report.md and the charts")
	fs.StringVar(&c.Label, "label", "", "description of the machine for the report (e.g. \"2-core shared VM\")")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !*quiet {
		c.Log = stderr
	}
	rep, err := Compare(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "sluice-bench compare: %v\n", err)
		var ee *ExitError
		if errors.As(err, &ee) {
			return ee.Code
		}
		return 1
	}
	abs, _ := filepath.Abs(c.Out)
	fmt.Fprintf(stdout, "wrote %s:", abs)
	for _, a := range rep.Artifacts {
		fmt.Fprintf(stdout, " %s", a)
	}
	fmt.Fprintln(stdout)
	if len(rep.Failures) > 0 {
		fmt.Fprintf(stdout, "%d run(s) failed; see report.md\n", len(rep.Failures))
		return 1
	}
	return 0
}
