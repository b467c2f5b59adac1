package cluster_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// These tests build clusters of real processes with Redis's own tool,
// redis-cli --cluster: six sluice-server nodes, and a mixed cluster of
// three redis-server and three sluice-server nodes. A client writes
// (each write acknowledged by a replica with WAIT) while slots are
// resharded and a master is killed with SIGKILL; its replica must take
// over within 15 s, the old master must come back as a replica, and no
// acknowledged write may be lost.

// A node forgets a node it is meeting if the handshake takes longer than
// the node timeout, and redis-cli --cluster create never sends the MEET
// again: on a loaded machine a 1 s timeout can leave the cluster unformed
// for good, with redis-server nodes as with Sluice ones. So the nodes
// start with a longer timeout and the scenario shortens it (CONFIG SET)
// once the cluster has formed, to keep failovers quick.
const (
	formTimeout = "5000"
	nodeTimeout = "1000"
)

type proc struct {
	name  string // "sluice" or "redis"
	bin   string
	port  int
	bus   int
	dir   string
	cmd   *exec.Cmd
	addr  string
	alive bool
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	args := []string{"--port", strconv.Itoa(p.port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
		"--cluster-port", strconv.Itoa(p.bus), "--cluster-node-timeout", formTimeout, "--dir", p.dir,
		"--logfile", "log.txt", "--save", "", "--appendonly", "no"}
	p.cmd = exec.Command(p.bin, args...)
	p.cmd.Dir = p.dir
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.alive = true
	p.addr = "127.0.0.1:" + strconv.Itoa(p.port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", p.addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s on %d did not start; log:\n%s", p.name, p.port, p.log())
}

// shortTimeout sets the node timeout the failovers are timed with.
func (p *proc) shortTimeout(t *testing.T) {
	t.Helper()
	if r, err := do(t, p.addr, "config", "set", "cluster-node-timeout", nodeTimeout); err != nil || r != "OK" {
		t.Fatalf("%s %s: CONFIG SET cluster-node-timeout: %v %v", p.name, p.addr, r, err)
	}
}

func (p *proc) log() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "log.txt"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (p *proc) kill9() {
	if p.alive {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
		p.alive = false
	}
}

func sluiceBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sluice-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/sluicedb/sluice/cmd/sluice-server")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func need(t *testing.T, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not found", tool)
		}
		t.Skipf("%s not installed", tool)
	}
	return p
}

func do(t *testing.T, addr string, args ...any) (any, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 2 * time.Second})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, args...).Result()
}

func infoField(t *testing.T, addr, cmd, field string) string {
	var r any
	var err error
	if cmd == "cluster" {
		r, err = do(t, addr, "cluster", "info")
	} else {
		r, err = do(t, addr, "info", cmd)
	}
	if err != nil {
		return ""
	}
	s, _ := r.(string)
	for _, l := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < d {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", d, what)
	return 0
}

// redisCLI runs redis-cli, for two minutes at most: a --cluster command
// that waits for the nodes without end (its wait for the cluster to
// join has no limit of its own) fails its test with the nodes' logs,
// rather than the package's whole run when go test's deadline comes.
func redisCLI(t *testing.T, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("redis-cli %v: no end after 2 minutes (%w)", args, err)
	}
	return string(out), err
}

// writer writes keys, each acknowledged by a replica (SET then WAIT 1 on
// the same connection of the key's master), following MOVED and ASK.
type writer struct {
	seeds   []string
	mu      sync.Mutex
	clients map[string]*redis.Client
	acked   sync.Map // key -> value
	nAcked  atomic.Int64
	nTried  atomic.Int64
	stop    chan struct{}
	done    chan struct{}
}

func (w *writer) client(addr string) *redis.Client {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.clients[addr]
	if c == nil {
		c = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 3 * time.Second, PoolSize: 2})
		w.clients[addr] = c
	}
	return c
}

