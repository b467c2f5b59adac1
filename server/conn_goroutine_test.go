package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/server"
)

// startGoroutineServer starts a server that serves its TCP connections on
// goroutines (the embedded mode's driver) rather than event loops.
func startGoroutineServer(t *testing.T) string {
	t.Helper()
	cfg := server.NewConfig()
	cfg.ServeOnGoroutines()
	cfg.Set("port", "0")
	cfg.Set("bind", "127.0.0.1")
	srv := server.New(cfg)
	srv.SetLogger(nil)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv.Addrs()[0].String()
}

// The goroutine driver serves what the event loops serve: pipelines split
// anywhere, output pushed by other clients, blocks ended by other clients,
// kills, pauses and output limits.
func TestGoroutineDriver(t *testing.T) {
	addr := startGoroutineServer(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()

	t.Run("split pipeline", func(t *testing.T) {
		c := redistest.Dial(t, addr)
		var req strings.Builder
		for i := 0; i < 3000; i++ {
			req.Write(redistest.Encode("SET", fmt.Sprint("p", i), strings.Repeat("v", 100)))
		}
		req.Write(redistest.Encode("GET", "p2999"))
		b := []byte(req.String())
		go func() {
			for len(b) > 0 { // odd-sized writes: commands split across reads
				n := min(len(b), 7777)
				c.Write(b[:n])
				b = b[n:]
			}
		}()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		for i := 0; i < 3000; i++ {
			if r, err := redistest.ReadReply(c.R); err != nil || r != "+OK\r\n" {
				t.Fatalf("reply %d: %q %v", i, r, err)
			}
		}
		if r, _ := redistest.ReadReply(c.R); r != "$100\r\n"+strings.Repeat("v", 100)+"\r\n" {
			t.Fatalf("GET: %.30q", r)
		}
	})

	t.Run("pub/sub", func(t *testing.T) {
		sub := rdb.Subscribe(ctx, "news")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if n := rdb.Publish(ctx, "news", fmt.Sprint("m", i)).Val(); n != 1 {
				t.Fatalf("PUBLISH reached %d", n)
			}
			m, err := sub.ReceiveMessage(ctx)
			if err != nil || m.Payload != fmt.Sprint("m", i) {
				t.Fatalf("message %d: %v %v", i, m, err)
			}
		}
	})

	t.Run("blocking pop", func(t *testing.T) {
		c := redistest.Dial(t, addr)
		c.Write(redistest.Encode("BLPOP", "q", "0"))
		time.Sleep(50 * time.Millisecond) // let it block (either order passes)
		if err := rdb.RPush(ctx, "q", "job").Err(); err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if r, err := redistest.ReadReply(c.R); err != nil || r != "*2\r\n$1\r\nq\r\n$3\r\njob\r\n" {
			t.Fatalf("BLPOP: %q %v", r, err)
		}
		// Input sent while blocked runs once the block ends.
		c.Write(append(redistest.Encode("BLPOP", "q", "0.05"), redistest.Encode("PING")...))
		if r, _ := redistest.ReadReply(c.R); r != "*-1\r\n" {
			t.Fatalf("BLPOP timeout: %q", r)
		}
		if r, _ := redistest.ReadReply(c.R); r != "+PONG\r\n" {
			t.Fatalf("PING after the block: %q", r)
		}
	})

	t.Run("client kill", func(t *testing.T) {
		c := redistest.Dial(t, addr)
		c.Write([]byte("CLIENT SETNAME victim\r\n"))
		if r, _ := redistest.ReadReply(c.R); r != "+OK\r\n" {
			t.Fatal(r)
		}
		list := rdb.ClientList(ctx).Val()
		id := ""
		for _, l := range strings.Split(list, "\n") {
			if strings.Contains(l, "name=victim") {
				id = strings.TrimPrefix(strings.Fields(l)[0], "id=")
			}
		}
		if n := rdb.ClientKillByFilter(ctx, "ID", id).Val(); n != 1 {
			t.Fatalf("CLIENT KILL killed %d", n)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.R.ReadByte(); err != io.EOF {
			t.Fatalf("killed connection read: %v", err)
		}
	})

	t.Run("pause", func(t *testing.T) {
		rdb.Do(ctx, "CLIENT", "PAUSE", "300", "WRITE")
		start := time.Now()
		if err := rdb.Set(ctx, "paused", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Fatalf("SET during CLIENT PAUSE WRITE returned after %v", d)
		}
	})

	t.Run("output limit", func(t *testing.T) {
		rdb.Set(ctx, "big", strings.Repeat("y", 10000), 0)
		rdb.ConfigSet(ctx, "client-output-buffer-limit", "normal 100000 0 0")
		defer rdb.ConfigSet(ctx, "client-output-buffer-limit", "normal 0 0 0")
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write([]byte(strings.Repeat("GET big\r\n", 15)))
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(bufio.NewReader(conn))
		if len(b) != 0 || err != nil {
			t.Fatalf("replies past the limit: got %d bytes, %v", len(b), err)
		}
	})
}
