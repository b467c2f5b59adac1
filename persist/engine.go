package persist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Host is the server side of persistence: the dataset, the configuration
// and the log.
type Host interface {
	Logger
	// Snapshot takes a point-in-time image of the dataset. atCut, when
	// not nil, runs at the instant the image is taken, with no write
	// command in between (BGREWRITEAOF switches files there).
	Snapshot(atCut func()) Image
	// Config returns a directive's current value.
	Config(name string) string
	// Dirty is the number of changes since the last save
	// (rdb_changes_since_last_save).
	Dirty() int64
	// Saved tells that an image taken when the change counter was
	// meta.Dirty is now the RDB file on disk.
	Saved(meta ImageMeta)
	// SinceSave is the number of seconds since the last successful save,
	// on the server's clock (an embedded server's clock may be moved).
	SinceSave() int64
}

// State is the AOF's state (Redis's aof_state).
type State int32

const (
	AOFOff         State = iota
	AOFOn                // appending to the last incremental file
	AOFWaitRewrite       // turned on at run time: on once its first rewrite is done
)

// jobKind is what a background child does.
type jobKind int

const (
	jobRDB jobKind = iota + 1
	jobAOF
)

// job is a running background save (Redis's child process).
type job struct {
	kind     jobKind
	child    *Child
	cancel   chan struct{} // closed to abort the stream
	done     chan struct{} // closed once handled
	start    time.Time
	killed   bool // killed on purpose: not an error
	keysAll  atomic.Int64
	keysDone atomic.Int64
	rdbForm  bool  // a rewrite's base format
	dirty    int64 // the change counter when a BGSAVE began
	meta     ImageMeta
	img      Image // given up when the job is killed (its walk may wait for a lock the killer holds)
}

// Engine is the server's persistence: RDB saves, the AOF, their
// background children.
type Engine struct {
	host    Host
	version string
	w       writer
	// ChildStarted, when set, runs for each child as it starts (the
	// server gives it the background-child oom_score_adj, which Redis's
	// child sets for itself).
	ChildStarted func(pid int)

	startMu  sync.Mutex // serializes starting children
	mu       sync.Mutex // what follows
	killGen  int64      // kills asked for (see register)
	state    atomic.Int32
	manifest *Manifest
	job      *job
	forks    atomic.Int64 // total_forks
	forkUs   atomic.Int64 // latest_fork_usec: the snapshot's pause

	// RDB.
	bgsaveScheduled bool
	lastBgTry       int64
	lastBgOK        atomic.Bool
	lastBgSec       int64
	rdbSaves        atomic.Int64
	saving          atomic.Bool // a synchronous SAVE writes

	// AOF rewrite.
	rewriteScheduled atomic.Bool
	rwLastSec        int64
	rwOK             atomic.Bool
	rewrites         atomic.Int64
	rwFails          atomic.Int64
	baseSize         atomic.Int64 // aof_rewrite_base_size
	limitDelay       int          // minutes (aofRewriteLimited)
	limitNext        int64
	inExec           func() bool

	stateHook  atomic.Pointer[func()]
	bgsaveHook atomic.Pointer[func(ok bool)]
	closeOnce  sync.Once
}

// New returns an engine for host; version is the redis-ver written in RDB
// files. fatal is called when the server cannot go on (an AOF write
// failed under appendfsync always).
func New(host Host, version string, fatal func()) *Engine {
	e := &Engine{host: host, version: version, manifest: &Manifest{}, rwLastSec: -1, lastBgSec: -1}
	e.lastBgOK.Store(true)
	e.rwOK.Store(true)
	e.w.init(host)
	e.w.changed = e.changed
	e.w.fatal = fatal
	e.ConfigChanged()
	return e
}

// ConfigChanged re-reads the directives the hot paths use.
func (e *Engine) ConfigChanged() {
	e.w.policy.Store(int32(ParseFsync(e.host.Config("appendfsync"))))
	e.w.timestamps.Store(e.host.Config("aof-timestamp-enabled") == "yes")
	e.updateNoFsync()
}

func (e *Engine) updateNoFsync() {
	e.mu.Lock()
	active := e.job != nil
	e.mu.Unlock()
	e.w.noFsyncChild.Store(active && e.host.Config("no-appendfsync-on-rewrite") == "yes")
}