func (w *writer) run(cc *redis.ClusterClient) {
	defer close(w.done)
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		default:
		}
		key, val := fmt.Sprintf("k:%d", i), fmt.Sprintf("v:%d", i)
		w.nTried.Add(1)
		addr := ""
		if m, err := cc.MasterForKey(ctx, key); err == nil {
			addr = m.Options().Addr
		}
		asking := false
		for attempt := 0; attempt < 60 && addr != ""; attempt++ {
			c := w.client(addr)
			var set *redis.StatusCmd
			var wait *redis.Cmd
			_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				if asking {
					p.Do(ctx, "asking")
				}
				set = p.Set(ctx, key, val, 0)
				wait = p.Do(ctx, "wait", 1, 2000)
				return nil
			})
			asking = false
			if err == nil && set.Err() == nil {
				if n, _ := wait.Int64(); n >= 1 {
					w.acked.Store(key, val)
					w.nAcked.Add(1)
				}
				break
			}
			if set != nil && set.Err() != nil {
				err = set.Err()
			}
			msg := err.Error()
			switch {
			case strings.HasPrefix(msg, "MOVED "), strings.HasPrefix(msg, "ASK "):
				f := strings.Fields(msg)
				addr = f[2]
				asking = f[0] == "ASK"
			default:
				time.Sleep(100 * time.Millisecond)
				cc.ReloadState(ctx)
				if m, err := cc.MasterForKey(ctx, key); err == nil {
					addr = m.Options().Addr
				}
			}
		}
	}
}

func (w *writer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.clients {
		c.Close()
	}
}

// clusterScenario: create, check, reshard while writing, kill -9 a
// master, failover, rejoin, every acknowledged write still there.
func clusterScenario(t *testing.T, kinds []string) {
	if testing.Short() {
		t.Skip("starts six server processes")
	}
	need(t, "redis-cli")
	bins := map[string]string{"sluice": sluiceBinary(t)}
	for _, k := range kinds {
		if k == "redis" {
			bins["redis"] = need(t, "redis-server")
		}
	}
	var procs []*proc
	var addrs []string
	for i, k := range kinds {
		p := &proc{name: k, bin: bins[k], port: freePort(t), bus: freePort(t), dir: t.TempDir()}
		p.start(t)
		t.Cleanup(p.kill9)
		procs = append(procs, p)
		addrs = append(addrs, p.addr)
		_ = i
	}
	byAddr := map[string]*proc{}
	for _, p := range procs {
		byAddr[p.addr] = p
	}
	dumpLogs := func() {
		for _, p := range procs {
			t.Logf("=== %s %s\n%s", p.name, p.addr, p.log())
		}
	}
	out, err := redisCLI(t, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "1", "--cluster-yes")...)
	if err != nil || !strings.Contains(out, "[OK] All 16384 slots covered.") {
		dumpLogs()
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	waitFor(t, "cluster_state:ok on every node", 20*time.Second, func() bool {
		for _, p := range procs {
			if infoField(t, p.addr, "cluster", "cluster_state") != "ok" {
				return false
			}
		}
		return true
	})
	waitFor(t, "redis-cli --cluster check", 20*time.Second, func() bool {
		_, err := redisCLI(t, "--cluster", "check", addrs[0])
		return err == nil
	})
	for _, p := range procs {
		p.shortTimeout(t)
	}
	// Replicas finish their first sync before writes are counted.
	waitFor(t, "replication links up", 20*time.Second, func() bool {
		for _, p := range procs {
			if infoField(t, p.addr, "replication", "role") == "slave" && infoField(t, p.addr, "replication", "master_link_status") != "up" {
				return false
			}
		}
		return true
	})

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 16, ReadTimeout: 3 * time.Second})
	defer cc.Close()
	w := &writer{clients: map[string]*redis.Client{}, stop: make(chan struct{}), done: make(chan struct{})}
	defer w.close()
	go w.run(cc)
	waitFor(t, "first acknowledged writes", 20*time.Second, func() bool { return w.nAcked.Load() > 200 })

	// Reshard 2000 slots between two masters, while the writer writes.
	masters := func() map[string]string { // node id -> addr
		m := map[string]string{}
		r, _ := do(t, addrs[0], "cluster", "nodes")
		s, _ := r.(string)
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			f := strings.Fields(l)
			if len(f) > 8 && strings.Contains(f[2], "master") && !strings.Contains(f[2], "fail") {
				m[f[0]] = strings.Split(f[1], "@")[0]
			}
		}
		return m
	}
	ms := masters()
	if len(ms) != 3 {
		dumpLogs()
		t.Fatalf("masters: %v", ms)
	}
	var ids []string
	for id := range ms {
		ids = append(ids, id)
	}
	// In a mixed cluster move slots from a redis-server to a Sluice master.
	from, to := ids[0], ids[1]
	for _, a := range ids {
		for _, b := range ids {
			if a != b && byAddr[ms[a]].name == "redis" && byAddr[ms[b]].name == "sluice" {
				from, to = a, b
			}
		}
	}
	out, err = redisCLI(t, "--cluster", "reshard", addrs[0], "--cluster-from", from, "--cluster-to", to,
		"--cluster-slots", "2000", "--cluster-yes", "--cluster-pipeline", "50")
	if err != nil || strings.Contains(out, "ERR") {
		dumpLogs()
		t.Fatalf("reshard: %v\n%s", err, out[max(0, len(out)-3000):])
	}
	waitFor(t, "check after reshard", 20*time.Second, func() bool {
		_, err := redisCLI(t, "--cluster", "check", addrs[0])
		return err == nil
	})
	before := w.nAcked.Load()
	waitFor(t, "writes after reshard", 20*time.Second, func() bool { return w.nAcked.Load() > before+200 })

	// Kill -9 a master that has a replica; in a mixed cluster, a Sluice
	// master and then a redis-server one, preferring a replica of the
	// other kind.
	victims := []string{"sluice"}
	if bins["redis"] != "" {
		victims = append(victims, "redis")
	}
	for _, kind := range victims {
		var victim, replica *proc
		for id, a := range masters() {
			if byAddr[a].name != kind {
				continue
			}
			r, _ := do(t, addrs[0], "cluster", "replicas", id)
			l, _ := r.([]any)
			for _, x := range l {
				f := strings.Fields(x.(string))
				rp := byAddr[strings.Split(f[1], "@")[0]]
				if replica == nil || (rp.name != kind && replica.name == kind) {
					victim, replica = byAddr[a], rp
				}
			}
		}
		if victim == nil {
			t.Fatalf("no %s master with a replica", kind)
		}
		victim.kill9()
		took := waitFor(t, "the replica to take over", 30*time.Second, func() bool {
			return infoField(t, replica.addr, "replication", "role") == "master"
		})
		t.Logf("%s replica %s promoted %.1fs after kill -9 of %s master %s", replica.name, replica.addr, took.Seconds(), victim.name, victim.addr)
		if took > 15*time.Second {
			t.Errorf("failover took %v", took)
		}
		waitFor(t, "cluster_state:ok after failover", 20*time.Second, func() bool {
			for _, p := range procs {
				if p.alive && infoField(t, p.addr, "cluster", "cluster_state") != "ok" {
					return false
				}
			}
			return true
		})
		before = w.nAcked.Load()
		// The old master rejoins as a replica of its replica.
		victim.start(t)
		victim.shortTimeout(t)
		waitFor(t, "the old master to rejoin as a replica", 30*time.Second, func() bool {
			return infoField(t, victim.addr, "replication", "role") == "slave" && infoField(t, victim.addr, "replication", "master_link_status") == "up"
		})
		waitFor(t, "writes after the failover", 30*time.Second, func() bool { return w.nAcked.Load() > before+200 })
	}
	close(w.stop)
	<-w.done
	waitFor(t, "check at the end", 20*time.Second, func() bool {
		_, err := redisCLI(t, "--cluster", "check", addrs[0])
		return err == nil
	})

	lost := 0
	ctx := context.Background()
	w.acked.Range(func(k, v any) bool {
		got, err := cc.Get(ctx, k.(string)).Result()
		if err != nil || got != v.(string) {
			lost++
			if lost < 5 {
				t.Errorf("acknowledged %s=%s, read %q %v", k, v, got, err)
			}
		}
		return true
	})
	t.Logf("%d writes tried, %d acknowledged, %d lost", w.nTried.Load(), w.nAcked.Load(), lost)
	if lost > 0 {
		dumpLogs()
	}
}

