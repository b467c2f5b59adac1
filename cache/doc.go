// Package cache is a typed cache of Go values in Redis (or Sluice), over
// any go-redis v9 client, with pluggable codecs.
//
// A Cache[T] is made with New and a Codec[T], which stores each value as a
// Redis string, or with NewHash and a HashCodec[T], which stores each
// value as a Redis hash (one field per struct field):
//
//	users := cache.New(rdb, json.New[User](), cache.WithPrefix("user:"))
//	err := users.Set(ctx, "42", u, time.Hour)
//	u, found, err := users.Get(ctx, "42")
//	u, err = users.GetOrLoad(ctx, "42", time.Hour, loadUserFromDB)
//
// The codecs are in their own packages, so that a program only links the
// serialization library of the one it uses:
//
//	cache/codec/json     encoding/json (no dependency)
//	cache/codec/goccy    github.com/goccy/go-json
//	cache/codec/msgpack  github.com/vmihailenco/msgpack/v5
//	cache/codec/msgp     github.com/tinylib/msgp generated methods
//	cache/codec/proto    google.golang.org/protobuf messages
//	cache/codec/hash     Redis hashes via struct tags (for NewHash)
//
// README.md beside this file compares them with measurements.
//
// # Misses and errors
//
// Get reports a missing key with found == false and a nil error. A stored
// value that the codec cannot decode gives a *DecodeError naming the key
// and the codec; a value it cannot encode, an *EncodeError. Other errors
// come from go-redis unchanged.
//
// # Batches
//
// GetMany reads many keys in one round trip (MGET; pipelined HGETALLs for
// hashes) and SetMany writes them in one (MSET, or a pipeline of SET ...
// EX|PX when there is a TTL). With a *redis.ClusterClient the keys are
// grouped by hash slot first, since a cluster refuses multi-key commands
// across slots; with a *redis.Ring one command per key is pipelined.
//
// # Loading
//
// GetOrLoad calls the loader once per key however many goroutines miss it
// at the same time (golang.org/x/sync/singleflight), and looks the key up
// again just before loading so that a caller arriving as another's load
// finishes does not load twice.
package cache
