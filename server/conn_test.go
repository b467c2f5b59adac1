package server_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// sameReplies sends cmds to redis-server and Sluice (started with the same
// directives), and fails when the raw replies differ.
func sameReplies(t *testing.T, directives []string, cmds [][]string) {
	t.Helper()
	var rargs []string
	for i := 0; i+1 < len(directives); i += 2 {
		rargs = append(rargs, "--"+directives[i], directives[i+1])
	}
	raddr := redistest.StartRedis(t, rargs...)
	_, saddr := redistest.StartSluice(t, directives...)
	rc, sc := redistest.Dial(t, raddr), redistest.Dial(t, saddr)
	for _, cmd := range cmds {
		want, err := rc.Do(cmd...)
		if err != nil {
			t.Fatalf("redis %q: %v", cmd, err)
		}
		got, err := sc.Do(cmd...)
		if err != nil {
			t.Fatalf("sluice %q: %v", cmd, err)
		}
		if got != want {
			t.Errorf("%q:\n redis:  %q\n sluice: %q", cmd, want, got)
		}
	}
}

func TestAuthWithRequirepass(t *testing.T) {
	sameReplies(t, []string{"requirepass", "s3cret"}, [][]string{
		{"PING"},
		{"GET", "k"},
		{"HELLO", "3"},
		{"HELLO", "2", "AUTH", "default", "wrong"},
		{"AUTH", "wrong"},
		{"AUTH", "bob", "s3cret"},
		{"AUTH", "s3cret"},
		{"PING"},
		{"RESET"},
		{"PING"},
		{"HELLO", "2", "AUTH", "default", "s3cret", "SETNAME", "a b"},
		{"AUTH", "default", "s3cret"},
		{"CLIENT", "SETNAME", "x"},
		{"CLIENT", "GETNAME"},
		{"RESET"},
		{"AUTH", "default", "s3cret"},
		{"CLIENT", "GETNAME"},
		{"CONFIG", "SET", "requirepass", ""},
		{"RESET"},
		{"PING"},
	})
}

// TestClientReplyModes checks CLIENT REPLY OFF/SKIP drop replies exactly
// as redis-server does: the byte stream after a PING sentinel must match.
func TestClientReplyModes(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	run := func(addr string) string {
		c := redistest.Dial(t, addr)
		var in []byte
		for _, cmd := range [][]string{
			{"CLIENT", "REPLY", "SKIP"}, {"ECHO", "skipped"}, {"ECHO", "a"},
			{"CLIENT", "REPLY", "OFF"}, {"ECHO", "off1"}, {"CLIENT", "REPLY", "SKIP"}, {"ECHO", "off2"},
			{"CLIENT", "REPLY", "ON"}, {"ECHO", "b"},
		} {
			in = append(in, redistest.Encode(cmd...)...)
		}
		if _, err := c.Write(in); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for i := 0; i < 3; i++ {
			r, err := redistest.ReadReply(c.R)
			if err != nil {
				t.Fatal(err)
			}
			out.WriteString(r)
		}
		return out.String()
	}
	if want, got := run(raddr), run(saddr); got != want {
		t.Fatalf("redis %q, sluice %q", want, got)
	}
}

func TestClientKillAndList(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	a, b := redistest.Dial(t, addr), redistest.Dial(t, addr)
	a.Do("CLIENT", "SETNAME", "victim")
	idReply, _ := a.Do("CLIENT", "ID")
	id := strings.TrimSpace(strings.TrimPrefix(idReply, ":"))
	list, _ := b.Do("CLIENT", "LIST", "ID", id)
	if !strings.Contains(list, "id="+id+" ") || !strings.Contains(list, " name=victim ") || !strings.Contains(list, " cmd=client|id ") {
		t.Fatalf("CLIENT LIST ID: %q", list)
	}
	if r, _ := b.Do("CLIENT", "KILL", "ID", id); r != ":1\r\n" {
		t.Fatalf("CLIENT KILL ID: %q", r)
	}
	if _, err := a.Do("PING"); err == nil {
		t.Fatal("killed client still served")
	}
	if r, _ := b.Do("CLIENT", "KILL", "ID", id); r != ":0\r\n" {
		t.Fatalf("second CLIENT KILL: %q", r)
	}
	// SKIPME defaults to yes with the new form.
	self, _ := b.Do("CLIENT", "ID")
	if r, _ := b.Do("CLIENT", "KILL", "ID", strings.TrimSpace(self[1:])); r != ":0\r\n" {
		t.Fatalf("CLIENT KILL self with SKIPME yes: %q", r)
	}
}