// OnStateChange sets what is called when an error state that refuses
// writes (MISCONF) changes.
func (e *Engine) OnStateChange(f func()) { e.stateHook.Store(&f) }

func (e *Engine) changed() {
	if f := e.stateHook.Load(); f != nil {
		(*f)()
	}
}

func (e *Engine) setBgOK(ok bool) {
	if e.lastBgOK.Swap(ok) != ok {
		e.changed()
	}
}

// SetInExec tells the engine how to know a transaction is running (a
// rewrite asked for then is scheduled).
func (e *Engine) SetInExec(f func() bool) { e.inExec = f }

// aofDir is the AOF directory, relative to the working directory.
func (e *Engine) aofDir() string   { return e.host.Config("appenddirname") }
func (e *Engine) filename() string { return e.host.Config("appendfilename") }

// AOFState returns the AOF's state.
func (e *Engine) AOFState() State { return State(e.state.Load()) }

// Feed records the effect of a write command (one RESP command) run in
// database db (-1: none). Callers serialize their calls: the stream's
// order is theirs.
func (e *Engine) Feed(db int, cmd []byte) { e.w.feed(db, cmd) }

// Pending reports whether effects wait to be written (or fsynced, under
// appendfsync always) before replies may go out.
func (e *Engine) Pending() bool { return e.w.pending() }

// Commit writes what was fed, as appendfsync says, before the replies of
// the commands that fed it go out.
func (e *Engine) Commit() { e.w.commit(false) }

// SetFlushSleep is DEBUG AOF-FLUSH-SLEEP: a pause before each write.
func (e *Engine) SetFlushSleep(us int64) { e.w.flushSleep.Store(us) }

// ---- children ----

// ChildActive reports whether a background save or rewrite runs.
func (e *Engine) ChildActive() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.job != nil
}

