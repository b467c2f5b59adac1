// Package json is a cache codec using the standard library's encoding/json.
// It needs no dependency outside the standard library and stores text a
// person can read with redis-cli; it is the slowest codec here.
package json

import "encoding/json"

// Codec encodes values of type T as JSON. The zero value is ready to use.
type Codec[T any] struct{}

// New returns a JSON codec for T.
func New[T any]() Codec[T] { return Codec[T]{} }

// Name returns "json".
func (Codec[T]) Name() string { return "json" }

// Marshal encodes v with json.Marshal.
func (Codec[T]) Marshal(v T) ([]byte, error) { return json.Marshal(v) }

// Unmarshal decodes data into v with json.Unmarshal.
func (Codec[T]) Unmarshal(data []byte, v *T) error { return json.Unmarshal(data, v) }
