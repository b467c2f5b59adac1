package persist

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The AOF's life: opening it at start-up, turning it on and off at run
// time, and rewriting it (BGREWRITEAOF): a new incremental file takes the
// stream at once, a child writes the new base from a snapshot taken at
// that same instant, and when it is done the old base and incremental
// files become history and are deleted. No rewrite buffer: what comes
// after the cut is already in the new incremental file.

// rewriteLimitedLocked is aofRewriteLimited: after 3 failures in a row
// automatic rewrites wait 1, 2, 4... up to 60 minutes. mu is held.
func (e *Engine) rewriteLimitedLocked() bool {
	if e.rwFails.Load() < 3 {
		e.limitDelay, e.limitNext = 0, 0
		return false
	}
	now := time.Now().Unix()
	if e.limitNext != 0 {
		if now < e.limitNext {
			return true
		}
		e.limitNext = 0
		return false
	}
	if e.limitDelay == 0 {
		e.limitDelay = 1
	} else {
		e.limitDelay = min(e.limitDelay*2, 60)
	}
	e.limitNext = now + int64(e.limitDelay)*60
	e.host.Warnf("Background AOF rewrite has repeatedly failed and triggered the limit, will retry in %d minutes", e.limitDelay)
	return true
}

// BGRewrite is BGREWRITEAOF; it returns the status reply.
func (e *Engine) BGRewrite() (string, error) {
	// Decided under mu alone first (see BGSave).
	if reply, err, done := e.rewriteCheck(); done {
		return reply, err
	}
	e.startMu.Lock()
	defer e.startMu.Unlock()
	if reply, err, done := e.rewriteCheck(); done {
		return reply, err
	}
	if err := e.startRewrite(); err != nil {
		return "", ErrRewriteFailed
	}
	return "Background append only file rewriting started", nil
}

// rewriteCheck answers BGREWRITEAOF when it does not start one now.
func (e *Engine) rewriteCheck() (reply string, err error, done bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.job
	switch {
	case j != nil && j.kind == jobAOF:
		return "", ErrRewriteInProgress, true
	case j != nil || e.inExec != nil && e.inExec():
		e.rewriteScheduled.Store(true)
		e.rwFails.Store(0) // asked for by hand: not limited
		return "Background append only file rewriting scheduled", nil, true
	}
	return "", nil, false
}

