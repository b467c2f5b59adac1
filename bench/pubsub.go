package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// PubSubConfig drives `sluice-bench pubsub`: PUBLISH fan-out to 1, 10 and
// 100 subscribers of one channel, deliveries per second, target and
// reference side by side.
type PubSubConfig struct {
	Pair        PairConfig
	Subscribers []int         // subscriber counts, one case each
	Publishers  int           // publishing connections
	Pipeline    int           // PUBLISH commands per round trip of a publisher
	Payload     int           // message size in bytes
	Duration    time.Duration // measured time of one run (after a short warm-up)
	Rounds      int           // interleaved rounds per case; medians are reported
	// MaxLag bounds the messages published but not yet read, per
	// subscriber: publishers wait beyond it, so output buffers stay small
	// and far below client-output-buffer-limit on both servers.
	MaxLag int
	Log    io.Writer `json:"-"`
}

// DefaultPubSubConfig returns pubsub's defaults.
func DefaultPubSubConfig() PubSubConfig {
	return PubSubConfig{Pair: defaultPair(), Subscribers: []int{1, 10, 100}, Publishers: 2, Pipeline: 32,
		Payload: 64, Duration: 2 * time.Second, Rounds: 3, MaxLag: 1000}
}

// PubSubRun is one run against one server.
type PubSubRun struct {
	Deliveries float64 `json:"deliveries_per_sec"` // messages read by all subscribers per second
	Publishes  float64 `json:"publishes_per_sec"`  // PUBLISH replies per second
}

// PubSubResult is one subscriber count, both servers, every round.
type PubSubResult struct {
	Subscribers int         `json:"subscribers"`
	Target      []PubSubRun `json:"target"`
	Reference   []PubSubRun `json:"reference"`
}

func medianRun(rs []PubSubRun) PubSubRun {
	var d, p []float64
	for _, r := range rs {
		d = append(d, r.Deliveries)
		p = append(p, r.Publishes)
	}
	return PubSubRun{Deliveries: Median(d), Publishes: Median(p)}
}

// PubSubReport is the whole comparison.
type PubSubReport struct {
	Config  PubSubConfig
	Results []PubSubResult
	Env     map[string]string
}

