package cache_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/cache"
	"github.com/sluicedb/sluice/cache/codec/hash"
	"github.com/sluicedb/sluice/cache/codec/json"
	"github.com/sluicedb/sluice/server"
)

type User struct {
	ID    int64  `json:"id" redis:"id"`
	Name  string `json:"name" redis:"name"`
	Email string `json:"email" redis:"email"`
}

// startExampleServer starts an in-process Sluice on a free port; in your
// program the address is that of your Redis.
func startExampleServer() (addr string, stop func()) {
	cfg := server.NewConfig()
	cfg.Set("port", "0")
	srv := server.New(cfg)
	srv.SetLogger(nil)
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	return srv.Addrs()[0].String(), srv.Stop
}

func Example() {
	addr, stop := startExampleServer()
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()

	users := cache.New(rdb, json.New[User](), cache.WithPrefix("user:"))

	if err := users.Set(ctx, "42", User{ID: 42, Name: "Ada", Email: "ada@example.com"}, time.Hour); err != nil {
		log.Fatal(err)
	}
	u, found, err := users.Get(ctx, "42") // reads the key "user:42"
	fmt.Println(u.Name, found, err)

	_, found, err = users.Get(ctx, "43") // a miss is not an error
	fmt.Println(found, err)

	// Load on a miss; concurrent callers for one key share one load.
	u, err = users.GetOrLoad(ctx, "7", time.Hour, func(ctx context.Context) (User, error) {
		return User{ID: 7, Name: "Grace"}, nil // e.g. from the database
	})
	fmt.Println(u.Name, err)

	// A value the codec cannot read is a *cache.DecodeError.
	rdb.Set(ctx, "user:13", "not json", 0)
	_, _, err = users.Get(ctx, "13")
	var de *cache.DecodeError
	fmt.Println(errors.As(err, &de), de.Key, de.Codec)
	// Output:
	// Ada true <nil>
	// false <nil>
	// Grace <nil>
	// true user:13 json
}

// Values kept as Redis hashes can be read and changed field by field from
// anywhere (HGET user:42 name, HINCRBY ...).
func ExampleNewHash() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	ctx := context.Background()

	codec, err := hash.New[User]() // fields from `redis:"..."` tags
	if err != nil {
		log.Fatal(err)
	}
	users := cache.NewHash(rdb, codec, cache.WithPrefix("user:"))
	if err := users.Set(ctx, "42", User{ID: 42, Name: "Ada"}, time.Hour); err != nil {
		log.Fatal(err)
	}
	name, _ := rdb.HGet(ctx, "user:42", "name").Result()
	fmt.Println(name)
}

// GetMany and SetMany take one round trip for many keys, on a single node
// or a cluster.
func ExampleCache_GetMany() {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"localhost:7000"}})
	ctx := context.Background()
	users := cache.New(rdb, json.New[User](), cache.WithPrefix("user:"))

	err := users.SetMany(ctx, map[string]User{"1": {ID: 1}, "2": {ID: 2}}, 10*time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	found, err := users.GetMany(ctx, "1", "2", "3")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(found)) // 2: user 3 is not cached
}