// startChild starts a child writing pathOf(pid) for a job of kind. The
// caller holds startMu, not mu: the snapshot that follows takes the
// keyspace's lock, which commands holding it may need mu under.
func (e *Engine) startChild(kind jobKind, pathOf func(pid int) string, incrSync bool) (*job, error) {
	child, err := StartChild(pathOf, incrSync)
	if err != nil {
		return nil, err
	}
	e.started(child.Pid)
	j := &job{kind: kind, child: child, cancel: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
	go func() {
		// A child that dies stops the stream at once (a killed child
		// while the parent sleeps on rdb-key-save-delay).
		select {
		case <-child.Dead():
			j.abort()
		case <-j.done:
		}
	}()
	return j, nil
}

// StartRelay starts the relay child a full sync's streamed image goes
// through (StartRelay), counted in total_forks as Redis counts the fork
// of its diskless sync.
func (e *Engine) StartRelay() (*Child, *os.File, error) {
	c, out, err := StartRelay()
	if err != nil {
		return nil, nil, err
	}
	e.started(c.Pid)
	return c, out, nil
}

// started counts a child that started in total_forks and hands it to
// ChildStarted.
func (e *Engine) started(pid int) {
	if e.ChildStarted != nil {
		e.ChildStarted(pid)
	}
	e.forks.Add(1)
}

// register makes j the running job. gen is killGen before its snapshot:
// a kill that came meanwhile (FLUSHALL, SHUTDOWN) applies to it too.
// It reports whether j runs.
func (e *Engine) register(j *job, gen int64) bool {
	e.mu.Lock()
	if e.killGen != gen {
		j.killed = true
		e.mu.Unlock()
		j.abort()
		j.child.Kill()
		close(j.done)
		return false
	}
	e.job = j
	e.mu.Unlock()
	e.w.noFsyncChild.Store(e.host.Config("no-appendfsync-on-rewrite") == "yes")
	return true
}

var abortMu sync.Mutex

func (j *job) abort() {
	abortMu.Lock()
	select {
	case <-j.cancel:
	default:
		close(j.cancel)
	}
	abortMu.Unlock()
}

// endJob clears the running job; mu is held.
func (e *Engine) endJob(j *job) {
	if e.job == j {
		e.job = nil
	}
	e.w.noFsyncChild.Store(false)
	close(j.done)
}

// keyDelay is rdb-key-save-delay as a child sees it: fixed when it starts.
func (e *Engine) keyDelay() func() time.Duration {
	us, _ := strconv.ParseInt(e.host.Config("rdb-key-save-delay"), 10, 64)
	d := time.Duration(us) * time.Microsecond
	return func() time.Duration { return d }
}

// killJob kills the running job of kind (0: any) and waits until it is
// handled. It reports whether there was one.
func (e *Engine) killJob(kind jobKind) bool {
	e.mu.Lock()
	e.killGen++
	j := e.job
	if j == nil || kind != 0 && j.kind != kind {
		e.mu.Unlock()
		return false
	}
	j.killed = true
	e.mu.Unlock()
	j.abort()
	if j.img != nil {
		j.img.Release()
	}
	j.child.Kill()
	<-j.done
	return true
}

// WaitChild waits for the running child, if any, to end.
func (e *Engine) WaitChild() {
	e.mu.Lock()
	j := e.job
	e.mu.Unlock()
	if j != nil {
		<-j.done
	}
}

// ---- RDB ----

// Errors with Redis's texts.
var (
	ErrBgsaveInProgress  = errors.New("ERR Background save already in progress")
	ErrChildActive       = errors.New("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
	ErrRewriteInProgress = errors.New("ERR Background append only file rewriting already in progress")
	ErrRewriteFailed     = errors.New("ERR Can't execute an AOF background rewriting. Please check the server logs for more information.")
)

// BGSave is BGSAVE [SCHEDULE]; it returns the status reply.
func (e *Engine) BGSave(schedule bool) (string, error) {
	// Decided under mu alone first: a caller inside a transaction holds
	// the keyspace's lock, which a start waits for under startMu.
	if reply, err, done := e.bgsaveCheck(schedule); done {
		return reply, err
	}
	e.startMu.Lock()
	defer e.startMu.Unlock()
	if reply, err, done := e.bgsaveCheck(schedule); done {
		return reply, err
	}
	if err := e.bgsaveStart(nil); err != nil {
		return "", errors.New("ERR")
	}
	return "Background saving started", nil
}

// bgsaveCheck answers BGSAVE when it does not start a save now.
func (e *Engine) bgsaveCheck(schedule bool) (reply string, err error, done bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.job
	inExec := e.inExec != nil && e.inExec()
	switch {
	case j != nil && j.kind == jobRDB:
		return "", ErrBgsaveInProgress, true
	case j != nil || inExec:
		if schedule || inExec {
			e.bgsaveScheduled = true
			return "Background saving scheduled", nil, true
		}
		return "", ErrChildActive, true
	}
	return "", nil, false
}

// BGSaveNow starts a BGSAVE unless a child runs.
func (e *Engine) BGSaveNow() error { return e.BGSaveAt(nil) }

// BGSaveAt starts a BGSAVE unless a child runs; atCut, when not nil, runs
// at the instant its image is taken (a full sync's replicas take their
// place in the stream there).
func (e *Engine) BGSaveAt(atCut func()) error {
	e.startMu.Lock()
	defer e.startMu.Unlock()
	if e.ChildActive() {
		return ErrChildActive
	}
	return e.bgsaveStart(atCut)
}

// OnBgsaveDone registers f, called when a BGSAVE ends (ok: the file was
// written): replicas waiting for a file image get it then.
func (e *Engine) OnBgsaveDone(f func(ok bool)) { e.bgsaveHook.Store(&f) }

// bgsaveStart is rdbSaveBackground; startMu is held and no child runs.
func (e *Engine) bgsaveStart(atCut func()) error {
	e.rdbSaves.Add(1)
	e.mu.Lock()
	e.lastBgTry = time.Now().Unix()
	gen := e.killGen
	e.mu.Unlock()
	dirty := e.host.Dirty()
	j, err := e.startChild(jobRDB, tempRDB, e.host.Config("rdb-save-incremental-fsync") == "yes")
	if err != nil {
		e.setBgOK(false)
		e.host.Warnf("Can't save in background: fork: %s", Strerror(err))
		return err
	}
	j.dirty = dirty
	opts := RDBOptions{Version: e.version, Checksum: e.host.Config("rdbchecksum") != "no", KeyDelay: e.keyDelay(), Cancel: j.cancel, Progress: &j.keysDone}
	t0 := time.Now()
	img := e.host.Snapshot(atCut)
	e.forkUs.Store(time.Since(t0).Microseconds())
	j.meta = img.Meta()
	j.img = img
	j.keysAll.Store(j.meta.Keys)
	if !e.register(j, gen) {
		img.Release()
		return nil
	}
	e.mu.Lock()
	e.bgsaveScheduled = false
	e.mu.Unlock()
	e.host.Logf("Background saving started by pid %d", j.child.Pid)
	go func() {
		err := WriteRDB(j.child, img, opts)
		img.Release()
		var ex ChildExit
		if err != nil {
			ex = j.child.Wait()
			if ex.Signal == 0 && ex.Code == 0 {
				ex = j.child.Kill()
			}
		} else {
			ex = j.child.Finish()
		}
		ok := e.bgsaveDone(j, ex, err)
		if f := e.bgsaveHook.Load(); f != nil {
			(*f)(ok)
		}
	}()
	return nil
}

// bgsaveDone is backgroundSaveDoneHandlerDisk.
func (e *Engine) bgsaveDone(j *job, ex ChildExit, streamErr error) (ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.endJob(j)
	j.keysAll.Store(0)
	e.lastBgSec = int64(time.Since(j.start).Seconds())
	tmp := j.child.Path
	switch {
	case j.killed:
		// Killed on purpose (FLUSHALL, SHUTDOWN): Redis's SIGUSR1.
		os.Remove(tmp)
		e.host.Warnf("Background saving terminated by signal %d", int(syscall.SIGUSR1))
	case ex.Signal != 0:
		os.Remove(tmp)
		e.host.Warnf("Background saving terminated by signal %d", ex.Signal)
		e.setBgOK(false)
	case ex.Code != 0 || streamErr != nil:
		os.Remove(tmp)
		if ex.Msg != "" {
			e.host.Warnf("Write error saving DB on disk: %s", ex.Msg)
		}
		e.host.Warnf("Background saving error")
		e.setBgOK(false)
	default:
		name := e.host.Config("dbfilename")
		if err := os.Rename(tmp, name); err != nil {
			os.Remove(tmp)
			e.host.Warnf("Error moving temp DB file %s on the final destination %s (in server root dir %s): %s", tmp, name, cwd(), Strerror(err))
			e.host.Warnf("Background saving error")
			e.setBgOK(false)
			return false
		}
		SyncDir(filepath.Dir(name))
		e.host.Logf("Background saving terminated with success")
		e.host.Saved(j.meta)
		e.setBgOK(true)
		return true
	}
	return false
}

func cwd() string {
	d, err := os.Getwd()
	if err != nil {
		return "unknown"
	}
	return d
}

// Save writes the dataset now, in the caller's turn. It fails while a
// BGSAVE runs. count: the SAVE command (rdb_saves counts it).
func (e *Engine) Save(count bool) error {
	e.mu.Lock()
	if j := e.job; j != nil && j.kind == jobRDB {
		e.mu.Unlock()
		return ErrBgsaveInProgress
	}
	e.mu.Unlock()
	if count {
		e.rdbSaves.Add(1)
	}
	return e.SaveImage(e.host.Snapshot(nil))
}

// SaveImage writes img as the RDB file (dbfilename), through temp-<pid>.rdb.
func (e *Engine) SaveImage(img Image) error {
	defer img.Release()
	e.saving.Store(true)
	defer e.saving.Store(false)
	tmp := tempRDB(os.Getpid())
	f, err := os.Create(tmp)
	if err != nil {
		e.host.Warnf("Failed opening the temp RDB file %s (in server root dir %s) for saving: %s", tmp, cwd(), Strerror(err))
		return err
	}
	fail := func(op string, err error) error {
		e.host.Warnf("Write error saving DB on disk(%s): %s", op, Strerror(err))
		f.Close()
		os.Remove(tmp)
		return err
	}
	meta := img.Meta()
	// rdb-key-save-delay applies to a foreground save too (SAVE, the save
	// at shutdown), as in Redis's rdbSaveRio.
	if err := WriteRDB(f, img, RDBOptions{Version: e.version, Checksum: e.host.Config("rdbchecksum") != "no", KeyDelay: e.keyDelay()}); err != nil {
		return fail("rdbSaveRio", err)
	}
	if err := f.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		e.host.Warnf("Write error saving DB on disk(fclose): %s", Strerror(err))
		return err
	}
	name := e.host.Config("dbfilename")
	if err := os.Rename(tmp, name); err != nil {
		e.host.Warnf("Error moving temp DB file %s on the final destination %s (in server root dir %s): %s", tmp, name, cwd(), Strerror(err))
		os.Remove(tmp)
		return err
	}
	if err := SyncDir(filepath.Dir(name)); err != nil {
		e.host.Warnf("Write error saving DB on disk(fsyncFileDir): %s", Strerror(err))
		return err
	}
	e.host.Logf("DB saved on disk")
	e.host.Saved(meta)
	e.setBgOK(true)
	return nil
}

// RemoveTempRDB removes the temporary file a foreground save of this
// process writes (temp-<pid>.rdb), for an exit in the middle of one (a
// second SIGINT during the save at shutdown), as Redis's
// rdbRemoveTempFile does.
func RemoveTempRDB() {
	os.Remove(tempRDB(os.Getpid()))
}

// tempRDB is the file a save by process pid writes before renaming it:
// a BGSAVE's child's, or this process's own for a foreground save.
func tempRDB(pid int) string { return fmt.Sprintf("temp-%d.rdb", pid) }

// KillRDBChild aborts a running BGSAVE (FLUSHALL, SHUTDOWN): no file is
// left and the last status is unchanged.
func (e *Engine) KillRDBChild() bool { return e.killJob(jobRDB) }

// BgsaveRunning reports whether a BGSAVE runs.
func (e *Engine) BgsaveRunning() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.job != nil && e.job.kind == jobRDB
}

