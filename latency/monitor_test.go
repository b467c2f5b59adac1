package latency

import (
	"strings"
	"testing"
)

func TestMonitorSamples(t *testing.T) {
	var m Monitor
	m.Add("command", 120, 1000)
	m.Add("command", 300, 1000) // same second: the highest stays
	m.Add("command", 150, 1001)
	m.Add("expire-cycle", 20, 1002)
	latest := m.Latest()
	want := []Latest{{"command", 1001, 150, 300}, {"expire-cycle", 1002, 20, 20}}
	if len(latest) != 2 || latest[0] != want[0] || latest[1] != want[1] {
		t.Errorf("latest %v, want %v", latest, want)
	}
	h := m.History("command")
	if len(h) != 2 || h[0] != (Sample{1000, 300}) || h[1] != (Sample{1001, 150}) {
		t.Errorf("history %v", h)
	}
	if h := m.History("nosuch"); len(h) != 0 {
		t.Errorf("history of an unknown event %v", h)
	}
	if n := m.Reset([][]byte{[]byte("nosuch"), []byte("expire-cycle")}); n != 1 {
		t.Errorf("reset named %d", n)
	}
	if n := m.Reset(nil); n != 1 {
		t.Errorf("reset all %d", n)
	}
	if len(m.Latest()) != 0 {
		t.Errorf("latest after reset %v", m.Latest())
	}
}

// The series keeps the last SeriesLen seconds, oldest first.
func TestMonitorWraps(t *testing.T) {
	var m Monitor
	for i := int64(1); i <= SeriesLen+10; i++ {
		m.Add("command", i, i)
	}
	h := m.History("command")
	if len(h) != SeriesLen || h[0].Time != 11 || h[len(h)-1].Time != SeriesLen+10 {
		t.Errorf("%d samples, %v .. %v", len(h), h[0], h[len(h)-1])
	}
	if l := m.Latest()[0]; l.Max != SeriesLen+10 || l.Latency != SeriesLen+10 {
		t.Errorf("latest %v", l)
	}
}

func TestGraph(t *testing.T) {
	var m Monitor
	if _, ok := m.Graph("command", 0); ok {
		t.Fatal("graph of an unknown event")
	}
	m.Add("command", 100, 1000)
	m.Add("command", 400, 1030)
	m.Add("command", 200, 1100)
	m.Add("command", 300, 1000+2*86400)
	g, ok := m.Graph("command", 1000+2*86400+5)
	want := "command - high 400 ms, low 100 ms (all time high 400 ms)\n" +
		strings.Repeat("-", 80) + "\n" +
		" #  \n" +
		" | #\n" +
		" |#|\n" +
		"#|||\n" +
		"2d\n1d\n1d\n5s\n"
	if !ok || g != want {
		t.Errorf("graph\n%s\nwant\n%s", g, want)
	}
	// One level when every sample is the same.
	var one Monitor
	one.Add("x", 5, 100)
	g, _ = one.Graph("x", 100+3600*3)
	if want := "x - high 5 ms, low 5 ms (all time high 5 ms)\n" + strings.Repeat("-", 80) + "\n \n \n \n#\n3h\n"; g != want {
		t.Errorf("graph %q, want %q", g, want)
	}
}

func TestAgoLabel(t *testing.T) {
	for secs, want := range map[int64]string{0: "0s", 59: "59s", 60: "1m", 3599: "59m", 3600: "1h", 86399: "23h", 86400: "1d"} {
		if got := agoLabel(secs); got != want {
			t.Errorf("agoLabel(%d) = %q, want %q", secs, got, want)
		}
	}
}

func TestDoctor(t *testing.T) {
	var m Monitor
	if d := m.Doctor(false); !strings.HasPrefix(d, "I'm sorry, Dave, I can't do that.") {
		t.Errorf("disabled: %q", d)
	}
	if d := m.Doctor(true); !strings.HasPrefix(d, "Dave, no latency spike was observed") {
		t.Errorf("no events: %q", d)
	}
	m.Add("command", 100, 1000)
	m.Add("command", 300, 1010)
	m.Add("command", 200, 1020)
	d := m.Doctor(true)
	if want := "1. command: 3 latency spikes (average 200ms, mean deviation 66ms, period 10 sec). Worst all time event 300ms.\n"; !strings.Contains(d, want) {
		t.Errorf("doctor %q lacks %q", d, want)
	}
}
