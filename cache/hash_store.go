package cache

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
)

// hashStore keeps each value in a Redis hash through a HashCodec.
type hashStore[T any] struct {
	client redis.UniversalClient
	codec  HashCodec[T]
	route  routing
}

func (s *hashStore[T]) decode(key string, fields map[string]string) (T, error) {
	var v T
	if err := s.codec.DecodeFields(fields, &v); err != nil {
		var zero T
		return zero, &DecodeError{Key: key, Codec: s.codec.Name(), Err: err}
	}
	return v, nil
}

func (s *hashStore[T]) get(ctx context.Context, key string) (T, bool, error) {
	var zero T
	fields, err := s.client.HGetAll(ctx, key).Result()
	if err != nil || len(fields) == 0 {
		return zero, false, err
	}
	v, err := s.decode(key, fields)
	if err != nil {
		return zero, false, err
	}
	return v, true, nil
}

// encode returns the HSET arguments of v: field, value, field, value, ...
func (s *hashStore[T]) encode(key string, v T) ([]any, error) {
	fields, err := s.codec.AppendFields(nil, v)
	if err == nil && len(fields) == 0 {
		err = errors.New("no fields to store")
	}
	if err == nil && len(fields)%2 != 0 {
		err = fmt.Errorf("odd number of field/value strings (%d)", len(fields))
	}
	if err != nil {
		return nil, &EncodeError{Key: key, Codec: s.codec.Name(), Err: err}
	}
	args := make([]any, len(fields))
	for i, f := range fields {
		args[i] = f
	}
	return args, nil
}

// queue adds the commands that replace key's hash with args to a
// transaction.
func queueHash(ctx context.Context, pipe redis.Pipeliner, key string, args []any, ttl time.Duration) {
	pipe.Del(ctx, key)
	pipe.HSet(ctx, key, args...)
	if ttl > 0 {
		pipe.PExpire(ctx, key, ttl)
	}
}

func (s *hashStore[T]) set(ctx context.Context, key string, v T, ttl time.Duration) error {
	args, err := s.encode(key, v)
	if err != nil {
		return err
	}
	pipe := s.client.TxPipeline()
	queueHash(ctx, pipe, key, args, ttl)
	_, err = pipe.Exec(ctx)
	return err
}

func (s *hashStore[T]) getMany(ctx context.Context, keys []string, found func(int, T)) error {
	pipe := s.client.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.HGetAll(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	var errs []error
	for i, cmd := range cmds {
		fields := cmd.Val()
		if len(fields) == 0 {
			continue
		}
		v, err := s.decode(keys[i], fields)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		found(i, v)
	}
	return errors.Join(errs...)
}

func (s *hashStore[T]) setMany(ctx context.Context, items iter.Seq2[string, T], n int, ttl time.Duration) error {
	// Encode all first so that nothing is sent when one value fails.
	keys := make([]string, 0, n)
	argss := make([][]any, 0, n)
	for k, v := range items {
		args, err := s.encode(k, v)
		if err != nil {
			return err
		}
		keys = append(keys, k)
		argss = append(argss, args)
	}
	groups := s.route.groups(keys)
	if s.route != routeCluster || groups == nil {
		// A Ring splits a transaction per shard by itself.
		pipe := s.client.TxPipeline()
		for i, k := range keys {
			queueHash(ctx, pipe, k, argss[i], ttl)
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	// A cluster client refuses a transaction across slots: send one per
	// slot, several at a time.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(clusterTxParallelism)
	for _, idx := range groups {
		g.Go(func() error {
			pipe := s.client.TxPipeline()
			for _, i := range idx {
				queueHash(gctx, pipe, keys[i], argss[i], ttl)
			}
			_, err := pipe.Exec(gctx)
			return err
		})
	}
	return g.Wait()
}

// clusterTxParallelism bounds the per-slot transactions that a hash cache's
// SetMany has in flight on a cluster.
const clusterTxParallelism = 16
