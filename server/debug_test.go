package server_test

import (
	"context"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// DEBUG subcommands that Redis's own test suite leans on, through go-redis.

func debugClient(t *testing.T, directives ...string) *redis.Client {
	t.Helper()
	t.Chdir(t.TempDir()) // DEBUG RELOAD's dump.rdb; restored after the test
	_, addr := redistest.StartSluice(t, append([]string{"enable-debug-command", "yes"}, directives...)...)
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDebugPopulate(t *testing.T) {
	ctx := context.Background()
	c := debugClient(t)
	if err := c.Do(ctx, "debug", "populate", "10").Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "key:3", "mine", 0)
	if err := c.Do(ctx, "debug", "populate", "5", "p", "12").Err(); err != nil {
		t.Fatal(err)
	}
	if n := c.DBSize(ctx).Val(); n != 15 {
		t.Fatalf("dbsize %d, want 15", n)
	}
	if v := c.Get(ctx, "key:7").Val(); v != "value:7" {
		t.Errorf("key:7 = %q", v)
	}
	if v := c.Get(ctx, "p:2").Val(); v != "value:2\x00\x00\x00\x00\x00" {
		t.Errorf("p:2 = %q, want value:2 padded to 12 bytes", v)
	}
	// Existing keys are left alone.
	c.Do(ctx, "debug", "populate", "10")
	if v := c.Get(ctx, "key:3").Val(); v != "mine" {
		t.Errorf("key:3 = %q, populate overwrote it", v)
	}
	if err := c.Do(ctx, "debug", "populate", "-1").Err(); err == nil || err.Error() != "ERR value is out of range, must be positive" {
		t.Errorf("negative count: %v", err)
	}
}

func TestDebugDigestAndReload(t *testing.T) {
	ctx := context.Background()
	c := debugClient(t)
	empty := strings.Repeat("0", 40)
	if d := c.Do(ctx, "debug", "digest").Val(); d != empty {
		t.Fatalf("digest of an empty dataset %v", d)
	}
	c.Set(ctx, "s", "hello", 0)
	c.Set(ctx, "n", 12345, 0)
	c.RPush(ctx, "l", "a", "b", "c")
	c.SAdd(ctx, "set", "x", "y", 1, 2)
	c.HSet(ctx, "h", "f1", "v1", "f2", "v2")
	c.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: 2, Member: "b"})
	c.Expire(ctx, "h", time.Hour)
	d1 := c.Do(ctx, "debug", "digest").Val()
	if d1 == empty {
		t.Fatal("digest of a dataset is all zeros")
	}
	v1 := c.Do(ctx, "debug", "digest-value", "l", "set", "nokey").Val().([]any)
	if len(v1) != 3 || v1[2] != empty || v1[0] == v1[1] {
		t.Fatalf("digest-value %v", v1)
	}
	if err := c.Do(ctx, "debug", "reload").Err(); err != nil {
		t.Fatal(err)
	}
	if d := c.Do(ctx, "debug", "digest").Val(); d != d1 {
		t.Errorf("digest after reload %v, before %v", d, d1)
	}
	if ttl := c.TTL(ctx, "h").Val(); ttl <= 0 {
		t.Errorf("TTL of h after reload %v", ttl)
	}
	// Any change shows in the digest, ordering of a list included.
	c.LSet(ctx, "l", 0, "c")
	c.LSet(ctx, "l", 2, "a")
	if d := c.Do(ctx, "debug", "digest").Val(); d == d1 {
		t.Error("digest did not change with the list's order")
	}
	// NOFLUSH without MERGE meets the keys already loaded.
	if err := c.Do(ctx, "debug", "reload", "noflush").Err(); err == nil || !strings.Contains(err.Error(), "Error trying to load the RDB dump") {
		t.Errorf("reload noflush: %v", err)
	}
	if err := c.Do(ctx, "debug", "reload", "nosave", "noflush", "merge").Err(); err != nil {
		t.Errorf("reload nosave noflush merge: %v", err)
	}
	if err := c.Do(ctx, "debug", "reload", "bogus").Err(); err == nil || err.Error() != "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options." {
		t.Errorf("reload bogus: %v", err)
	}
}

