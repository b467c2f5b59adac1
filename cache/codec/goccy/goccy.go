// Package goccy is a cache codec using github.com/goccy/go-json, a faster
// drop-in for encoding/json: same struct tags, same output.
package goccy

import gojson "github.com/goccy/go-json"

// Codec encodes values of type T as JSON. The zero value is ready to use.
type Codec[T any] struct{}

// New returns a go-json codec for T.
func New[T any]() Codec[T] { return Codec[T]{} }

// Name returns "goccy-json".
func (Codec[T]) Name() string { return "goccy-json" }

// Marshal encodes v.
func (Codec[T]) Marshal(v T) ([]byte, error) { return gojson.Marshal(v) }

// Unmarshal decodes data into v.
func (Codec[T]) Unmarshal(data []byte, v *T) error { return gojson.Unmarshal(data, v) }
