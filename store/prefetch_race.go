//go:build race

package store

// prefetchOn: under the race detector Prefetcher.Run does nothing (its
// reads of the tables race with other loops' writes by design).
const prefetchOn = false