func TestDebugSetActiveExpire(t *testing.T) {
	ctx := context.Background()
	c := debugClient(t, "hz", "100")
	c.Do(ctx, "debug", "set-active-expire", "0")
	for i := 0; i < 20; i++ {
		c.Set(ctx, "k"+string(rune('a'+i)), "v", time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	// DBSIZE counts keys not yet reclaimed: with active expiry off, all.
	if n := c.DBSize(ctx).Val(); n != 20 {
		t.Fatalf("dbsize %d with active expiry off, want 20", n)
	}
	c.Do(ctx, "debug", "set-active-expire", "1")
	deadline := time.Now().Add(5 * time.Second)
	for c.DBSize(ctx).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("active expiry back on, dbsize still %d", c.DBSize(ctx).Val())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDebugProtocolAndObject(t *testing.T) {
	ctx := context.Background()
	c := debugClient(t)
	cases := map[string]any{
		"string": "Hello World", "integer": int64(12345), "null": nil,
		"true": int64(1), "false": int64(0), "bignum": "1234567999999999999999999999999999999",
		"verbatim": "This is a verbatim\nstring", "attrib": "Some real reply following the attribute",
	}
	for typ, want := range cases {
		v, err := c.Do(ctx, "debug", "protocol", typ).Result()
		if err == redis.Nil {
			v, err = nil, nil
		}
		if err != nil || v != want {
			t.Errorf("RESP2 debug protocol %s = %#v, %v; want %#v", typ, v, err, want)
		}
	}
	if err := c.Do(ctx, "debug", "protocol", "push").Err(); err == nil || err.Error() != "ERR RESP2 is not supported by this command" {
		t.Errorf("RESP2 push: %v", err)
	}
	c3 := redis.NewClient(&redis.Options{Addr: c.Options().Addr, Protocol: 3})
	defer c3.Close()
	if v := c3.Do(ctx, "debug", "protocol", "map").Val(); len(v.(map[any]any)) != 3 {
		t.Errorf("RESP3 map %#v", v)
	}
	if v := c3.Do(ctx, "debug", "protocol", "double").Val(); v != 3.141 {
		t.Errorf("RESP3 double %#v", v)
	}
	if err := c.Do(ctx, "debug", "error", "MYERR line\nbreak").Err(); err == nil || err.Error() != "MYERR line break" {
		t.Errorf("debug error: %v", err)
	}
	c.RPush(ctx, "list", "a", "b")
	obj := c.Do(ctx, "debug", "object", "list").Val().(string)
	if !strings.HasPrefix(obj, "Value at:") || !strings.Contains(obj, " encoding:listpack") && !strings.Contains(obj, " encoding:quicklist") {
		t.Errorf("debug object %q", obj)
	}
	if err := c.Do(ctx, "debug", "object", "nokey").Err(); err == nil || err.Error() != "ERR no such key" {
		t.Errorf("debug object of a missing key: %v", err)
	}
}

// The start-up log in redis-server's format, with the lines Redis's test
// harness waits for.
func TestServerLogFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sluice-server")
	}
	bin := buildServer(t)
	dir := t.TempDir()
	port := redistest.FreePort(t)
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--always-show-logo", "yes", "--dir", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var log strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(log.String(), "Ready to accept connections") {
		n, err := out.Read(buf)
		if err != nil {
			t.Fatalf("log ended before ready: %v\n%s", err, log.String())
		}
		log.Write(buf[:n])
	}
	s := log.String()
	if !strings.Contains(s, " PID: "+strconv.Itoa(cmd.Process.Pid)+"\n") || !strings.Contains(s, "Port: "+strconv.Itoa(port)) {
		t.Errorf("banner lacks PID/port:\n%s", s)
	}
	line := regexp.MustCompile(`(?m)^` + strconv.Itoa(cmd.Process.Pid) + `:M \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d\.\d{3} \* Ready to accept connections$`)
	if !line.MatchString(s) {
		t.Errorf("ready line not in redis-server's format:\n%s", s)
	}
	// A second server on the same port says what redis-server says.
	out2, _ := exec.Command(bin, "--port", strconv.Itoa(port), "--dir", dir).CombinedOutput()
	if !strings.Contains(string(out2), "Failed listening on port "+strconv.Itoa(port)+" (TCP), aborting.") {
		t.Errorf("busy port:\n%s", out2)
	}
}

func TestDebugSetDisableDenyScripts(t *testing.T) {
	ctx := context.Background()
	c := debugClient(t)
	script := "return redis.call('client', 'id')"
	if err := c.Eval(ctx, script, nil).Err(); err == nil || !strings.Contains(err.Error(), "This Redis command is not allowed from script") {
		t.Fatalf("CLIENT from a script: %v", err)
	}
	c.Do(ctx, "debug", "set-disable-deny-scripts", "1")
	if err := c.Eval(ctx, script, nil).Err(); err != nil {
		t.Errorf("with deny-scripts off: %v", err)
	}
	c.Do(ctx, "debug", "set-disable-deny-scripts", "0")
	if err := c.Eval(ctx, script, nil).Err(); err == nil {
		t.Error("deny-scripts back on, CLIENT still allowed")
	}
}

// SHUTDOWN stops accepting before the client sees its connection close,
// as redis-server, which exits before replying.
func TestShutdownStopsAccepting(t *testing.T) {
	ctx := context.Background()
	srv, addr := redistest.StartSluice(t)
	done := make(chan struct{})
	srv.OnShutdown(func() { close(done) })
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	c.Do(ctx, "shutdown", "nosave")
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Error("a connection was accepted after SHUTDOWN")
	}
	<-done
}
