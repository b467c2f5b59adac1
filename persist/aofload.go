package persist

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Replaying the AOF at start-up (and for DEBUG LOADAOF), as Redis 7.0's
// loadAppendOnlyFiles and loadSingleAppendOnlyFile do: the base file
// (RDB or commands), then every incremental file, command by command.

// Replayer is what replaying needs from the server.
type Replayer interface {
	// LoadRDB loads the RDB image at the start of p (a base in RDB form,
	// or an old AOF's preamble) and returns its length.
	LoadRDB(p []byte) (int, error)
	// Known reports whether args names a command.
	Known(args [][]byte) bool
	// Exec runs a command as the AOF client (no reply, never blocks).
	Exec(args [][]byte)
	// Progress reports n more bytes read (INFO loading fields).
	Progress(n int64)
}

// Logger writes the server's log lines.
type Logger interface {
	Logf(format string, args ...any)  // notice
	Warnf(format string, args ...any) // warning
}

// Load results, as Redis's AOF_* codes.
type LoadStatus int

const (
	LoadOK LoadStatus = iota
	LoadNotExist
	LoadEmpty
	LoadOpenErr
	LoadFailed
	LoadTruncated
)

// annotationLineMax is Redis's AOF_ANNOTATION_LINE_MAX_LEN: the buffer
// that command header lines are read with.
const annotationLineMax = 1024

// LoadOptions tune a replay.
type LoadOptions struct {
	Dir           string // the AOF directory
	Filename      string // appendfilename (an old-style AOF has this name)
	LoadTruncated bool   // aof-load-truncated
}

// LoadFile replays one AOF file from the AOF directory.
func LoadFile(opt LoadOptions, name string, rp Replayer, log Logger) LoadStatus {
	path := filepath.Join(opt.Dir, name)
	f, err := os.Open(path)
	if err != nil {
		if _, serr := os.Stat(path); serr == nil || !errors.Is(serr, os.ErrNotExist) {
			log.Warnf("Fatal error: can't open the append log file %s for reading: %s", name, Strerror(err))
			return LoadOpenErr
		}
		log.Warnf("The append log file %s doesn't exist: %s", name, Strerror(err))
		return LoadNotExist
	}
	defer f.Close()
	st, err := f.Stat()
	if err == nil && st.Size() == 0 {
		return LoadEmpty
	}
	size := int64(-1)
	if err == nil {
		size = st.Size()
	}
	var sig [5]byte
	n, _ := io.ReadFull(f, sig[:])
	var src io.Reader = f
	var off int64
	if n == 5 && string(sig[:]) == "REDIS" {
		oldStyle := name == opt.Filename
		if oldStyle {
			log.Logf("Reading RDB preamble from AOF file...")
		} else {
			log.Logf("Reading RDB base file on AOF loading...")
		}
		p, err := os.ReadFile(path)
		if err != nil {
			log.Warnf("Unrecoverable error reading the append only file %s: %s", name, Strerror(err))
			return LoadFailed
		}
		used, err := rp.LoadRDB(p)
		if err != nil {
			if oldStyle {
				log.Warnf("Error reading the RDB preamble of the AOF file %s, AOF loading aborted", name)
			} else {
				log.Warnf("Error reading the RDB base file %s, AOF loading aborted", name)
			}
			return LoadFailed
		}
		rp.Progress(int64(used))
		if oldStyle {
			log.Logf("Reading the remaining AOF tail...")
		}
		src = bytes.NewReader(p[used:])
		off = int64(used)
		size = int64(len(p))
	} else if _, err := f.Seek(0, io.SeekStart); err != nil {
		log.Warnf("Unrecoverable error reading the append only file %s: %s", name, Strerror(err))
		return LoadFailed
	}
	r := &aofReader{br: bufio.NewReaderSize(src, 64*1024), off: off, size: size}
	return replayCommands(r, opt, name, path, rp, log)
}

// aofReader reads an AOF's commands, keeping the offset.
type aofReader struct {
	br    *bufio.Reader
	off   int64
	size  int64 // file size, -1 if unknown
	eof   bool  // a read stopped at the end of the file
	ioErr error // a read failed for another reason
}

// line reads like fgets with a buffer of annotationLineMax bytes: up to
// and including '\n', or annotationLineMax-1 bytes. ok is false when
// nothing could be read.
func (r *aofReader) line(buf []byte) ([]byte, bool) {
	buf = buf[:0]
	for len(buf) < annotationLineMax-1 {
		c, err := r.br.ReadByte()
		if err != nil {
			r.setErr(err)
			return buf, len(buf) > 0
		}
		r.off++
		buf = append(buf, c)
		if c == '\n' {
			break
		}
	}
	return buf, true
}