// LastBgsaveOK reports rdb_last_bgsave_status.
func (e *Engine) LastBgsaveOK() bool { return e.lastBgOK.Load() }

// saveParams parses the save directive.
func (e *Engine) saveParams() [][2]int64 {
	f := strings.Fields(e.host.Config("save"))
	var out [][2]int64
	for i := 0; i+1 < len(f); i += 2 {
		sec, _ := strconv.ParseInt(f[i], 10, 64)
		ch, _ := strconv.ParseInt(f[i+1], 10, 64)
		out = append(out, [2]int64{sec, ch})
	}
	return out
}

// bgsaveRetryDelay is CONFIG_BGSAVE_RETRY_DELAY.
const bgsaveRetryDelay = 5

// Cron runs what serverCron does for persistence (call it ~10 times a
// second): scheduled and automatic BGSAVE and rewrites, the AOF's
// postponed writes, owed fsyncs and write retries.
func (e *Engine) Cron() {
	now := time.Now().Unix()
	e.startMu.Lock()
	e.mu.Lock()
	if e.job == nil {
		retryOK := now-e.lastBgTry > bgsaveRetryDelay || e.lastBgOK.Load()
		switch {
		case e.rewriteScheduled.Load() && !e.rewriteLimitedLocked():
			e.mu.Unlock()
			e.startRewrite()
			e.mu.Lock()
		case e.bgsaveScheduled && retryOK:
			e.mu.Unlock()
			e.bgsaveStart(nil)
			e.mu.Lock()
		default:
			e.mu.Unlock()
			if retryOK {
				dirty := e.host.Dirty()
				elapsed := e.host.SinceSave()
				for _, sp := range e.saveParams() {
					if dirty >= sp[1] && elapsed > sp[0] {
						e.host.Logf("%d changes in %d seconds. Saving...", sp[1], sp[0])
						e.bgsaveStart(nil)
						break
					}
				}
			}
			e.mu.Lock()
			if e.job == nil && e.AOFState() == AOFOn {
				perc, _ := strconv.ParseInt(e.host.Config("auto-aof-rewrite-percentage"), 10, 64)
				minSize, _ := strconv.ParseInt(e.host.Config("auto-aof-rewrite-min-size"), 10, 64)
				cur := e.w.curSize.Load()
				if perc > 0 && cur > minSize {
					base := max(e.baseSize.Load(), 1)
					growth := cur*100/base - 100
					if growth >= perc && !e.rewriteLimitedLocked() {
						e.host.Logf("Starting automatic rewriting of AOF on %d%% growth", growth)
						e.mu.Unlock()
						e.startRewrite()
						e.mu.Lock()
					}
				}
			}
		}
	}
	e.mu.Unlock()
	e.startMu.Unlock()
	if s := e.AOFState(); s == AOFOn || s == AOFWaitRewrite {
		e.w.commit(false)
	}
}

