package config_test

import (
	"fmt"
	"strings"

	"github.com/sluicedb/sluice/acl"
	"github.com/sluicedb/sluice/config"
)

func Example() {
	cfg := config.New(acl.NewCommands(nil))
	if err := cfg.LoadConfig(strings.NewReader("maxmemory 100mb\nslave-read-only no\n")); err != nil {
		fmt.Println(err)
	}
	fmt.Println(cfg.Get("maxmemory"), cfg.MaxMemory.Load(), cfg.Get("replica-read-only"))

	_, err := cfg.SetPairs([][]byte{[]byte("maxmemory-policy"), []byte("lru")}, false, nil)
	fmt.Println(err)
	// Output:
	// 104857600 104857600 no
	// CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction
}
