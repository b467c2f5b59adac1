package server_test

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// nonLoopbackAddr is one of this machine's IPv4 addresses other than
// loopback ones, or "" when it has none.
func nonLoopbackAddr() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// Protected mode, on by default with redis-server 7.0's default bind
// ("* -::*"): while the default user has no password, a client from
// another address than loopback reads the DENIED text and is
// disconnected, counted in rejected_connections; CONFIG SET
// protected-mode no or a password lets it in. Both servers are started
// with their defaults for bind and protected-mode, and the same client
// sees the same bytes from each.
func TestProtectedModeVsRedis(t *testing.T) {
	ip := nonLoopbackAddr()
	if ip == "" {
		t.Skip("no address other than loopback on this machine")
	}
	// The harnesses start both on loopback without protected mode; these
	// are the servers' own defaults.
	raddr := redistest.StartRedis(t, "--bind", "* -::*", "--protected-mode", "yes")
	srv, _ := redistest.StartSluice(t, "bind", "* -::*", "protected-mode", "yes")
	_, p, _ := net.SplitHostPort(raddr)
	rport, _ := strconv.Atoi(p)
	sport := srv.Addrs()[0].(*net.TCPAddr).Port
	run := func(port int) []string {
		local := redistest.Dial(t, "127.0.0.1:"+strconv.Itoa(port))
		do := func(args ...string) string {
			r, err := local.Do(args...)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		var out []string
		out = append(out, do("CONFIG", "GET", "protected-mode"), do("CONFIG", "GET", "bind"))
		remote := func() string {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write(redistest.Encode("PING"))
			b, err := io.ReadAll(c)
			if err != nil && !strings.Contains(err.Error(), "reset") {
				return "error: " + err.Error()
			}
			return string(b)
		}
		// Refused: DENIED, then the server closes the connection (the
		// PING gets no answer).
		out = append(out, remote())
		info := do("INFO", "stats")
		for _, l := range strings.Split(info, "\r\n") {
			if strings.HasPrefix(l, "rejected_connections:") {
				out = append(out, l)
			}
		}
		// With protected-mode no, or with a password, the client gets in
		// (the connection stays open, so read one reply only).
		one := func() string {
			c := redistest.Dial(t, net.JoinHostPort(ip, strconv.Itoa(port)))
			c.SetDeadline(time.Now().Add(5 * time.Second))
			r, err := c.Do("PING")
			if err != nil {
				return "error: " + err.Error()
			}
			return r
		}
		out = append(out, do("CONFIG", "SET", "protected-mode", "no"), one())
		do("CONFIG", "SET", "protected-mode", "yes")
		out = append(out, do("CONFIG", "SET", "requirepass", "pw"), one())
		return out
	}
	want, got := run(rport), run(sport)
	if len(want) != len(got) {
		t.Fatalf("redis %q\nsluice %q", want, got)
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("step %d: redis %q, sluice %q", i, want[i], got[i])
		}
	}
	if !strings.HasPrefix(want[2], "-DENIED") {
		t.Fatalf("redis-server let the client in: %q", want[2])
	}
}
