package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// The reply buffer follows what a client uses, as in Redis 7.0: an idle
// client's shrinks to about 1 KiB and one that reads big replies gets
// 16 KiB again, CLIENT LIST's rbs and tot-mem follow, INFO counts the
// resizes, and DEBUG REPLYBUFFER RESIZING 0 stops it. Both servers.
func TestReplyBufferFollowsUse(t *testing.T) {
	ctx := context.Background()
	_, saddr := redistest.StartSluice(t, "enable-debug-command", "yes")
	raddr := redistest.StartRedis(t, "--enable-debug-command", "yes")
	for name, addr := range map[string]string{"sluice": saddr, "redis": raddr} {
		t.Run(name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer c.Close()
			defer c.Do(ctx, "DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "RESET")
			field := func(f string) int64 {
				n, _ := strconv.ParseInt(clientField(t, c, "rbtest", f), 10, 64)
				return n
			}
			waitFor := func(what string, ok func() bool) {
				t.Helper()
				for i := 0; i < 30; i++ {
					if ok() {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
				t.Fatalf("%s: rbs=%d rbp=%d", what, field("rbs"), field("rbp"))
			}
			if err := c.Do(ctx, "DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100").Err(); err != nil {
				t.Fatal(err)
			}
			tc := rawClient(t, addr, "rbtest")
			waitFor("idle client's buffer did not shrink", func() bool {
				rbs := field("rbs")
				return rbs >= 1024 && rbs < 2046
			})
			small, smallMem := field("rbs"), field("tot-mem")
			if infoInt(t, c, "reply_buffer_shrinks") == 0 {
				t.Error("reply_buffer_shrinks is 0 after a shrink")
			}

			c.Set(ctx, "bigval", strings.Repeat("x", 32768), 0)
			c.Do(ctx, "DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "NEVER")
			r := bufio.NewReader(tc)
			waitFor("busy client's buffer did not grow", func() bool {
				tc.Write(redistest.Encode("GET", "bigval"))
				if _, err := r.Discard(len("$32768\r\n") + 32768 + 2); err != nil {
					t.Fatal(err)
				}
				rbs := field("rbs")
				return rbs >= 16384 && rbs < 32768
			})
			big, bigMem := field("rbs"), field("tot-mem")
			if bigMem-smallMem < big-small-2048 {
				t.Errorf("tot-mem %d with rbs=%d, %d with rbs=%d: does not follow the buffer", smallMem, small, bigMem, big)
			}
			if infoInt(t, c, "reply_buffer_expands") == 0 {
				t.Error("reply_buffer_expands is 0 after growing")
			}

			// Resizing off: a new idle client keeps its 16 KiB.
			c.Do(ctx, "DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100")
			c.Do(ctx, "DEBUG", "REPLYBUFFER", "RESIZING", "0")
			defer c.Do(ctx, "DEBUG", "REPLYBUFFER", "RESIZING", "1")
			tc.Close()
			rawClient(t, addr, "rbtest")
			time.Sleep(500 * time.Millisecond)
			if rbs := field("rbs"); rbs != 16384 {
				t.Errorf("with resizing off, a new client's rbs is %d", rbs)
			}
		})
	}
}

// Output past the reply buffer counts in whole reply-list blocks, as
// Redis counts it: a KEYS reply of 1,000 106-109 byte names (116 KB, of
// which 99.5 KB overflow the buffer) passes a 100,000-byte limit and
// closes the client, where one of 700 names (81 KB) is served. Both
// servers.
func TestOutputLimitCountsReplyBlocks(t *testing.T) {
	ctx := context.Background()
	_, saddr := redistest.StartSluice(t)
	for name, addr := range map[string]string{"sluice": saddr, "redis": redistest.StartRedis(t)} {
		t.Run(name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer c.Close()
			prefix := strings.Repeat("long-key-name-prefix-", 5)
			keys := func(pattern string) (int, error) {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				conn.Write(redistest.Encode("KEYS", pattern))
				conn.Write(redistest.Encode("QUIT"))
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				b, err := io.ReadAll(bufio.NewReader(conn))
				return len(b), err
			}
			for i := 0; i < 1000; i++ {
				c.Set(ctx, fmt.Sprintf("%s%d", prefix, i), "v", 0)
			}
			c.ConfigSet(ctx, "client-output-buffer-limit", "normal 100000 0 0")
			defer c.ConfigSet(ctx, "client-output-buffer-limit", "normal 0 0 0")
			// 700 names: 100-799.
			if n, err := keys(prefix + "[1-7]??"); n < 80000 || err != nil {
				t.Errorf("KEYS of 700 names: %d bytes, %v", n, err)
			}
			if n, _ := keys("*"); n != 0 {
				t.Errorf("KEYS of 1000 names past the limit: got %d bytes", n)
			}
		})
	}
}

// CLIENT LIST splits a client's pending output as Redis holds it: obl
// bytes in the reply buffer, oll reply-list blocks past it, and omem the
// blocks' size. A subscriber that stopped reading, both servers.
func TestClientListReplyBlocks(t *testing.T) {
	ctx := context.Background()
	for name, addr := range bothServers(t) {
		t.Run(name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer c.Close()
			sub, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			sub.(*net.TCPConn).SetReadBuffer(4096)
			sub.Write(redistest.Encode("CLIENT", "SETNAME", "slowsub"))
			sub.Write(redistest.Encode("SUBSCRIBE", "foo"))
			time.Sleep(50 * time.Millisecond)
			if obl, oll := clientField(t, c, "slowsub", "obl"), clientField(t, c, "slowsub", "oll"); obl != "0" || oll != "0" {
				t.Fatalf("a subscriber with nothing pending: obl=%s oll=%s", obl, oll)
			}
			msg := strings.Repeat("z", 1000)
			field := func(f string) int64 {
				n, _ := strconv.ParseInt(clientField(t, c, "slowsub", f), 10, 64)
				return n
			}
			for i := 0; i < 5000 && field("oll") < 3; i++ {
				c.Publish(ctx, "foo", msg)
			}
			// The buffer filled before the list took the rest; Redis's cron
			// may since have doubled it (clientsCronResizeOutputBuffer
			// keeps what it holds), so obl can be below rbs.
			obl, oll, omem, rbs := field("obl"), field("oll"), field("omem"), field("rbs")
			if obl <= 0 || obl > rbs || oll < 3 || omem < oll*16384 || omem > oll*32768 {
				t.Errorf("obl=%d oll=%d omem=%d rbs=%d", obl, oll, omem, rbs)
			}
		})
	}
}
