package server_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// kill -9 under write load: the server runs with appendonly yes, clients
// do INCR and pipelined RPUSH and record every acknowledged reply, the
// process is killed with SIGKILL at a random moment, and the restarted
// server must hold every acknowledged write (appendfsync always), or lose
// no more than the last couple of seconds (everysec), in repeated rounds.

// aofServer is a sluice-server process over a data directory (or a
// redis-server one, for a test that runs both: TestShutdownSignals).
type aofServer struct {
	t    *testing.T
	bin  string
	dir  string
	args []string
	cmd  *exec.Cmd
	addr string
	logs *syncBuffer
}

func (s *aofServer) start() {
	s.t.Helper()
	s.startOn(redistest.FreePort(s.t))
}

// startOn starts the server on port.
func (s *aofServer) startOn(port int) {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, append([]string{"--port", strconv.Itoa(port), "--dir", s.dir}, s.args...)...)
	s.logs = &syncBuffer{}
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.addr = "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r, err := c.Ping(context.Background()).Result(); err == nil && r == "PONG" {
			return
		}
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.t.Fatalf("server did not start: %s", s.logs.String())
}

func (s *aofServer) kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
}

// loadWorker writes to its own key and records what was acknowledged.
type loadWorker struct {
	key   string
	list  bool  // RPUSH (pipelined) rather than INCR
	acked int64 // the last acknowledged count (INCR's value, RPUSH's length)
	sent  int64 // the highest count sent
	// ackAt records when acked passed each value (everysec's bound).
	ackTimes []ackTime
}

type ackTime struct {
	at    time.Time
	count int64
}

func (w *loadWorker) run(addr string, start int64, stop <-chan struct{}) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	bw := bufio.NewWriter(conn)
	w.acked, w.sent = start, start
	const depth = 16
	for {
		select {
		case <-stop:
			return
		default:
		}
		n := 1
		if w.list {
			n = depth
		}
		for i := 0; i < n; i++ {
			w.sent++
			if w.list {
				bw.Write(redistest.Encode("RPUSH", w.key, strconv.FormatInt(w.sent-1, 10)))
			} else {
				bw.Write(redistest.Encode("INCR", w.key))
			}
		}
		if bw.Flush() != nil {
			return
		}
		for i := 0; i < n; i++ {
			r, err := redistest.ReadReply(br)
			if err != nil || !strings.HasPrefix(r, ":") {
				return
			}
			v, _ := strconv.ParseInt(strings.TrimSpace(r[1:]), 10, 64)
			w.acked = v
		}
		w.ackTimes = append(w.ackTimes, ackTime{time.Now(), w.acked})
	}
}

// ackedBefore is the count acknowledged by time t.
func (w *loadWorker) ackedBefore(t time.Time, start int64) int64 {
	n := start
	for _, a := range w.ackTimes {
		if a.at.After(t) {
			break
		}
		n = a.count
	}
	return n
}

func killRounds(t *testing.T, policy string, check func(t *testing.T, w *loadWorker, got, start int64, killAt time.Time)) {
	if testing.Short() {
		t.Skip("builds the binary and runs rounds of write load")
	}
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("SLUICE_KILL_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	srv := &aofServer{t: t, bin: buildServer(t), dir: t.TempDir(), args: []string{"--appendonly", "yes", "--appendfsync", policy}}
	workers := []*loadWorker{}
	for i := range 8 {
		workers = append(workers, &loadWorker{key: fmt.Sprintf("w:%d", i), list: i%2 == 1})
	}
	counts := make([]int64, len(workers)) // what the dataset holds at a round's start
	ctx := context.Background()
	for round := range rounds {
		srv.start()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i, w := range workers {
			w.ackTimes = w.ackTimes[:0]
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.run(srv.addr, counts[i], stop)
			}()
		}
		time.Sleep(time.Duration(500+rand.Intn(1500)) * time.Millisecond)
		killAt := time.Now()
		srv.kill()
		close(stop)
		wg.Wait()
		srv.start()
		c := redis.NewClient(&redis.Options{Addr: srv.addr})
		total := int64(0)
		for i, w := range workers {
			var got int64
			if w.list {
				got = c.LLen(ctx, w.key).Val()
				// The list is 0, 1, 2...: nothing missing in the middle.
				if got > 0 {
					vals := c.LRange(ctx, w.key, 0, -1).Val()
					for j, v := range vals {
						if v != strconv.Itoa(j) {
							t.Fatalf("round %d: %s[%d] = %s", round, w.key, j, v)
						}
					}
				}
			} else {
				got, _ = c.Get(ctx, w.key).Int64()
			}
			if got > w.sent {
				t.Fatalf("round %d: %s holds %d, more than the %d sent", round, w.key, got, w.sent)
			}
			check(t, w, got, counts[i], killAt)
			total += w.acked - counts[i]
			counts[i] = got
		}
		c.Close()
		srv.kill()
		if total == 0 {
			t.Fatalf("round %d: no write was acknowledged: %s", round, srv.logs.String())
		}
		t.Logf("round %d: %d writes acknowledged before the kill", round, total)
	}
}

func TestAOFKill9Always(t *testing.T) {
	killRounds(t, "always", func(t *testing.T, w *loadWorker, got, start int64, _ time.Time) {
		if got < w.acked {
			t.Errorf("%s: %d after restart, but %d was acknowledged", w.key, got, w.acked)
		}
	})
}

// Under everysec Redis may lose what it acknowledged in the last second or
// two (a postponed write while a slow fsync runs); a kill -9 loses nothing
// written to the kernel, which every batch's replies wait for.
func TestAOFKill9Everysec(t *testing.T) {
	killRounds(t, "everysec", func(t *testing.T, w *loadWorker, got, start int64, killAt time.Time) {
		if bound := w.ackedBefore(killAt.Add(-2*time.Second), start); got < bound {
			t.Errorf("%s: %d after restart, but %d was acknowledged more than 2 s before the kill", w.key, got, bound)
		}
		if got < w.acked {
			t.Logf("%s: lost %d acknowledged writes (everysec)", w.key, w.acked-got)
		}
	})
}