// startRewrite is rewriteAppendOnlyFileBackground. startMu is held and no
// child runs.
func (e *Engine) startRewrite() error {
	dir, filename := e.aofDir(), e.filename()
	if err := dirCreateIfMissing(dir); err != nil {
		e.host.Warnf("Can't open or create append-only dir %s: %s", dir, Strerror(err))
		e.rwOK.Store(false)
		return err
	}
	e.mu.Lock()
	gen := e.killGen
	state := e.AOFState()
	var am *Manifest
	var newName string
	switch state {
	case AOFOn:
		am = e.manifest.Clone()
		newName = am.NewIncr(filename)
	case AOFWaitRewrite:
		newName = TempIncrName(filename)
	}
	e.mu.Unlock()
	var newf *os.File
	if state != AOFOff {
		f, err := os.OpenFile(filepath.Join(dir, newName), os.O_WRONLY|os.O_TRUNC|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			e.host.Warnf("Can't open the append-only file %s: %s", newName, Strerror(err))
			e.rwOK.Store(false)
			return err
		}
		if am != nil {
			if err := WriteManifest(dir, filename, am); err != nil {
				e.host.Warnf("%s", err)
				f.Close()
				os.Remove(filepath.Join(dir, newName))
				e.rwOK.Store(false)
				return err
			}
		}
		e.host.Logf("Creating AOF incr file %s on background rewrite", newName)
		newf = f
	}
	e.rewrites.Add(1)
	rdbForm := e.host.Config("aof-use-rdb-preamble") == "yes"
	j, err := e.startChild(jobAOF, func(pid int) string { return fmt.Sprintf("temp-rewriteaof-bg-%d.aof", pid) }, e.host.Config("aof-rewrite-incremental-fsync") == "yes")
	if err != nil {
		e.rwOK.Store(false)
		e.host.Warnf("Can't rewrite append only file in background: fork: %s", Strerror(err))
		if newf != nil {
			newf.Close()
		}
		return err
	}
	j.rdbForm = rdbForm
	delay := e.keyDelay()
	timestamps := e.w.timestamps.Load()
	t0 := time.Now()
	stale := false
	img := e.host.Snapshot(func() {
		// appendonly no may have come meanwhile (a transaction's CONFIG
		// SET, which does not wait for startMu): then no switch.
		if e.AOFState() != state {
			stale = true
			return
		}
		if newf != nil {
			e.w.switchAt(newf)
			if state == AOFWaitRewrite {
				e.w.setAccepting(true)
			}
		}
	})
	e.forkUs.Store(time.Since(t0).Microseconds())
	if stale {
		img.Release()
		if newf != nil {
			newf.Close()
		}
		e.mu.Lock()
		j.killed = true
		e.mu.Unlock()
		j.child.Kill()
		close(j.done)
		return errors.New("the AOF was turned off meanwhile")
	}
	if am != nil {
		e.mu.Lock()
		e.manifest = am
		e.mu.Unlock()
	}
	j.meta = img.Meta()
	j.img = img
	j.keysAll.Store(j.meta.Keys)
	if !e.register(j, gen) {
		img.Release()
		return nil
	}
	e.rewriteScheduled.Store(false)
	e.host.Logf("Background append only file rewriting started by pid %d", j.child.Pid)
	go func() {
		var err error
		if rdbForm {
			err = WriteRDB(j.child, img, RDBOptions{Version: e.version, AOFBase: true, Checksum: e.host.Config("rdbchecksum") != "no", KeyDelay: delay, Cancel: j.cancel, Progress: &j.keysDone})
		} else {
			err = WriteAOFForm(j.child, img, AOFFormOptions{Timestamp: timestamps, KeyDelay: delay, Cancel: j.cancel, Progress: &j.keysDone})
		}
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
		e.rewriteDone(j, ex, err)
	}()
	return nil
}

// rewriteDone is backgroundRewriteDoneHandler.
func (e *Engine) rewriteDone(j *job, ex ChildExit, streamErr error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.endJob(j)
	j.keysAll.Store(0)
	dir, filename := e.aofDir(), e.filename()
	tmp := j.child.Path
	state := e.AOFState()
	fail := func() {
		e.rwOK.Store(false)
		e.rwFails.Add(1)
	}
	switch {
	case j.killed:
		// Killed on purpose (appendonly no, shutdown): not an error.
	case ex.Signal != 0:
		fail()
		e.host.Warnf("Background AOF rewrite terminated by signal %d", ex.Signal)
	case ex.Code != 0 || streamErr != nil:
		fail()
		if ex.Msg != "" {
			e.host.Warnf("Write error writing append only file on disk: %s", ex.Msg)
		}
		e.host.Warnf("Background AOF rewrite terminated with error")
	default:
		e.host.Logf("Background AOF rewrite terminated with success")
		am := e.manifest.Clone()
		newBase := am.NewBase(filename, j.rdbForm)
		newBasePath := filepath.Join(dir, newBase)
		if err := os.Rename(tmp, newBasePath); err != nil {
			e.host.Warnf("Error trying to rename the temporary AOF base file %s into %s: %s", tmp, newBasePath, Strerror(err))
			fail()
			break
		}
		e.host.Logf("Successfully renamed the temporary AOF base file %s into %s", tmp, newBase)
		var newIncrPath string
		if state == AOFWaitRewrite {
			tempIncr := TempIncrName(filename)
			newIncr := am.NewIncr(filename)
			newIncrPath = filepath.Join(dir, newIncr)
			if err := os.Rename(filepath.Join(dir, tempIncr), newIncrPath); err != nil {
				e.host.Warnf("Error trying to rename the temporary AOF incr file %s into %s: %s", filepath.Join(dir, tempIncr), newIncrPath, Strerror(err))
				os.Remove(newBasePath)
				fail()
				break
			}
			e.host.Logf("Successfully renamed the temporary AOF incr file %s into %s", tempIncr, newIncr)
		}
		am.MarkIncrHistory(state != AOFOff)
		if err := WriteManifest(dir, filename, am); err != nil {
			e.host.Warnf("%s", err)
			os.Remove(newBasePath)
			if newIncrPath != "" {
				os.Remove(newIncrPath)
			}
			fail()
			break
		}
		e.manifest = am
		if state != AOFOff {
			size := int64(0)
			if st, err := os.Stat(newBasePath); err == nil {
				size = st.Size()
			}
			e.w.wmu.Lock()
			size += e.w.incrSize
			e.w.wmu.Unlock()
			e.w.curSize.Store(size)
			e.baseSize.Store(size)
		}
		e.delHistoryLocked()
		e.rwOK.Store(true)
		e.rwFails.Store(0)
		e.host.Logf("Background AOF rewrite finished successfully")
		if state == AOFWaitRewrite {
			e.state.Store(int32(AOFOn))
			state = AOFOn
		}
	}
	os.Remove(tmp)
	if state == AOFWaitRewrite && !j.killed {
		// The first rewrite failed: what the temporary incremental file
		// gathered is dropped, and another rewrite is scheduled.
		e.w.setAccepting(false)
		e.w.closeFile()
		name := TempIncrName(filename)
		e.host.Logf("Removing the temp incr aof file %s in the background", name)
		os.Remove(filepath.Join(dir, name))
		e.rewriteScheduled.Store(true)
	}
	e.rwLastSec = int64(time.Since(j.start).Seconds())
}

