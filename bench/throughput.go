package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ThroughputConfig describes one run of the throughput driver: Workers
// goroutines issue GET (with probability ReadRatio) or SET on random keys of
// a keyspace for Duration, through go-redis v9, optionally through its
// built-in autopipeliner.
type ThroughputConfig struct {
	Addr          string // host:port; comma-separated seed list in cluster mode
	Mode          string // "single" or "cluster"
	Workers       int
	Autopipeline  bool
	PipelineSize  int           // autopipeline: commands per pipeline (go-redis MaxBatchSize)
	PipelineDelay time.Duration // autopipeline: wait for more commands before a flush (MaxFlushDelay); 0 = flush as soon as the writer is free
	Duration      time.Duration
	ReadRatio     float64
	KeySize       int
	ValueSize     int
	Keyspace      int
	Prefill       bool // SET every key of the keyspace before the timed run
	PoolSize      int  // connections for the plain client; 0 = one per worker
	Protocol      int  // RESP version go-redis speaks (2 or 3)
	Password      string

	// Progress, when set, receives a live one-line progress report
	// (rewritten with \r) while the run goes on.
	Progress io.Writer
}

// DefaultThroughputConfig returns the defaults of `sluice-bench throughput`.
func DefaultThroughputConfig() ThroughputConfig {
	return ThroughputConfig{
		Addr:         "127.0.0.1:6379",
		Mode:         "single",
		Workers:      50,
		PipelineSize: 500,
		Duration:     5 * time.Second,
		ReadRatio:    0.5,
		KeySize:      16,
		ValueSize:    64,
		Keyspace:     100000,
		Prefill:      true,
		Protocol:     2,
	}
}

// ThroughputResult is what a run measured. Ops counts commands whose reply
// was read and was not an error; Errors counts the others (error replies and
// network failures). A GET of a missing key is a success.
type ThroughputResult struct {
	Workers       int     `json:"workers"`
	Autopipeline  bool    `json:"autopipeline"`
	PipelineSize  int     `json:"pipeline_size,omitempty"`
	PipelineDelay string  `json:"pipeline_delay,omitempty"`
	ReadRatio     float64 `json:"read_ratio"`
	DurationSec   float64 `json:"duration_s"`
	Ops           uint64  `json:"ops"`
	OpsPerSec     float64 `json:"ops_per_sec"`
	UsPerOp       float64 `json:"us_per_op"` // wall time per op across all workers: 1e6 / ops_per_sec
	AvgUs         float64 `json:"avg_us"`    // mean latency of one command as a worker saw it
	P50Us         float64 `json:"p50_us"`
	P95Us         float64 `json:"p95_us"`
	P99Us         float64 `json:"p99_us"`
	P999Us        float64 `json:"p999_us"`
	MaxUs         float64 `json:"max_us"`
	Errors        uint64  `json:"errors"`
	ErrorRate     float64 `json:"error_rate"`
	FirstError    string  `json:"first_error,omitempty"`

	hist *Histogram
}

// Measurement converts the result to the compare table's units.
func (r ThroughputResult) Measurement() Measurement {
	return Measurement{
		RPS:   r.OpsPerSec,
		AvgMs: r.AvgUs / 1000,
		P50Ms: r.P50Us / 1000,
		P95Ms: r.P95Us / 1000,
		P99Ms: r.P99Us / 1000,
		MaxMs: r.MaxUs / 1000,
	}
}

// kv is the part of go-redis the driver uses; *redis.Client,
// *redis.ClusterClient and *redis.AutoPipeliner all have it.
type kv interface {
	Get(ctx context.Context, key string) *redis.StringCmd
	Set(ctx context.Context, key string, value interface{}, expiration time.Duration) *redis.StatusCmd
}

func (c *ThroughputConfig) validate() error {
	switch {
	case c.Workers < 1:
		return errors.New("-workers must be at least 1")
	case c.Mode != "single" && c.Mode != "cluster":
		return fmt.Errorf("-mode must be single or cluster, not %q", c.Mode)
	case c.Autopipeline && c.PipelineSize < 1:
		return errors.New("-pipeline-size must be at least 1")
	case c.PipelineDelay < 0:
		return errors.New("-pipeline-delay must not be negative")
	case c.ReadRatio < 0 || c.ReadRatio > 1:
		return errors.New("-read-ratio must be within [0, 1]")
	case c.KeySize < 1 || c.ValueSize < 0:
		return errors.New("-key-size must be positive and -value-size not negative")
	case c.Keyspace < 1:
		return errors.New("-keyspace must be at least 1")
	case c.Duration <= 0:
		return errors.New("-duration must be positive")
	}
	return nil
}

