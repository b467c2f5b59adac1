package persist

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// Background saves (BGSAVE, BGREWRITEAOF) write their file through a child
// process, as Redis's forked children do: the server streams the image to
// it over a pipe, and the child writes it to its temporary file
// (temp-<pid>.rdb, temp-rewriteaof-bg-<pid>.aof) and fsyncs it. There is
// no fork: the child is this same executable started again, and the
// image is a snapshot the server took without one. What operators and
// tools see is Redis's: a child to find with pgrep -P, to kill (the save
// then fails as Redis's does, and no file is left), total_forks counting
// them, and the file only whole on disk once the child exits with 0.
//
// The stream is framed (a 4-byte length before each piece, 0 at the end)
// so a child whose parent dies mid-way never leaves a file that looks
// complete.

// childEnv marks a process started as a save child ("-": it writes the
// file named on fd 3) or as a relay ("relay", StartRelay).
const childEnv = "SLUICE_PERSIST_CHILD"

// relayMode is childEnv's value for a relay child.
const relayMode = "relay"

// childSyncEnv asks the child to fsync every 4 MB as it writes
// (rdb-save-incremental-fsync, aof-rewrite-incremental-fsync).
const childSyncEnv = "SLUICE_PERSIST_CHILD_SYNC"

// autosyncBytes is Redis's REDIS_AUTOSYNC_BYTES.
const autosyncBytes = 4 << 20

func init() {
	switch os.Getenv(childEnv) {
	case "":
		return
	case relayMode:
		os.Exit(runRelay(os.Stdin, os.Stdout))
	}
	path, err := childPath()
	if err != nil {
		os.Exit(1)
	}
	os.Exit(runChild(path, os.Getenv(childSyncEnv) == "1", os.Stdin))
}

// runChild is the child's whole life: read frames, write the file, fsync.
func runChild(path string, incrSync bool, in io.Reader) int {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s\n", Strerror(err))
		return 1
	}
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "%s\n", Strerror(err))
		f.Close()
		os.Remove(path)
		return 1
	}
	fr := frameReader{br: bufio.NewReaderSize(in, 1<<20)}
	bw := bufio.NewWriterSize(f, 1<<20)
	sinceSync := 0
	for {
		buf, err := fr.next()
		if err != nil {
			return fail(err)
		}
		if buf == nil {
			break
		}
		n := len(buf)
		if _, err := bw.Write(buf); err != nil {
			return fail(err)
		}
		sinceSync += n
		if incrSync && sinceSync >= autosyncBytes {
			if err := bw.Flush(); err != nil {
				return fail(err)
			}
			if err := fdatasync(f); err != nil {
				return fail(err)
			}
			sinceSync = 0
		}
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		fmt.Fprintf(os.Stderr, "%s\n", Strerror(err))
		return 1
	}
	return 0
}

// runRelay is a relay child's whole life: pass the frames' bytes to out,
// and exit 0 only once the end frame came.
func runRelay(in io.Reader, out io.Writer) int {
	fr := frameReader{br: bufio.NewReaderSize(in, 1<<20)}
	for {
		buf, err := fr.next()
		if err == nil && buf == nil {
			return 0
		}
		if err == nil {
			_, err = out.Write(buf)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s\n", Strerror(err))
			return 1
		}
	}
}

// errEarlyEnd is a child's stream that ended before its end frame.
var errEarlyEnd = errors.New("the parent's stream ended early")

// frameReader reads the parent's frames (frameWriter's).
type frameReader struct {
	br  *bufio.Reader
	buf []byte
}

// next returns the next frame's bytes (valid until the next call), nil
// at the end frame.
func (r *frameReader) next() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r.br, hdr[:]); err != nil {
		return nil, errEarlyEnd
	}
	n := int(binary.LittleEndian.Uint32(hdr[:]))
	if n == 0 {
		return nil, nil
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	if _, err := io.ReadFull(r.br, r.buf[:n]); err != nil {
		return nil, errEarlyEnd
	}
	return r.buf[:n], nil
}

// Child is a running save child.
type Child struct {
	cmd    *exec.Cmd
	pipe   *os.File
	bw     *bufio.Writer
	Pid    int
	Path   string        // the file it writes
	dead   chan struct{} // closed when it has exited
	mu     sync.Mutex
	status *os.ProcessState
	stderr []byte
	werr   error
}

