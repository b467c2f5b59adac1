package cache

import (
	"errors"
	"fmt"
)

// Codec turns values of type T into the bytes stored under a Redis string
// key and back. Implementations live in the cache/codec/... packages; any
// type with these methods will do.
//
// Unmarshal receives a pointer to a zero T and must not modify data (it
// may alias memory owned by the cache); it may keep references to it.
type Codec[T any] interface {
	// Name identifies the codec in errors ("json", "msgpack", ...).
	Name() string
	Marshal(v T) ([]byte, error)
	Unmarshal(data []byte, v *T) error
}

// AppendMarshaler is implemented by codecs that can encode into a
// caller-supplied buffer. The cache detects it and then encodes into
// pooled buffers, saving one allocation per value.
type AppendMarshaler[T any] interface {
	AppendMarshal(dst []byte, v T) ([]byte, error)
}

// HashCodec maps values of type T to the fields of a Redis hash (HSET) and
// back (HGETALL). Use it with NewHash; cache/codec/hash has a reflection-
// based implementation driven by struct tags.
type HashCodec[T any] interface {
	Name() string
	// AppendFields appends field, value, field, value, ... to dst. It must
	// produce at least one field.
	AppendFields(dst []string, v T) ([]string, error)
	// DecodeFields fills the zero value *v from the hash's fields.
	DecodeFields(fields map[string]string, v *T) error
}

// DecodeError reports a cached value that its codec could not decode. Key
// is the full Redis key (prefix included).
type DecodeError struct {
	Key   string
	Codec string
	Err   error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("cache: decoding key %q with codec %s: %v", e.Key, e.Codec, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// EncodeError reports a value that its codec could not encode.
type EncodeError struct {
	Key   string
	Codec string
	Err   error
}

func (e *EncodeError) Error() string {
	return fmt.Sprintf("cache: encoding key %q with codec %s: %v", e.Key, e.Codec, e.Err)
}

func (e *EncodeError) Unwrap() error { return e.Err }

// ErrNegativeTTL is returned by the setters for a TTL below zero. A TTL of
// zero stores a value without expiry.
var ErrNegativeTTL = errors.New("cache: negative TTL")

// PanicError is returned by GetOrLoad to every waiting caller when the
// loader panics.
type PanicError struct {
	Key   string
	Value any
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("cache: loader for key %q panicked: %v", e.Key, e.Value)
}