// delHistoryLocked deletes history files unless aof-disable-auto-gc. mu
// is held.
func (e *Engine) delHistoryLocked() error {
	if e.host.Config("aof-disable-auto-gc") == "yes" || len(e.manifest.History) == 0 {
		return nil
	}
	dir := e.aofDir()
	for _, h := range e.manifest.History {
		e.host.Logf("Removing the history file %s in the background", h.Name)
		path := filepath.Join(dir, h.Name)
		go os.Remove(path)
	}
	e.manifest.History = nil
	e.manifest.Dirty = true
	err := WriteManifest(dir, e.filename(), e.manifest)
	if err != nil {
		e.host.Warnf("%s", err)
	}
	return err
}

// DelHistory is what turning aof-disable-auto-gc off does.
func (e *Engine) DelHistory() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.delHistoryLocked()
}

// killRewrite is killAppendOnlyChild.
func (e *Engine) killRewrite() {
	e.mu.Lock()
	j := e.job
	e.mu.Unlock()
	if j == nil || j.kind != jobAOF {
		return
	}
	e.host.Logf("Killing running AOF rewrite child: %d", j.child.Pid)
	e.killJob(jobAOF)
}

// StartAppendOnly is startAppendOnly (CONFIG SET appendonly yes).
func (e *Engine) StartAppendOnly() error {
	if e.inExec != nil && e.inExec() {
		// Inside a transaction (which holds the keyspace's lock): the
		// rewrite is scheduled, without waiting for startMu.
		if e.state.CompareAndSwap(int32(AOFOff), int32(AOFWaitRewrite)) {
			e.rewriteScheduled.Store(true)
			e.host.Warnf("AOF was enabled during a transaction. An AOF background was scheduled to start when possible.")
		}
		return nil
	}
	e.startMu.Lock()
	defer e.startMu.Unlock()
	if e.AOFState() != AOFOff {
		return nil
	}
	e.state.Store(int32(AOFWaitRewrite))
	e.mu.Lock()
	j := e.job
	e.mu.Unlock()
	switch {
	case j != nil && j.kind != jobAOF:
		e.rewriteScheduled.Store(true)
		e.host.Warnf("AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible.")
	default:
		if j != nil {
			e.host.Warnf("AOF was enabled but there is already an AOF rewriting in background. Stopping background AOF and starting a rewrite now.")
			e.killRewrite()
		}
		if err := e.startRewrite(); err != nil {
			e.state.Store(int32(AOFOff))
			e.host.Warnf("Redis needs to enable the AOF but can't trigger a background AOF rewrite operation. Check the above logs for more info about the error.")
			return err
		}
	}
	if e.w.bioErrno.Load() != 0 {
		e.host.Warnf("AOF reopen, just ignore the AOF fsync error in bio job")
		e.w.setBioErrno(0)
	}
	if e.w.writeErrno.Load() != 0 {
		e.host.Warnf("AOF reopen, just ignore the last error.")
		e.w.setWriteErrno(0)
	}
	return nil
}

