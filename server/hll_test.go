package server

import "testing"

// TestHLLNotificationsVsRedis compares PFADD/PFMERGE/PFCOUNT keyspace
// events with redis-server's.
func TestHLLNotificationsVsRedis(t *testing.T) {
	hsCompareEvents(t, [][]string{
		{"PFADD", "h1", "a", "b"},
		{"PFADD", "h1", "a", "b"}, // unchanged: no event
		{"PFADD", "h0"},           // created empty
		{"PFADD", "h0"},
		{"PFCOUNT", "h1"}, // caches the cardinality: no event
		{"PFCOUNT", "h1", "h0"},
		{"PFMERGE", "h2", "h1", "h0"},
		{"PFMERGE", "h2"},
		{"HSET", "hh", "f", "v"},
		{"PFADD", "hh", "x"},
		{"PFMERGE", "hh", "h1"},
	})
}
