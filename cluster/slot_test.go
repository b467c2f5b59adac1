package cluster

import "testing"

func TestKeySlot(t *testing.T) {
	for _, tc := range []struct {
		key  string
		slot int
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"", 0},
		{"123456789", 0x31C3 & 16383}, // CRC16/XMODEM check value 0x31C3
		{"{user1000}.following", KeySlotString("user1000")},
		{"{user1000}.followers", KeySlotString("user1000")},
		{"foo{}{bar}", int(crc16([]byte("foo{}{bar}")) & 16383)},
		{"foo{{bar}}zap", KeySlotString("{bar")},
		{"foo{bar}{zap}", KeySlotString("bar")},
		{"{}", int(crc16([]byte("{}")) & 16383)},
		{"{a", int(crc16([]byte("{a")) & 16383)},
	} {
		if got := KeySlot([]byte(tc.key)); got != tc.slot {
			t.Errorf("KeySlot(%q) = %d, want %d", tc.key, got, tc.slot)
		}
		if got := KeySlotString(tc.key); got != tc.slot {
			t.Errorf("KeySlotString(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
}

func BenchmarkKeySlot(b *testing.B) {
	k := []byte("key:000000012345")
	for i := 0; i < b.N; i++ {
		KeySlot(k)
	}
}
