package server_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// CLIENT INFO/LIST of the calling client report the query buffer holding
// the batch being executed, as Redis does (qbuf=26 for a lone
// "CLIENT INFO"; a pipeline counts whole).
func TestClientInfoQbufOfSelf(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	qbuf := regexp.MustCompile(`qbuf=\d+`)
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		var out []string
		for _, batch := range [][][]string{
			{{"CLIENT", "INFO"}},
			{{"CLIENT", "LIST", "TYPE", "normal"}},
			{{"PING"}, {"CLIENT", "INFO"}},
			{{"CLIENT", "INFO"}, {"PING"}},
		} {
			var b []byte
			for _, cmd := range batch {
				b = append(b, redistest.Encode(cmd...)...)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(b); err != nil {
				t.Fatal(err)
			}
			for range batch {
				r, err := redistest.ReadReply(c.R)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, qbuf.FindString(r))
			}
		}
		return out
	}
	want, got := run(raddr), run(saddr)
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("reply %d: redis %q, sluice %q", i, want[i], got[i])
		}
	}
}
