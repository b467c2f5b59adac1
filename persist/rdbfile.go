package persist

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/rdb"
)

// RDB files as Redis 7.0's rdbSaveRio writes them: the signature, AUX
// fields, function libraries, each database's SELECTDB and RESIZEDB and
// its key records, EOF and the CRC-64 of everything before it.

// ErrAborted is a save stopped on purpose (FLUSHALL, SHUTDOWN, a killed
// child); it leaves no file behind.
var ErrAborted = errors.New("save aborted")

// RDBOptions tune how an image is written.
type RDBOptions struct {
	Version  string // the redis-ver AUX field
	AOFBase  bool   // the aof-base AUX field: written as an AOF's base
	Checksum bool   // rdbchecksum
	// Repl, when set, adds the replication AUX fields (else the image's
	// own, if it has them).
	Repl *ReplAux
	// KeyDelay is rdb-key-save-delay (tests), read as the save goes.
	KeyDelay func() time.Duration
	// Cancel, when closed, aborts the save with ErrAborted.
	Cancel <-chan struct{}
	// Progress counts the keys written (current_save_keys_processed).
	Progress *atomic.Int64

	owed time.Duration // rdb-key-save-delay not slept yet
}

// ReplAux are the replication AUX fields of a full sync's RDB.
type ReplAux struct {
	StreamDB int
	ID       string
	Offset   int64
}

// crcWriter writes through a buffer and keeps the running CRC-64.
type crcWriter struct {
	w   *bufio.Writer
	crc uint64
}

// write checksums and writes p in pieces: each is written right after
// the checksum read it, while it is still in the CPU's cache, where a big
// value checksummed whole had left it for memory before the write's copy
// read it again (that copy into the page cache was 29% of a SAVE's
// samples, 2% in pieces).
func (w *crcWriter) write(p []byte) error {
	for len(p) > 0 {
		n := min(len(p), crcPiece)
		w.crc = rdb.CRC64(w.crc, p[:n])
		if _, err := w.w.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// crcPiece is the size of write's pieces.
const crcPiece = 64 << 10

// RDBHeader returns the signature and AUX fields for meta.
func RDBHeader(meta ImageMeta, o *RDBOptions) []byte {
	b := rdb.AppendHeader(nil)
	b = rdb.AppendAux(b, "redis-ver", o.Version)
	b = rdb.AppendAuxInt(b, "redis-bits", 64)
	b = rdb.AppendAuxInt(b, "ctime", meta.CTime)
	b = rdb.AppendAuxInt(b, "used-mem", int64(meta.UsedMem))
	rp := o.Repl
	if rp == nil {
		rp = meta.Repl
	}
	if rp != nil {
		b = rdb.AppendAuxInt(b, "repl-stream-db", int64(rp.StreamDB))
		b = rdb.AppendAux(b, "repl-id", rp.ID)
		b = rdb.AppendAuxInt(b, "repl-offset", rp.Offset)
	}
	aofBase := int64(0)
	if o.AOFBase {
		aofBase = 1
	}
	b = rdb.AppendAuxInt(b, "aof-base", aofBase)
	for _, code := range meta.Functions {
		b = rdb.AppendFunction(b, code)
	}
	return b
}

// WriteRDB writes img to w as an RDB file.
func WriteRDB(w io.Writer, img Image, o RDBOptions) error {
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriterSize(w, 1<<20)
	}
	cw := &crcWriter{w: bw}
	if err := cw.write(RDBHeader(img.Meta(), &o)); err != nil {
		return err
	}
	var sel []byte
	cur := -1
	err := img.Each(func(db int, size, expires uint64, chunk []byte, keys int) error {
		if err := o.checkCancel(); err != nil {
			return err
		}
		if db != cur {
			cur = db
			sel = rdb.AppendSelectDB(sel[:0], db, size, expires)
			if err := cw.write(sel); err != nil {
				return err
			}
		}
		if err := cw.write(chunk); err != nil {
			return err
		}
		return o.keysDone(keys)
	})
	if err != nil {
		return err
	}
	if err := cw.write([]byte{rdb.OpEOF}); err != nil {
		return err
	}
	crc := cw.crc
	if !o.Checksum {
		crc = 0
	}
	if _, err := bw.Write(binary.LittleEndian.AppendUint64(nil, crc)); err != nil {
		return err
	}
	return bw.Flush()
}

func (o *RDBOptions) checkCancel() error {
	if o.Cancel == nil {
		return nil
	}
	select {
	case <-o.Cancel:
		return ErrAborted
	default:
		return nil
	}
}

// keysDone counts keys written, sleeping rdb-key-save-delay for each.
// Sleeps shorter than the timer's resolution would take longer than
// asked, so the delay is owed and slept in pieces of 2 ms to 100 ms (a
// change of the delay, or a cancel, is seen between them).
func (o *RDBOptions) keysDone(keys int) error {
	if o.KeyDelay != nil {
		if d := o.KeyDelay(); d > 0 {
			o.owed += d * time.Duration(keys)
		}
		for o.owed >= 2*time.Millisecond {
			t := time.Now()
			if !sleepOrCancel(min(o.owed, 100*time.Millisecond), o.Cancel) {
				return ErrAborted
			}
			o.owed -= time.Since(t)
			if o.KeyDelay() <= 0 {
				o.owed = 0
			}
		}
	}
	if o.Progress != nil {
		o.Progress.Add(int64(keys))
	}
	return nil
}

func sleepOrCancel(d time.Duration, cancel <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-cancel:
		return false
	}
}

// EncodeRDB returns img as an RDB file's bytes (a full sync's payload).
func EncodeRDB(img Image, o RDBOptions) []byte {
	var buf bytesWriter
	WriteRDB(&buf, img, o)
	return buf.b
}

type bytesWriter struct{ b []byte }

func (w *bytesWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func ms(n int64) []byte { return strconv.AppendInt(nil, n, 10) }
