package bench

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SnapshotConfig drives `sluice-bench snapshot`: how long a client waits
// while the server takes a snapshot (BGSAVE, or BGREWRITEAOF), Sluice and
// redis-server side by side. Both servers are loaded with the same
// dataset; then, in interleaved rounds, a probe connection sends GETs one
// at a time while the other connection starts the snapshot and waits for
// it to end, and the probe's longest wait is recorded, along with a quiet
// window of the same length with no snapshot (the noise floor) and INFO's
// latest_fork_usec (Redis's fork; Sluice's cut).
type SnapshotConfig struct {
	SluiceBin   string // prebuilt sluice-server (default: build from SourceDir)
	RedisServer string // redis-server binary (default: from PATH)
	SourceDir   string
	Dataset     string // "strings" or "collections"
	Keys        int    // strings: keys; collections: keys of each type
	Elements    int    // collections: elements per key
	Rounds      int
	Command     string    // "bgsave" or "bgrewriteaof"
	Log         io.Writer `json:"-"`
}

// DefaultSnapshotConfig returns snapshot's defaults: 1,000,000 small
// strings, 3 rounds of BGSAVE.
func DefaultSnapshotConfig() SnapshotConfig {
	return SnapshotConfig{Dataset: "strings", Keys: 1_000_000, Elements: 100, Rounds: 3, Command: "bgsave"}
}

// SnapshotRun is one snapshot of one server.
type SnapshotRun struct {
	Server   string        `json:"server"`
	Round    int           `json:"round"`
	MaxWait  time.Duration `json:"max_wait_ns"`  // the probe's longest GET during the snapshot
	P99      time.Duration `json:"p99_ns"`       // its 99th percentile
	Probes   int           `json:"probes"`       // GETs answered during the snapshot
	QuietMax time.Duration `json:"quiet_max_ns"` // longest GET in as long a window without a snapshot
	ForkUsec int64         `json:"fork_usec"`    // INFO latest_fork_usec after it
	Took     time.Duration `json:"took_ns"`      // from the command to the end of the snapshot
}

