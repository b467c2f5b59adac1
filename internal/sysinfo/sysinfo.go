// Package sysinfo reads the facts about the process and the machine that
// INFO and MEMORY report: the system's name as uname gives it, the
// machine's memory, the Go runtime's memory figures and the resident set
// size (without stopping the world), CPU times from getrusage, and byte
// counts written as Redis writes them (bytesToHuman).
package sysinfo

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Percent is a as a percentage of b, 0 when b is 0.
func Percent(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) * 100 / float64(b)
}

// Ratio is a / b, 0 when b is 0.
func Ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// BytesToHuman formats a byte count as Redis's bytesToHuman does.
func BytesToHuman(n uint64) string {
	d := float64(n)
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.2fK", d/1024)
	case n < 1024*1024*1024:
		return fmt.Sprintf("%.2fM", d/(1024*1024))
	case n < 1024*1024*1024*1024:
		return fmt.Sprintf("%.2fG", d/(1024*1024*1024))
	case n < 1024*1024*1024*1024*1024:
		return fmt.Sprintf("%.2fT", d/(1024*1024*1024*1024))
	case n < 1024*1024*1024*1024*1024*1024:
		return fmt.Sprintf("%.2fP", d/(1024*1024*1024*1024*1024))
	}
	return fmt.Sprintf("%dB", n)
}

// OS is INFO's os field, as Redis writes uname's sysname, release and
// machine ("Linux 6.1.0 x86_64"), read once.
var OS = sync.OnceValue(func() string {
	release := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		release = strings.TrimSpace(string(b))
	}
	sys := strings.ToUpper(runtime.GOOS[:1]) + runtime.GOOS[1:]
	machine := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686"}[runtime.GOARCH]
	if machine == "" {
		machine = runtime.GOARCH
	}
	return strings.TrimSpace(sys + " " + release + " " + machine)
})

// SystemMemory is the machine's memory (MemTotal), read once; 0 when
// unknown.
var SystemMemory = sync.OnceValue(func() uint64 {
	var total uint64
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				if fs := strings.Fields(line); len(fs) >= 2 {
					kb, _ := strconv.ParseUint(fs[1], 10, 64)
					total = kb * 1024
				}
			}
		}
	}
	return total
})

// Memory is what the Go runtime and the kernel say about the process's
// memory: the allocator's figures for INFO's allocator_* fields, RSS and
// the machine's memory.
type Memory struct {
	Objects   uint64 // bytes in live and unswept heap objects (allocator_allocated)
	HeapInUse uint64 // Objects and the heap's unused space in spans (allocator_active)
	Total     uint64 // all the runtime maps (allocator_resident)
	RSS       uint64 // the process's resident set size (Total where unknown)
	System    uint64 // SystemMemory
}

var memSamples = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
}

// ReadMemory reads the Go runtime's memory figures cheaply (no
// stop-the-world) and the process's resident set size.
func ReadMemory() Memory {
	samples := make([]metrics.Sample, len(memSamples))
	copy(samples, memSamples)
	metrics.Read(samples)
	val := func(i int) uint64 {
		if samples[i].Value.Kind() == metrics.KindUint64 {
			return samples[i].Value.Uint64()
		}
		return 0
	}
	m := Memory{Objects: val(0), Total: val(1)}
	m.HeapInUse = m.Objects + val(2)
	m.RSS = m.Total
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if fields := strings.Fields(string(b)); len(fields) > 1 {
			if pages, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
				m.RSS = pages * uint64(os.Getpagesize())
			}
		}
	}
	m.System = SystemMemory()
	return m
}

// CPUTimes are the process's and its waited-for children's CPU times
// from getrusage, written as INFO's cpu section writes them
// ("seconds.microseconds").
type CPUTimes struct {
	Sys, User, ChildrenSys, ChildrenUser string
}

// CPU reads the CPU times.
func CPU() CPUTimes {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) string { return fmt.Sprintf("%d.%06d", t.Sec, t.Usec) }
	return CPUTimes{tv(self.Stime), tv(self.Utime), tv(children.Stime), tv(children.Utime)}
}
