package server_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// CONFIG SET port and bind move the listeners at run time, as in Redis;
// a change that cannot listen fails and leaves the old listeners.
func TestConfigSetPortAndBind(t *testing.T) {
	ctx := context.Background()
	_, addr := redistest.StartSluice(t)
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
	defer c.Close()
	c.Set(ctx, "k", "v", 0)
	port := redistest.FreePort(t)
	if err := c.ConfigSet(ctx, "port", strconv.Itoa(port)).Err(); err != nil {
		t.Fatal(err)
	}
	// The connection already open stays; new ones go to the new port.
	if c.Get(ctx, "k").Val() != "v" {
		t.Fatal("open connection lost")
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("old port still accepts")
	}
	moved := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), PoolSize: 1})
	defer moved.Close()
	if moved.Get(ctx, "k").Val() != "v" {
		t.Fatal("new port does not serve")
	}
	if p := moved.ConfigGet(ctx, "port").Val()["port"]; p != strconv.Itoa(port) {
		t.Errorf("CONFIG GET port %q", p)
	}
	// A port in use: refused, still on the current one.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, busyPort, _ := net.SplitHostPort(busy.Addr().String())
	err = moved.ConfigSet(ctx, "port", busyPort).Err()
	if err == nil || !strings.Contains(err.Error(), "Unable to listen on this port") {
		t.Errorf("busy port: %v", err)
	}
	if p := moved.ConfigGet(ctx, "port").Val()["port"]; p != strconv.Itoa(port) {
		t.Errorf("port after a failed change %q", p)
	}
	fresh := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), PoolSize: 1})
	defer fresh.Close()
	if err := fresh.Ping(ctx).Err(); err != nil {
		t.Fatalf("after a failed change: %v", err)
	}
	err = fresh.ConfigSet(ctx, "bind", "999.999.999.999").Err()
	if err == nil || !strings.Contains(err.Error(), "Failed to bind to specified addresses") {
		t.Errorf("bad bind: %v", err)
	}
	// Re-binding to the same address keeps that listener.
	if err := fresh.ConfigSet(ctx, "bind", "127.0.0.1").Err(); err != nil {
		t.Fatal(err)
	}
	again := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), PoolSize: 1})
	defer again.Close()
	if err := again.Ping(ctx).Err(); err != nil {
		t.Fatalf("after re-binding: %v", err)
	}
	// No addresses: no new connections.
	if err := again.ConfigSet(ctx, "bind", "").Err(); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		conn.Close()
		t.Error("bind \"\" still accepts")
	}
}
