package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/internal/tlstest"
	"github.com/sluicedb/sluice/server"
)

var (
	tlsCertsOnce sync.Once
	tlsCerts     *tlstest.Certs
	tlsCertsDir  string
)

// testTLSCerts makes one set of certificates for the package (RSA keys
// take a while); TestMain removes them.
func testTLSCerts(t *testing.T) *tlstest.Certs {
	t.Helper()
	tlsCertsOnce.Do(func() {
		d, err := os.MkdirTemp("", "sluice-tls-test")
		if err != nil {
			t.Fatal(err)
		}
		tlsCertsDir = d
		tlsCerts = tlstest.New(dirTB{t, d})
	})
	if tlsCerts == nil {
		t.Fatal("no certificates")
	}
	return tlsCerts
}

// dirTB is a testing.TB whose TempDir is a fixed directory.
type dirTB struct {
	testing.TB
	dir string
}

func (d dirTB) TempDir() string { return d.dir }

func startSluiceTLS(t *testing.T, extra ...string) (*server.Server, string) {
	t.Helper()
	return redistest.StartSluiceTLS(t, testTLSCerts(t), extra...)
}

func startRedisTLS(t *testing.T, extra ...string) string {
	t.Helper()
	return redistest.StartRedisTLS(t, testTLSCerts(t), extra...)
}

// startTLSServer starts sluice-server (name "sluice") or redis-server on
// a TLS port and returns its address.
func startTLSServer(t *testing.T, name string) string {
	t.Helper()
	if name == "sluice" {
		_, addr := startSluiceTLS(t)
		return addr
	}
	return startRedisTLS(t)
}