// keys makes fixed-width key names: "k" + zero-padded index, KeySize bytes
// long (longer only when the keyspace needs more digits).
type keyGen struct {
	width int
	cache []string
}

func newKeyGen(size, keyspace int) *keyGen {
	g := &keyGen{width: size - 1}
	if d := len(strconv.Itoa(keyspace - 1)); g.width < d {
		g.width = d
	}
	if keyspace <= 1<<21 {
		g.cache = make([]string, keyspace)
		for i := range g.cache {
			g.cache[i] = g.make(i)
		}
	}
	return g
}

func (g *keyGen) make(i int) string {
	s := strconv.Itoa(i)
	return "k" + strings.Repeat("0", g.width-len(s)) + s
}

func (g *keyGen) key(i int) string {
	if g.cache != nil {
		return g.cache[i]
	}
	return g.make(i)
}

func randomValue(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

type clients struct {
	close func() error
	plain kv // for prefill
	pipe  func() redis.Pipeliner
	kv    kv // what workers use
}

func (c *ThroughputConfig) connect() (*clients, error) {
	pool := c.PoolSize
	if pool <= 0 {
		pool = c.Workers
	}
	apOpts := &redis.AutoPipelineOptions{MaxBatchSize: c.PipelineSize, MaxFlushDelay: c.PipelineDelay}
	out := &clients{}
	if c.Mode == "cluster" {
		cc := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: strings.Split(c.Addr, ","), Password: c.Password, Protocol: c.Protocol,
			PoolSize: pool, DisableIdentity: true,
		})
		out.close, out.plain, out.pipe, out.kv = cc.Close, cc, cc.Pipeline, cc
		if c.Autopipeline {
			ap, err := cc.AutoPipelineWithOptions(apOpts)
			if err != nil {
				cc.Close()
				return nil, err
			}
			out.kv = ap
		}
		return out, nil
	}
	cl := redis.NewClient(&redis.Options{
		Addr: c.Addr, Password: c.Password, Protocol: c.Protocol,
		PoolSize: pool, DisableIdentity: true,
	})
	out.close, out.plain, out.pipe, out.kv = cl.Close, cl, cl.Pipeline, cl
	if c.Autopipeline {
		ap, err := cl.AutoPipelineWithOptions(apOpts)
		if err != nil {
			cl.Close()
			return nil, err
		}
		out.kv = ap
	}
	return out, nil
}

// paddedCounter keeps each worker's live counters on their own cache line.
type paddedCounter struct {
	ops, errs atomic.Uint64
	_         [48]byte
}