// RunPubSub measures every subscriber count on both servers, rounds
// interleaved (target, reference, target, ...).
func RunPubSub(ctx context.Context, cfg PubSubConfig) (*PubSubReport, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Rounds < 1 || cfg.Publishers < 1 || cfg.Pipeline < 1 || cfg.Duration <= 0 || cfg.MaxLag < 1 {
		return nil, errors.New("-rounds, -publishers, -pipeline, -max-lag and -duration must be positive")
	}
	cfg.Pair.Log = cfg.Log
	target, ref, stop, err := StartPair(ctx, cfg.Pair)
	if err != nil {
		return nil, err
	}
	defer stop()
	rep := &PubSubReport{Config: cfg, Env: map[string]string{
		"target": target, "reference": ref,
		"target_version":    ServerInfo(target)["redis_version"],
		"reference_version": ServerInfo(ref)["redis_version"],
	}}
	for _, n := range cfg.Subscribers {
		res := PubSubResult{Subscribers: n}
		for r := 0; r < cfg.Rounds; r++ {
			for i, addr := range []string{target, ref} {
				run, err := PubSubOnce(ctx, addr, n, cfg)
				if err != nil {
					return rep, fmt.Errorf("%d subscribers on %s: %w", n, addr, err)
				}
				name := cfg.Pair.TargetName
				if i == 0 {
					res.Target = append(res.Target, run)
				} else {
					name = cfg.Pair.ReferenceName
					res.Reference = append(res.Reference, run)
				}
				fmt.Fprintf(cfg.Log, "subscribers=%d round %d %s: %s deliveries/s, %s PUBLISH/s\n",
					n, r+1, name, groupDigits(run.Deliveries), groupDigits(run.Publishes))
			}
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// pubsubChannel is the channel every run publishes to.
const pubsubChannel = "sluice-bench:pubsub"

func respCommand(args ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// PubSubOnce runs one measurement: n raw subscriber connections read as
// fast as they can; Publishers connections send pipelined PUBLISHes.
// Every message has the same size, so a subscriber counts bytes.
func PubSubOnce(ctx context.Context, addr string, n int, cfg PubSubConfig) (PubSubRun, error) {
	payload := strings.Repeat("x", cfg.Payload)
	message := []byte("*3\r\n" + bulk("message") + bulk(pubsubChannel) + bulk(payload))
	confirm := []byte("*3\r\n" + bulk("subscribe") + bulk(pubsubChannel) + ":1\r\n")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var conns []net.Conn
	var cmu sync.Mutex
	track := func(c net.Conn) { cmu.Lock(); conns = append(conns, c); cmu.Unlock() }
	defer func() {
		cmu.Lock()
		for _, c := range conns {
			c.Close()
		}
		cmu.Unlock()
	}()
	go func() {
		<-ctx.Done()
		cmu.Lock()
		for _, c := range conns {
			c.SetDeadline(time.Now())
		}
		cmu.Unlock()
	}()

	var received atomic.Int64 // bytes of messages, all subscribers
	var wg sync.WaitGroup
	errc := make(chan error, n+cfg.Publishers)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
		cancel()
	}
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return PubSubRun{}, err
		}
		track(c)
		if _, err := c.Write(respCommand("SUBSCRIBE", pubsubChannel)); err != nil {
			return PubSubRun{}, err
		}
		got := make([]byte, len(confirm))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c, got); err != nil {
			return PubSubRun{}, fmt.Errorf("SUBSCRIBE: %w", err)
		}
		if !bytes.Equal(got, confirm) {
			return PubSubRun{}, fmt.Errorf("SUBSCRIBE replied %q", got)
		}
		c.SetReadDeadline(time.Time{})
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			// The first message is checked byte for byte.
			first := make([]byte, 0, len(message))
			for {
				k, err := c.Read(buf)
				if k > 0 {
					if len(first) < len(message) {
						take := min(k, len(message)-len(first))
						first = append(first, buf[:take]...)
						if len(first) == len(message) && !bytes.Equal(first, message) {
							fail(fmt.Errorf("subscriber got %q, want %q", first, message))
							return
						}
					}
					received.Add(int64(k))
				}
				if err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("subscriber: %w", err))
					}
					return
				}
			}
		}(c)
	}
	if n > 0 {
		line, err := RawCommand(addr, 5*time.Second, "PUBSUB", "NUMSUB", pubsubChannel)
		if err != nil || line != "*2" {
			return PubSubRun{}, fmt.Errorf("PUBSUB NUMSUB: %q %v", line, err)
		}
	}

	var expected, published atomic.Int64 // deliveries promised by PUBLISH replies; PUBLISH replies
	delivered := func() int64 { return received.Load() / int64(len(message)) }
	maxLag := int64(cfg.MaxLag * max(n, 1))
	batch := bytes.Repeat(respCommand("PUBLISH", pubsubChannel, payload), cfg.Pipeline)
	for p := 0; p < cfg.Publishers; p++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return PubSubRun{}, err
		}
		track(c)
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			r := bufio.NewReaderSize(c, 16<<10)
			for ctx.Err() == nil {
				for expected.Load()-delivered() > maxLag {
					if ctx.Err() != nil {
						return
					}
					time.Sleep(50 * time.Microsecond)
				}
				if _, err := c.Write(batch); err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("publisher: %w", err))
					}
					return
				}
				var sum int64
				for i := 0; i < cfg.Pipeline; i++ {
					line, err := r.ReadSlice('\n')
					if err != nil {
						if ctx.Err() == nil {
							fail(fmt.Errorf("publisher: %w", err))
						}
						return
					}
					if len(line) < 4 || line[0] != ':' {
						fail(fmt.Errorf("PUBLISH replied %q", line))
						return
					}
					k, err := strconv.ParseInt(string(line[1:len(line)-2]), 10, 64)
					if err != nil || k != int64(n) {
						fail(fmt.Errorf("PUBLISH replied %q, want :%d", line, n))
						return
					}
					sum += k
				}
				expected.Add(sum)
				published.Add(int64(cfg.Pipeline))
			}
		}(c)
	}

	warm := min(cfg.Duration/4, 500*time.Millisecond)
	select {
	case <-time.After(warm):
	case <-ctx.Done():
	}
	d0, p0, t0 := delivered(), published.Load(), time.Now()
	select {
	case <-time.After(cfg.Duration):
	case <-ctx.Done():
	}
	d1, p1, t1 := delivered(), published.Load(), time.Now()
	cancel()
	wg.Wait()
	select {
	case err := <-errc:
		return PubSubRun{}, err
	default:
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return PubSubRun{}, err
	}
	secs := t1.Sub(t0).Seconds()
	return PubSubRun{Deliveries: float64(d1-d0) / secs, Publishes: float64(p1-p0) / secs}, nil
}