// TestGoRedisHandshake connects with go-redis v9, which sends HELLO 3 and
// CLIENT SETINFO, and parses COMMAND's Redis 7 reply.
func TestGoRedisHandshake(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 3, ClientName: "gr"})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	info, err := rdb.ClientInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "gr" || info.Resp != 3 || info.LibName == "" {
		t.Fatalf("client info %+v", info)
	}
	cmds, err := rdb.Command(ctx).Result()
	if err != nil {
		t.Fatalf("COMMAND parse: %v", err)
	}
	get := cmds["get"]
	if get == nil || get.Arity != 2 || get.FirstKeyPos != 1 || !get.ReadOnly {
		t.Fatalf("COMMAND get: %+v", get)
	}
	if cmds["client|list"] == nil && cmds["client"] == nil {
		t.Fatal("COMMAND lacks client")
	}
	vals, err := rdb.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil || vals["maxmemory-policy"] != "noeviction" {
		t.Fatalf("CONFIG GET: %v %v", vals, err)
	}
	if err := rdb.ConfigSet(ctx, "hz", "20").Err(); err != nil {
		t.Fatal(err)
	}
	if v := rdb.ConfigGet(ctx, "hz").Val()["hz"]; v != "20" {
		t.Fatalf("hz after CONFIG SET: %q", v)
	}
}

func TestResetLeavesStateAsNew(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	for _, addr := range []string{raddr, saddr} {
		c := redistest.Dial(t, addr)
		c.Do("HELLO", "3")
		c.Do("SELECT", "5")
		c.Do("CLIENT", "SETNAME", "n")
		if r, _ := c.Do("RESET"); r != "+RESET\r\n" {
			t.Fatalf("%s RESET: %q", addr, r)
		}
		info, _ := c.Do("CLIENT", "INFO")
		for _, want := range []string{" name= ", " db=0 ", " resp=2"} {
			if !strings.Contains(info, want) {
				t.Fatalf("%s after RESET lacks %q: %q", addr, want, info)
			}
		}
	}
}

// CLIENT KILL ends the victim's connection within the command, as Redis's
// does (it frees the client there): the victim sees the end while the
// server still runs the killer's next command. A killed replica so
// reconnects before its killer's next command, which Redis's tests count
// on. Sluice runs one event loop here, which the victim shares.
func TestClientKillEndsTheConnectionAtOnce(t *testing.T) {
	_, sl := redistest.StartSluice(t, "io-threads", "1", "enable-debug-command", "yes")
	servers := map[string]string{"redis": redistest.StartRedis(t, "--enable-debug-command", "yes"), "sluice": sl}
	for name, addr := range servers {
		victim := redistest.Dial(t, addr)
		id, err := victim.Do("CLIENT", "ID")
		if err != nil {
			t.Fatal(err)
		}
		killer := redistest.Dial(t, addr)
		pipeline := append(redistest.Encode("CLIENT", "KILL", "ID", strings.Trim(id, ":\r\n")), redistest.Encode("DEBUG", "SLEEP", "1")...)
		if _, err := killer.Write(pipeline); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		victim.SetReadDeadline(time.Now().Add(700 * time.Millisecond))
		if _, err := victim.R.ReadByte(); err != io.EOF {
			t.Errorf("%s: the victim's connection, %v after the kill, read: %v", name, time.Since(start), err)
		}
		for _, want := range []string{":1\r\n", "+OK\r\n"} {
			killer.SetReadDeadline(time.Now().Add(5 * time.Second))
			if r, err := redistest.ReadReply(killer.R); r != want {
				t.Errorf("%s: killer got %q %v", name, r, err)
			}
		}
	}
}
