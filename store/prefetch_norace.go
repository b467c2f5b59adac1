//go:build !race

package store

const prefetchOn = true
