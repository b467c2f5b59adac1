package persist

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func newTestWriter(t *testing.T, policy Fsync) (*writer, *logRec, *bool) {
	t.Helper()
	log := &logRec{}
	w := &writer{}
	w.init(log)
	t.Cleanup(func() { close(w.bioStop) })
	fatal := false
	w.fatal = func() { fatal = true }
	w.policy.Store(int32(policy))
	w.setAccepting(true)
	return w, log, &fatal
}

func TestWriterCommit(t *testing.T) {
	for _, policy := range []Fsync{FsyncAlways, FsyncEverysec, FsyncNo} {
		w, _, _ := newTestWriter(t, policy)
		path := filepath.Join(t.TempDir(), "a.aof")
		f, _ := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		w.setFile(f, 0)
		if w.pending() {
			t.Fatal("pending before anything was fed")
		}
		w.feed(0, []byte(cmd("set", "a", "1")))
		w.feed(0, []byte(cmd("set", "b", "2")))
		w.feed(3, []byte(cmd("incr", "n")))
		if !w.pending() {
			t.Fatal("nothing pending after feeding")
		}
		w.commit(false)
		if w.pending() {
			t.Fatalf("policy %d: still pending after a commit", policy)
		}
		want := cmd("SELECT", "0") + cmd("set", "a", "1") + cmd("set", "b", "2") + cmd("SELECT", "3") + cmd("incr", "n")
		if b, _ := os.ReadFile(path); string(b) != want {
			t.Errorf("policy %d: file %q, want %q", policy, b, want)
		}
		if w.curSize.Load() != int64(len(want)) {
			t.Errorf("aof_current_size %d, want %d", w.curSize.Load(), len(want))
		}
		w.stop()
	}
}

func TestWriterTimestamps(t *testing.T) {
	w, _, _ := newTestWriter(t, FsyncNo)
	path := filepath.Join(t.TempDir(), "a.aof")
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	w.setFile(f, 0)
	w.timestamps.Store(true)
	w.feed(0, []byte(cmd("set", "a", "1")))
	w.feed(0, []byte(cmd("set", "b", "1")))
	w.commit(true)
	b, _ := os.ReadFile(path)
	if !bytes.HasPrefix(b, []byte("#TS:")) || bytes.Count(b, []byte("#TS:")) != 1 {
		t.Errorf("annotations: %q", b)
	}
	w.stop()
}