// RunThroughput runs the driver once.
func RunThroughput(ctx context.Context, cfg ThroughputConfig) (ThroughputResult, error) {
	if err := cfg.validate(); err != nil {
		return ThroughputResult{}, err
	}
	first := strings.Split(cfg.Addr, ",")[0]
	conn, err := net.DialTimeout("tcp", first, 2*time.Second)
	if err != nil {
		return ThroughputResult{}, err
	}
	conn.Close()
	cl, err := cfg.connect()
	if err != nil {
		return ThroughputResult{}, err
	}
	defer cl.close()
	keys := newKeyGen(cfg.KeySize, cfg.Keyspace)
	value := randomValue(cfg.ValueSize)

	// Fail early and clearly when nothing answers.
	if err := cl.plain.Set(ctx, keys.key(0), value, 0).Err(); err != nil {
		return ThroughputResult{}, fmt.Errorf("%s: %w", cfg.Addr, err)
	}
	if cfg.Prefill {
		if err := prefill(ctx, cl, keys, cfg.Keyspace, value); err != nil {
			return ThroughputResult{}, fmt.Errorf("prefill: %w", err)
		}
	}

	var (
		stop     atomic.Bool
		counters = make([]paddedCounter, cfg.Workers)
		hists    = make([]*Histogram, cfg.Workers)
		firstErr atomic.Value
		wg       sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < cfg.Workers; w++ {
		hists[w] = new(Histogram)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			h, ctr := hists[w], &counters[w]
			rnd := rand.New(rand.NewPCG(uint64(w)+1, uint64(start.UnixNano())))
			for !stop.Load() && ctx.Err() == nil {
				k := keys.key(rnd.IntN(cfg.Keyspace))
				t0 := time.Now()
				var err error
				if rnd.Float64() < cfg.ReadRatio {
					err = cl.kv.Get(ctx, k).Err()
					if err == redis.Nil {
						err = nil
					}
				} else {
					err = cl.kv.Set(ctx, k, value, 0).Err()
				}
				if err != nil {
					ctr.errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					if !isReplyError(err) {
						time.Sleep(time.Millisecond) // don't spin on a dead connection
					}
					continue
				}
				h.Record(time.Since(t0))
				ctr.ops.Add(1)
			}
		}(w)
	}

	sum := func() (ops, errs uint64) {
		for i := range counters {
			ops += counters[i].ops.Load()
			errs += counters[i].errs.Load()
		}
		return
	}
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if cfg.Progress != nil {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			lastOps, lastT := uint64(0), start
			for {
				select {
				case <-progressDone:
					fmt.Fprintf(cfg.Progress, "\r%-78s\r", "")
					return
				case now := <-t.C:
					ops, errs := sum()
					rate := float64(ops-lastOps) / now.Sub(lastT).Seconds()
					lastOps, lastT = ops, now
					fmt.Fprintf(cfg.Progress, "\r[%5.1fs/%.1fs] %12s ops  %10s ops/s  errors %d   ",
						now.Sub(start).Seconds(), cfg.Duration.Seconds(), groupDigits(float64(ops)), groupDigits(rate), errs)
				}
			}
		}()
	}

	select {
	case <-time.After(cfg.Duration):
	case <-ctx.Done():
	}
	stop.Store(true)
	wg.Wait() // in-flight commands finish: their time is part of the timed region
	elapsed := time.Since(start)
	close(progressDone)
	progressWG.Wait()

	h := new(Histogram)
	for _, x := range hists {
		h.Merge(x)
	}
	ops, errs := sum()
	res := ThroughputResult{
		Workers:      cfg.Workers,
		Autopipeline: cfg.Autopipeline,
		ReadRatio:    cfg.ReadRatio,
		DurationSec:  elapsed.Seconds(),
		Ops:          ops,
		Errors:       errs,
		hist:         h,
	}
	if cfg.Autopipeline {
		res.PipelineSize = cfg.PipelineSize
		res.PipelineDelay = cfg.PipelineDelay.String()
	}
	res.OpsPerSec = float64(ops) / elapsed.Seconds()
	if ops > 0 {
		res.UsPerOp = 1e6 / res.OpsPerSec
	}
	if ops+errs > 0 {
		res.ErrorRate = float64(errs) / float64(ops+errs)
	}
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	res.AvgUs = us(h.Mean())
	res.P50Us = us(h.Percentile(50))
	res.P95Us = us(h.Percentile(95))
	res.P99Us = us(h.Percentile(99))
	res.P999Us = us(h.Percentile(99.9))
	res.MaxUs = us(h.Max())
	if s, ok := firstErr.Load().(string); ok {
		res.FirstError = s
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

func prefill(ctx context.Context, cl *clients, keys *keyGen, n int, value string) error {
	const chunk = 1000
	for i := 0; i < n; i += chunk {
		p := cl.pipe()
		for j := i; j < i+chunk && j < n; j++ {
			p.Set(ctx, keys.key(j), value, 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// groupDigits formats x rounded to an integer with thousands separators.
func groupDigits(x float64) string {
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Summary is the human-readable end-of-run report.
func (r ThroughputResult) Summary() string {
	var b strings.Builder
	mode := "no autopipeline"
	if r.Autopipeline {
		mode = fmt.Sprintf("autopipeline (size=%d, delay=%s)", r.PipelineSize, r.PipelineDelay)
	}
	fmt.Fprintf(&b, "workers=%d  %s  reads=%.0f%%  %.2fs\n", r.Workers, mode, r.ReadRatio*100, r.DurationSec)
	fmt.Fprintf(&b, "Throughput: %s ops/sec\n", groupDigits(r.OpsPerSec))
	fmt.Fprintf(&b, "Latency:    %.2f µs/op (wall time per op, all workers)\n", r.UsPerOp)
	fmt.Fprintf(&b, "Per command: avg %.1f µs  p50 %.1f µs  p99 %.1f µs  p999 %.1f µs  max %.1f µs\n",
		r.AvgUs, r.P50Us, r.P99Us, r.P999Us, r.MaxUs)
	fmt.Fprintf(&b, "Errors:     %d (%.2f%%)", r.Errors, r.ErrorRate*100)
	if r.FirstError != "" {
		fmt.Fprintf(&b, "  first: %s", r.FirstError)
	}
	b.WriteByte('\n')
	return b.String()
}
