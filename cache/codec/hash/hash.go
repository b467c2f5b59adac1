// Package hash maps Go structs onto the fields of a Redis hash, for
// cache.NewHash: Set writes them with HSET, Get reads them back with
// HGETALL. Unlike the byte codecs, single fields stay readable and
// writable with HGET/HSET/HINCRBY from anywhere.
//
// The mapping, built once by New with reflection:
//   - Each exported field becomes one hash field named by its struct tag
//     (`redis:"name"` by default; see WithTag), or by the Go field name
//     when there is no tag. A tag of "-" skips the field, and the
//     ",omitempty" option leaves zero values out.
//   - Nested structs, by value or by pointer, are flattened: Owner.Address.
//     City becomes "owner.address.city" (see WithSeparator). An embedded
//     struct without a tag name is flattened without a prefix. A nil
//     pointer to a struct writes none of its fields and reads back as nil
//     when none of them is present.
//   - Strings and []byte are stored as they are, bools as "1"/"0", numbers
//     in decimal (floats in the shortest form that reads back exactly),
//     time.Duration as integer nanoseconds. Types with MarshalText and
//     UnmarshalText (time.Time: RFC 3339 with nanoseconds) use them.
//   - Slices, arrays, maps and interfaces are stored as one field holding
//     their JSON encoding.
//   - A nil pointer, slice or map writes no field and reads back as nil.
//
// Fields of the hash that the type does not name are ignored on reading.
package hash

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Codec maps values of type T, a struct or a pointer to one, to hash
// fields. It is safe for concurrent use.
type Codec[T any] struct {
	leaves []leaf
	ptr    bool // T is a pointer to the struct
	elem   reflect.Type
}

// Option configures New.
type Option func(*config)

type config struct {
	tag string
	sep string
}

// WithTag reads field names from the struct tag key tag instead of "redis".
func WithTag(tag string) Option { return func(c *config) { c.tag = tag } }

// WithSeparator joins the names of nested fields with sep instead of ".".
func WithSeparator(sep string) Option { return func(c *config) { c.sep = sep } }

// New builds the mapping for T. It fails when T is not a struct or a
// pointer to one, when a field has a type that cannot be stored (chan,
// func, complex, unsafe.Pointer) or when two fields map to the same name.
func New[T any](opts ...Option) (*Codec[T], error) {
	cfg := config{tag: "redis", sep: "."}
	for _, o := range opts {
		o(&cfg)
	}
	t := reflect.TypeFor[T]()
	c := &Codec[T]{}
	if t.Kind() == reflect.Pointer {
		c.ptr = true
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("cache/codec/hash: %v is not a struct or a pointer to one", reflect.TypeFor[T]())
	}
	c.elem = t
	b := builder{cfg: cfg, seen: map[string]bool{}, open: map[reflect.Type]bool{}}
	if err := b.walk(t, "", nil); err != nil {
		return nil, fmt.Errorf("cache/codec/hash: %v: %w", reflect.TypeFor[T](), err)
	}
	c.leaves = b.leaves
	return c, nil
}

// Name returns "hash".
func (c *Codec[T]) Name() string { return "hash" }

// Fields returns the hash field names of T in struct order.
func (c *Codec[T]) Fields() []string {
	names := make([]string, len(c.leaves))
	for i, l := range c.leaves {
		names[i] = l.name
	}
	return names
}

// AppendFields appends the field/value pairs of v to dst.
func (c *Codec[T]) AppendFields(dst []string, v T) ([]string, error) {
	rv := reflect.ValueOf(&v).Elem()
	if c.ptr {
		if rv.IsNil() {
			return dst, errors.New("nil value")
		}
		rv = rv.Elem()
	}
leaves:
	for i := range c.leaves {
		l := &c.leaves[i]
		fv := rv
		for _, s := range l.path {
			fv = fv.Field(s.index)
			if s.ptr {
				if fv.IsNil() {
					continue leaves
				}
				fv = fv.Elem()
			}
		}
		if l.omitEmpty && fv.IsZero() {
			continue
		}
		str, ok, err := l.kind.encode(fv)
		if err != nil {
			return dst, fmt.Errorf("field %s: %w", l.name, err)
		}
		if ok {
			dst = append(dst, l.name, str)
		}
	}
	return dst, nil
}

// DecodeFields fills *v from fields.
func (c *Codec[T]) DecodeFields(fields map[string]string, v *T) error {
	rv := reflect.ValueOf(v).Elem()
	if c.ptr {
		if rv.IsNil() {
			rv.Set(reflect.New(c.elem))
		}
		rv = rv.Elem()
	}
	for i := range c.leaves {
		l := &c.leaves[i]
		str, ok := fields[l.name]
		if !ok {
			continue
		}
		fv := rv
		for _, s := range l.path {
			fv = fv.Field(s.index)
			if s.ptr {
				if fv.IsNil() {
					fv.Set(reflect.New(fv.Type().Elem()))
				}
				fv = fv.Elem()
			}
		}
		if err := l.kind.decode(fv, str); err != nil {
			return fmt.Errorf("field %s: %w", l.name, err)
		}
	}
	return nil
}

// leaf is one hash field: where its value sits in the struct and how it is
// written.
type leaf struct {
	name      string
	path      []step
	omitEmpty bool
	kind      kind
}

// step selects a struct field; ptr says the field is a pointer to a struct
// to go through.
type step struct {
	index int
	ptr   bool
}

type builder struct {
	cfg    config
	leaves []leaf
	seen   map[string]bool
	open   map[reflect.Type]bool // structs being flattened, to stop recursion
}

