package server

import "testing"

// TestBitNotificationsVsRedis compares the keyspace events of the bit
// commands (setbit from SETBIT and BITFIELD, set/del from BITOP, new for
// created keys) with redis-server's.
func TestBitNotificationsVsRedis(t *testing.T) {
	hsCompareEvents(t, [][]string{
		{"SETBIT", "b1", "3", "1"},
		{"SETBIT", "b1", "3", "1"}, // unchanged: no event
		{"SETBIT", "b1", "3", "0"},
		{"SETBIT", "b1", "30", "0"}, // grown: event
		{"SETBIT", "b0", "0", "0"},  // created with a zero bit
		{"GETBIT", "b1", "3"},
		{"BITFIELD", "bf", "GET", "u8", "0"},
		{"BITFIELD", "bf", "SET", "u8", "0", "0"},
		{"BITFIELD", "bf", "SET", "u8", "0", "0"},
		{"BITFIELD", "bf", "INCRBY", "u8", "0", "1"},
		{"BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "-2"},
		{"BITFIELD", "bf2", "OVERFLOW", "FAIL", "SET", "u8", "0", "300"},
		{"BITOP", "OR", "dst", "b1", "bf"},
		{"BITOP", "NOT", "dst", "b1"},
		{"BITOP", "AND", "dst", "nokey"},
		{"BITOP", "AND", "dst", "nokey"},
		{"HSET", "h", "f", "v"},
		{"BITOP", "OR", "h", "b1"},
		{"SETBIT", "h", "0", "1"},
	})
}
