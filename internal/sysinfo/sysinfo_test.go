package sysinfo

import (
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestBytesToHuman: maxmemory_human as redis-server 7.0.15 shows it for
// these maxmemory settings.
func TestBytesToHuman(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want string
	}{
		{0, "0B"},
		{1023, "1023B"},
		{1024, "1.00K"},
		{1536, "1.50K"},
		{1048575, "1024.00K"},
		{1048576, "1.00M"},
		{104857600, "100.00M"},
		{1 << 30, "1.00G"},
		{1 << 40, "1.00T"},
		{1 << 50, "1.00P"},
		{1 << 60, "1152921504606846976B"},
	} {
		if got := BytesToHuman(c.n); got != c.want {
			t.Errorf("%d: got %s, want %s", c.n, got, c.want)
		}
	}
}

func TestPercentRatio(t *testing.T) {
	if Percent(1, 4) != 25 || Percent(1, 0) != 0 {
		t.Errorf("Percent: %v %v", Percent(1, 4), Percent(1, 0))
	}
	if Ratio(3, 2) != 1.5 || Ratio(3, 0) != 0 {
		t.Errorf("Ratio: %v %v", Ratio(3, 2), Ratio(3, 0))
	}
}

// TestOS: "sysname release machine", as uname -srm prints it.
func TestOS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Skip(err)
	}
	fs := strings.Fields(OS())
	if len(fs) != 3 || fs[0] != "Linux" || fs[1] != strings.TrimSpace(string(b)) {
		t.Errorf("OS() = %q", OS())
	}
	if runtime.GOARCH == "amd64" && fs[2] != "x86_64" {
		t.Errorf("machine %q", fs[2])
	}
}

func TestReadMemory(t *testing.T) {
	m := ReadMemory()
	if m.Objects == 0 || m.HeapInUse < m.Objects || m.Total < m.HeapInUse || m.RSS == 0 {
		t.Errorf("%+v", m)
	}
	if runtime.GOOS == "linux" && (m.System == 0 || m.System != SystemMemory()) {
		t.Errorf("system memory %d", m.System)
	}
}

// TestCPU: the times as INFO's cpu section writes them.
func TestCPU(t *testing.T) {
	re := regexp.MustCompile(`^\d+\.\d{6}$`)
	c := CPU()
	for _, v := range []string{c.Sys, c.User, c.ChildrenSys, c.ChildrenUser} {
		if !re.MatchString(v) {
			t.Errorf("%+v", c)
		}
	}
}
