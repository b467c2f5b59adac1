//go:build linux

package server_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
)

// sluice-server keeps its process title as redis-server does: from
// proc-title-template when it starts and when CONFIG SET changes it, as
// ps and /proc/PID/cmdline show it. The titles are compared past {title}
// (each server's own path).
func TestProcTitle(t *testing.T) {
	titles := map[string][]string{}
	for name, bin := range processServers(t) {
		srv, c := startProc(t, bin, "--cluster-enabled", "yes")
		read := func() string {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(srv.cmd.Process.Pid) + "/cmdline")
			if err != nil {
				t.Fatal(err)
			}
			s := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), strings.TrimPrefix(srv.addr, "127.0.0.1:"), "PORT")
			if i := strings.IndexByte(s, ' '); i >= 0 && !strings.HasPrefix(s, "TEST") {
				s = "{title}" + s[i:] // the binary's path
			}
			return s
		}
		titles[name] = append(titles[name], read())
		ctx := context.Background()
		for _, tmpl := range []string{"TEST {listen-addr} {port} {tls-port} {server-mode} {config-file} {{x}} a}b", "{invalid-var}", "x {", "{}"} {
			err := c.ConfigSet(ctx, "proc-title-template", tmpl).Err()
			titles[name] = append(titles[name], read()+" / "+strings.TrimPrefix(errString(err), "ERR CONFIG SET failed (possibly related to argument 'proc-title-template') - "))
		}
	}
	if strings.Join(titles["sluice"], "\n") != strings.Join(titles["redis"], "\n") {
		t.Errorf("sluice:\n%s\nredis:\n%s", strings.Join(titles["sluice"], "\n"), strings.Join(titles["redis"], "\n"))
	}
	if !strings.HasPrefix(titles["sluice"][1], "TEST 127.0.0.1:") {
		t.Errorf("the title did not change: %q", titles["sluice"][1])
	}
}

func errString(err error) string {
	if err == nil {
		return "OK"
	}
	return err.Error()
}
