package cache

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"
)

// Cache stores values of type T in Redis. It is safe for concurrent use.
// Create one with New (values encoded by a Codec into string keys) or
// NewHash (values mapped onto Redis hashes by a HashCodec).
type Cache[T any] struct {
	client  redis.UniversalClient
	st      store[T]
	route   routing
	prefix  string
	onError func(ctx context.Context, key string, err error)
	group   singleflight.Group
}

// Option configures a Cache.
type Option func(*options)

type options struct {
	prefix  string
	onError func(ctx context.Context, key string, err error)
}

// WithPrefix puts prefix in front of every key the cache touches: Get(ctx,
// "42") on a cache with prefix "user:" reads the Redis key "user:42".
func WithPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// WithErrorHandler sets a function that is told of the errors GetOrLoad
// gets past instead of returning: a failed read before loading (the loader
// runs anyway; decode errors are among these) and a failed write of the
// loaded value. key is the full Redis key. By default they are dropped.
func WithErrorHandler(fn func(ctx context.Context, key string, err error)) Option {
	return func(o *options) { o.onError = fn }
}

// New returns a cache that stores each value as a Redis string encoded by
// codec. client may be any go-redis v9 client: a *redis.Client, a
// *redis.ClusterClient (batches are split per hash slot) or a *redis.Ring
// (batches are sent one command per key, pipelined).
func New[T any](client redis.UniversalClient, codec Codec[T], opts ...Option) *Cache[T] {
	st := &byteStore[T]{client: client, codec: codec, route: routingFor(client)}
	st.app, _ = codec.(AppendMarshaler[T])
	return newCache[T](client, st, opts)
}

// NewHash returns a cache that stores each value as a Redis hash: Set
// replaces the hash (DEL, HSET and PEXPIRE in one MULTI/EXEC) and Get
// reads it back with HGETALL. A missing or empty hash is a miss.
func NewHash[T any](client redis.UniversalClient, codec HashCodec[T], opts ...Option) *Cache[T] {
	return newCache[T](client, &hashStore[T]{client: client, codec: codec, route: routingFor(client)}, opts)
}

func newCache[T any](client redis.UniversalClient, st store[T], opts []Option) *Cache[T] {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return &Cache[T]{client: client, st: st, route: routingFor(client), prefix: o.prefix, onError: o.onError}
}

// store is the part of a Cache that differs between string and hash values.
// Keys are full Redis keys.
type store[T any] interface {
	get(ctx context.Context, key string) (T, bool, error)
	set(ctx context.Context, key string, v T, ttl time.Duration) error
	// getMany calls found for every key that holds a value, with its index;
	// decode failures are returned joined, after the other keys were served.
	getMany(ctx context.Context, keys []string, found func(i int, v T)) error
	setMany(ctx context.Context, items iter.Seq2[string, T], n int, ttl time.Duration) error
}

func (c *Cache[T]) key(k string) string {
	if c.prefix == "" {
		return k
	}
	return c.prefix + k
}

// Get returns the value cached under key. found is false, with a nil
// error, when the key does not exist; a value that cannot be decoded gives
// a *DecodeError.
func (c *Cache[T]) Get(ctx context.Context, key string) (v T, found bool, err error) {
	return c.st.get(ctx, c.key(key))
}

// Set stores v under key. ttl 0 means no expiry.
func (c *Cache[T]) Set(ctx context.Context, key string, v T, ttl time.Duration) error {
	if ttl < 0 {
		return ErrNegativeTTL
	}
	return c.st.set(ctx, c.key(key), v, ttl)
}

// Delete removes keys; keys that do not exist are ignored.
func (c *Cache[T]) Delete(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = c.key(k)
	}
	groups := c.route.groups(full)
	if groups == nil {
		return c.client.Del(ctx, full...).Err()
	}
	pipe := c.client.Pipeline()
	for _, g := range groups {
		pipe.Del(ctx, pick(full, g)...)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// GetMany returns the values of the keys that are cached, in one round
// trip (MGET, or pipelined HGETALLs for a hash cache; one MGET per hash
// slot on a cluster). Missing keys are absent from the map. When some
// values cannot be decoded the others are still returned, with an error
// joining one *DecodeError per bad key (find them with errors.As).
func (c *Cache[T]) GetMany(ctx context.Context, keys ...string) (map[string]T, error) {
	out := make(map[string]T, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	full := keys
	if c.prefix != "" {
		full = make([]string, len(keys))
		for i, k := range keys {
			full[i] = c.prefix + k
		}
	}
	err := c.st.getMany(ctx, full, func(i int, v T) { out[keys[i]] = v })
	var de *DecodeError
	if err != nil && !errors.As(err, &de) {
		return nil, err
	}
	return out, err
}

// SetMany stores every item in one round trip: MSET when ttl is 0 (one per
// hash slot on a cluster), else a pipeline of SET ... EX|PX. A hash cache
// sends one MULTI/EXEC with DEL, HSET and PEXPIRE for every key; on a
// cluster, one MULTI/EXEC per hash slot, concurrently.
func (c *Cache[T]) SetMany(ctx context.Context, items map[string]T, ttl time.Duration) error {
	if ttl < 0 {
		return ErrNegativeTTL
	}
	if len(items) == 0 {
		return nil
	}
	seq := func(yield func(string, T) bool) {
		for k, v := range items {
			if !yield(c.key(k), v) {
				return
			}
		}
	}
	return c.st.setMany(ctx, seq, len(items), ttl)
}

// GetOrLoad returns the value cached under key, or calls load, caches its
// result for ttl and returns it. Concurrent callers for the same key share
// one call of load: the first one runs it (with a context that keeps the
// first caller's values but not its cancellation) and the others wait for
// its result, each until its own ctx is done. The loader's result is also
// looked up again just before loading, so a caller that missed while
// another caller's load was finishing does not load a second time.
//
// Errors of the cache itself do not fail GetOrLoad: an unreadable or
// undecodable value is loaded afresh and overwritten, and a failed write
// still returns the loaded value; both go to the WithErrorHandler
// function. An error from load is returned to every waiting caller and
// nothing is cached. The callers share the loaded value, so a T holding
// pointers, maps or slices is shared among them.
func (c *Cache[T]) GetOrLoad(ctx context.Context, key string, ttl time.Duration, load func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	if ttl < 0 {
		return zero, ErrNegativeTTL
	}
	full := c.key(key)
	v, found, err := c.st.get(ctx, full)
	if found {
		return v, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		c.report(ctx, full, err)
	}
	ch := c.group.DoChan(full, func() (any, error) {
		return c.load(context.WithoutCancel(ctx), full, ttl, load)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return zero, r.Err
		}
		v, _ := r.Val.(T) // (a nil interface T comes back as a nil any)
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

func (c *Cache[T]) load(ctx context.Context, full string, ttl time.Duration, load func(ctx context.Context) (T, error)) (_ any, err error) {
	// Errors of this second look were reported by the caller's first one.
	if v, found, _ := c.st.get(ctx, full); found {
		return v, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Key: full, Value: r}
		}
	}()
	v, err := load(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.st.set(ctx, full, v, ttl); err != nil {
		c.report(ctx, full, err)
	}
	return v, nil
}

func (c *Cache[T]) report(ctx context.Context, key string, err error) {
	if c.onError != nil {
		c.onError(ctx, key, err)
	}
}

func pick(keys []string, idx []int) []string {
	out := make([]string, len(idx))
	for j, i := range idx {
		out[j] = keys[i]
	}
	return out
}
