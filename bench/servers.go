package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ModulePath is the Sluice module; ModuleRoot looks for its go.mod.
const ModulePath = "github.com/sluicedb/sluice"

// ModuleRoot walks up from dir to the directory whose go.mod declares the
// Sluice module.
func ModuleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if f, err := os.Open(filepath.Join(d, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) == 2 && fields[0] == "module" && fields[1] == ModulePath {
					f.Close()
					return d, nil
				}
			}
			f.Close()
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod for %s above %s: run from the Sluice source tree or pass -sluice-bin", ModulePath, dir)
		}
		d = parent
	}
}

// BuildSluice builds ./cmd/sluice-server of the module at root into dir and
// returns the binary's path.
func BuildSluice(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "sluice-server")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice-server")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/sluice-server: %v\n%s", err, out)
	}
	return bin, nil
}

// Process is a server this tool started.
type Process struct {
	Name string
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// FreePort asks the kernel for a TCP port that is free right now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartServer runs bin with the redis-server style flags every compare run
// uses (loopback, no persistence) plus extra, on a free port, and waits
// until it answers PING. Its output goes to logPath.
func StartServer(name, bin, logPath string, extra ...string) (*Process, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port can be taken between check and bind
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		p, err := startOn(name, bin, logPath, port, extra)
		if err == nil {
			return p, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startOn(name, bin, logPath string, port int, extra []string) (*Process, error) {
	argv := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no"}, extra...)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, argv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, done: make(chan struct{}), log: logf}
	go func() { cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			logf.Close()
			return nil, fmt.Errorf("%s exited at start (%v); see %s", name, cmd.ProcessState, logPath)
		default:
		}
		if err := Ping(p.Addr, time.Second); err == nil {
			return p, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Stop()
	return nil, fmt.Errorf("%s did not answer PING on %s within 10s", name, p.Addr)
}

// Stop asks the server to exit (SIGTERM), then kills it after 5 seconds.
func (p *Process) Stop() {
	if p == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	p.log.Close()
}

// Ping sends PING on a fresh connection and checks for +PONG.
func Ping(addr string, timeout time.Duration) error {
	reply, err := RawCommand(addr, timeout, "PING")
	if err != nil {
		return err
	}
	if reply != "+PONG" {
		return fmt.Errorf("PING: %q", reply)
	}
	return nil
}

// RawCommand sends one command on a fresh connection and returns the first
// line of the reply (e.g. "+OK", "-ERR unknown command ...", ":1", "$3").
func RawCommand(addr string, timeout time.Duration, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// IsUnknownCommand reports whether a reply line is Redis's unknown-command
// (or unknown-subcommand) error.
func IsUnknownCommand(reply string) bool {
	return strings.HasPrefix(reply, "-ERR unknown command") || strings.HasPrefix(reply, "-ERR unknown subcommand")
}

// ServerInfo returns "redis_version" style facts from INFO server, if the
// server has INFO; empty otherwise.
func ServerInfo(addr string) map[string]string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return nil
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return nil
	}
	body := make([]byte, n)
	if _, err := ioReadFull(r, body); err != nil {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := r.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// lookTool finds a program in PATH, or reports err.
func lookTool(name string, err error) (string, error) {
	p, lerr := exec.LookPath(name)
	if lerr != nil {
		return "", err
	}
	return p, nil
}

var errNoRedisServer = errors.New("redis-server not found in PATH (install redis-server, or pass -reference host:port)")