// full reads exactly len(p) bytes.
func (r *aofReader) full(p []byte) bool {
	n, err := io.ReadFull(r.br, p)
	r.off += int64(n)
	if err != nil {
		r.setErr(err)
		return false
	}
	return true
}

func (r *aofReader) setErr(err error) {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		r.eof = true
	} else {
		r.ioErr = err
	}
}

// cAtoi parses a leading integer as C's atoi/strtol do.
func cAtoi(b []byte) int64 {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	var n int64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if n > (1<<62)/10 {
			n = 1 << 62 // saturate
			continue
		}
		n = n*10 + int64(b[i]-'0')
	}
	if neg {
		return -n
	}
	return n
}

func replayCommands(r *aofReader, opt LoadOptions, name, path string, rp Replayer, log Logger) LoadStatus {
	var (
		validUpTo        int64
		validBeforeMulti int64
		inMulti          bool
		queue            [][][]byte
		loops            int64
		reported         = r.off
		lineBuf          = make([]byte, 0, annotationLineMax)
	)
	readErr := func() LoadStatus {
		if !r.eof {
			log.Warnf("Unrecoverable error reading the append only file %s: %s", name, Strerror(r.ioErr))
			return LoadFailed
		}
		return unexpectedEOF(opt, name, path, validUpTo, log)
	}
	fmtErr := func() LoadStatus {
		log.Warnf("Bad file format reading the append only file %s: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>", name)
		return LoadFailed
	}
	for {
		if loops%1024 == 0 {
			rp.Progress(r.off - reported)
			reported = r.off
		}
		loops++
		line, ok := r.line(lineBuf)
		if !ok {
			if r.eof {
				break
			}
			return readErr()
		}
		if line[0] == '#' {
			continue // annotation
		}
		if line[0] != '*' {
			return fmtErr()
		}
		if len(line) == 1 {
			return readErr()
		}
		argc := cAtoi(line[1:])
		if argc < 1 || argc > 1<<31 {
			return fmtErr()
		}
		args := make([][]byte, 0, min(argc, 1024))
		for j := int64(0); j < argc; j++ {
			l, ok := r.line(lineBuf)
			if !ok {
				return readErr()
			}
			if l[0] != '$' {
				return fmtErr()
			}
			n := cAtoi(l[1:])
			if n < 0 {
				return fmtErr()
			}
			if r.size >= 0 && n > r.size-r.off {
				// Longer than what is left: a short read at the end.
				r.eof = true
				return readErr()
			}
			arg := make([]byte, n)
			if n > 0 && !r.full(arg) {
				return readErr()
			}
			var crlf [2]byte
			if !r.full(crlf[:]) {
				return readErr()
			}
			args = append(args, arg)
		}
		if !rp.Known(args) {
			log.Warnf("Unknown command '%s' reading the append only file %s", cstr(args[0]), name)
			return LoadFailed
		}
		switch {
		case eqFold(args[0], "multi"):
			validBeforeMulti = validUpTo
			inMulti = true
		case eqFold(args[0], "exec") && inMulti:
			for _, q := range queue {
				rp.Exec(q)
			}
			queue, inMulti = queue[:0], false
		case eqFold(args[0], "discard") && inMulti:
			queue, inMulti = queue[:0], false
		case inMulti:
			queue = append(queue, args)
		case eqFold(args[0], "exec"), eqFold(args[0], "discard"):
			// Outside a transaction: an error reply nobody reads.
		default:
			rp.Exec(args)
		}
		if opt.LoadTruncated {
			validUpTo = r.off
		}
	}
	if inMulti {
		log.Warnf("Revert incomplete MULTI/EXEC transaction in AOF file %s", name)
		validUpTo = validBeforeMulti
		return unexpectedEOF(opt, name, path, validUpTo, log)
	}
	rp.Progress(r.off - reported)
	return LoadOK
}

func unexpectedEOF(opt LoadOptions, name, path string, validUpTo int64, log Logger) LoadStatus {
	if opt.LoadTruncated {
		log.Warnf("!!! Warning: short read while loading the AOF file %s!!!", name)
		log.Warnf("!!! Truncating the AOF %s at offset %d !!!", name, validUpTo)
		if err := os.Truncate(path, validUpTo); err != nil {
			log.Warnf("Error truncating the AOF file %s: %s", name, Strerror(err))
		} else {
			log.Warnf("AOF %s loaded anyway because aof-load-truncated is enabled", name)
			return LoadTruncated
		}
	}
	log.Warnf("Unexpected end of file reading the append only file %s. You can: "+
		"1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. "+
		"2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server.", name)
	return LoadFailed
}

func eqFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// cstr is b up to its first NUL, as %s prints it.
func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// LoadResult is what LoadAll found.
type LoadResult struct {
	Status    LoadStatus
	TotalSize int64 // bytes of the base and incremental files
	BaseSize  int64
}

// UpgradeIfNeeded moves an old-style AOF (dir/appendfilename, Redis before
// 7.0) into the AOF directory as the base of a new manifest, when Redis's
// loadAppendOnlyFiles would: the directory is missing, or has no manifest,
// or the manifest only names that file and it is not there yet.
func UpgradeIfNeeded(aofDir, filename string, m *Manifest, log Logger) error {
	if !fileExists(filename) {
		return nil
	}
	if !(!dirExists(aofDir) || m.Empty() ||
		(m.Base != nil && len(m.Incr) == 0 && m.Base.Name == filename && !fileExists(filepath.Join(aofDir, filename)))) {
		return nil
	}
	if err := dirCreateIfMissing(aofDir); err != nil {
		return fmt.Errorf("Can't open or create append-only dir %s: %s", aofDir, Strerror(err))
	}
	m.Base = &FileInfo{Name: filename, Seq: 1, Type: TypeBase}
	m.BaseSeq = 1
	m.Dirty = true
	if err := WriteManifest(aofDir, filename, m); err != nil {
		return err
	}
	if err := os.Rename(filename, filepath.Join(aofDir, filename)); err != nil {
		return fmt.Errorf("Error trying to move the old AOF file %s into dir %s: %s", filename, aofDir, Strerror(err))
	}
	log.Logf("Successfully migrated an old-style AOF file (%s) into the AOF directory (%s).", filename, aofDir)
	return nil
}

// FileSizes returns the total size of the base and incremental files and
// the base's. A file missing on disk is LoadNotExist (other stat errors
// LoadOpenErr), logged as Redis logs it.
func FileSizes(aofDir string, m *Manifest, log Logger) (total, base int64, st LoadStatus) {
	size := func(name string) (int64, LoadStatus) {
		fi, err := os.Stat(filepath.Join(aofDir, name))
		if err != nil {
			log.Warnf("Unable to obtain the AOF file %s length. stat: %s", name, Strerror(err))
			if errors.Is(err, os.ErrNotExist) {
				return 0, LoadNotExist
			}
			return 0, LoadOpenErr
		}
		return fi.Size(), LoadOK
	}
	if m.Base != nil {
		n, st := size(m.Base.Name)
		if st != LoadOK {
			return 0, 0, st
		}
		total, base = n, n
	}
	for _, fi := range m.Incr {
		n, st := size(fi.Name)
		if st != LoadOK {
			return 0, 0, st
		}
		total += n
	}
	return total, base, LoadOK
}

// LoadAll replays the files m lists, the base first. begin is called with
// the total size before the first byte is replayed.
func LoadAll(opt LoadOptions, m *Manifest, rp Replayer, log Logger, begin func(total int64)) LoadResult {
	if m.Empty() {
		return LoadResult{Status: LoadNotExist}
	}
	total, base, st := FileSizes(opt.Dir, m, log)
	if st != LoadOK {
		if st == LoadNotExist {
			st = LoadFailed
		}
		return LoadResult{Status: st}
	}
	if total == 0 {
		return LoadResult{Status: LoadEmpty}
	}
	if begin != nil {
		begin(total)
	}
	count := len(m.Incr)
	if m.Base != nil {
		count++
	}
	num := 0
	var ret LoadStatus
	loadOne := func(name string, what string, isIncr bool) bool {
		num++
		last := num == count
		start := time.Now()
		ret = LoadFile(opt, name, rp, log)
		if ret == LoadOK || ret == LoadTruncated && last {
			log.Logf("DB loaded from %s file %s: %.3f seconds", what, name, time.Since(start).Seconds())
		}
		if isIncr && ret == LoadEmpty {
			ret = LoadOK
		}
		if ret == LoadTruncated && !last {
			ret = LoadFailed
			log.Warnf("Fatal error: the truncated file is not the last file")
		}
		return ret != LoadOpenErr && ret != LoadFailed
	}
	if m.Base != nil && !loadOne(m.Base.Name, "base", false) {
		return LoadResult{Status: ret}
	}
	for _, fi := range m.Incr {
		if !loadOne(fi.Name, "incr", true) {
			return LoadResult{Status: ret}
		}
	}
	return LoadResult{Status: ret, TotalSize: total, BaseSize: base}
}
