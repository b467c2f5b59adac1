package bench

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

func TestPubSubSideBySide(t *testing.T) {
	_, sluice := redistest.StartSluice(t)
	redis := redistest.StartRedis(t)
	cfg := DefaultPubSubConfig()
	cfg.Pair.Target, cfg.Pair.Reference = sluice, redis
	cfg.Subscribers = []int{1, 3}
	cfg.Duration = 150 * time.Millisecond
	cfg.Rounds = 1
	rep, err := RunPubSub(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results", len(rep.Results))
	}
	for _, r := range rep.Results {
		for _, run := range append(r.Target, r.Reference...) {
			if run.Deliveries <= 0 || run.Publishes <= 0 {
				t.Errorf("%d subscribers: %+v", r.Subscribers, run)
			}
		}
	}
	var md bytes.Buffer
	rep.WriteMarkdown(&md, "test")
	for _, want := range []string{"| Subscribers | Sluice deliveries/s | Redis deliveries/s | Ratio |", "\n| 1 | ", "\n| 3 | "} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}

// A server that answers PUBLISH with the wrong receiver count (here: a
// subscriber that is not subscribed) must fail the run, not count it.
func TestPubSubOnceChecksReplies(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if bytes.Contains(buf[:n], []byte("SUBSCRIBE")) {
						c.Write([]byte("*3\r\n$9\r\nsubscribe\r\n$19\r\n" + pubsubChannel + "\r\n:1\r\n"))
						continue
					}
					if bytes.Contains(buf[:n], []byte("NUMSUB")) {
						c.Write([]byte("*2\r\n$19\r\n" + pubsubChannel + "\r\n:1\r\n"))
						continue
					}
					c.Write(bytes.Repeat([]byte(":0\r\n"), bytes.Count(buf[:n], []byte("PUBLISH"))))
				}
			}(c)
		}
	}()
	cfg := DefaultPubSubConfig()
	cfg.Duration = 100 * time.Millisecond
	if _, err := PubSubOnce(context.Background(), l.Addr().String(), 1, cfg); err == nil || !strings.Contains(err.Error(), "want :1") {
		t.Fatalf("err = %v, want a PUBLISH reply mismatch", err)
	}
}
