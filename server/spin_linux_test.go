//go:build linux

package server

import (
	"bufio"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// threadCPU returns the CPU time (user + system) of thread tid so far.
func threadCPU(t *testing.T, tid int32) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(int(tid)) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name in parentheses: state is field 3,
	// utime and stime are fields 14 and 15, in clock ticks (100 per second).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// A loop measures what sleeping costs it while a client sends request after
// request, and an idle loop costs no CPU (it does not spin).
func TestLoopSpinGateMeasuresAndIdles(t *testing.T) {
	if spinWindow(1) == 0 || !lockThreads {
		t.Skip("spinning is off here (one CPU, GOMAXPROCS=1 or SLUICE_SPIN_US=0)")
	}
	cfg := NewConfig()
	cfg.Set("port", "0")
	cfg.Set("io-threads", "1")
	srv := New(cfg)
	srv.SetLogger(nil)
	srv.SpinWhenBusy()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	addr := srv.Addrs()[0].String()
	l := srv.loops[0]
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for i := 0; i < 5000; i++ {
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
			t.Fatalf("PING %d: %q %v", i, line, err)
		}
	}
	if c := l.sleepCost.Load(); c <= 0 || c > int64(10*time.Millisecond) {
		t.Errorf("5000 back-to-back PINGs: the loop measured a sleep at %dns of CPU", c)
	}
	tid := l.tid.Load()
	time.Sleep(200 * time.Millisecond)
	before := threadCPU(t, tid)
	time.Sleep(time.Second)
	if used := threadCPU(t, tid) - before; used > 300*time.Millisecond {
		t.Errorf("idle loop used %v of CPU in 1s: still spinning", used)
	}
}
