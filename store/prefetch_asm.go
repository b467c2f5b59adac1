//go:build amd64 || arm64

package store

// prefetch asks the CPU to load the cache line holding addr, without
// waiting for it. It never faults, whatever addr is.
//
//go:noescape
func prefetch(addr uintptr)
