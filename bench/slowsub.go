package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SlowSubConfig drives the slow-subscriber check: a subscriber that never
// reads, PublishBytes published to it, and the server's resident memory
// before, at its peak and after.
type SlowSubConfig struct {
	PublishBytes int64         // total payload published (100 MB)
	MessageSize  int           // bytes per message
	Settle       time.Duration // how long RSS may take to come back
	Tolerance    float64       // RSS after / before must be at most 1+Tolerance
	Log          io.Writer     `json:"-"`
}

// DefaultSlowSubConfig: 100 MB in 64 KB messages, 10% within 10 s.
func DefaultSlowSubConfig() SlowSubConfig {
	return SlowSubConfig{PublishBytes: 100 << 20, MessageSize: 64 << 10, Settle: 10 * time.Second, Tolerance: 0.10}
}

// SlowSubResult is what one server did.
type SlowSubResult struct {
	Server        string
	RSSStartKB    int64
	RSSPeakKB     int64
	RSSEndKB      int64
	SettleTime    time.Duration // until RSS was back within tolerance (or Settle)
	Returned      bool          // RSS came back within tolerance
	Disconnected  bool          // the subscriber's connection was closed by the server
	Delivered     int64         // PUBLISH replies that counted the subscriber
	Published     int64         // PUBLISH commands sent
	SubscriberGot int64         // bytes the subscriber could still read after the publishing
	NumsubAfter   string        // PUBSUB NUMSUB reply line for the channel afterwards
}

// ReadRSS returns VmRSS of a process in kB (Linux /proc).
func ReadRSS(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// SlowSubscriber starts bin (sluice-server or redis-server), runs the
// check against it and stops it.
func SlowSubscriber(ctx context.Context, name, bin string, cfg SlowSubConfig) (SlowSubResult, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	tmp, err := os.MkdirTemp("", "sluice-bench-slowsub-")
	if err != nil {
		return SlowSubResult{}, err
	}
	defer os.RemoveAll(tmp)
	p, err := StartServer(name, bin, filepath.Join(tmp, "server.log"))
	if err != nil {
		return SlowSubResult{}, err
	}
	defer p.Stop()
	return slowSubscriberAt(ctx, name, p.Addr, p.cmd.Process.Pid, cfg)
}

func slowSubscriberAt(ctx context.Context, name, addr string, pid int, cfg SlowSubConfig) (SlowSubResult, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	res := SlowSubResult{Server: name}
	const channel = "sluice-bench:slow"
	// Warm up: the same code paths with a subscriber that reads, so the
	// baseline counts the code and runtime pages they touch.
	if err := pubsubWarmup(addr, cfg.MessageSize); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	time.Sleep(300 * time.Millisecond)
	var err error
	if res.RSSStartKB, err = ReadRSS(pid); err != nil {
		return res, err
	}
	res.RSSPeakKB = res.RSSStartKB

	sub, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return res, err
	}
	defer sub.Close()
	if tc, ok := sub.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096) // keep the kernel from absorbing much of the backlog
	}
	if _, err := sub.Write(respCommand("SUBSCRIBE", channel)); err != nil {
		return res, err
	}
	confirm := []byte("*3\r\n" + bulk("subscribe") + bulk(channel) + ":1\r\n")
	got := make([]byte, len(confirm))
	sub.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(sub, got); err != nil || !bytes.Equal(got, confirm) {
		return res, fmt.Errorf("SUBSCRIBE: %q %v", got, err)
	}

	stopPeak := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopPeak:
				return
			case <-t.C:
				if kb, err := ReadRSS(pid); err == nil && kb > res.RSSPeakKB {
					res.RSSPeakKB = kb
				}
			}
		}
	}()

	pub, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		close(stopPeak)
		wg.Wait()
		return res, err
	}
	defer pub.Close()
	pub.SetDeadline(time.Now().Add(60 * time.Second))
	r := bufio.NewReader(pub)
	const batch = 16
	cmd := respCommand("PUBLISH", channel, strings.Repeat("m", cfg.MessageSize))
	wire := bytes.Repeat(cmd, batch)
	total := cfg.PublishBytes / int64(cfg.MessageSize)
	for res.Published < total && ctx.Err() == nil {
		if _, err = pub.Write(wire); err != nil {
			break
		}
		for i := 0; i < batch; i++ {
			line, rerr := r.ReadString('\n')
			if rerr != nil {
				err = rerr
				break
			}
			if line == ":1\r\n" {
				res.Delivered++
			} else if line != ":0\r\n" {
				err = fmt.Errorf("PUBLISH replied %q", line)
				break
			}
		}
		if err != nil {
			break
		}
		res.Published += batch
	}
	close(stopPeak)
	wg.Wait()
	if err != nil {
		return res, fmt.Errorf("publishing: %w", err)
	}

	// Closed by the server: its address is gone from CLIENT LIST.
	me := "addr=" + sub.LocalAddr().String() + " "
	for deadline := time.Now().Add(5 * time.Second); ; {
		list, lerr := rawReplyTail(addr, "CLIENT", "LIST")
		if lerr == nil && strings.Contains(list, "cmd=") && !strings.Contains(list, me) {
			res.Disconnected = true
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	res.NumsubAfter, _ = rawReplyTail(addr, "PUBSUB", "NUMSUB", channel)
	// What the kernel still holds for the subscriber, then EOF or a reset
	// (a bigger window first: a 4 KB one drains slowly).
	if tc, ok := sub.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 20)
	}
	sub.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 256<<10)
	for {
		n, rerr := sub.Read(buf)
		res.SubscriberGot += int64(n)
		if rerr != nil {
			break
		}
	}
	pub.Close()

	limit := int64(float64(res.RSSStartKB) * (1 + cfg.Tolerance))
	start := time.Now()
	for {
		kb, err := ReadRSS(pid)
		if err != nil {
			return res, err
		}
		res.RSSEndKB = kb
		if kb <= limit {
			res.Returned = true
			break
		}
		if time.Since(start) >= cfg.Settle || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	res.SettleTime = time.Since(start)
	fmt.Fprintf(cfg.Log, "%s: %s\n", name, res)
	return res, nil
}