// WriteMarkdown writes the ratio table and the per-round numbers.
func (rep *PubSubReport) WriteMarkdown(w io.Writer, label string) {
	cfg := rep.Config
	tn, rn := cfg.Pair.TargetName, cfg.Pair.ReferenceName
	fmt.Fprintf(w, "## PUBLISH fan-out: %s vs %s\n\n", tn, rn)
	if label != "" {
		fmt.Fprintf(w, "> **Machine:** %s\n", label)
	}
	fmt.Fprintf(w, "> %d publisher connection(s), %d PUBLISH per round trip, %d-byte messages, one channel; "+
		"runs of %s, %d rounds interleaved, medians. %s %s, %s %s.\n\n",
		cfg.Publishers, cfg.Pipeline, cfg.Payload, cfg.Duration, cfg.Rounds,
		tn, orDash(rep.Env["target_version"]), rn, orDash(rep.Env["reference_version"]))
	fmt.Fprintf(w, "| Subscribers | %s deliveries/s | %s deliveries/s | Ratio | %s PUBLISH/s | %s PUBLISH/s |\n", tn, rn, tn, rn)
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|")
	for _, r := range rep.Results {
		t, f := medianRun(r.Target), medianRun(r.Reference)
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s |\n", r.Subscribers, groupDigits(t.Deliveries), groupDigits(f.Deliveries),
			fmtRatio(t.Deliveries, f.Deliveries), groupDigits(t.Publishes), groupDigits(f.Publishes))
	}
	fmt.Fprintln(w, "\nDeliveries per round:")
	fmt.Fprintln(w)
	for _, r := range rep.Results {
		fmt.Fprintf(w, "- %d subscriber(s): %s %s; %s %s\n", r.Subscribers, tn, runList(r.Target), rn, runList(r.Reference))
	}
	fmt.Fprintf(w, "\nRatio = %s / %s deliveries per second.\n", tn, rn)
}

func runList(rs []PubSubRun) string {
	var s []string
	for _, r := range rs {
		s = append(s, groupDigits(r.Deliveries))
	}
	return strings.Join(s, " / ")
}

func cliPubSub(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := DefaultPubSubConfig()
	fs := flag.NewFlagSet("sluice-bench pubsub", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pairFlags(fs, &c.Pair)
	subs := fs.String("subscribers", "1,10,100", "subscriber counts to measure (comma-separated)")
	fs.IntVar(&c.Publishers, "publishers", c.Publishers, "publishing connections")
	fs.IntVar(&c.Pipeline, "pipeline", c.Pipeline, "PUBLISH commands per round trip of a publisher")
	fs.IntVar(&c.Payload, "payload", c.Payload, "message size in bytes")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "measured length of one run")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds per subscriber count, interleaved target/reference; medians are reported")
	fs.IntVar(&c.MaxLag, "max-lag", c.MaxLag, "messages per subscriber published but not yet read before publishers wait")
	label := fs.String("label", "", "description of the machine for the report")
	asJSON := fs.Bool("json", false, "print the results as JSON instead of Markdown")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	slow := fs.Bool("slow-subscriber", false, "instead: publish -slow-bytes to a subscriber that never reads; report disconnection and RSS")
	sc := DefaultSlowSubConfig()
	fs.Int64Var(&sc.PublishBytes, "slow-bytes", sc.PublishBytes, "-slow-subscriber: bytes to publish")
	fs.DurationVar(&sc.Settle, "slow-settle", 15*time.Second, "-slow-subscriber: how long RSS may take to come back")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *slow {
		if !*quiet {
			sc.Log = stderr
		}
		if err := RunSlowSubscriber(ctx, c.Pair, sc, stdout); err != nil {
			fmt.Fprintf(stderr, "sluice-bench pubsub: %v\n", err)
			var ee *ExitError
			if errors.As(err, &ee) {
				return ee.Code
			}
			return 1
		}
		return 0
	}
	var err error
	if c.Subscribers, err = ParseInts(*subs); err != nil {
		fmt.Fprintf(stderr, "-subscribers: %v\n", err)
		return 2
	}
	if !*quiet {
		c.Log = stderr
	}
	rep, err := RunPubSub(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "sluice-bench pubsub: %v\n", err)
		var ee *ExitError
		if errors.As(err, &ee) {
			return ee.Code
		}
		return 1
	}
	if *asJSON {
		rep.Config.Log, rep.Config.Pair.Log = nil, nil
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return 1
		}
		return 0
	}
	rep.WriteMarkdown(stdout, *label)
	return 0
}
