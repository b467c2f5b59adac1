package rdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// RDB files (Redis's rdb.c): "REDIS" and a 4-digit version, then opcodes
// (AUX fields, functions, SELECTDB, RESIZEDB, expiry and LRU/LFU hints)
// and key-value pairs (object type, key string, value as in a DUMP
// payload), then the EOF opcode and the CRC-64 of everything before it
// (little endian; 0 when the writer disabled checksums).

// File opcodes.
const (
	OpFunction2 = 245 // function library code
	OpFunction  = 246 // 7.0 release candidates' function format
	OpModuleAux = 247
	OpIdle      = 248 // LRU idle time of the next key (seconds)
	OpFreq      = 249 // LFU counter of the next key
	OpAux       = 250 // string-string metadata
	OpResizeDB  = 251 // size hints of the current database
	OpExpireMs  = 252 // expiry of the next key, unix ms
	OpExpire    = 253 // expiry of the next key, unix seconds (old files)
	OpSelectDB  = 254
	OpEOF       = 255
)

// CRC64 continues the RDB checksum crc over p.
func CRC64(crc uint64, p []byte) uint64 { return crc64(crc, p) }

// AppendHeader appends the file signature, "REDIS0010".
func AppendHeader(dst []byte) []byte {
	return fmt.Appendf(dst, "REDIS%04d", Version)
}

// AppendAux appends an AUX field; values that are integers take Redis's
// integer string encoding, as rdbSaveAuxField writes them.
func AppendAux(dst []byte, key, val string) []byte {
	dst = append(dst, OpAux)
	dst = AppendString(dst, []byte(key))
	return AppendString(dst, []byte(val))
}

// AppendAuxInt appends an AUX field with an integer value.
func AppendAuxInt(dst []byte, key string, val int64) []byte {
	return AppendAux(dst, key, strconv.FormatInt(val, 10))
}

// AppendFunction appends a function library (its code).
func AppendFunction(dst []byte, code []byte) []byte {
	return AppendString(append(dst, OpFunction2), code)
}

// AppendSelectDB appends SELECTDB and RESIZEDB for database id.
func AppendSelectDB(dst []byte, id int, size, expires uint64) []byte {
	dst = AppendLen(append(dst, OpSelectDB), uint64(id))
	dst = AppendLen(append(dst, OpResizeDB), size)
	return AppendLen(dst, expires)
}

// AppendExpireMs appends the expiry (unix milliseconds) of the next key.
func AppendExpireMs(dst []byte, ms int64) []byte {
	return binary.LittleEndian.AppendUint64(append(dst, OpExpireMs), uint64(ms))
}

// AppendKey appends the object type and the key that precede a value.
func AppendKey(dst []byte, typ byte, key []byte) []byte {
	return AppendString(append(dst, typ), key)
}

// Record is one key read from an RDB file. Key and the value's byte slices
// may point into the file's bytes.
type Record struct {
	DB    int
	Key   []byte
	Value *Value
	// Expire is the key's expiry in unix milliseconds; HasExpire tells
	// whether it has one.
	Expire    int64
	HasExpire bool
	Idle      int64 // LRU idle seconds, -1 if absent
	Freq      int   // LFU counter, -1 if absent
	// End is the offset just past the record in what ReadFile reads
	// (loading progress, INFO's loading_loaded_bytes); 0 where unknown.
	End int64
}

// Handler receives what ReadFile finds; nil functions are skipped.
type Handler struct {
	Aux      func(key, val []byte)
	ResizeDB func(db int, size, expires uint64)
	Function func(code []byte) error
	// SelectDB is called before the keys of a database; it may refuse an
	// index (too many databases).
	SelectDB func(db int) error
	Key      func(r *Record) error
	// EmptyKey is called for a key whose collection is empty (skipped).
	EmptyKey func(db int, key []byte)
}

// FileError is an error in an RDB file at a byte offset.
type FileError struct {
	Off int
	Msg string
	Err error // the value decoder's error, if any
}

func (e *FileError) Error() string {
	return fmt.Sprintf("RDB file error at offset %d: %s", e.Off, e.Msg)
}

func (e *FileError) Unwrap() error { return e.Err }

