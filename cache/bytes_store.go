package cache

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
)

// byteStore keeps each value in a Redis string encoded by a Codec.
type byteStore[T any] struct {
	client redis.UniversalClient
	codec  Codec[T]
	app    AppendMarshaler[T] // codec, when it can append; else nil
	route  routing
}

// bufPool holds encode buffers for codecs that append. go-redis is done
// with a command's arguments when the command returns, so a buffer goes
// back to the pool right after its command.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledBuf = 1 << 20

func putBuf(b *[]byte, data []byte) {
	if cap(data) <= maxPooledBuf {
		*b = data[:0]
		bufPool.Put(b)
	}
}

// bytesOf views s as a byte slice without copying; codecs must not modify
// it (see Codec).
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

func (s *byteStore[T]) decode(key, data string) (T, error) {
	var v T
	if err := s.codec.Unmarshal(bytesOf(data), &v); err != nil {
		var zero T
		return zero, &DecodeError{Key: key, Codec: s.codec.Name(), Err: err}
	}
	return v, nil
}

func (s *byteStore[T]) encodeErr(key string, err error) error {
	return &EncodeError{Key: key, Codec: s.codec.Name(), Err: err}
}

func (s *byteStore[T]) get(ctx context.Context, key string) (T, bool, error) {
	var zero T
	data, err := s.client.Get(ctx, key).Result()
	if err != nil {
		if err == redis.Nil {
			err = nil
		}
		return zero, false, err
	}
	v, err := s.decode(key, data)
	if err != nil {
		return zero, false, err
	}
	return v, true, nil
}

func (s *byteStore[T]) set(ctx context.Context, key string, v T, ttl time.Duration) error {
	if s.app == nil {
		data, err := s.codec.Marshal(v)
		if err != nil {
			return s.encodeErr(key, err)
		}
		return s.client.Set(ctx, key, data, ttl).Err()
	}
	buf := bufPool.Get().(*[]byte)
	data, err := s.app.AppendMarshal((*buf)[:0], v)
	if err != nil {
		putBuf(buf, *buf)
		return s.encodeErr(key, err)
	}
	err = s.client.Set(ctx, key, data, ttl).Err()
	putBuf(buf, data)
	return err
}

func (s *byteStore[T]) getMany(ctx context.Context, keys []string, found func(int, T)) error {
	var errs []error
	take := func(i int, x any) {
		str, ok := x.(string)
		if !ok { // nil: a missing key (or one of another type)
			return
		}
		v, err := s.decode(keys[i], str)
		if err != nil {
			errs = append(errs, err)
			return
		}
		found(i, v)
	}
	groups := s.route.groups(keys)
	if groups == nil {
		vals, err := s.client.MGet(ctx, keys...).Result()
		if err != nil {
			return err
		}
		for i, x := range vals {
			take(i, x)
		}
		return errors.Join(errs...)
	}
	pipe := s.client.Pipeline()
	cmds := make([]*redis.SliceCmd, len(groups))
	for g, idx := range groups {
		cmds[g] = pipe.MGet(ctx, pick(keys, idx)...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	for g, idx := range groups {
		for j, x := range cmds[g].Val() {
			take(idx[j], x)
		}
	}
	return errors.Join(errs...)
}

func (s *byteStore[T]) setMany(ctx context.Context, items iter.Seq2[string, T], n int, ttl time.Duration) error {
	// Encode everything first: keys and values alternate in pairs, ready
	// for MSET.
	pairs := make([]any, 0, 2*n)
	var buf *[]byte
	if s.app != nil {
		// One pooled buffer holds every value; ends[i] is where value i
		// stops. Slices are cut only once the buffer stops growing.
		buf = bufPool.Get().(*[]byte)
		data := (*buf)[:0]
		ends := make([]int, 0, n)
		for k, v := range items {
			var err error
			if data, err = s.app.AppendMarshal(data, v); err != nil {
				putBuf(buf, data)
				return s.encodeErr(k, err)
			}
			pairs = append(pairs, k, nil)
			ends = append(ends, len(data))
		}
		start := 0
		for i, end := range ends {
			pairs[2*i+1] = data[start:end:end]
			start = end
		}
		*buf = data
	} else {
		for k, v := range items {
			data, err := s.codec.Marshal(v)
			if err != nil {
				return s.encodeErr(k, err)
			}
			pairs = append(pairs, k, data)
		}
	}
	err := s.writePairs(ctx, pairs, ttl)
	if buf != nil {
		putBuf(buf, *buf)
	}
	return err
}

// writePairs stores key/value pairs: MSET without a TTL (split per slot
// or per key as the client needs), else a pipeline of SETs.
func (s *byteStore[T]) writePairs(ctx context.Context, pairs []any, ttl time.Duration) error {
	if ttl == 0 {
		var groups [][]int
		if s.route != routeSingle {
			keys := make([]string, len(pairs)/2)
			for i := range keys {
				keys[i] = pairs[2*i].(string)
			}
			groups = s.route.groups(keys)
		}
		if groups == nil {
			return s.client.MSet(ctx, pairs...).Err()
		}
		pipe := s.client.Pipeline()
		for _, idx := range groups {
			sub := make([]any, 0, 2*len(idx))
			for _, i := range idx {
				sub = append(sub, pairs[2*i], pairs[2*i+1])
			}
			pipe.MSet(ctx, sub...)
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	pipe := s.client.Pipeline()
	for i := 0; i < len(pairs); i += 2 {
		pipe.Set(ctx, pairs[i].(string), pairs[i+1], ttl)
	}
	_, err := pipe.Exec(ctx)
	return err
}