// RunSnapshot runs the comparison and returns every run, in order.
func RunSnapshot(ctx context.Context, cfg SnapshotConfig) ([]SnapshotRun, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	tmp, err := os.MkdirTemp("", "sluice-bench-snapshot-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rbin := cfg.RedisServer
	if rbin == "" {
		rbin = "redis-server"
	}
	if rbin, err = lookTool(rbin, errNoRedisServer); err != nil {
		return nil, &ExitError{Code: 3, Err: err}
	}
	sbin := cfg.SluiceBin
	if sbin == "" {
		src := cfg.SourceDir
		if src == "" {
			src = "."
		}
		root, err := ModuleRoot(src)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(cfg.Log, "building sluice-server from %s ...\n", root)
		if sbin, err = BuildSluice(ctx, root, tmp); err != nil {
			return nil, err
		}
	}
	type server struct {
		name string
		p    *Process
	}
	var servers []server
	defer func() {
		for _, s := range servers {
			s.p.Stop()
		}
	}()
	for _, s := range []struct{ name, bin string }{{"Sluice", sbin}, {"Redis", rbin}} {
		dir := filepath.Join(tmp, s.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		p, err := StartServer(s.name, s.bin, filepath.Join(tmp, s.name+".log"), "--dir", dir)
		if err != nil {
			return nil, err
		}
		servers = append(servers, server{s.name, p})
		fmt.Fprintf(cfg.Log, "started %s (%s) on %s; loading %s ...\n", s.name, s.bin, p.Addr, cfg.Dataset)
		if err := loadSnapshotData(p.Addr, cfg); err != nil {
			return nil, fmt.Errorf("%s: loading: %w", s.name, err)
		}
	}
	var runs []SnapshotRun
	for round := 1; round <= cfg.Rounds; round++ {
		for _, s := range servers {
			if err := ctx.Err(); err != nil {
				return runs, err
			}
			r, err := snapshotRound(s.p.Addr, cfg.Command)
			if err != nil {
				return runs, fmt.Errorf("%s: %w", s.name, err)
			}
			r.Server, r.Round = s.name, round
			fmt.Fprintf(cfg.Log, "%s round %d: longest wait %v (p99 %v, %d GETs), quiet %v, fork/cut %d µs, %v\n",
				s.name, round, r.MaxWait, r.P99, r.Probes, r.QuietMax, r.ForkUsec, r.Took.Round(time.Millisecond))
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// loadSnapshotData fills a server with the dataset, pipelined.
func loadSnapshotData(addr string, cfg SnapshotConfig) error {
	c, err := newRawConn(addr)
	if err != nil {
		return err
	}
	defer c.close()
	const perCmd, inFlight = 100, 64
	var cmds [][]string
	flush := func() error {
		for _, cmd := range cmds {
			c.send(cmd...)
		}
		for range cmds {
			line, err := c.readReply()
			if err != nil {
				return err
			}
			if strings.HasPrefix(line, "-") {
				return errors.New(line)
			}
		}
		cmds = cmds[:0]
		return nil
	}
	add := func(cmd []string) error {
		cmds = append(cmds, cmd)
		if len(cmds) == inFlight {
			return flush()
		}
		return nil
	}
	switch cfg.Dataset {
	case "strings":
		for i := 0; i < cfg.Keys; i += perCmd {
			cmd := []string{"MSET"}
			for j := i; j < min(i+perCmd, cfg.Keys); j++ {
				cmd = append(cmd, "key:"+strconv.Itoa(j), "value:"+strconv.Itoa(j))
			}
			if err := add(cmd); err != nil {
				return err
			}
		}
	case "collections":
		for i := range cfg.Keys {
			is := strconv.Itoa(i)
			h, l, z := []string{"HSET", "h:" + is}, []string{"RPUSH", "l:" + is}, []string{"ZADD", "z:" + is}
			for j := range cfg.Elements {
				js := strconv.Itoa(j)
				h = append(h, "f"+js, "v"+js)
				l = append(l, "element"+js)
				z = append(z, js, "m"+js)
			}
			for _, cmd := range [][]string{h, l, z} {
				if err := add(cmd); err != nil {
					return err
				}
			}
		}
	default:
		return fmt.Errorf("unknown dataset %q (strings or collections)", cfg.Dataset)
	}
	return flush()
}

// snapshotRound measures one snapshot of the server at addr.
func snapshotRound(addr, command string) (SnapshotRun, error) {
	var r SnapshotRun
	ctl, err := newRawConn(addr)
	if err != nil {
		return r, err
	}
	defer ctl.close()
	probe, err := newRawConn(addr)
	if err != nil {
		return r, err
	}
	defer probe.close()
	progress := "rdb_bgsave_in_progress:1"
	if command == "bgrewriteaof" {
		progress = "aof_rewrite_in_progress:1"
	}
	// Nothing else may run first (an automatic save, a rewrite).
	for {
		info, err := ctl.info()
		if err != nil {
			return r, err
		}
		if !strings.Contains(info, "rdb_bgsave_in_progress:1") && !strings.Contains(info, "aof_rewrite_in_progress:1") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	done := make(chan struct{})
	type result struct {
		lat []time.Duration
		err error
	}
	probing := func() <-chan result {
		out := make(chan result, 1)
		go func() {
			var lat []time.Duration
			for {
				select {
				case <-done:
					out <- result{lat, nil}
					return
				default:
				}
				t := time.Now()
				probe.send("GET", "key:1")
				if _, err := probe.readReply(); err != nil {
					out <- result{lat, err}
					return
				}
				lat = append(lat, time.Since(t))
			}
		}()
		return out
	}
	res := probing()
	time.Sleep(100 * time.Millisecond) // the probe is running before the snapshot starts
	start := time.Now()
	ctl.send(strings.ToUpper(command))
	line, err := ctl.readReply()
	if err != nil {
		close(done)
		return r, err
	}
	if strings.HasPrefix(line, "-") {
		close(done)
		return r, fmt.Errorf("%s: %s", command, line)
	}
	for {
		info, err := ctl.info()
		if err != nil {
			close(done)
			return r, err
		}
		if !strings.Contains(info, progress) {
			r.ForkUsec, _ = strconv.ParseInt(infoField(info, "latest_fork_usec"), 10, 64)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.Took = time.Since(start)
	close(done)
	got := <-res
	if got.err != nil {
		return r, got.err
	}
	r.MaxWait, r.P99, r.Probes = maxP99(got.lat)
	// As long a window with no snapshot: what the probe sees anyway.
	done = make(chan struct{})
	res = probing()
	time.Sleep(r.Took)
	close(done)
	got = <-res
	if got.err != nil {
		return r, got.err
	}
	r.QuietMax, _, _ = maxP99(got.lat)
	return r, nil
}

func maxP99(lat []time.Duration) (mx, p99 time.Duration, n int) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[len(s)-1], s[len(s)*99/100], len(s)
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// rawConn is a plain RESP connection.
type rawConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func newRawConn(addr string) (*rawConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &rawConn{c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 64<<10)}, nil
}

func (c *rawConn) close() { c.c.Close() }

// send writes a command; the next readReply flushes it.
func (c *rawConn) send(args ...string) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// readReply reads one reply and returns its first line (bulk strings and
// arrays are read whole and skipped).
func (c *rawConn) readReply() (string, error) {
	if c.w.Buffered() > 0 {
		if err := c.w.Flush(); err != nil {
			return "", err
		}
	}
	c.c.SetReadDeadline(time.Now().Add(120 * time.Second))
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if len(line) == 0 {
		return line, nil
	}
	switch line[0] {
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n >= 0 {
			if _, err := c.r.Discard(n + 2); err != nil {
				return "", err
			}
		}
	case '*':
		n, _ := strconv.Atoi(line[1:])
		for range n {
			if _, err := c.readReply(); err != nil {
				return "", err
			}
		}
	}
	return line, nil
}

// bulk sends a command whose reply is a bulk string and returns it.
func (c *rawConn) bulk(args ...string) (string, error) {
	c.send(args...)
	if err := c.w.Flush(); err != nil {
		return "", err
	}
	c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if line[0] != '$' || err != nil || n < 0 {
		return "", fmt.Errorf("%s: %q", args[0], line)
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, b); err != nil {
		return "", err
	}
	return string(b[:n]), nil
}

// info returns INFO persistence and stats.
func (c *rawConn) info() (string, error) {
	p, err := c.bulk("INFO", "persistence")
	if err != nil {
		return "", err
	}
	st, err := c.bulk("INFO", "stats")
	return p + st, err
}

// SnapshotSummary is the report: per server the worst round.
func SnapshotSummary(w io.Writer, cfg SnapshotConfig, runs []SnapshotRun) {
	fmt.Fprintf(w, "%s of %d %s (rounds interleaved), a probe doing GET one at a time:\n\n", strings.ToUpper(cfg.Command), cfg.Keys, cfg.Dataset)
	fmt.Fprintf(w, "| round | server | longest wait | p99 | GETs | quiet longest | latest_fork_usec | snapshot took |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|\n")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	worst := map[string]time.Duration{}
	for _, r := range runs {
		fmt.Fprintf(w, "| %d | %s | %s | %s | %d | %s | %d | %s |\n", r.Round, r.Server, ms(r.MaxWait), ms(r.P99), r.Probes, ms(r.QuietMax), r.ForkUsec, r.Took.Round(time.Millisecond))
		worst[r.Server] = max(worst[r.Server], r.MaxWait)
	}
	if worst["Redis"] > 0 {
		fmt.Fprintf(w, "\nworst longest wait: Sluice %s, Redis %s (ratio %.2f)\n", ms(worst["Sluice"]), ms(worst["Redis"]), float64(worst["Sluice"])/float64(worst["Redis"]))
	}
}

func cliSnapshot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := DefaultSnapshotConfig()
	fs := flag.NewFlagSet("sluice-bench snapshot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.SluiceBin, "sluice-bin", "", "prebuilt sluice-server binary to start instead of building one")
	fs.StringVar(&c.RedisServer, "redis-server", "", "redis-server binary (default: from PATH)")
	fs.StringVar(&c.Dataset, "dataset", c.Dataset, "strings (small string keys) or collections (hashes, lists and sorted sets)")
	fs.IntVar(&c.Keys, "keys", c.Keys, "strings: number of keys; collections: number of keys of each type")
	fs.IntVar(&c.Elements, "elements", c.Elements, "collections: elements per key")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "interleaved rounds")
	fs.StringVar(&c.Command, "command", c.Command, "bgsave or bgrewriteaof")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	c.Log = stderr
	runs, err := RunSnapshot(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "sluice-bench snapshot: %v\n", err)
		var ee *ExitError
		if errors.As(err, &ee) {
			return ee.Code
		}
		return 1
	}
	SnapshotSummary(stdout, c, runs)
	return 0
}
