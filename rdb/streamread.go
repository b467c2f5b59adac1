package rdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ReadStream is ReadFile for an RDB read as it arrives (a replica loading
// its master's payload from the socket): each item is handed to h as soon
// as its bytes are in, so loading goes on while the payload is received
// and the whole file is never held. The slices a Record carries are valid
// only during the call. Offsets in errors count from the stream's start.
func ReadStream(src io.Reader, verify bool, h *Handler) error {
	s := &streamReader{src: src, buf: make([]byte, 0, 64*1024)}
	return s.read(verify, h)
}

type streamReader struct {
	src  io.Reader
	buf  []byte
	pos  int   // start of the item being parsed in buf
	base int64 // stream offset of buf[0]
	crc  uint64
	eof  bool
	err  error
}

// more reads at least as many bytes as the pending item holds already
// (so a big value is parsed again a logarithmic number of times), and at
// least one read's worth.
func (s *streamReader) more() bool {
	if s.eof {
		return false
	}
	pending := len(s.buf) - s.pos
	if s.pos > 0 {
		// Drop what was parsed; it is in the CRC already.
		n := copy(s.buf, s.buf[s.pos:])
		s.base += int64(s.pos)
		s.buf, s.pos = s.buf[:n], 0
	}
	want := max(pending, 32*1024)
	if cap(s.buf)-len(s.buf) < want {
		nb := make([]byte, len(s.buf), len(s.buf)+want+32*1024)
		copy(nb, s.buf)
		s.buf = nb
	}
	got := 0
	for got < want {
		n, err := s.src.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		got += n
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.err = err
			}
			return got > 0
		}
		if n > 0 && got >= pending {
			break
		}
	}
	return true
}

// item parses one item with fn on the bytes from pos on, reading more
// while fn runs out of them. fn reports short when it did. On success the
// item's bytes are consumed (and counted in the CRC).
func (s *streamReader) item(fn func(r *reader) (short bool, err error)) error {
	for {
		r := reader{b: s.buf[s.pos:]}
		short, err := fn(&r)
		if !short {
			s.crc = crc64(s.crc, s.buf[s.pos:s.pos+r.off])
			s.pos += r.off
			return err
		}
		if !s.more() {
			return s.eofErr()
		}
	}
}

// shortOr is what a failed read means: more bytes are needed, or (past
// the end of what can come) the stream is cut.
func (s *streamReader) shortOr(r *reader) (bool, error) {
	if r.short {
		return true, nil
	}
	return false, s.eofErr()
}

func (s *streamReader) offset() int { return int(s.base) + s.pos }

func (s *streamReader) eofErr() error {
	if s.err != nil {
		return s.err
	}
	return &FileError{Off: s.offset(), Msg: "Unexpected EOF reading RDB file"}
}

