package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// client-output-buffer-limit's normal class, as redis-server applies it:
// a batch of replies past the hard limit closes the client before any of
// them is sent, and CLIENT LIST's omem shows pub/sub output waiting for a
// subscriber that does not read.
func TestOutputLimitNormalClass(t *testing.T) {
	ctx := context.Background()
	_, saddr := redistest.StartSluice(t)
	for name, addr := range map[string]string{"sluice": saddr, "redis": redistest.StartRedis(t)} {
		t.Run(name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer c.Close()
			defer c.ConfigSet(ctx, "client-output-buffer-limit", "normal 0 0 0 pubsub 33554432 8388608 60")
			item := strings.Repeat("x", 1000)
			for i := 0; i < 150; i++ {
				c.LPush(ctx, "biglist", item)
			}
			c.Set(ctx, "bigkey", strings.Repeat("y", 10000), 0)
			c.ConfigSet(ctx, "client-output-buffer-limit", "normal 100000 0 0")

			// Replies that fit: served.
			raw := func(req string) (string, error) {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				conn.Write([]byte(req))
				conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				b, err := io.ReadAll(bufio.NewReader(conn))
				return string(b), err
			}
			if out, _ := raw("LRANGE biglist 0 49\r\nQUIT\r\n"); !strings.HasPrefix(out, "*50\r\n") {
				t.Errorf("50 items (50 KB): %.40q", out)
			}
			// One reply past the limit: nothing, and the connection closed.
			if out, err := raw("LRANGE biglist 0 -1\r\n"); out != "" || err != nil {
				t.Errorf("150 KB reply: got %d bytes, %v", len(out), err)
			}
			// A pipeline whose replies together pass it: nothing either.
			var p strings.Builder
			for i := 0; i < 15; i++ {
				fmt.Fprintf(&p, "SET k%d v\r\nGET bigkey\r\n", i)
			}
			if out, err := raw(p.String()); out != "" || err != nil {
				t.Errorf("pipeline of 150 KB of replies: got %d bytes, %v", len(out), err)
			}
			// The commands before the limit was passed ran; as in Redis,
			// those after it, once the client is marked for closing, do not.
			if n := c.Exists(ctx, "k0").Val(); n != 1 {
				t.Error("the pipeline's first command did not run")
			}
		})
	}
}

// omem counts the pub/sub messages queued for a subscriber that stopped
// reading, and the subscriber is closed past the pubsub hard limit.
func TestOmemCountsQueuedPubSub(t *testing.T) {
	ctx := context.Background()
	_, addr := redistest.StartSluice(t)
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
	defer c.Close()
	c.ConfigSet(ctx, "client-output-buffer-limit", "pubsub 100000 0 0")
	sub, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sub.(*net.TCPConn).SetReadBuffer(4096)
	sub.Write([]byte("CLIENT SETNAME slowsub\r\nSUBSCRIBE foo\r\n"))
	time.Sleep(50 * time.Millisecond)
	omemRe := regexp.MustCompile(`name=slowsub .*omem=(\d+)`)
	var peak int64
	msg := strings.Repeat("z", 1000)
	for i := 0; i < 100000; i++ {
		c.Publish(ctx, "foo", msg)
		m := omemRe.FindStringSubmatch(c.ClientList(ctx).Val())
		if m == nil {
			break // closed
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		peak = max(peak, n)
	}
	if peak < 50000 || peak > 101000 {
		t.Errorf("omem peaked at %d before the subscriber was closed at the 100000 limit", peak)
	}
	if omemRe.MatchString(c.ClientList(ctx).Val()) {
		t.Error("subscriber past the hard limit still connected")
	}
}

// A tiny normal-class limit: what fits in Redis's 16 KB per-client reply
// buffer is not counted against it, what overflows into the reply list
// is (getClientOutputBufferMemoryUsage), the same in both servers.
func TestOutputLimitCountsPastTheReplyBuffer(t *testing.T) {
	ctx := context.Background()
	_, saddr := redistest.StartSluice(t)
	raddr := redistest.StartRedis(t)
	run := func(addr, req string) string {
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
		defer c.Close()
		c.Set(ctx, "small", "v", 0)
		c.Set(ctx, "big", strings.Repeat("z", 40000), 0)
		c.ConfigSet(ctx, "client-output-buffer-limit", "normal 100 0 0")
		defer c.ConfigSet(ctx, "client-output-buffer-limit", "normal 0 0 0")
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write([]byte(req))
		conn.SetReadDeadline(time.Now().Add(time.Second))
		b, _ := io.ReadAll(bufio.NewReader(conn))
		return fmt.Sprintf("%d bytes, starting %.20q", len(b), b)
	}
	for _, req := range []string{
		"SET a b\r\nGET small\r\nPING\r\nQUIT\r\n",
		"GET big\r\nQUIT\r\n",
		strings.Repeat("GET small\r\n", 50) + "QUIT\r\n",
	} {
		if want, got := run(raddr, req), run(saddr, req); got != want {
			t.Errorf("%.30q: redis %s, sluice %s", req, want, got)
		}
	}
}

// A request whose reply has no bound (a random draw with a huge negative
// count, KEYS) stops once its reply passes the output limit, as Redis's
// loops stop at CLIENT_CLOSE_ASAP: the client is closed without a reply,
// and another client is served meanwhile. Building the whole reply first
// would take minutes and gigabytes (ZRANDMEMBER's would not fit in
// memory at all), holding every client of the event loop.
func TestHugeRandomCountStopsAtOutputLimit(t *testing.T) {
	ctx := context.Background()
	for name, addr := range bothServers(t) {
		t.Run(name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer c.Close()
			defer c.ConfigSet(ctx, "client-output-buffer-limit", "normal 0 0 0")
			c.HSet(ctx, "h", "a", "b")
			c.SAdd(ctx, "s", "m")
			c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "m"})
			c.ConfigSet(ctx, "client-output-buffer-limit", "normal 1000000 0 0")
			for _, req := range []string{
				"HRANDFIELD h -999999999\r\n",
				"HRANDFIELD h -999999999 WITHVALUES\r\n",
				"SRANDMEMBER s -999999999\r\n",
				"ZRANDMEMBER z -999999999\r\n",
				"ZRANDMEMBER z -999999999 WITHSCORES\r\n",
			} {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				conn.Write([]byte(req))
				conn.SetReadDeadline(time.Now().Add(30 * time.Second))
				b, err := io.ReadAll(conn)
				conn.Close()
				if err != nil || len(b) != 0 {
					t.Errorf("%q: got %d bytes, %v (want the connection closed, no reply)", req, len(b), err)
				}
				if v := c.Ping(ctx).Val(); v != "PONG" {
					t.Fatalf("after %q: PING got %q", req, v)
				}
			}
		})
	}
}