// StopAppendOnly is stopAppendOnly (CONFIG SET appendonly no).
func (e *Engine) StopAppendOnly() {
	// Without startMu: it may come from a transaction, which holds the
	// keyspace's lock a starting rewrite waits for under startMu; such a
	// rewrite sees the state change at its cut and stops.
	e.mu.Lock()
	if e.AOFState() == AOFOff {
		e.mu.Unlock()
		return
	}
	e.state.Store(int32(AOFOff))
	e.mu.Unlock()
	e.w.stop()
	e.rewriteScheduled.Store(false)
	e.killRewrite()
	e.w.curSize.Store(0)
}

// closeFile closes the file without writing what is buffered (a failed
// first rewrite's temporary incremental file).
func (w *writer) closeFile() {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	w.buf = w.buf[:0]
	w.selDB = -1
	w.mu.Unlock()
	w.wpend = w.wpend[:0]
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	w.incrSize, w.incrSynced = 0, 0
	w.written.Store(w.fed.Load())
	w.synced.Store(w.fed.Load())
	w.bufLen.Store(0)
}

// ---- start-up ----

// LoadManifest reads the manifest at start-up (aofLoadManifestFromDisk).
func (e *Engine) LoadManifest() error {
	m, _, err := LoadManifest(e.aofDir(), e.filename())
	if err != nil {
		var me *ManifestError
		if errors.As(err, &me) && !me.Open {
			e.host.Warnf("\n*** FATAL AOF MANIFEST FILE ERROR ***\n")
			if me.Line != "" {
				e.host.Warnf("Reading the manifest file, at line %d\n", me.LineNum)
				e.host.Warnf(">>> '%s'\n", me.Line)
			}
			e.host.Warnf("%s\n", me.Msg)
		} else {
			e.host.Warnf("%s", err)
		}
		return err
	}
	e.mu.Lock()
	e.manifest = m
	e.mu.Unlock()
	return nil
}

// Load replays the AOF (start-up, DEBUG LOADAOF) into the dataset: an
// old-style file is upgraded first. begin is called with the total size
// before the first byte is replayed.
func (e *Engine) Load(rp Replayer, begin func(total int64)) LoadResult {
	dir, filename := e.aofDir(), e.filename()
	e.mu.Lock()
	m := e.manifest
	e.mu.Unlock()
	if err := UpgradeIfNeeded(dir, filename, m, e.host); err != nil {
		e.host.Warnf("%s", err)
		return LoadResult{Status: LoadFailed}
	}
	opt := LoadOptions{Dir: dir, Filename: filename, LoadTruncated: e.host.Config("aof-load-truncated") == "yes"}
	res := LoadAll(opt, m, rp, e.host, begin)
	if res.Status == LoadOK || res.Status == LoadTruncated {
		e.w.curSize.Store(res.TotalSize)
		e.baseSize.Store(res.BaseSize)
	}
	return res
}