// The cut at a rewrite's start: what was fed before goes to the old file,
// what comes after to the new one, which starts with a SELECT.
func TestWriterSwitch(t *testing.T) {
	w, _, _ := newTestWriter(t, FsyncEverysec)
	dir := t.TempDir()
	f1, _ := os.OpenFile(filepath.Join(dir, "1"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	w.setFile(f1, 0)
	w.feed(2, []byte(cmd("set", "a", "1")))
	f2, _ := os.OpenFile(filepath.Join(dir, "2"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	w.switchAt(f2)
	w.feed(2, []byte(cmd("set", "b", "2")))
	w.commit(true)
	w.stop()
	deadline := time.Now().Add(5 * time.Second)
	for w.bioPending.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b1, _ := os.ReadFile(filepath.Join(dir, "1"))
	b2, _ := os.ReadFile(filepath.Join(dir, "2"))
	if string(b1) != cmd("SELECT", "2")+cmd("set", "a", "1") || string(b2) != cmd("SELECT", "2")+cmd("set", "b", "2") {
		t.Errorf("old %q new %q", b1, b2)
	}
}

// A full disk: under everysec the data stays buffered, the error is
// reported (MISCONF) and the write is retried; under always the server
// must stop, before the replies go out.
func TestWriterDiskFull(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	w, log, fatal := newTestWriter(t, FsyncEverysec)
	w.setFile(full, 0)
	w.feed(0, []byte(cmd("set", "a", "1")))
	w.commit(false)
	if w.writeErrno.Load() != int32(syscall.ENOSPC) || !w.pending() || !log.has("Error writing to the AOF file: No space left on device") {
		t.Fatalf("errno %d pending %v log %q", w.writeErrno.Load(), w.pending(), log.lines)
	}
	if *fatal {
		t.Fatal("everysec must not stop the server")
	}
	// Room again: the buffered data goes out and the error clears.
	path := filepath.Join(t.TempDir(), "a.aof")
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	w.wmu.Lock()
	w.f = f
	w.wmu.Unlock()
	w.commit(false)
	if w.writeErrno.Load() != 0 || w.pending() || !log.has("AOF write error looks solved, Redis can write again.") {
		t.Fatalf("after room: errno %d pending %v log %q", w.writeErrno.Load(), w.pending(), log.lines)
	}
	if b, _ := os.ReadFile(path); string(b) != cmd("SELECT", "0")+cmd("set", "a", "1") {
		t.Errorf("recovered file %q", b)
	}

	w2, log2, fatal2 := newTestWriter(t, FsyncAlways)
	full2, _ := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	w2.setFile(full2, 0)
	w2.feed(0, []byte(cmd("set", "a", "1")))
	w2.commit(false)
	if !*fatal2 || !log2.has("Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...") {
		t.Errorf("always on a full disk: fatal %v log %q", *fatal2, log2.lines)
	}
}

func TestChild(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	c, err := StartChild(func(pid int) string { return fmt.Sprintf("temp-%d.rdb", pid) }, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != fmt.Sprintf("temp-%d.rdb", c.Pid) {
		t.Errorf("path %q", c.Path)
	}
	data := strings.Repeat("0123456789", 500000)
	c.Write([]byte(data[:1000]))
	c.Write([]byte(data[1000:]))
	if ex := c.Finish(); ex.Code != 0 || ex.Signal != 0 {
		t.Fatalf("exit %+v", ex)
	}
	if b, _ := os.ReadFile(c.Path); string(b) != data {
		t.Errorf("file has %d bytes, want %d", len(b), len(data))
	}

	// Killed: no file left.
	c, _ = StartChild(func(pid int) string { return fmt.Sprintf("temp-%d.rdb", pid) }, false)
	c.Write([]byte("partial"))
	c.bw.Flush()
	if ex := c.Kill(); ex.Signal != int(syscall.SIGKILL) {
		t.Errorf("kill: %+v", ex)
	}
	if _, err := os.Stat(c.Path); !os.IsNotExist(err) {
		t.Errorf("a killed child's file is still there: %v", err)
	}

	// The parent's stream ends early (the parent died): the child removes
	// its file and fails.
	c, _ = StartChild(func(pid int) string { return fmt.Sprintf("temp-%d.rdb", pid) }, false)
	c.Write([]byte("partial"))
	c.bw.Flush()
	c.pipe.Close()
	if ex := c.Wait(); ex.Code != 1 {
		t.Errorf("early end: %+v", ex)
	}
	if _, err := os.Stat(c.Path); !os.IsNotExist(err) {
		t.Errorf("a half-written file is still there: %v", err)
	}
}

// everysec on a slow disk: while a background fsync runs, the write is
// postponed, for up to 2 seconds; then it goes anyway and counts in
// aof_delayed_fsync (Redis's flushAppendOnlyFile).
func TestWriterPostponesWhileFsyncing(t *testing.T) {
	w, log, _ := newTestWriter(t, FsyncEverysec)
	path := filepath.Join(t.TempDir(), "a.aof")
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	w.setFile(f, 0)
	w.bioPending.Add(1) // a background fsync that does not end
	defer w.bioPending.Add(-1)
	w.feed(0, []byte(cmd("set", "a", "1")))
	w.commit(false)
	if b, _ := os.ReadFile(path); len(b) != 0 || !w.pending() {
		t.Fatalf("written while an fsync runs: %q", b)
	}
	w.commit(false) // still under 2 s
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Fatalf("written before 2 s: %q", b)
	}
	w.wmu.Lock()
	w.postponed -= 3 // three seconds ago
	w.wmu.Unlock()
	w.commit(false)
	if b, _ := os.ReadFile(path); string(b) != cmd("SELECT", "0")+cmd("set", "a", "1") {
		t.Fatalf("not written after 2 s: %q", b)
	}
	if w.delayed.Load() != 1 || !log.has("Asynchronous AOF fsync is taking too long (disk is busy?)") {
		t.Errorf("aof_delayed_fsync %d, log %q", w.delayed.Load(), log.lines)
	}
	// A forced write (a rewrite's cut, shutdown) does not wait.
	w.feed(0, []byte(cmd("set", "b", "2")))
	w.commit(true)
	if w.pending() {
		t.Error("a forced commit left data pending")
	}
}
