package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

func waitMs(ms int) { time.Sleep(time.Duration(ms) * time.Millisecond) }

// go-redis PubSub receives 100,000 messages in publish order.
func TestPubSubOrder(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	ctx := context.Background()
	sub := redis.NewClient(&redis.Options{Addr: addr})
	pub := redis.NewClient(&redis.Options{Addr: addr})
	defer sub.Close()
	defer pub.Close()
	ps := sub.Subscribe(ctx, "news")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 100000
	pubErr := make(chan error, 1)
	go func() {
		for i := 0; i < n; i += 1000 {
			p := pub.Pipeline()
			for j := i; j < i+1000; j++ {
				p.Publish(ctx, "news", strconv.Itoa(j))
			}
			if _, err := p.Exec(ctx); err != nil {
				pubErr <- err
				return
			}
		}
		pubErr <- nil
	}()
	// The publisher's last replies may still be in flight when the last
	// message arrives: wait for it before the server is stopped.
	defer func() {
		if err := <-pubErr; err != nil {
			t.Error(err)
		}
	}()
	ch := ps.Channel(redis.WithChannelSize(1000))
	for i := 0; i < n; i++ {
		select {
		case m := <-ch:
			if m.Payload != strconv.Itoa(i) {
				t.Fatalf("message %d = %q", i, m.Payload)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out after %d messages", i)
		}
	}
}

// PUBLISH returns the number of receivers, patterns included, and
// pattern subscribers get pmessage.
func TestPublishReceivers(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	s1 := redistest.Dial(t, addr)
	s2 := redistest.Dial(t, addr)
	p := redistest.Dial(t, addr)
	mustDo(t, s1, "*3\r\n$9\r\nsubscribe\r\n$3\r\nfoo\r\n:1\r\n", "SUBSCRIBE", "foo")
	mustDo(t, s2, "*3\r\n$10\r\npsubscribe\r\n$2\r\nf*\r\n:1\r\n", "PSUBSCRIBE", "f*")
	mustDo(t, p, ":2\r\n", "PUBLISH", "foo", "hi")
	r1, _ := redistest.ReadReply(s1.R)
	if r1 != "*3\r\n$7\r\nmessage\r\n$3\r\nfoo\r\n$2\r\nhi\r\n" {
		t.Fatalf("s1 got %q", r1)
	}
	r2, _ := redistest.ReadReply(s2.R)
	if r2 != "*4\r\n$8\r\npmessage\r\n$2\r\nf*\r\n$3\r\nfoo\r\n$2\r\nhi\r\n" {
		t.Fatalf("s2 got %q", r2)
	}
	mustDo(t, p, "*4\r\n$3\r\nfoo\r\n:1\r\n$3\r\nbar\r\n:0\r\n", "PUBSUB", "NUMSUB", "foo", "bar")
	mustDo(t, p, ":1\r\n", "PUBSUB", "NUMPAT")
	mustDo(t, p, "*1\r\n$3\r\nfoo\r\n", "PUBSUB", "CHANNELS")
	// A closed subscriber leaves nothing behind.
	s1.Close()
	for i := 0; i < 100; i++ {
		if r, _ := p.Do("PUBSUB", "NUMSUB", "foo"); r == "*2\r\n$3\r\nfoo\r\n:0\r\n" {
			return
		}
		waitMs(10)
	}
	t.Fatal("closed subscriber still counted")
}

// A subscriber that stops reading is disconnected by the pubsub output
// limit, and the publisher is not slowed down.
func TestSlowSubscriberDisconnected(t *testing.T) {
	srv, addr := redistest.StartSluice(t, "client-output-buffer-limit", "pubsub 1mb 256kb 1")
	_ = srv
	slow := redistest.Dial(t, addr)
	mustDo(t, slow, "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n", "SUBSCRIBE", "c")
	ctx := context.Background()
	pub := redis.NewClient(&redis.Options{Addr: addr})
	defer pub.Close()
	payload := string(make([]byte, 4096))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		p := pub.Pipeline()
		for i := 0; i < 100; i++ {
			p.Publish(ctx, "c", payload)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		n, err := pub.PubSubNumSub(ctx, "c").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n["c"] == 0 {
			return // disconnected
		}
	}
	t.Fatal("slow subscriber was never disconnected")
}

// Keyspace notifications for SET and expiry.
func TestKeyspaceNotifications(t *testing.T) {
	_, addr := redistest.StartSluice(t, "notify-keyspace-events", "KEA")
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ps := rdb.PSubscribe(ctx, "__key*__:*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.Set(ctx, "k", "v", 50*time.Millisecond)
	want := []string{
		"__keyspace@0__:k set", "__keyevent@0__:set k",
		"__keyspace@0__:k expire", "__keyevent@0__:expire k",
		"__keyspace@0__:k expired", "__keyevent@0__:expired k",
	}
	ch := ps.Channel()
	for _, w := range want {
		select {
		case m := <-ch:
			if got := fmt.Sprintf("%s %s", m.Channel, m.Payload); got != w {
				t.Fatalf("got %q, want %q", got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for %q", w)
		}
	}
}

// Subscription pushes are sent even under CLIENT REPLY OFF/SKIP, as Redis
// does (CLIENT_PUSHING), in both protocols; other replies are dropped.
func TestPubSubPushesIgnoreReplyOff(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	transcript := func(addr, proto string) string {
		c := redistest.Dial(t, addr)
		if _, err := c.Do("HELLO", proto); err != nil {
			t.Fatal(err)
		}
		var script []byte
		for _, cmd := range [][]string{
			{"CLIENT", "REPLY", "OFF"},
			{"SUBSCRIBE", "ch", "ch2"},
			{"PSUBSCRIBE", "c*"},
			{"CLIENT", "REPLY", "ON"},
			{"CLIENT", "REPLY", "SKIP"},
			{"UNSUBSCRIBE", "ch"},
			{"PING"},
			{"CLIENT", "REPLY", "OFF"},
			{"PUNSUBSCRIBE"},
			{"UNSUBSCRIBE"},
			{"CLIENT", "REPLY", "ON"},
		} {
			script = append(script, redistest.Encode(cmd...)...)
		}
		script = append(script, redistest.Encode("ECHO", "end")...)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(script); err != nil {
			t.Fatal(err)
		}
		var out string
		for !strings.HasSuffix(out, "$3\r\nend\r\n") {
			r, err := redistest.ReadReply(c.R)
			if err != nil {
				t.Fatalf("%s after %q: %v", addr, out, err)
			}
			out += r
		}
		return out
	}
	for _, proto := range []string{"2", "3"} {
		want, got := transcript(raddr, proto), transcript(saddr, proto)
		if want != got {
			t.Errorf("RESP%s\nredis:  %q\nsluice: %q", proto, want, got)
		}
	}
}
