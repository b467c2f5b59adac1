// Package proto is a cache codec for protocol buffer messages, using
// google.golang.org/protobuf. T is a generated message pointer type such
// as *pb.User. It is the most compact encoding and among the fastest, at
// the price of a .proto schema and generated code.
package proto

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Codec encodes messages of type T in the protobuf wire format.
type Codec[T proto.Message] struct {
	typ protoreflect.MessageType
}

// New returns a codec for the concrete message type T, e.g.
// proto.New[*pb.User](). It panics when T is an interface type.
func New[T proto.Message]() Codec[T] {
	var zero T
	if any(zero) == nil {
		panic(fmt.Sprintf("cache/codec/proto: T must be a concrete message type, not the interface %T", &zero))
	}
	return Codec[T]{typ: zero.ProtoReflect().Type()}
}

// Name returns "proto".
func (Codec[T]) Name() string { return "proto" }

// Marshal encodes v; a nil message encodes as an empty one.
func (Codec[T]) Marshal(v T) ([]byte, error) { return proto.Marshal(v) }

// AppendMarshal appends the encoding of v to dst.
func (Codec[T]) AppendMarshal(dst []byte, v T) ([]byte, error) {
	return proto.MarshalOptions{}.MarshalAppend(dst, v)
}

// Unmarshal decodes data into *v, allocating the message when *v is nil.
func (c Codec[T]) Unmarshal(data []byte, v *T) error {
	if c.typ == nil {
		return fmt.Errorf("cache/codec/proto: codec for %T not made by New", *v)
	}
	m := *v
	if !m.ProtoReflect().IsValid() {
		m = c.typ.New().Interface().(T)
	}
	if err := proto.Unmarshal(data, m); err != nil {
		return err
	}
	*v = m
	return nil
}
