package persist

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/internal/sdsargs"
)

// The AOF manifest (Redis 7.0's aof.c): a text file in the AOF directory,
// <appendfilename>.manifest, one line per file:
//
//	file appendonly.aof.2.base.rdb seq 2 type b
//	file appendonly.aof.1.incr.aof seq 1 type h
//	file appendonly.aof.3.incr.aof seq 3 type i
//
// The base (b) comes first, then history (h) files waiting to be deleted,
// then the incremental (i) files in the order they were written. Names
// that need quoting are written as Redis's sdscatrepr writes them.

// File types in the manifest.
const (
	TypeBase    = 'b'
	TypeHistory = 'h'
	TypeIncr    = 'i'
)

// Naming rules.
const (
	baseSuffix      = ".base"
	incrSuffix      = ".incr"
	rdbSuffix       = ".rdb"
	aofSuffix       = ".aof"
	manifestSuffix  = ".manifest"
	tempPrefix      = "temp-"
	maxManifestLine = 1024
)

// FileInfo is one file of the manifest.
type FileInfo struct {
	Name string
	Seq  int64
	Type byte
}

// Manifest lists the files of an AOF.
type Manifest struct {
	Base    *FileInfo
	History []FileInfo
	Incr    []FileInfo
	BaseSeq int64 // the last base sequence number used
	IncrSeq int64 // the last incremental sequence number used
	Dirty   bool  // changed since last written
}

// Clone returns a deep copy of m.
func (m *Manifest) Clone() *Manifest {
	n := &Manifest{BaseSeq: m.BaseSeq, IncrSeq: m.IncrSeq, Dirty: m.Dirty}
	if m.Base != nil {
		b := *m.Base
		n.Base = &b
	}
	n.History = append([]FileInfo(nil), m.History...)
	n.Incr = append([]FileInfo(nil), m.Incr...)
	return n
}

// Empty reports whether the manifest lists no base and no incremental file.
func (m *Manifest) Empty() bool { return m.Base == nil && len(m.Incr) == 0 }

// String formats the manifest as its file holds it.
func (m *Manifest) String() string {
	var b strings.Builder
	line := func(fi FileInfo) {
		name := fi.Name
		if needsRepr(name) {
			name = sdsargs.Repr(name)
		}
		fmt.Fprintf(&b, "file %s seq %d type %c\n", name, fi.Seq, fi.Type)
	}
	if m.Base != nil {
		line(*m.Base)
	}
	for _, h := range m.History {
		line(h)
	}
	for _, i := range m.Incr {
		line(i)
	}
	return b.String()
}

// NewBase names a new base file (<filename>.<seq>.base.rdb or .aof) and
// makes the current base, if any, history.
func (m *Manifest) NewBase(filename string, rdbForm bool) string {
	if m.Base != nil {
		h := *m.Base
		h.Type = TypeHistory
		m.History = append([]FileInfo{h}, m.History...)
	}
	m.BaseSeq++
	suffix := aofSuffix
	if rdbForm {
		suffix = rdbSuffix
	}
	m.Base = &FileInfo{Name: filename + "." + strconv.FormatInt(m.BaseSeq, 10) + baseSuffix + suffix, Seq: m.BaseSeq, Type: TypeBase}
	m.Dirty = true
	return m.Base.Name
}

// NewIncr names a new incremental file (<filename>.<seq>.incr.aof) and
// appends it to the list.
func (m *Manifest) NewIncr(filename string) string {
	m.IncrSeq++
	fi := FileInfo{Name: filename + "." + strconv.FormatInt(m.IncrSeq, 10) + incrSuffix + aofSuffix, Seq: m.IncrSeq, Type: TypeIncr}
	m.Incr = append(m.Incr, fi)
	m.Dirty = true
	return fi.Name
}

// LastIncr returns the name of the last incremental file, creating one
// when there is none.
func (m *Manifest) LastIncr(filename string) (name string, created bool) {
	if len(m.Incr) == 0 {
		return m.NewIncr(filename), true
	}
	return m.Incr[len(m.Incr)-1].Name, false
}

// MarkIncrHistory makes the incremental files history, but the last one
// when keepLast is set (it is the file being written).
func (m *Manifest) MarkIncrHistory(keepLast bool) {
	n := len(m.Incr)
	if keepLast {
		n--
	}
	if n <= 0 {
		return
	}
	// Newest first, as Redis moves them (listAddNodeHead from the tail).
	for i := n - 1; i >= 0; i-- {
		h := m.Incr[i]
		h.Type = TypeHistory
		m.History = append([]FileInfo{h}, m.History...)
	}
	m.Incr = append([]FileInfo(nil), m.Incr[n:]...)
	m.Dirty = true
}

// TempIncrName is the incremental file written while AOF waits for its
// first rewrite (appendonly turned on at run time).
func TempIncrName(filename string) string { return tempPrefix + filename + incrSuffix }

// ManifestName is the manifest's file name.
func ManifestName(filename string) string { return filename + manifestSuffix }

// ManifestError is a manifest that cannot be loaded; Line and LineNum
// locate it (LineNum 0: not a line's fault).
type ManifestError struct {
	Msg     string
	Line    string
	LineNum int
	Open    bool // the file could not be opened
}

func (e *ManifestError) Error() string { return e.Msg }

