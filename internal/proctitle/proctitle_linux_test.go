//go:build linux

package proctitle

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The title shows in /proc/PID/cmdline, as ps reads it: a short one
// alone, a long one past the arguments' room (into the environment's).
// It runs in a child process, whose command line it rewrites.
func TestSet(t *testing.T) {
	if title := os.Getenv("PROCTITLE_TEST"); title != "" {
		CloneArgs()
		if err := Set(title); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile("/proc/self/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != title+"\x00" {
			t.Fatalf("cmdline %q, want %q and its NUL", b, title)
		}
		if os.Getenv("PROCTITLE_TEST") != title {
			t.Fatal("the environment changed")
		}
		return
	}
	for _, title := range []string{"x", "sluice-server 127.0.0.1:6379", strings.Repeat("long title ", 40)} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestSet$")
		cmd.Env = append(os.Environ(), "PROCTITLE_TEST="+title, "PADDING="+strings.Repeat("p", 600))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("title %q: %v\n%s", title, err, out)
		}
	}
}
