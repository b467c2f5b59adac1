// Package msgpack is a cache codec using github.com/vmihailenco/msgpack/v5:
// compact binary MessagePack through reflection, no code generation.
// Fields follow `msgpack:"name"` struct tags.
package msgpack

import (
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Codec encodes values of type T as MessagePack. The zero value is ready
// to use.
type Codec[T any] struct{}

// New returns a MessagePack codec for T.
func New[T any]() Codec[T] { return Codec[T]{} }

// Name returns "msgpack".
func (Codec[T]) Name() string { return "msgpack" }

// Marshal encodes v.
func (c Codec[T]) Marshal(v T) ([]byte, error) { return c.AppendMarshal(nil, v) }

// AppendMarshal appends the encoding of v to dst.
func (Codec[T]) AppendMarshal(dst []byte, v T) ([]byte, error) {
	e := encoders.Get().(*encoder)
	e.w.b = dst
	err := e.enc.Encode(&v)
	out := e.w.b
	e.w.b = nil
	encoders.Put(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// Unmarshal decodes data into v.
func (Codec[T]) Unmarshal(data []byte, v *T) error { return msgpack.Unmarshal(data, v) }

// encoder is a pooled msgpack encoder writing into a byte slice.
type encoder struct {
	w   appendWriter
	enc *msgpack.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = msgpack.NewEncoder(&e.w)
	return e
}}

type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *appendWriter) WriteByte(c byte) error {
	w.b = append(w.b, c)
	return nil
}
