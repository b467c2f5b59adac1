package main

import (
	"net/http"
	_ "net/http/pprof" // profiles for SLUICE_PPROF
	"os"
)

// SLUICE_PPROF=127.0.0.1:6060 serves Go's profiles (CPU, heap, mutex,
// goroutines) at /debug/pprof/ while the server runs.
func init() {
	if addr := os.Getenv("SLUICE_PPROF"); addr != "" {
		go http.ListenAndServe(addr, nil)
	}
}
