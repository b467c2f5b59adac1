package cache

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// routing says how multi-key commands must be split for a client.
type routing uint8

const (
	routeSingle  routing = iota // one node: MGET/MSET/DEL take all keys
	routeCluster                // Redis Cluster: one command per hash slot
	routePerKey                 // client-side sharding (Ring): one command per key
)

func routingFor(c redis.UniversalClient) routing {
	switch c.(type) {
	case *redis.ClusterClient:
		return routeCluster
	case *redis.Ring:
		return routePerKey
	}
	return routeSingle
}

// groups splits key indexes into batches that one multi-key command can
// serve. It returns nil when a single command can take every key.
func (r routing) groups(keys []string) [][]int {
	switch r {
	case routeCluster:
		bySlot := make(map[uint16]int)
		var out [][]int
		for i, k := range keys {
			s := slot(k)
			g, ok := bySlot[s]
			if !ok {
				g = len(out)
				bySlot[s] = g
				out = append(out, nil)
			}
			out[g] = append(out[g], i)
		}
		if len(out) <= 1 {
			return nil
		}
		return out
	case routePerKey:
		if len(keys) <= 1 {
			return nil
		}
		out := make([][]int, len(keys))
		for i := range keys {
			out[i] = []int{i}
		}
		return out
	}
	return nil
}

// slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key, or of its hash tag (the part between the first '{' and the next
// '}' when that is not empty), modulo 16384.
func slot(key string) uint16 {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc = crc<<8 ^ crc16tab[byte(crc>>8)^key[i]]
	}
	return crc & 16383
}

var crc16tab = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