func tlsClient(t *testing.T, addr string, cfg *tls.Config) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: cfg, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 4, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestTLSClientGoRedis: go-redis with a tls.Config: commands, a deep
// pipeline, values bigger than a TLS record both ways, pub/sub messages
// delivered from another connection, and a blocked pop served by a push.
func TestTLSClientGoRedis(t *testing.T) {
	_, addr := startSluiceTLS(t)
	c := testTLSCerts(t)
	ctx := context.Background()
	r := tlsClient(t, addr, c.ClientConfig(t))
	if err := r.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := r.Get(ctx, "k").Val(); v != "v" {
		t.Fatalf("GET = %q", v)
	}
	pipe := r.Pipeline()
	for i := 0; i < 5000; i++ {
		pipe.Set(ctx, "p"+strconv.Itoa(i), i, 0)
		pipe.Get(ctx, "p"+strconv.Itoa(i))
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5000; i++ {
		if v := cmds[2*i+1].(*redis.StringCmd).Val(); v != strconv.Itoa(i) {
			t.Fatalf("pipelined GET p%d = %q", i, v)
		}
	}
	big := strings.Repeat("0123456789abcdef", 300000) // 4.8 MB: many records, partial writes
	if err := r.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := r.Get(ctx, "big").Val(); v != big {
		t.Fatalf("big value came back with %d bytes", len(v))
	}
	sub := r.Subscribe(ctx, "ch")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	r2 := tlsClient(t, addr, c.ClientConfig(t))
	if n := r2.Publish(ctx, "ch", "hello").Val(); n != 1 {
		t.Fatalf("PUBLISH reached %d", n)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "hello" {
		t.Fatalf("message %v %v", msg, err)
	}
	done := make(chan []string, 1)
	go func() { done <- r.BLPop(ctx, 10*time.Second, "q").Val() }()
	time.Sleep(100 * time.Millisecond)
	r2.RPush(ctx, "q", "x")
	if v := <-done; len(v) != 2 || v[1] != "x" {
		t.Fatalf("BLPOP = %v", v)
	}
}

// rawTLS is a TLS connection speaking RESP by hand.
type rawTLS struct {
	*tls.Conn
	r *bufio.Reader
}

func dialRawTLS(t *testing.T, addr string, cfg *tls.Config) (*rawTLS, error) {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { conn.Close() })
	return &rawTLS{conn, bufio.NewReader(conn)}, nil
}

func (c *rawTLS) do(args ...string) (string, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(redistest.Encode(args...)); err != nil {
		return "", err
	}
	return redistest.ReadReply(c.r)
}

// mustPing checks a fresh TLS client gets PONG: other clients are served.
func mustPing(t *testing.T, addr string, cfg *tls.Config) {
	t.Helper()
	c, err := dialRawTLS(t, addr, cfg)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if r, err := c.do("PING"); r != "+PONG\r\n" {
		t.Fatalf("PING = %q %v", r, err)
	}
	c.Close()
}

// TestTLSBadInput: a plain-text client on the TLS port, a handshake that
// stalls, a client certificate from another CA and no certificate (with
// tls-auth-clients yes) are each refused as Redis refuses them, and a
// client in the middle of a session keeps being served meanwhile.
func TestTLSBadInput(t *testing.T) {
	for _, name := range []string{"sluice", "redis"} {
		t.Run(name, func(t *testing.T) {
			c := testTLSCerts(t)
			addr := startTLSServer(t, name)
			good := c.ClientConfig(t)
			steady, err := dialRawTLS(t, addr, good)
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := steady.do("SET", "k", "v"); r != "+OK\r\n" {
				t.Fatalf("SET = %q", r)
			}

			// Plain text: the connection is closed without a reply.
			plain, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			plain.Write(redistest.Encode("PING"))
			plain.SetReadDeadline(time.Now().Add(10 * time.Second))
			b, err := io.ReadAll(plain)
			plain.Close()
			if strings.Contains(string(b), "PONG") || (err != nil && !isReset(err)) {
				t.Fatalf("plain client got %q, %v", b, err)
			}

			// Stalled handshakes: nothing at all, and half a ClientHello.
			stalled := make([]net.Conn, 0, 2)
			for _, prefix := range [][]byte{nil, {0x16, 0x03, 0x01, 0x02, 0x00, 0x01}} {
				s, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				s.Write(prefix)
				stalled = append(stalled, s)
			}
			mustPing(t, addr, good)
			if r, _ := steady.do("GET", "k"); r != "$1\r\nv\r\n" {
				t.Fatalf("GET during stalled handshakes = %q", r)
			}
			// As in Redis, the stalled connections are clients (the
			// idle timeout applies to them) and stay open.
			list, _ := steady.do("CLIENT", "LIST")
			if n := strings.Count(list, "id="); n < 3 {
				t.Fatalf("CLIENT LIST shows %d clients:\n%s", n, list)
			}
			for _, s := range stalled {
				s.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := s.Read(make([]byte, 1)); err == nil || !isTimeout(err) {
					t.Fatalf("stalled handshake: %v", err)
				}
			}

			// A certificate from another CA, and none: refused.
			for _, cfg := range []*tls.Config{c.ClientConfigWith(t, c.OtherClientCert, c.OtherClientKey), c.ClientConfigWith(t, "", "")} {
				conn, err := dialRawTLS(t, addr, cfg)
				if err == nil {
					if r, err := conn.do("PING"); err == nil {
						t.Fatalf("a client without a valid certificate got %q", r)
					}
				}
			}
			mustPing(t, addr, good)
			if r, _ := steady.do("GET", "k"); r != "$1\r\nv\r\n" {
				t.Fatalf("GET after bad clients = %q", r)
			}
			steady.do("CONFIG", "SET", "timeout", "1")
			// With timeout set, the stalled handshakes are closed as idle
			// clients are.
			for _, s := range stalled {
				s.SetReadDeadline(time.Now().Add(20 * time.Second))
				if _, err := s.Read(make([]byte, 1)); err == nil || isTimeout(err) {
					t.Fatalf("stalled handshake after timeout: %v", err)
				}
			}
		})
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func isReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset")
}

// TestTLSRenegotiation: a client asking to renegotiate (openssl s_client's
// "R" over TLS 1.2) is refused, as Redis refuses it, and the server goes
// on serving others.
func TestTLSRenegotiation(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	for _, name := range []string{"sluice", "redis"} {
		t.Run(name, func(t *testing.T) {
			c := testTLSCerts(t)
			addr := startTLSServer(t, name)
			cmd := exec.Command("openssl", "s_client", "-tls1_2", "-connect", addr, "-cert", c.ClientCert, "-key", c.ClientKey, "-CAfile", c.CACert)
			in, _ := cmd.StdinPipe()
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			in.Write([]byte("PING\r\n"))
			time.Sleep(300 * time.Millisecond)
			in.Write([]byte("R\n"))
			time.Sleep(300 * time.Millisecond)
			in.Write([]byte("PING\r\n"))
			time.Sleep(300 * time.Millisecond)
			in.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			got := out.String()
			if !strings.Contains(got, "RENEGOTIATING") || strings.Count(got, "+PONG") != 1 {
				t.Fatalf("s_client output:\n%s", got)
			}
			mustPing(t, addr, c.ClientConfig(t))
		})
	}
}

// TestTLSConfigSet: CONFIG SET of the certificate files takes effect for
// new connections; a bad file fails with Redis's error and keeps the
// certificate in force; the same for Redis.
func TestTLSConfigSet(t *testing.T) {
	for _, name := range []string{"sluice", "redis"} {
		t.Run(name, func(t *testing.T) {
			c := testTLSCerts(t)
			addr := startTLSServer(t, name)
			cfg := c.ClientConfig(t)
			cn := func() string {
				conn, err := tls.Dial("tcp", addr, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
			}
			if got := cn(); got != "Server-only" {
				t.Fatalf("certificate %q", got)
			}
			admin, err := dialRawTLS(t, addr, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := admin.do("CONFIG", "SET", "tls-cert-file", c.RedisCert, "tls-key-file", c.RedisKey)
			if r != "+OK\r\n" {
				t.Fatalf("CONFIG SET = %q", r)
			}
			if got := cn(); got != "Generic-cert" {
				t.Fatalf("certificate after CONFIG SET %q", got)
			}
			// A key that does not match: the error, and nothing changes.
			r, _ = admin.do("CONFIG", "SET", "tls-key-file", c.ClientKey)
			want := "-ERR CONFIG SET failed (possibly related to argument 'tls-key-file') - Unable to update TLS configuration. Check server logs.\r\n"
			if r != want {
				t.Fatalf("bad key: %q\nwant %q", r, want)
			}
			if r, _ := admin.do("CONFIG", "GET", "tls-key-file"); !strings.Contains(r, c.RedisKey) {
				t.Fatalf("tls-key-file after a failed CONFIG SET: %q", r)
			}
			r, _ = admin.do("CONFIG", "SET", "tls-protocols", "TLSv1.4")
			if !strings.HasPrefix(r, "-ERR CONFIG SET failed (possibly related to argument 'tls-protocols') - Unable to update TLS configuration.") {
				t.Fatalf("bad protocols: %q", r)
			}
			if got := cn(); got != "Generic-cert" {
				t.Fatalf("certificate after failed CONFIG SETs %q", got)
			}
			// tls-auth-clients applies to the next connection.
			none := c.ClientConfigWith(t, "", "")
			if conn, err := dialRawTLS(t, addr, none); err == nil {
				if _, err := conn.do("PING"); err == nil {
					t.Fatal("no certificate accepted with tls-auth-clients yes")
				}
			}
			admin.do("CONFIG", "SET", "tls-auth-clients", "no")
			conn, err := dialRawTLS(t, addr, none)
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := conn.do("PING"); r != "+PONG\r\n" {
				t.Fatalf("PING without certificate with tls-auth-clients no = %q", r)
			}
		})
	}
}

// TestTLSPortSwitch moves a server between a plain port and a TLS port
// with CONFIG SET, as Redis's test suite does.
func TestTLSPortSwitch(t *testing.T) {
	_, addr := startSluiceTLS(t)
	c := testTLSCerts(t)
	_, port, _ := net.SplitHostPort(addr)
	conn, err := dialRawTLS(t, addr, c.ClientConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := conn.do("CONFIG", "SET", "tls-port", "0"); r != "+OK\r\n" {
		t.Fatalf("CONFIG SET tls-port 0 = %q", r)
	}
	if r, _ := conn.do("CONFIG", "SET", "port", port); r != "+OK\r\n" {
		t.Fatalf("CONFIG SET port = %q", r)
	}
	conn.Close()
	plain := redistest.Dial(t, addr)
	if r, _ := plain.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("plain PING = %q", r)
	}
	plain.Do("CONFIG", "SET", "port", "0")
	if r, _ := plain.Do("CONFIG", "SET", "tls-port", port); r != "+OK\r\n" {
		t.Fatalf("CONFIG SET tls-port = %q", r)
	}
	mustPing(t, addr, c.ClientConfig(t))
}

// TestTLSReplication replicates over TLS between Sluice and redis-server,
// both ways, and between two Sluices.
func TestTLSReplication(t *testing.T) {
	t.Chdir(t.TempDir()) // a master's full sync may write dump.rdb here
	ctx := context.Background()
	c := testTLSCerts(t)
	for _, tc := range []struct{ master, replica string }{{"sluice", "redis"}, {"redis", "sluice"}, {"sluice", "sluice"}} {
		t.Run(tc.master+"-to-"+tc.replica, func(t *testing.T) {
			start := func(kind string) string {
				if kind == "redis" {
					return startRedisTLS(t, "tls-replication", "yes", "repl-diskless-sync-delay", "0")
				}
				_, addr := startSluiceTLS(t, "tls-replication", "yes")
				return addr
			}
			maddr, raddr := start(tc.master), start(tc.replica)
			m, r := tlsClient(t, maddr, c.ClientConfig(t)), tlsClient(t, raddr, c.ClientConfig(t))
			for i := 0; i < 500; i++ {
				m.Set(ctx, "before"+strconv.Itoa(i), strings.Repeat("x", i), 0)
			}
			h, p, _ := net.SplitHostPort(maddr)
			if err := r.Do(ctx, "REPLICAOF", h, p).Err(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the replica link up", func() bool { return strings.Contains(r.Info(ctx, "replication").Val(), "master_link_status:up") })
			m.HSet(ctx, "after", "f", "v")
			m.LPush(ctx, "list", 1, 2, 3)
			waitFor(t, "502 keys on the replica", func() bool { return r.DBSize(ctx).Val() == 502 })
			if v := r.Get(ctx, "before499").Val(); len(v) != 499 {
				t.Fatalf("before499 has %d bytes on the replica", len(v))
			}
			if v := r.HGet(ctx, "after", "f").Val(); v != "v" {
				t.Fatalf("after.f = %q", v)
			}
			info := m.Info(ctx, "replication").Val()
			_, rport, _ := net.SplitHostPort(raddr)
			if !strings.Contains(info, "port="+rport) {
				t.Fatalf("the master lists the replica without its TLS port %s:\n%s", rport, info)
			}
		})
	}
}

// TestTLSMigrate: with tls-cluster, MIGRATE reaches its target over TLS.
func TestTLSMigrate(t *testing.T) {
	ctx := context.Background()
	c := testTLSCerts(t)
	for _, target := range []string{"sluice", "redis"} {
		t.Run(target, func(t *testing.T) {
			_, src := startSluiceTLS(t, "tls-cluster", "yes")
			var dst string
			if target == "redis" {
				dst = startRedisTLS(t)
			} else {
				_, dst = startSluiceTLS(t)
			}
			s, d := tlsClient(t, src, c.ClientConfig(t)), tlsClient(t, dst, c.ClientConfig(t))
			s.Set(ctx, "mk", "moved", 0)
			h, p, _ := net.SplitHostPort(dst)
			if r, err := s.Do(ctx, "MIGRATE", h, p, "mk", "0", "5000").Result(); err != nil || r != "OK" {
				t.Fatalf("MIGRATE = %v, %v", r, err)
			}
			if v := d.Get(ctx, "mk").Val(); v != "moved" {
				t.Fatalf("target has %q", v)
			}
		})
	}
}

// TestTLSRedisCLI: redis-cli --tls with a client certificate, as a user
// connects.
func TestTLSRedisCLI(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli not installed")
	}
	_, addr := startSluiceTLS(t)
	c := testTLSCerts(t)
	h, p, _ := net.SplitHostPort(addr)
	cli := func(args ...string) string {
		base := []string{"--tls", "--cert", c.ClientCert, "--key", c.ClientKey, "--cacert", c.CACert, "-h", h, "-p", p}
		out, err := exec.Command("redis-cli", append(base, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := cli("SET", "cli", "yes"); got != "OK" {
		t.Fatalf("SET = %q", got)
	}
	if got := cli("GET", "cli"); got != "yes" {
		t.Fatalf("GET = %q", got)
	}
	if got := cli("--no-raw", "INFO", "server"); !strings.Contains(got, "tcp_port:"+p) {
		t.Fatalf("INFO server lacks tcp_port:%s", p)
	}
	// Without a client certificate the server refuses it.
	out, _ := exec.Command("redis-cli", "--tls", "--cacert", c.CACert, "-h", h, "-p", p, "PING").CombinedOutput()
	if strings.Contains(string(out), "PONG") {
		t.Fatalf("redis-cli without a certificate: %s", out)
	}
}

// TestTLSStartErrors: a certificate that cannot be read stops Start with
// ErrTLSConfig, as redis-server exits; no listener is left open.
func TestTLSStartErrors(t *testing.T) {
	c := testTLSCerts(t)
	port := redistest.FreePort(t)
	cfg := server.NewConfig()
	d := redistest.TLSDirectives(c, port)
	for i := 0; i < len(d); i += 2 {
		cfg.Set(d[i], d[i+1])
	}
	cfg.Set("tls-cert-file", "/nonexistent")
	srv := server.New(cfg)
	var log strings.Builder
	srv.SetLogWriter(&log)
	err := srv.Start()
	if err == nil {
		srv.Stop()
		t.Fatal("Start succeeded with a missing certificate")
	}
	for _, want := range []string{"# Failed to load certificate: /nonexistent: error:80000002:system library::No such file or directory", "# Failed to configure TLS. Check logs for more info."} {
		if !strings.Contains(log.String(), want) {
			t.Fatalf("log lacks %q:\n%s", want, log.String())
		}
	}
	if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
		conn.Close()
		t.Fatal("something listens on the TLS port")
	}
}

// TestTLSBigArgumentsPipelined: big arguments over TLS, pipelined with
// small commands and written in pieces of every size, come in whole and in
// order, on both servers, and without waiting on the server's timer: the
// loop reads what a TLS socket holds until its buffer is full, where it
// once read a record's worth and left the rest in the socket until the
// 100 ms timer (each 100 KB SET took 0.6 s), and it keeps the ciphertext a
// full buffer did not take, which it once dropped.
func TestTLSBigArgumentsPipelined(t *testing.T) {
	for _, name := range []string{"sluice", "redis"} {
		t.Run(name, func(t *testing.T) {
			c := testTLSCerts(t)
			addr := startTLSServer(t, name)
			conn, err := dialRawTLS(t, addr, c.ClientConfig(t))
			if err != nil {
				t.Fatal(err)
			}
			// Sizes around the big-argument threshold, a TLS record and
			// the loop's read buffer, each followed by a small command.
			sizes := []int{32 << 10, 33 << 10, 40000, 64 << 10, 65 << 10, 70000, 100000, 100001, 150000, 300000, 1 << 20}
			var want []string
			var batch []byte
			for round := 0; round < 4; round++ {
				for i, n := range sizes {
					k := fmt.Sprintf("k%d-%d", round, i)
					v := strings.Repeat(string(rune('a'+(i+round)%26)), n-1) + strconv.Itoa(i%10)
					batch = append(batch, redistest.Encode("SET", k, v)...)
					batch = append(batch, redistest.Encode("INCR", "n")...)
					want = append(want, k, v)
				}
			}
			// Written in pieces of varied sizes, as a client with small
			// writes sends them, while the replies are read.
			deadline := time.Now().Add(20 * time.Second)
			conn.SetDeadline(deadline)
			werr := make(chan error, 1)
			go func() {
				piece := []int{1000, 7, 16384, 70000, 333, 4096, 200000}
				for i, off := 0, 0; off < len(batch); i++ {
					end := min(off+piece[i%len(piece)], len(batch))
					if _, err := conn.Write(batch[off:end]); err != nil {
						werr <- err
						return
					}
					off = end
				}
				werr <- nil
			}()
			for i := 0; i < len(want)/2; i++ {
				if r, err := redistest.ReadReply(conn.r); err != nil || r != "+OK\r\n" {
					t.Fatalf("SET %s: %q %v", want[2*i], r, err)
				}
				if r, err := redistest.ReadReply(conn.r); err != nil || r != fmt.Sprintf(":%d\r\n", i+1) {
					t.Fatalf("INCR after SET %s: %q %v", want[2*i], r, err)
				}
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(want); i += 2 {
				r, err := conn.do("GET", want[i])
				if exp := fmt.Sprintf("$%d\r\n%s\r\n", len(want[i+1]), want[i+1]); err != nil || r != exp {
					t.Fatalf("GET %s: %d bytes, want %d (%v)", want[i], len(r), len(exp), err)
				}
			}
		})
	}
}
