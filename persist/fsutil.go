package persist

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// Strerror formats err as C's strerror does for the errno inside it ("No
// space left on device"), which Redis's log lines and replies carry.
func Strerror(err error) string {
	if err == nil {
		return ""
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		err = errno
	} else {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
	}
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// SyncDir fsyncs a directory, so that files created or renamed in it
// survive a crash. Systems that cannot open a directory are not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		if errors.Is(err, syscall.EISDIR) {
			return nil
		}
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// fdatasync flushes a file's data (and the metadata needed to read it) to
// the disk, as Redis's redis_fsync does on Linux.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// dirCreateIfMissing creates dir unless it exists as a directory.
func dirCreateIfMissing(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		if !errors.Is(err, os.ErrExist) {
			return err
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return syscall.ENOTDIR
		}
	}
	return nil
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

func dirExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