// badValue is the error for a value of key (db, object type typ) that did
// not decode with err, at offset off: the message names the key, and the
// reason Redis's loader gives (Reason) when there is one.
func badValue(off int, key []byte, db, typ int, err error) *FileError {
	msg := fmt.Sprintf("Bad data format of key '%s' (db %d, object type %d)", key, db, typ)
	if reason := Reason(err); reason != "" {
		msg += " -> " + reason
	}
	return &FileError{Off: off, Msg: msg, Err: err}
}

// ErrUnsupported marks values Sluice cannot hold (streams, modules).
var ErrUnsupported = errors.New("rdb: unsupported value type")

// ReadFile parses a whole RDB file (any version up to Version) and calls h
// for its contents, in order. The checksum (versions 5 and later) is
// verified at the end unless it is 0 (written with checksums off) or
// verify is false; a checksum error is returned after the keys were
// delivered, as Redis only finds it at the end of the file.
func ReadFile(p []byte, verify bool, h *Handler) error {
	_, err := ReadPrefix(p, verify, h)
	return err
}

// ReadPrefix is ReadFile for an RDB image at the start of p that bytes
// may follow (an AOF's RDB preamble): it returns the image's length.
func ReadPrefix(p []byte, verify bool, h *Handler) (int, error) {
	n, err := readFile(p, verify, h)
	return n, err
}

func readFile(p []byte, verify bool, h *Handler) (int, error) {
	r := reader{b: p}
	fail := func(msg string, err error) error {
		return &FileError{Off: r.off, Msg: msg, Err: err}
	}
	eof := func() error { return fail("Unexpected EOF reading RDB file", nil) }
	if len(p) < 9 || string(p[:5]) != "REDIS" {
		return r.off, fail("Wrong signature trying to load DB from file", nil)
	}
	ver, err := strconv.Atoi(string(p[5:9]))
	if err != nil || ver < 1 || ver > Version {
		return r.off, fail(fmt.Sprintf("Can't handle RDB format version %s", p[5:9]), nil)
	}
	r.off = 9
	db := 0
	rec := Record{Idle: -1, Freq: -1}
	for {
		typ, ok := r.byte()
		if !ok {
			return r.off, eof()
		}
		switch typ {
		case OpExpire:
			b, ok := r.take(4)
			if !ok {
				return r.off, eof()
			}
			rec.Expire, rec.HasExpire = int64(int32(binary.LittleEndian.Uint32(b)))*1000, true
			continue
		case OpExpireMs:
			b, ok := r.take(8)
			if !ok {
				return r.off, eof()
			}
			rec.Expire, rec.HasExpire = int64(binary.LittleEndian.Uint64(b)), true
			continue
		case OpFreq:
			c, ok := r.byte()
			if !ok {
				return r.off, eof()
			}
			rec.Freq = int(c)
			continue
		case OpIdle:
			n, enc, ok := r.length()
			if !ok || enc {
				return r.off, eof()
			}
			rec.Idle = int64(min(n, 1<<62))
			continue
		case OpEOF:
		case OpSelectDB:
			n, enc, ok := r.length()
			if !ok || enc {
				return r.off, eof()
			}
			if n > 1<<31 {
				return r.off, fail(fmt.Sprintf("Bad database number %d", n), nil)
			}
			db = int(n)
			if h.SelectDB != nil {
				if err := h.SelectDB(db); err != nil {
					return r.off, err
				}
			}
			continue
		case OpResizeDB:
			size, e1, ok1 := r.length()
			exp, e2, ok2 := r.length()
			if !ok1 || !ok2 || e1 || e2 {
				return r.off, eof()
			}
			if h.ResizeDB != nil {
				h.ResizeDB(db, size, exp)
			}
			continue
		case OpAux:
			k, err := r.bytes()
			if err != nil {
				return r.off, eof()
			}
			v, err := r.bytes()
			if err != nil {
				return r.off, eof()
			}
			if h.Aux != nil {
				h.Aux(k, v)
			}
			continue
		case OpFunction2:
			code, err := r.bytes()
			if err != nil {
				return r.off, eof()
			}
			if h.Function != nil {
				if err := h.Function(code); err != nil {
					return r.off, fail("Failed loading library, "+err.Error(), err)
				}
			}
			continue
		case OpFunction:
			return r.off, fail("RDB has functions in the format of Redis 7.0 release candidates, which Sluice does not read", ErrUnsupported)
		case OpModuleAux:
			return r.off, fail("RDB has module data (AUX), and Sluice does not support modules", ErrUnsupported)
		default:
			start := r.off - 1
			key, err := r.bytes()
			if err != nil {
				return r.off, eof()
			}
			switch typ {
			case 21:
				return r.off, &FileError{Off: start, Msg: fmt.Sprintf("key '%s' (db %d) is a stream, and Sluice does not support streams", key, db), Err: ErrUnsupported}
			case TypeModule, TypeModule2:
				return r.off, &FileError{Off: start, Msg: fmt.Sprintf("key '%s' (db %d) is a module value, and Sluice does not support modules", key, db), Err: ErrUnsupported}
			}
			v, err := r.object(typ)
			if errors.Is(err, ErrEmptyKey) {
				if h.EmptyKey != nil {
					h.EmptyKey(db, key)
				}
			} else if err != nil && r.short {
				return r.off, eof()
			} else if err != nil {
				return r.off, badValue(start, key, db, int(typ), err)
			} else if h.Key != nil {
				rec.DB, rec.Key, rec.Value, rec.End = db, key, v, int64(r.off)
				if err := h.Key(&rec); err != nil {
					return r.off, err
				}
			}
			rec = Record{Idle: -1, Freq: -1}
			continue
		}
		break // EOF
	}
	if ver >= 5 {
		want := crc64(0, p[:r.off])
		b, ok := r.take(8)
		if !ok {
			return r.off, eof()
		}
		if got := binary.LittleEndian.Uint64(b); verify && got != 0 && got != want {
			return r.off, fail(fmt.Sprintf("Wrong RDB checksum expected: (%x) but got (%x)", want, got), ErrChecksum)
		}
	}
	return r.off, nil
}

