// Package redistest starts servers for tests: a real redis-server from
// PATH (for side-by-side comparison) and an in-process Sluice, and reads
// raw RESP replies so tests can compare them byte for byte.
package redistest

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/tlstest"
	"github.com/sluicedb/sluice/server"
)

// StartSluice starts an in-process Sluice on a free port and returns its
// address; it is stopped when the test ends. Extra directives are applied
// as "name value" pairs.
func StartSluice(tb testing.TB, directives ...string) (*server.Server, string) {
	tb.Helper()
	cfg := server.NewConfig()
	cfg.Set("port", "0")
	// As StartRedis: loopback only, and no protected mode, so that a
	// replica may connect from another address (bind-source-addr).
	cfg.Set("bind", "127.0.0.1")
	cfg.Set("protected-mode", "no")
	for i := 0; i+1 < len(directives); i += 2 {
		if err := cfg.Set(directives[i], directives[i+1]); err != nil {
			tb.Fatalf("config %s: %v", directives[i], err)
		}
	}
	srv := server.New(cfg)
	srv.SetLogger(nil)
	if err := srv.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	return srv, srv.Addrs()[0].String()
}

// StartSluiceArgs starts an in-process Sluice as sluice-server would with
// argv as its command line ("--name value"...), on a free loopback port,
// in a fresh temporary directory that is also the test's working
// directory (dir): the data files there (the AOF, dump.rdb) are loaded
// before it listens. It is stopped when the test ends.
func StartSluiceArgs(tb testing.TB, argv ...string) (*server.Server, string) {
	tb.Helper()
	dir := tb.TempDir()
	tb.Chdir(dir)
	cfg := server.NewConfig()
	if err := cfg.ApplyArgs(append([]string{"--port", "0", "--bind", "127.0.0.1", "--dir", dir}, argv...)); err != nil {
		tb.Fatal(err)
	}
	srv := server.New(cfg)
	srv.SetLogger(nil)
	if err := srv.LoadDataFile(); err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	return srv, srv.Addrs()[0].String()
}

// RedisServerPath returns redis-server's path from PATH, or skips the
// test when it is not installed (fails it under CI, which installs it).
func RedisServerPath(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("redis-server not found in PATH")
		}
		tb.Skip("redis-server not installed")
	}
	return path
}

// StartRedis starts redis-server from PATH on a free port, or skips the
// test when it is not installed (CI installs it).
func StartRedis(tb testing.TB, args ...string) string {
	tb.Helper()
	path := RedisServerPath(tb)
	port := FreePort(tb)
	argv := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no"}, args...)
	cmd := exec.Command(path, argv...)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatal("redis-server did not start")
	return ""
}

// FreePort returns a TCP port that was free a moment ago.
func FreePort(tb testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Conn is a raw RESP connection.
type Conn struct {
	net.Conn
	R *bufio.Reader
}

// Dial opens a raw connection.
func Dial(tb testing.TB, addr string) *Conn {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &Conn{Conn: c, R: bufio.NewReader(c)}
}

// Encode encodes args as a RESP multibulk command.
func Encode(args ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// Do sends one command and returns its raw reply.
func (c *Conn) Do(args ...string) (string, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(Encode(args...)); err != nil {
		return "", err
	}
	return ReadReply(c.R)
}

// ReadReply reads one complete RESP2/RESP3 reply and returns its raw bytes.
func ReadReply(r *bufio.Reader) (string, error) {
	var b bytes.Buffer
	err := readValue(r, &b)
	return b.String(), err
}

func readValue(r *bufio.Reader, b *bytes.Buffer) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return err
		}
		b.Write(buf)
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readValue(r, b); err != nil {
				return err
			}
		}
		if line[0] == '|' {
			// An attribute precedes the real reply.
			return readValue(r, b)
		}
		return nil
	}
	return fmt.Errorf("unknown reply type %q", line)
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TLSDirectives are the directives of a server on a TLS port only using
// certs, as Redis's test suite configures its servers in TLS mode.
func TLSDirectives(c *tlstest.Certs, port int) []string {
	return []string{
		"port", "0",
		"tls-port", strconv.Itoa(port),
		"tls-cert-file", c.ServerCert,
		"tls-key-file", c.ServerKey,
		"tls-client-cert-file", c.ClientCert,
		"tls-client-key-file", c.ClientKey,
		"tls-ca-cert-file", c.CACert,
	}
}

// StartSluiceTLS starts an in-process Sluice on a free TLS port only
// (with TLSDirectives, then the extra "name value" pairs) and returns it
// and its address; it is stopped when the test ends.
func StartSluiceTLS(tb testing.TB, c *tlstest.Certs, directives ...string) (*server.Server, string) {
	tb.Helper()
	for try := 0; ; try++ {
		port := FreePort(tb)
		cfg := server.NewConfig()
		args := append(TLSDirectives(c, port), directives...)
		for i := 0; i+1 < len(args); i += 2 {
			if err := cfg.Set(args[i], args[i+1]); err != nil {
				tb.Fatalf("config %s: %v", args[i], err)
			}
		}
		srv := server.New(cfg)
		srv.SetLogger(nil)
		if err := srv.Start(); err != nil {
			if try < 3 {
				continue // the port was taken meanwhile
			}
			tb.Fatal(err)
		}
		tb.Cleanup(srv.Stop)
		return srv, "127.0.0.1:" + strconv.Itoa(port)
	}
}

// StartRedisTLS starts redis-server from PATH on a free TLS port only
// (TLSDirectives, then the extra "name value" pairs), or skips the test
// when it is not installed (CI installs it).
func StartRedisTLS(tb testing.TB, c *tlstest.Certs, directives ...string) string {
	tb.Helper()
	path := RedisServerPath(tb)
	port := FreePort(tb)
	args := []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tb.TempDir()}
	d := append(TLSDirectives(c, port), directives...)
	for i := 0; i+1 < len(d); i += 2 {
		args = append(args, "--"+d[i], d[i+1])
	}
	cmd := exec.Command(path, args...)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cfg := c.ClientConfig(tb)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if conn, err := tls.Dial("tcp", addr, cfg); err == nil {
			conn.Close()
			return addr
		}
	}
	tb.Fatal("redis-server with TLS did not start")
	return ""
}

// Recorder sends commands on one connection and keeps their raw replies
// in order (the tests that compare a run against redis-server with one
// against Sluice); a connection error fails the test.
type Recorder struct {
	tb      testing.TB
	c       *Conn
	Replies []string
}

// NewRecorder records the replies of the commands sent on c.
func NewRecorder(tb testing.TB, c *Conn) *Recorder { return &Recorder{tb: tb, c: c} }

// Do sends one command and keeps its reply.
func (r *Recorder) Do(args ...string) {
	r.tb.Helper()
	rep, err := r.c.Do(args...)
	if err != nil {
		r.tb.Fatal(err)
	}
	r.Replies = append(r.Replies, rep)
}
