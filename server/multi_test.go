package server_test

import (
	"context"
	"errors"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// The optimistic-locking increment from go-redis's documentation: 100
// goroutines, 100 increments each, WATCH + MULTI/EXEC with retries. Every
// increment must land exactly once.
func TestWatchOptimisticIncrement(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	if os.Getenv("WATCH_TARGET") == "redis" {
		addr = redistest.StartRedis(t)
	}
	workers, each := 100, 100
	if v, err := strconv.Atoi(os.Getenv("WATCH_WORKERS")); err == nil {
		workers = v
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 100})
	defer rdb.Close()
	ctx := context.Background()
	const key = "counter"
	var retries atomic.Int64
	incr := func() error {
		for {
			err := rdb.Watch(ctx, func(tx *redis.Tx) error {
				n, err := tx.Get(ctx, key).Int()
				if err != nil && !errors.Is(err, redis.Nil) {
					return err
				}
				_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
					pipe.Set(ctx, key, strconv.Itoa(n+1), 0)
					return nil
				})
				return err
			}, key)
			if errors.Is(err, redis.TxFailedErr) {
				retries.Add(1)
				continue
			}
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := incr(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := rdb.Get(ctx, key).Int()
	if err != nil || got != workers*each {
		t.Fatalf("counter = %d, %v; want %d", got, err, workers*each)
	}
	t.Logf("%d increments, %d retries", workers*each, retries.Load())
}

// A write from another client between WATCH and EXEC fails the EXEC.
func TestWatchOtherClientWrite(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	a := redistest.Dial(t, addr)
	b := redistest.Dial(t, addr)
	mustDo(t, a, "+OK\r\n", "SET", "k", "1")
	mustDo(t, a, "+OK\r\n", "WATCH", "k")
	mustDo(t, b, "+OK\r\n", "SET", "k", "1") // same value still counts
	mustDo(t, a, "+OK\r\n", "MULTI")
	mustDo(t, a, "+QUEUED\r\n", "INCR", "k")
	mustDo(t, a, "*-1\r\n", "EXEC")
	// The watch is gone after EXEC: a second transaction succeeds.
	mustDo(t, a, "+OK\r\n", "MULTI")
	mustDo(t, a, "+QUEUED\r\n", "GET", "k")
	mustDo(t, a, "*1\r\n$1\r\n1\r\n", "EXEC")
}

// Expiry of a watched key fails EXEC.
func TestWatchExpiry(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	a := redistest.Dial(t, addr)
	mustDo(t, a, "+OK\r\n", "SET", "k", "1", "PX", "30")
	mustDo(t, a, "+OK\r\n", "WATCH", "k")
	for i := 0; i < 100; i++ {
		if r, _ := a.Do("EXISTS", "k"); r == ":0\r\n" {
			break
		}
		waitMs(10)
	}
	mustDo(t, a, "+OK\r\n", "MULTI")
	mustDo(t, a, "+QUEUED\r\n", "PING")
	mustDo(t, a, "*-1\r\n", "EXEC")
}

// SWAPDB touches keys watched in either database.
func TestWatchSwapDB(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	a := redistest.Dial(t, addr)
	b := redistest.Dial(t, addr)
	mustDo(t, b, "+OK\r\n", "SELECT", "1")
	mustDo(t, b, "+OK\r\n", "SET", "x", "in-db1")
	mustDo(t, a, "+OK\r\n", "WATCH", "x") // missing in db 0
	mustDo(t, b, "+OK\r\n", "SWAPDB", "0", "1")
	mustDo(t, a, "+OK\r\n", "MULTI")
	mustDo(t, a, "+QUEUED\r\n", "GET", "x")
	mustDo(t, a, "*-1\r\n", "EXEC")
}

// Transactions are atomic: a concurrent reader never sees half of one.
func TestExecAtomic(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 8})
	defer rdb.Close()
	rdb.MSet(ctx, "a", 0, "b", 0)
	stop := make(chan struct{})
	var bad atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			vals, err := rdb.MGet(ctx, "a", "b").Result()
			if err == nil && vals[0] != vals[1] {
				bad.Add(1)
			}
		}
	}()
	for i := 1; i <= 300; i++ {
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "a", i, 0)
			p.Set(ctx, "b", i, 0)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d reads saw a half-applied transaction", bad.Load())
	}
}

func mustDo(t *testing.T, c *redistest.Conn, want string, args ...string) {
	t.Helper()
	got, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if got != want {
		t.Fatalf("%v = %q, want %q", args, got, want)
	}
}

// A command failing inside EXEC counts as failed itself; EXEC does not,
// unless it replies with its own error (Redis's info.tcl errorstats test).
func TestExecFailedCallStats(t *testing.T) {
	results := map[string]string{}
	_, saddr := redistest.StartSluice(t)
	for name, addr := range map[string]string{"redis": redistest.StartRedis(t), "sluice": saddr} {
		c := redistest.Dial(t, addr)
		c.Do("CONFIG", "RESETSTAT")
		for _, args := range [][]string{{"MULTI"}, {"SET", "a", "b"}, {"AUTH", "a"}, {"EXEC"}, {"EXEC"},
			{"MULTI"}, {"INCR", "a"}, {"EXEC"}, {"MULTI"}, {"GET"}, {"EXEC"}} {
			c.Do(args...)
		}
		raw, _ := c.Do("INFO", "commandstats")
		var out []string
		for _, line := range strings.Split(raw, "\r\n") {
			if !strings.HasPrefix(line, "cmdstat_") || strings.HasPrefix(line, "cmdstat_config") {
				continue
			}
			name, v, _ := strings.Cut(line, ":")
			for _, p := range strings.Split(v, ",") {
				if !strings.HasPrefix(p, "usec") {
					out = append(out, name+"."+p)
				}
			}
		}
		sort.Strings(out)
		raw, _ = c.Do("INFO", "errorstats")
		results[name] = strings.Join(out, " ") + " " + strings.ReplaceAll(raw[strings.Index(raw, "\n")+1:], "\r\n", " ")
	}
	if results["redis"] != results["sluice"] {
		t.Errorf("redis:  %s\nsluice: %s", results["redis"], results["sluice"])
	}
}