// ParseManifest reads a manifest as Redis's aofLoadManifestFromFile does,
// with its error texts.
func ParseManifest(r io.Reader) (*Manifest, error) {
	m := &Manifest{}
	br := bufio.NewReader(r)
	linenum := 0
	var maxSeq int64
	for {
		raw, err := readLine(br, maxManifestLine)
		if err == io.EOF {
			if linenum == 0 {
				return nil, &ManifestError{Msg: "Found an empty AOF manifest"}
			}
			break
		}
		if err != nil && err != errLongLine {
			return nil, &ManifestError{Msg: "Read AOF manifest failed"}
		}
		linenum++
		if len(raw) > 0 && raw[0] == '#' {
			continue
		}
		if err == errLongLine {
			return nil, &ManifestError{Msg: "The AOF manifest file contains too long line", LineNum: linenum}
		}
		line := strings.Trim(raw, " \t\r\n")
		fail := func(msg string) (*Manifest, error) {
			return nil, &ManifestError{Msg: msg, Line: line, LineNum: linenum}
		}
		if line == "" {
			return fail("Invalid AOF manifest file format")
		}
		argv, ok := sdsargs.Split(line)
		if !ok || len(argv) < 6 || len(argv)%2 != 0 {
			return fail("Invalid AOF manifest file format")
		}
		var fi FileInfo
		hasName := false
		for i := 0; i < len(argv); i += 2 {
			switch strings.ToLower(argv[i]) {
			case "file":
				fi.Name, hasName = argv[i+1], true
				if strings.ContainsAny(fi.Name, "/\\") {
					return fail("File can't be a path, just a filename")
				}
			case "seq":
				fi.Seq = atoll(argv[i+1])
			case "type":
				if len(argv[i+1]) > 0 {
					fi.Type = argv[i+1][0]
				}
			}
		}
		if !hasName || fi.Name == "" || fi.Seq == 0 || fi.Type == 0 {
			return fail("Invalid AOF manifest file format")
		}
		switch fi.Type {
		case TypeBase:
			if m.Base != nil {
				return fail("Found duplicate base file information")
			}
			b := fi
			m.Base = &b
			m.BaseSeq = fi.Seq
		case TypeHistory:
			m.History = append(m.History, fi)
		case TypeIncr:
			if fi.Seq <= maxSeq {
				return fail("Found a non-monotonic sequence number")
			}
			m.Incr = append(m.Incr, fi)
			m.IncrSeq = fi.Seq
			maxSeq = fi.Seq
		default:
			return fail("Unknown AOF file type")
		}
	}
	return m, nil
}

var errLongLine = errors.New("line too long")

// readLine reads up to and including '\n', as fgets with a buffer of
// max+1 bytes: a line that does not fit is errLongLine (the rest of it is
// left to read); the last line may lack its '\n'.
func readLine(br *bufio.Reader, max int) (string, error) {
	var b []byte
	for len(b) < max {
		c, err := br.ReadByte()
		if err != nil {
			if len(b) > 0 {
				return string(b), nil
			}
			return "", err
		}
		b = append(b, c)
		if c == '\n' {
			return string(b), nil
		}
	}
	return string(b), errLongLine
}

// atoll parses a leading integer as C's atoll does (0 when none).
func atoll(s string) int64 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, _ := strconv.ParseInt(s[:end], 10, 64)
	return n
}

// LoadManifest reads dir/name. A missing directory or file is no error:
// it returns an empty manifest and exists=false.
func LoadManifest(dir, filename string) (m *Manifest, exists bool, err error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return &Manifest{}, false, nil
	}
	path := filepath.Join(dir, ManifestName(filename))
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return &Manifest{}, false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, true, &ManifestError{Msg: fmt.Sprintf("Fatal error: can't open the AOF manifest file %s for reading: %s", path, Strerror(err)), Open: true}
	}
	defer f.Close()
	m, err = ParseManifest(f)
	return m, true, err
}

// WriteManifest writes m to dir through a temporary file that is synced,
// renamed over the manifest, and the directory synced. Failures are
// returned with Redis's log texts.
func WriteManifest(dir, filename string, m *Manifest) error {
	name := ManifestName(filename)
	tmpName := tempPrefix + name
	tmp := filepath.Join(dir, tmpName)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("Can't open the AOF manifest file %s: %s", tmpName, Strerror(err))
	}
	defer f.Close()
	if _, err := f.Write([]byte(m.String())); err != nil {
		return fmt.Errorf("Error trying to write the temporary AOF manifest file %s: %s", tmpName, Strerror(err))
	}
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("Fail to fsync the temp AOF file %s: %s.", tmpName, Strerror(err))
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("Error trying to rename the temporary AOF manifest file %s into %s: %s", tmpName, name, Strerror(err))
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("Fail to fsync AOF directory %s: %s.", filepath.Join(dir, name), Strerror(err))
	}
	m.Dirty = false
	return nil
}

func isPrint(c byte) bool { return c >= 0x20 && c < 0x7f }

// needsRepr is Redis's sdsneedsrepr: quoting is needed for blanks,
// quotes, backslashes and unprintable bytes.
func needsRepr(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' || c == '"' || !isPrint(c) || c == ' ' {
			return true
		}
	}
	return false
}
