package server_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// Big arguments (32 KB and more: each gets a query buffer of its own
// size) pipelined with small commands in one write: every reply, in
// order, is the one redis-server gives. A loop reads the rest of a big
// argument straight from the socket, up to the argument's end, and what
// follows through its ring or epoll. The GETs' replies, up to 1 MB, are
// written from the write buffer a loop keeps after a big reply.
func TestBigArgumentsPipelined(t *testing.T) {
	_, saddr := redistest.StartSluice(t)
	raddr := redistest.StartRedis(t)
	rng := rand.New(rand.NewSource(1))
	sizes := []int{0, 5, 32*1024 - 40, 32 * 1024, 32*1024 + 1, 40000, 200000, 1<<20 + 3}
	var in bytes.Buffer
	n := 0
	for i := 0; i < 60; i++ {
		key := fmt.Sprintf("k%d", rng.Intn(8))
		val := strings.Repeat(string(rune('a'+i%26)), sizes[rng.Intn(len(sizes))])
		switch rng.Intn(6) {
		case 0, 1:
			in.Write(redistest.Encode("SET", key, val))
		case 2:
			in.Write(redistest.Encode("APPEND", key, val))
		case 3:
			in.Write(redistest.Encode("STRLEN", key))
		case 4:
			in.Write(redistest.Encode("GETRANGE", key, "-3", "-1"))
		case 5:
			in.Write(redistest.Encode("GET", key)) // big replies reuse a kept write buffer
		}
		n++
	}
	for i := 0; i < 8; i++ {
		in.Write(redistest.Encode("STRLEN", fmt.Sprintf("k%d", i)))
		in.Write(redistest.Encode("GETRANGE", fmt.Sprintf("k%d", i), "0", "2"))
		n += 2
	}
	replies := func(addr string) []string {
		c := redistest.Dial(t, addr)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		go c.Write(in.Bytes())
		var out []string
		for i := 0; i < n; i++ {
			r, err := redistest.ReadReply(c.R)
			if err != nil {
				t.Fatalf("%s: reply %d: %v", addr, i, err)
			}
			out = append(out, r)
		}
		return out
	}
	want, got := replies(raddr), replies(saddr)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reply %d: sluice %q, redis %q", i, got[i], want[i])
		}
	}
}

// What a command keeps of its big arguments (a stored value, a field, a
// member, a published message, a blocked client's key) stays as it was
// sent when a later big argument reuses the query buffer it came in: each
// command is followed by a big argument of about its size and other bytes.
// Both servers.
func TestBigArgumentsOutliveTheirBuffer(t *testing.T) {
	for name, addr := range bothServers(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer c.Close()
			const size = 40000
			v := func(b byte) string { return strings.Repeat(string(b), size) }
			// A loop reuses a buffer for the big arguments of its own
			// clients: these are spread over the loops.
			writers := []*redis.Client{c}
			for i := 0; i < 4; i++ {
				w := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
				defer w.Close()
				writers = append(writers, w)
			}
			overwrite := func() {
				for _, w := range writers {
					for i := 0; i < 2; i++ {
						if err := w.Set(ctx, "junk", v('z'), 0).Err(); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			subscriber := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer subscriber.Close()
			sub := subscriber.Subscribe(ctx, "ch")
			defer sub.Close()
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			waiter := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer waiter.Close()
			popped := make(chan []string, 1)
			go func() {
				r, _ := waiter.BLPop(ctx, 10*time.Second, v('q')).Result()
				popped <- r
			}()
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if n, _ := c.Info(ctx, "clients").Result(); strings.Contains(n, "blocked_clients:1") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("BLPOP did not block")
				}
			}
			overwrite()

			cmds := [][]any{
				{"SET", "s", v('a')},
				{"APPEND", "ap", v('b')},
				{"APPEND", "ap", v('c')},
				{"SETRANGE", "sr", "0", v('d')},
				{"MSET", "m1", v('e'), "m2", "x"},
				{"HSET", "h", "f", v('f')},
				{"HSET", "h", v('g'), "x"},
				{"RPUSH", "l", v('h'), v('i')},
				{"LSET", "l", "1", v('j')},
				{"SADD", "st", v('k')},
				{"ZADD", "z", "1", v('l')},
				{"XADD", "x", "1-1", "f", v('m')},
				{"EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1", "ev", v('n')},
				{"PUBLISH", "ch", v('o')},
				{"SET", v('p'), "x"},
				{"RPUSH", v('q'), "popped"},
			}
			for _, args := range cmds {
				if err := c.Do(ctx, args...).Err(); err != nil {
					t.Fatalf("%v: %v", args[0], err)
				}
				overwrite()
			}
			tx := c.TxPipeline()
			tx.Set(ctx, "mu", v('r'), 0)
			if _, err := tx.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			overwrite()

			check := func(what, got, want string) {
				t.Helper()
				if got != want {
					t.Errorf("%s: %d bytes starting %.8q, want %d bytes of %.1q", what, len(got), got, len(want), want)
				}
			}
			check("SET", c.Get(ctx, "s").Val(), v('a'))
			check("APPEND", c.Get(ctx, "ap").Val(), v('b')+v('c'))
			check("SETRANGE", c.Get(ctx, "sr").Val(), v('d'))
			check("MSET", c.Get(ctx, "m1").Val(), v('e'))
			check("HSET value", c.HGet(ctx, "h", "f").Val(), v('f'))
			check("HSET field", c.HGet(ctx, "h", v('g')).Val(), "x")
			check("RPUSH", c.LIndex(ctx, "l", 0).Val(), v('h'))
			check("LSET", c.LIndex(ctx, "l", 1).Val(), v('j'))
			check("SADD", fmt.Sprint(c.SIsMember(ctx, "st", v('k')).Val()), "true")
			check("ZADD", fmt.Sprint(c.ZScore(ctx, "z", v('l')).Val()), "1")
			if xs := c.XRange(ctx, "x", "-", "+").Val(); len(xs) != 1 {
				t.Errorf("XADD: %d entries", len(xs))
			} else {
				check("XADD", fmt.Sprint(xs[0].Values["f"]), v('m'))
			}
			check("EVAL", c.Get(ctx, "ev").Val(), v('n'))
			check("SET key", c.Get(ctx, v('p')).Val(), "x")
			check("MULTI", c.Get(ctx, "mu").Val(), v('r'))
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			check("PUBLISH", msg.Payload, v('o'))
			select {
			case r := <-popped:
				if len(r) != 2 {
					t.Fatalf("BLPOP: %q", r)
				}
				check("BLPOP key", r[0], v('q'))
				check("BLPOP value", r[1], "popped")
			case <-time.After(10 * time.Second):
				t.Fatal("BLPOP was not served")
			}
		})
	}
}
