package resp

import (
	"bytes"
	"strconv"
	"testing"
)

// Bulk's short-string path writes the same bytes as the general one, for
// every length around its limits and whatever spare capacity Buf has.
func TestBulkShortPath(t *testing.T) {
	for n := 0; n <= 130; n++ {
		v := bytes.Repeat([]byte{'v'}, n)
		want := "$" + strconv.Itoa(n) + "\r\n" + string(v) + "\r\n"
		for _, spare := range []int{0, 1, n + 6, n + 7, 4096} {
			w := Writer{Buf: make([]byte, 3, 3+spare)}
			copy(w.Buf, "abc")
			w.Bulk(v)
			w.Bulk(v)
			if got := string(w.Buf); got != "abc"+want+want {
				t.Fatalf("n=%d spare=%d: %q", n, spare, got)
			}
		}
	}
}