// rawReplyTail sends one command and returns its whole reply flattened to
// one line (enough for short arrays such as PUBSUB NUMSUB's).
func rawReplyTail(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(respCommand(args...)); err != nil {
		return "", err
	}
	time.Sleep(50 * time.Millisecond)
	b := make([]byte, 64<<10)
	n, err := c.Read(b)
	return strings.ReplaceAll(string(b[:n]), "\r\n", " "), err
}

func (r SlowSubResult) String() string {
	return fmt.Sprintf("RSS %d kB at start, %d kB peak, %d kB after %.1fs (%.0f%% of start, returned=%v); disconnected=%v; "+
		"%d of %d PUBLISH delivered to the subscriber, %d bytes read by it afterwards; NUMSUB after: %s",
		r.RSSStartKB, r.RSSPeakKB, r.RSSEndKB, r.SettleTime.Seconds(), 100*float64(r.RSSEndKB)/float64(r.RSSStartKB),
		r.Returned, r.Disconnected, r.Delivered, r.Published, r.SubscriberGot, strings.TrimSpace(r.NumsubAfter))
}

// pubsubWarmup publishes 64 messages of size bytes to a subscriber that
// reads them all.
func pubsubWarmup(addr string, size int) error {
	const channel, n = "sluice-bench:warmup", 64
	sub, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer sub.Close()
	sub.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := sub.Write(respCommand("SUBSCRIBE", channel)); err != nil {
		return err
	}
	confirm := "*3\r\n" + bulk("subscribe") + bulk(channel) + ":1\r\n"
	message := "*3\r\n" + bulk("message") + bulk(channel) + bulk(strings.Repeat("w", size))
	got := make([]byte, len(confirm))
	if _, err := io.ReadFull(sub, got); err != nil {
		return err
	}
	pub, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer pub.Close()
	pub.SetDeadline(time.Now().Add(10 * time.Second))
	done := make(chan error, 1)
	go func() {
		r := bufio.NewReader(pub)
		for i := 0; i < n; i++ {
			if line, err := r.ReadString('\n'); err != nil || line != ":1\r\n" {
				done <- fmt.Errorf("PUBLISH: %q %v", line, err)
				return
			}
		}
		done <- nil
	}()
	if _, err := pub.Write(bytes.Repeat(respCommand("PUBLISH", channel, strings.Repeat("w", size)), n)); err != nil {
		return err
	}
	body := make([]byte, n*len(message))
	if _, err := io.ReadFull(sub, body); err != nil {
		return err
	}
	if !bytes.Equal(body[:len(message)], []byte(message)) {
		return errors.New("warm-up subscriber got a wrong message")
	}
	return <-done
}

// RunSlowSubscriber runs the check against sluice-server (built from this
// tree unless pair.SluiceBin is set) and redis-server, and writes a
// Markdown table. Servers given by address cannot be measured (the check
// reads their process's RSS).
func RunSlowSubscriber(ctx context.Context, pair PairConfig, cfg SlowSubConfig, w io.Writer) error {
	if pair.Target != "" || pair.Reference != "" {
		return errors.New("-slow-subscriber starts its own servers (it reads their RSS): drop -target/-reference")
	}
	bin := pair.SluiceBin
	if bin == "" {
		src := pair.SourceDir
		if src == "" {
			src = "."
		}
		root, err := ModuleRoot(src)
		if err != nil {
			return err
		}
		tmp, err := os.MkdirTemp("", "sluice-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if bin, err = BuildSluice(ctx, root, tmp); err != nil {
			return err
		}
	}
	rbin := pair.RedisServer
	if rbin == "" {
		rbin = "redis-server"
	}
	rbin, err := lookTool(rbin, errNoRedisServer)
	if err != nil {
		return &ExitError{Code: 3, Err: err}
	}
	var rows []SlowSubResult
	for _, s := range []struct{ name, bin string }{{pair.TargetName, bin}, {pair.ReferenceName, rbin}} {
		res, err := SlowSubscriber(ctx, s.name, s.bin, cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		rows = append(rows, res)
	}
	fmt.Fprintf(w, "## Slow subscriber: %d MB published in %d KB messages to a subscriber that never reads\n\n",
		cfg.PublishBytes>>20, cfg.MessageSize>>10)
	fmt.Fprintln(w, "| Server | Disconnected | PUBLISH counting it | RSS start | RSS peak | RSS after | after/start | back within "+
		strconv.Itoa(int(100*cfg.Tolerance))+"% after |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		back := "not within " + cfg.Settle.String()
		if r.Returned {
			back = fmt.Sprintf("%.1f s", r.SettleTime.Seconds())
		}
		fmt.Fprintf(w, "| %s | %v | %d of %d | %.1f MB | %.1f MB | %.1f MB | %.0f%% | %s |\n", r.Server, r.Disconnected,
			r.Delivered, r.Published, float64(r.RSSStartKB)/1024, float64(r.RSSPeakKB)/1024, float64(r.RSSEndKB)/1024,
			100*float64(r.RSSEndKB)/float64(r.RSSStartKB), back)
	}
	fmt.Fprintln(w, "\nRSS is VmRSS from /proc/PID/status; start is after a warm-up publish to a reading subscriber; "+
		"\"after\" is measured from when CLIENT LIST no longer shows the subscriber (plus up to 2 s reading what the kernel held).")
	return nil
}
