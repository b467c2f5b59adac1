package server

import (
	"bytes"
	"runtime"
	"strconv"
)

// What Redis's debug.c writes to the log when the server crashes (a bug
// report with every thread's stack) or when the software watchdog
// (watchdog-period) finds the event loop held by one command for longer
// than its period. Sluice's event loops are goroutines, so the stacks are
// goroutines' stacks.

// CrashReport writes a bug report to the log: reason, then the stack of
// every goroutine under Redis's "------ STACK TRACE ------" heading. The
// caller ends the process after it (a SIGABRT, DEBUG SEGFAULT).
func (s *Server) CrashReport(reason string) {
	s.Warnf("\n\n=== SLUICE BUG REPORT START: Cut & paste starting from here ===")
	s.Warnf("%s", reason)
	s.LogRaw(LogWarning, "\n------ STACK TRACE ------\n\n"+string(allStacks())+"\n=== SLUICE BUG REPORT END. Make sure to include from START to END. ===\n\n")
}

// allStacks returns every goroutine's stack, as a Go traceback prints it.
func allStacks() []byte {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// goroutineID returns the calling goroutine's id, from its stack's first
// line ("goroutine 7 [running]:").
func goroutineID() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		id, _ := strconv.ParseInt(string(b[:i]), 10, 64)
		return id
	}
	return 0
}

// goroutineStack returns goroutine id's stack from a dump of all of them
// (allStacks), or nil.
func goroutineStack(all []byte, id int64) []byte {
	head := []byte("goroutine " + strconv.FormatInt(id, 10) + " [")
	i := bytes.Index(all, head)
	if i < 0 {
		return nil
	}
	all = all[i:]
	if j := bytes.Index(all, []byte("\n\n")); j >= 0 {
		all = all[:j+1]
	}
	return all
}