func TestRedisCLIClusterSluice(t *testing.T) {
	t.Parallel()
	clusterScenario(t, []string{"sluice", "sluice", "sluice", "sluice", "sluice", "sluice"})
}

func TestRedisCLIClusterMixed(t *testing.T) {
	t.Parallel()
	clusterScenario(t, []string{"redis", "sluice", "redis", "sluice", "redis", "sluice"})
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietLogger{}) }

// TestMoveRedisClusterToSluice moves a running redis-server cluster onto
// Sluice nodes with redis-cli alone, as the README tells: add Sluice
// masters, move every slot to them with rebalance, add a Sluice replica,
// remove the redis-server nodes; every key survives.
func TestMoveRedisClusterToSluice(t *testing.T) {
	if testing.Short() || os.Getenv("SLUICE_LONG_TESTS") == "" {
		t.Skip("moves all 16,384 slots one by one (about a minute): set SLUICE_LONG_TESTS=1")
	}
	need(t, "redis-cli")
	sluice, redisBin := sluiceBinary(t), need(t, "redis-server")
	start := func(name, bin string) *proc {
		p := &proc{name: name, bin: bin, port: freePort(t), bus: freePort(t), dir: t.TempDir()}
		p.start(t)
		t.Cleanup(p.kill9)
		return p
	}
	cli := func(args ...string) string {
		out, err := redisCLI(t, args...)
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return out
	}
	myid := func(p *proc) string {
		r, _ := do(t, p.addr, "cluster", "myid")
		return r.(string)
	}
	var olds []*proc
	for i := 0; i < 3; i++ {
		olds = append(olds, start("redis", redisBin))
	}
	cli("--cluster", "create", olds[0].addr, olds[1].addr, olds[2].addr, "--cluster-yes")
	waitFor(t, "the redis-server cluster", 20*time.Second, func() bool {
		for _, p := range olds {
			if infoField(t, p.addr, "cluster", "cluster_state") != "ok" {
				return false
			}
		}
		_, err := redisCLI(t, "--cluster", "check", olds[0].addr)
		return err == nil
	})
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{olds[0].addr}})
	defer cc.Close()
	const n = 3000
	for i := 0; i < n; i++ {
		if err := cc.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// The first Sluice node joins with CLUSTER MEET: redis-cli's add-node
	// copies the cluster's functions with FUNCTION DUMP/RESTORE, whose
	// payloads Sluice and redis-server do not share yet. The next ones
	// join through it with add-node.
	var news []*proc
	for i := 0; i < 3; i++ {
		p := start("sluice", sluice)
		news = append(news, p)
		if i == 0 {
			cli("-p", strconv.Itoa(p.port), "cluster", "meet", "127.0.0.1", strconv.Itoa(olds[0].port), strconv.Itoa(olds[0].bus))
			waitFor(t, "the first Sluice node to join", 20*time.Second, func() bool {
				out, err := redisCLI(t, "--cluster", "check", olds[0].addr)
				return err == nil && strings.Count(out, "M: ") == 4
			})
			continue
		}
		cli("--cluster", "add-node", p.addr, news[0].addr)
	}
	waitFor(t, "the Sluice nodes to join", 20*time.Second, func() bool {
		for _, p := range append(olds, news...) {
			if infoField(t, p.addr, "cluster", "cluster_known_nodes") != "6" || infoField(t, p.addr, "cluster", "cluster_state") != "ok" {
				return false
			}
		}
		_, err := redisCLI(t, "--cluster", "check", olds[0].addr)
		return err == nil
	})
	// Drained masters must stay masters until del-node removes them
	// (otherwise each would turn into a replica of the node that took its
	// last slot, and redis-cli's next SETSLOT to it fails).
	weights := []string{"--cluster", "rebalance", olds[0].addr, "--cluster-use-empty-masters", "--cluster-weight"}
	for _, p := range olds {
		cli("-p", strconv.Itoa(p.port), "config", "set", "cluster-allow-replica-migration", "no")
		weights = append(weights, myid(p)+"=0")
	}
	cli(weights...)
	replica := start("sluice", sluice)
	cli("--cluster", "add-node", replica.addr, news[0].addr, "--cluster-slave", "--cluster-master-id", myid(news[0]))
	for _, p := range olds {
		cli("--cluster", "del-node", news[0].addr, myid(p))
	}
	waitFor(t, "a cluster of Sluice nodes only", 30*time.Second, func() bool {
		out, err := redisCLI(t, "--cluster", "check", news[0].addr)
		return err == nil && strings.Count(out, "M: ") == 3 && strings.Count(out, "S: ") == 1
	})
	cc2 := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{news[0].addr}})
	defer cc2.Close()
	for i := 0; i < n; i++ {
		v, err := cc2.Get(ctx, fmt.Sprintf("key:%d", i)).Result()
		if err != nil || v != strconv.Itoa(i) {
			t.Fatalf("key:%d = %q, %v", i, v, err)
		}
	}
	waitFor(t, "the replica's sync", 20*time.Second, func() bool {
		return infoField(t, replica.addr, "replication", "master_link_status") == "up"
	})
	for _, p := range olds {
		if c, err := net.Dial("tcp", p.addr); err == nil {
			c.Close()
			r, _ := do(t, p.addr, "cluster", "info")
			if !strings.Contains(fmt.Sprint(r), "cluster_known_nodes:1") {
				t.Errorf("removed node %s still knows the cluster", p.addr)
			}
		}
	}
}