// WriteDenied returns the MISCONF error writes get while the last
// background save failed (with save points and stop-writes-on-bgsave-error)
// or the AOF cannot be written; "" when writes are accepted.
func (e *Engine) WriteDenied() string {
	if !e.lastBgOK.Load() && e.host.Config("stop-writes-on-bgsave-error") == "yes" && len(e.saveParams()) > 0 {
		return "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error."
	}
	if e.AOFState() != AOFOff {
		errno := e.w.writeErrno.Load()
		if errno == 0 {
			errno = e.w.bioErrno.Load()
		}
		if errno != 0 {
			return "MISCONF Errors writing to the AOF file: " + Strerror(syscall.Errno(errno))
		}
	}
	return ""
}

// ScriptDenied is WriteDenied for a script that may write, refused before
// it starts (scriptPrepareForRun's texts).
func (e *Engine) ScriptDenied() string {
	msg := e.WriteDenied()
	switch {
	case msg == "":
		return ""
	case strings.HasPrefix(msg, "MISCONF Redis is configured to save RDB"):
		return "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts."
	}
	return "MISCONF Redis is configured to persist data to AOF, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts. AOF error: " + strings.TrimPrefix(msg, "MISCONF Errors writing to the AOF file: ")
}

// MaybeDenied is a cheap test for WriteDenied's conditions.
func (e *Engine) MaybeDenied() bool {
	return !e.lastBgOK.Load() || e.w.writeErrno.Load() != 0 || e.w.bioErrno.Load() != 0
}

