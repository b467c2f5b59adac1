package sluicetest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/sluicetest"
)

func TestInMemoryClient(t *testing.T) {
	s := sluicetest.Start(t)
	ctx := context.Background()
	rdb := s.Client()
	if err := rdb.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.CheckGet(t, "greeting", "hello")
	s.Set("seeded", "42")
	got, err := rdb.Get(ctx, "seeded").Result()
	if err != nil || got != "42" {
		t.Fatalf("GET seeded = %q, %v", got, err)
	}
	if _, err := rdb.Get(ctx, "missing").Result(); err != redis.Nil {
		t.Fatalf("GET missing: err = %v, want redis.Nil", err)
	}
}

func TestInMemoryPipelineLargerThanBuffers(t *testing.T) {
	s := sluicetest.Start(t)
	ctx := context.Background()
	rdb := s.Client()
	pipe := rdb.Pipeline()
	const n = 20000
	val := string(make([]byte, 100))
	for i := 0; i < n; i++ {
		pipe.Set(ctx, fmt.Sprint("k", i), val, 0)
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != n {
		t.Fatalf("%d replies, want %d", len(cmds), n)
	}
	if v, ok := s.Get("k19999"); !ok || v != val {
		t.Fatalf("k19999 not stored")
	}
}

func TestTCPClient(t *testing.T) {
	s := sluicetest.Start(t)
	rdb := s.TCPClient()
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if s.Port() == 0 {
		t.Fatal("no port")
	}
}

func TestDirectErrors(t *testing.T) {
	s := sluicetest.Start(t)
	if _, err := s.Do("NOSUCHCOMMAND"); err == nil {
		t.Fatal("expected an error reply")
	}
}

func ExampleStart() {
	// In a test: s := sluicetest.Start(t)
	s, err := sluicetest.Run()
	if err != nil {
		panic(err)
	}
	defer s.Close()
	s.Set("user:1", "ada")
	rdb := s.Client()
	name, _ := rdb.Get(context.Background(), "user:1").Result()
	fmt.Println(name)
	// Output: ada
}
