// Package difftest runs the same command sequences against a real
// redis-server and Sluice and compares the raw replies byte for byte.
// Cases live in testdata/*.txt; see the format in difftest_test.go.
package difftest