// ---- INFO ----

// Info is what INFO persistence (and stats) show.
type Info struct {
	BgsaveRunning, LastBgsaveOK      bool
	LastBgsaveSec, CurBgsaveSec      int64
	RDBSaves                         int64
	KeysDone, KeysAll                int64
	ForkPerc                         float64
	AOFEnabled                       bool // aof_state != off
	RewriteRunning, RewriteScheduled bool
	LastRewriteSec, CurRewriteSec    int64
	LastRewriteOK                    bool
	Rewrites, RewriteFailures        int64
	LastWriteOK                      bool
	CurrentSize, BaseSize            int64
	BufferLength, PendingBioFsync    int64
	DelayedFsync                     int64
	Forks, ForkUsec                  int64
	MemAOFBuffer                     int64
}

// AOFBufferBytes is the size of the AOF buffer (commands not yet written
// to the file): Redis's aof_buf, which counts in used_memory. It takes no
// lock.
func (e *Engine) AOFBufferBytes() int64 { return e.w.bufLen.Load() }

// Info returns INFO's persistence figures.
func (e *Engine) Info() Info {
	e.mu.Lock()
	defer e.mu.Unlock()
	in := Info{
		LastBgsaveOK: e.lastBgOK.Load(), LastBgsaveSec: e.lastBgSec, CurBgsaveSec: -1,
		RDBSaves: e.rdbSaves.Load(), AOFEnabled: e.AOFState() != AOFOff,
		RewriteScheduled: e.rewriteScheduled.Load(), LastRewriteSec: e.rwLastSec, CurRewriteSec: -1,
		LastRewriteOK: e.rwOK.Load(), Rewrites: e.rewrites.Load(), RewriteFailures: e.rwFails.Load(),
		LastWriteOK: e.w.writeErrno.Load() == 0 && e.w.bioErrno.Load() == 0,
		CurrentSize: e.w.curSize.Load(), BaseSize: e.baseSize.Load(),
		BufferLength: e.w.bufLen.Load(), PendingBioFsync: int64(e.w.bioPending.Load()),
		DelayedFsync: e.w.delayed.Load(), Forks: e.forks.Load(), ForkUsec: e.forkUs.Load(),
	}
	in.MemAOFBuffer = in.BufferLength
	if j := e.job; j != nil {
		sec := int64(time.Since(j.start).Seconds())
		in.KeysDone, in.KeysAll = j.keysDone.Load(), j.keysAll.Load()
		if in.KeysAll > 0 {
			in.ForkPerc = float64(in.KeysDone) * 100 / float64(in.KeysAll)
		}
		if j.kind == jobRDB {
			in.BgsaveRunning, in.CurBgsaveSec = true, sec
		} else {
			in.RewriteRunning, in.CurRewriteSec = true, sec
		}
	}
	return in
}