func (s *streamReader) read(verify bool, h *Handler) error {
	var ver int
	err := s.item(func(r *reader) (bool, error) {
		p, ok := r.take(9)
		if !ok {
			return true, nil
		}
		if string(p[:5]) != "REDIS" {
			return false, &FileError{Msg: "Wrong signature trying to load DB from file"}
		}
		v, err := strconv.Atoi(string(p[5:9]))
		if err != nil || v < 1 || v > Version {
			return false, &FileError{Msg: fmt.Sprintf("Can't handle RDB format version %s", p[5:9])}
		}
		ver = v
		return false, nil
	})
	if err != nil {
		return err
	}
	db := 0
	rec := Record{Idle: -1, Freq: -1}
	for {
		var typ byte
		done := false
		var keyErr error
		err := s.item(func(r *reader) (bool, error) {
			t, ok := r.byte()
			if !ok {
				return true, nil
			}
			typ = t
			switch t {
			case OpExpire:
				b, ok := r.take(4)
				if !ok {
					return true, nil
				}
				rec.Expire, rec.HasExpire = int64(int32(binary.LittleEndian.Uint32(b)))*1000, true
			case OpExpireMs:
				b, ok := r.take(8)
				if !ok {
					return true, nil
				}
				rec.Expire, rec.HasExpire = int64(binary.LittleEndian.Uint64(b)), true
			case OpFreq:
				c, ok := r.byte()
				if !ok {
					return true, nil
				}
				rec.Freq = int(c)
			case OpIdle:
				n, enc, ok := r.length()
				if !ok {
					return true, nil
				}
				if enc {
					return false, &FileError{Off: s.offset(), Msg: "Unexpected EOF reading RDB file"}
				}
				rec.Idle = int64(min(n, 1<<62))
			case OpEOF:
				done = true
			case OpSelectDB:
				n, enc, ok := r.length()
				if !ok {
					return true, nil
				}
				if enc {
					return false, &FileError{Off: s.offset(), Msg: "Unexpected EOF reading RDB file"}
				}
				if n > 1<<31 {
					return false, &FileError{Off: s.offset(), Msg: fmt.Sprintf("Bad database number %d", n)}
				}
				db = int(n)
				if h.SelectDB != nil {
					return false, h.SelectDB(db)
				}
			case OpResizeDB:
				size, e1, ok1 := r.length()
				exp, e2, ok2 := r.length()
				if !ok1 || !ok2 {
					return true, nil
				}
				if e1 || e2 {
					return false, &FileError{Off: s.offset(), Msg: "Unexpected EOF reading RDB file"}
				}
				if h.ResizeDB != nil {
					h.ResizeDB(db, size, exp)
				}
			case OpAux:
				k, err := r.bytes()
				if err != nil {
					return s.shortOr(r)
				}
				v, err := r.bytes()
				if err != nil {
					return s.shortOr(r)
				}
				if h.Aux != nil {
					h.Aux(k, v)
				}
			case OpFunction2:
				code, err := r.bytes()
				if err != nil {
					return s.shortOr(r)
				}
				if h.Function != nil {
					if err := h.Function(code); err != nil {
						return false, &FileError{Off: s.offset(), Msg: "Failed loading library, " + err.Error(), Err: err}
					}
				}
			case OpFunction:
				return false, &FileError{Off: s.offset(), Msg: "RDB has functions in the format of Redis 7.0 release candidates, which Sluice does not read", Err: ErrUnsupported}
			case OpModuleAux:
				return false, &FileError{Off: s.offset(), Msg: "RDB has module data (AUX), and Sluice does not support modules", Err: ErrUnsupported}
			default:
				key, err := r.bytes()
				if err != nil {
					return s.shortOr(r)
				}
				switch t {
				case 21:
					return false, &FileError{Off: s.offset(), Msg: fmt.Sprintf("key '%s' (db %d) is a stream, and Sluice does not support streams", key, db), Err: ErrUnsupported}
				case TypeModule, TypeModule2:
					return false, &FileError{Off: s.offset(), Msg: fmt.Sprintf("key '%s' (db %d) is a module value, and Sluice does not support modules", key, db), Err: ErrUnsupported}
				}
				v, err := r.object(t)
				switch {
				case errors.Is(err, ErrEmptyKey):
					if h.EmptyKey != nil {
						h.EmptyKey(db, key)
					}
				case err != nil && r.short:
					return true, nil
				case err != nil:
					return false, badValue(s.offset(), key, db, int(t), err)
				case h.Key != nil:
					rec.DB, rec.Key, rec.Value = db, key, v
					keyErr = h.Key(&rec)
				}
			}
			return false, nil
		})
		if err != nil {
			return err
		}
		if keyErr != nil {
			return keyErr
		}
		if done {
			break
		}
		switch typ {
		case OpExpire, OpExpireMs, OpFreq, OpIdle:
		default:
			rec = Record{Idle: -1, Freq: -1}
		}
	}
	if ver < 5 {
		return nil
	}
	want := s.crc
	var got uint64
	err = s.item(func(r *reader) (bool, error) {
		b, ok := r.take(8)
		if !ok {
			return true, nil
		}
		got = binary.LittleEndian.Uint64(b)
		return false, nil
	})
	if err != nil {
		return err
	}
	if verify && got != 0 && got != want {
		return &FileError{Off: s.offset(), Msg: fmt.Sprintf("Wrong RDB checksum expected: (%x) but got (%x)", want, got), Err: ErrChecksum}
	}
	return nil
}