// ReadRecords parses key records (the optional expiry, LRU and LFU
// opcodes, the object type, the key and the value) from p, to its end, as
// an RDB file holds them between SELECTDB opcodes, and calls fn for each.
// Records' DB is db. Empty collections are skipped.
func ReadRecords(p []byte, db int, fn func(r *Record) error) error {
	r := reader{b: p}
	rec := Record{DB: db, Idle: -1, Freq: -1}
	for r.off < len(p) {
		start := r.off
		typ, _ := r.byte()
		switch typ {
		case OpExpireMs:
			b, ok := r.take(8)
			if !ok {
				return &FileError{Off: start, Msg: "Unexpected EOF reading RDB records"}
			}
			rec.Expire, rec.HasExpire = int64(binary.LittleEndian.Uint64(b)), true
			continue
		case OpExpire:
			b, ok := r.take(4)
			if !ok {
				return &FileError{Off: start, Msg: "Unexpected EOF reading RDB records"}
			}
			rec.Expire, rec.HasExpire = int64(int32(binary.LittleEndian.Uint32(b)))*1000, true
			continue
		case OpFreq:
			c, ok := r.byte()
			if !ok {
				return &FileError{Off: start, Msg: "Unexpected EOF reading RDB records"}
			}
			rec.Freq = int(c)
			continue
		case OpIdle:
			n, enc, ok := r.length()
			if !ok || enc {
				return &FileError{Off: start, Msg: "Unexpected EOF reading RDB records"}
			}
			rec.Idle = int64(min(n, 1<<62))
			continue
		}
		key, err := r.bytes()
		if err != nil {
			return &FileError{Off: start, Msg: "Unexpected EOF reading RDB records"}
		}
		v, err := r.object(typ)
		if err != nil && !errors.Is(err, ErrEmptyKey) {
			return badValue(start, key, db, int(typ), err)
		}
		if err == nil {
			rec.Key, rec.Value = key, v
			if err := fn(&rec); err != nil {
				return err
			}
		}
		rec = Record{DB: db, Idle: -1, Freq: -1}
	}
	return nil
}