// StartChild starts a child writing path (relative to the working
// directory). incrSync: fsync every 4 MB. pathOf gets the child's pid and
// returns the file name, so it can carry the pid as Redis's do.
func StartChild(pathOf func(pid int) string, incrSync bool) (*Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// The name depends on the pid, known only once it runs: the child
	// reads it from a second pipe before anything else.
	nr, nw, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	c := &Child{pipe: pw, dead: make(chan struct{})}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=-", childSyncEnv+"="+b01(incrSync))
	cmd.Stdin = pr
	cmd.ExtraFiles = []*os.File{nr}
	if err := c.start(cmd, pr, nr); err != nil {
		nw.Close()
		return nil, err
	}
	c.Path = pathOf(c.Pid)
	nw.Write([]byte(c.Path + "\n"))
	nw.Close()
	return c, nil
}

// StartRelay starts a relay child: the bytes written to it come back,
// unchanged, from the file it returns, which reaches EOF when the child
// exits. A full sync's streamed image goes through one, as Redis's goes
// from its forked child through a pipe to the parent, which sends it to
// the replicas: it is the child an operator sees and can kill (the sync
// then fails), and it exits when the parent dies.
func StartRelay() (*Child, *os.File, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	or, ow, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, nil, err
	}
	growPipe(pw)
	growPipe(ow)
	c := &Child{pipe: pw, dead: make(chan struct{})}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+relayMode)
	cmd.Stdin = pr
	cmd.Stdout = ow
	if err := c.start(cmd, pr, ow); err != nil {
		or.Close()
		return nil, nil, err
	}
	return c, or, nil
}

// start runs cmd as c, whose stdin is c.pipe's other end; the parent's
// copies of the child's ends (own) are closed once it runs, or on failure.
func (c *Child) start(cmd *exec.Cmd, own ...*os.File) error {
	cmd.Stderr = (*childStderr)(c)
	err := cmd.Start()
	for _, f := range own {
		f.Close()
	}
	if err != nil {
		c.pipe.Close()
		return err
	}
	c.cmd, c.Pid = cmd, cmd.Process.Pid
	c.bw = bufio.NewWriterSize(frameWriter{c.pipe}, 1<<20)
	go func() {
		cmd.Wait()
		c.mu.Lock()
		c.status = cmd.ProcessState
		c.mu.Unlock()
		close(c.dead)
		c.pipe.Close() // a writer blocked on a full pipe returns
	}()
	return nil
}

func b01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

type childStderr Child

func (s *childStderr) Write(p []byte) (int, error) {
	s.mu.Lock()
	if len(s.stderr) < 4096 {
		s.stderr = append(s.stderr, p...)
	}
	s.mu.Unlock()
	return len(p), nil
}

// frameWriter frames each write with its length.
type frameWriter struct{ f *os.File }

func (w frameWriter) Write(p []byte) (int, error) {
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(p)))
	if _, err := w.f.Write(hdr[:]); err != nil {
		return 0, err
	}
	return w.f.Write(p)
}

// Write streams file bytes to the child.
func (c *Child) Write(p []byte) (int, error) {
	n, err := c.bw.Write(p)
	if err != nil {
		c.werr = err
	}
	return n, err
}

// Dead is closed once the child has exited.
func (c *Child) Dead() <-chan struct{} { return c.dead }

// ChildExit is how a child ended.
type ChildExit struct {
	Code   int // exit status (when not by a signal)
	Signal int // the signal that killed it, 0 if none
	Msg    string
}

// Finish ends the stream and waits for the child: its exit tells whether
// the file is whole on disk.
func (c *Child) Finish() ChildExit {
	c.End()
	return c.Wait()
}

// End ends the stream: the end frame, unless a write failed, then EOF.
func (c *Child) End() {
	if c.werr == nil {
		if err := c.bw.Flush(); err == nil {
			var end [4]byte
			c.pipe.Write(end[:])
		}
	}
	c.pipe.Close()
}

// Exited reports how the child ended, and false while it runs.
func (c *Child) Exited() (ChildExit, bool) {
	select {
	case <-c.dead:
		return c.Wait(), true
	default:
		return ChildExit{}, false
	}
}

// Wait waits for the child to exit.
func (c *Child) Wait() ChildExit {
	<-c.dead
	c.mu.Lock()
	defer c.mu.Unlock()
	ex := ChildExit{Msg: string(trimNL(c.stderr))}
	if ws, ok := c.status.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			ex.Signal = int(ws.Signal())
			return ex
		}
		ex.Code = ws.ExitStatus()
		return ex
	}
	ex.Code = c.status.ExitCode()
	return ex
}

// Kill stops the child and waits for it; its file is removed. (Redis
// kills its own child with SIGUSR1, which it does not count as an error;
// the caller knows it asked.)
func (c *Child) Kill() ChildExit {
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.pipe.Close()
	ex := c.Wait()
	if c.Path != "" {
		os.Remove(c.Path)
	}
	return ex
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// childPath reads the file name the parent sends on fd 3 (the child side).
func childPath() (string, error) {
	f := os.NewFile(3, "name")
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return "", err
	}
	return line[:len(line)-1], nil
}
