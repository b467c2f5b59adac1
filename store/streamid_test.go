package store

import "testing"

func TestParseStreamID(t *testing.T) {
	cases := []struct {
		in         string
		missingSeq uint64
		strict     bool
		want       StreamID
		ok         bool
	}{
		{"5-3", 0, false, StreamID{5, 3}, true},
		{"5", 7, false, StreamID{5, 7}, true},
		{"-", 0, false, StreamID{}, true},
		{"+", 0, false, MaxStreamID, true},
		{"-", 0, true, StreamID{}, false},
		{"+", 0, true, StreamID{}, false},
		{"007-1", 0, false, StreamID{7, 1}, true}, // strtoull's leading zeros
		{" 7", 0, false, StreamID{7, 0}, true},    // and leading spaces
		{"18446744073709551615-18446744073709551615", 0, false, MaxStreamID, true},
		{"18446744073709551616", 0, false, StreamID{}, false},
		{"5-x", 0, false, StreamID{}, false},
		{"abc", 0, false, StreamID{}, false},
		{"", 0, false, StreamID{}, false},
		{"5-3\x00junk", 0, false, StreamID{5, 3}, true}, // C stops at NUL
	}
	for _, c := range cases {
		got, ok := ParseStreamID([]byte(c.in), c.missingSeq, c.strict, nil)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("ParseStreamID(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	var seqGiven bool
	if id, ok := ParseStreamID([]byte("9-*"), 0, true, &seqGiven); !ok || seqGiven || id != (StreamID{9, 0}) {
		t.Errorf("9-*: %v %v seqGiven=%v", id, ok, seqGiven)
	}
}