func (b *builder) walk(t reflect.Type, prefix string, path []step) error {
	b.open[t] = true
	defer delete(b.open, t)
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get(b.cfg.tag)
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		omitEmpty := false
		for o := range strings.SplitSeq(opts, ",") {
			omitEmpty = omitEmpty || o == "omitempty"
		}
		ft := f.Type
		if !f.IsExported() && ft.Kind() == reflect.Pointer {
			continue // reflect cannot allocate an unexported embedded pointer
		}
		sp := step{index: i}
		// A pointer to a struct is walked through unless the struct is
		// already being flattened (a recursive type): that one is stored
		// as JSON.
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct && !isText(ft.Elem()) && !b.open[ft.Elem()] {
			sp.ptr = true
			ft = ft.Elem()
		}
		p := append(path[:len(path):len(path)], sp)
		if ft.Kind() == reflect.Struct && !isText(ft) && !b.open[ft] {
			inner := prefix
			switch {
			case name != "":
				inner = prefix + name + b.cfg.sep
			case !f.Anonymous:
				inner = prefix + f.Name + b.cfg.sep
			}
			if err := b.walk(ft, inner, p); err != nil {
				return err
			}
			continue
		}
		if !f.IsExported() {
			continue // an embedded unexported non-struct
		}
		if name == "" {
			name = f.Name
		}
		name = prefix + name
		k, err := kindOf(ft)
		if err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		if b.seen[name] {
			return fmt.Errorf("two fields map to %q", name)
		}
		b.seen[name] = true
		b.leaves = append(b.leaves, leaf{name: name, path: p, omitEmpty: omitEmpty, kind: k})
	}
	return nil
}

var (
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// isText reports whether t round-trips through MarshalText/UnmarshalText.
func isText(t reflect.Type) bool {
	return t.Implements(textMarshaler) && reflect.PointerTo(t).Implements(textUnmarshaler)
}

// kind encodes one leaf value. encode returns ok=false for a value that
// writes no field (a nil pointer, slice or map).
type kind interface {
	encode(v reflect.Value) (s string, ok bool, err error)
	decode(v reflect.Value, s string) error
}

func kindOf(t reflect.Type) (kind, error) {
	if isText(t) {
		return textKind{}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return stringKind{}, nil
	case reflect.Bool:
		return boolKind{}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intKind{bits: t.Bits()}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintKind{bits: t.Bits()}, nil
	case reflect.Float32, reflect.Float64:
		return floatKind{bits: t.Bits()}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !isText(t.Elem()) {
			return bytesKind{}, nil
		}
		return jsonKind{}, nil
	case reflect.Array, reflect.Map, reflect.Interface, reflect.Struct:
		return jsonKind{}, nil
	case reflect.Pointer:
		inner, err := kindOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return ptrKind{elem: inner}, nil
	}
	return nil, fmt.Errorf("unsupported type %v", t)
}

type stringKind struct{}

func (stringKind) encode(v reflect.Value) (string, bool, error) { return v.String(), true, nil }
func (stringKind) decode(v reflect.Value, s string) error {
	v.SetString(s)
	return nil
}

type bytesKind struct{}

func (bytesKind) encode(v reflect.Value) (string, bool, error) {
	if v.IsNil() {
		return "", false, nil
	}
	return string(v.Bytes()), true, nil
}
func (bytesKind) decode(v reflect.Value, s string) error {
	v.SetBytes([]byte(s))
	return nil
}

type boolKind struct{}

func (boolKind) encode(v reflect.Value) (string, bool, error) {
	if v.Bool() {
		return "1", true, nil
	}
	return "0", true, nil
}
func (boolKind) decode(v reflect.Value, s string) error {
	b, err := strconv.ParseBool(s)
	v.SetBool(b)
	return err
}

type intKind struct{ bits int }

func (intKind) encode(v reflect.Value) (string, bool, error) {
	return strconv.FormatInt(v.Int(), 10), true, nil
}
func (k intKind) decode(v reflect.Value, s string) error {
	n, err := strconv.ParseInt(s, 10, k.bits)
	v.SetInt(n)
	return err
}

type uintKind struct{ bits int }

func (uintKind) encode(v reflect.Value) (string, bool, error) {
	return strconv.FormatUint(v.Uint(), 10), true, nil
}
func (k uintKind) decode(v reflect.Value, s string) error {
	n, err := strconv.ParseUint(s, 10, k.bits)
	v.SetUint(n)
	return err
}

type floatKind struct{ bits int }

func (k floatKind) encode(v reflect.Value) (string, bool, error) {
	return strconv.FormatFloat(v.Float(), 'g', -1, k.bits), true, nil
}
func (k floatKind) decode(v reflect.Value, s string) error {
	f, err := strconv.ParseFloat(s, k.bits)
	v.SetFloat(f)
	return err
}

type textKind struct{}

func (textKind) encode(v reflect.Value) (string, bool, error) {
	b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
	return string(b), err == nil, err
}
func (textKind) decode(v reflect.Value, s string) error {
	return v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
}

type jsonKind struct{}

func (jsonKind) encode(v reflect.Value) (string, bool, error) {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return "", false, nil
		}
	}
	b, err := json.Marshal(v.Interface())
	return string(b), err == nil, err
}
func (jsonKind) decode(v reflect.Value, s string) error {
	return json.Unmarshal([]byte(s), v.Addr().Interface())
}

type ptrKind struct{ elem kind }

func (k ptrKind) encode(v reflect.Value) (string, bool, error) {
	if v.IsNil() {
		return "", false, nil
	}
	return k.elem.encode(v.Elem())
}
func (k ptrKind) decode(v reflect.Value, s string) error {
	p := reflect.New(v.Type().Elem())
	if err := k.elem.decode(p.Elem(), s); err != nil {
		return err
	}
	v.Set(p)
	return nil
}
