package server_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// UNLINK, DEL and FLUSHDB of big values give the memory back in the
// background: INFO used_memory falls soon after, as in Redis (the
// lazyfree suite), instead of waiting for some later allocation to start
// a collection. The huge SADD must not stay referenced by the parser's
// argument arrays either.
func TestBigDeleteReclaimsMemory(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	c := redistest.Dial(t, addr)
	used := func() int {
		raw, _ := c.Do("INFO", "memory")
		f := infoFields(t, raw)["memory"]["used_memory"]
		n, _ := strconv.Atoi(f)
		return n
	}
	members := make([]string, 0, 100002)
	members = append(members, "SADD", "myset")
	for i := 0; i < 100000; i++ {
		members = append(members, strconv.Itoa(i))
	}
	for _, del := range [][]string{{"UNLINK", "myset"}, {"DEL", "myset"}, {"FLUSHDB", "ASYNC"}} {
		if r, _ := c.Do(members...); r != ":100000\r\n" {
			t.Fatalf("SADD: %q", r)
		}
		peak := used()
		c.Do(del...)
		deadline := time.Now().Add(3 * time.Second)
		for {
			now := used()
			if peak-now > 3<<20 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: used_memory %d after, %d at peak", strings.Join(del, " "), now, peak)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