// OpenAtStart is aofOpenIfNeededOnServerStart: with appendonly yes, an
// empty AOF gets a base file (written now from img, the empty dataset),
// the last incremental file is opened (or created) for appending and the
// manifest written. An error stops start-up.
func (e *Engine) OpenAtStart(snapshot func() Image) error {
	dir, filename := e.aofDir(), e.filename()
	if err := dirCreateIfMissing(dir); err != nil {
		return fmt.Errorf("Can't open or create append-only dir %s: %s", dir, Strerror(err))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.manifest
	hadIncr := len(m.Incr) > 0
	if m.Base == nil && !hadIncr {
		rdbForm := e.host.Config("aof-use-rdb-preamble") == "yes"
		base := m.NewBase(filename, rdbForm)
		if err := e.writeBaseSync(filepath.Join(dir, base), snapshot(), rdbForm); err != nil {
			return err
		}
		e.host.Logf("Creating AOF base file %s on server start", base)
	}
	name, _ := m.LastIncr(filename)
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("Can't open the append-only file %s: %s", name, Strerror(err))
	}
	if m.Dirty {
		if err := WriteManifest(dir, filename, m); err != nil {
			f.Close()
			return err
		}
	}
	size := int64(0)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	e.w.setFile(f, size)
	e.w.setAccepting(true)
	e.state.Store(int32(AOFOn))
	if hadIncr {
		e.host.Logf("Opening AOF incr file %s on server start", name)
	} else {
		e.host.Logf("Creating AOF incr file %s on server start", name)
	}
	return nil
}

// writeBaseSync is rewriteAppendOnlyFile: img written in this process to
// temp-rewriteaof-<pid>.aof, fsynced and renamed to path.
func (e *Engine) writeBaseSync(path string, img Image, rdbForm bool) error {
	defer img.Release()
	tmp := fmt.Sprintf("temp-rewriteaof-%d.aof", os.Getpid())
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("Opening the temp file for AOF rewrite in rewriteAppendOnlyFile(): %s", Strerror(err))
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if rdbForm {
		err = WriteRDB(bw, img, RDBOptions{Version: e.version, AOFBase: true, Checksum: e.host.Config("rdbchecksum") != "no"})
	} else {
		err = WriteAOFForm(bw, img, AOFFormOptions{Timestamp: e.w.timestamps.Load()})
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("Write error writing append only file on disk: %s", Strerror(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("Error moving temp append only file on the final destination: %s", Strerror(err))
	}
	return nil
}

// ReloadManifest is what DEBUG LOADAOF does before replaying: the
// buffered stream is written, the manifest read again from disk and its
// history deleted.
func (e *Engine) ReloadManifest() error {
	if e.AOFState() != AOFOff {
		e.w.commit(true)
	}
	if err := e.LoadManifest(); err != nil {
		return err
	}
	e.DelHistory()
	return nil
}

// ---- shutdown ----

// ErrWritingInitialAOF: SHUTDOWN refused while the first rewrite after
// appendonly yes runs (the dataset is not on disk yet).
var ErrWritingInitialAOF = errors.New("writing initial AOF")

// Shutdown is finishShutdown's persistence part before the final RDB
// save: a BGSAVE child is killed; an AOF rewrite child too, unless it
// writes the initial AOF (then it is an error unless force); the AOF is
// written and fsynced.
func (e *Engine) Shutdown(force bool) error {
	e.mu.Lock()
	j := e.job
	e.mu.Unlock()
	if j != nil && j.kind == jobRDB {
		e.host.Warnf("There is a child saving an .rdb. Killing it!")
		e.killJob(jobRDB)
	}
	if j != nil && j.kind == jobAOF {
		if e.AOFState() == AOFWaitRewrite {
			if !force {
				e.host.Warnf("Writing initial AOF, can't exit.")
				return ErrWritingInitialAOF
			}
			e.host.Warnf("Writing initial AOF. Exit anyway.")
		}
		e.host.Warnf("There is a child rewriting the AOF. Killing it!")
		e.killJob(jobAOF)
	}
	if e.AOFState() != AOFOff {
		e.host.Logf("Calling fsync() on the AOF file.")
		e.w.syncNow()
	}
	return nil
}

// Close ends the engine once the server stopped: a running child is
// killed, the AOF written, fsynced and closed, the background worker
// stopped.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		e.killJob(0)
		e.w.mu.Lock()
		e.w.accepting = false
		e.w.mu.Unlock()
		e.w.wmu.Lock()
		if e.w.f != nil {
			e.w.commitLocked(true)
			fdatasync(e.w.f)
			e.w.f.Close()
			e.w.f = nil
		}
		e.w.wmu.Unlock()
		close(e.w.bioStop)
	})
}
