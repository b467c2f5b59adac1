package server

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/rdb"
)

// Persistence glue: package persist writes and reads the files (RDB, the
// AOF and its manifest, the save children); the server gives it images
// of the dataset (snapshot.go), replays commands and RDB records into the
// keyspace when files are loaded, and holds the commands (SAVE, BGSAVE,
// BGREWRITEAOF), the config hooks and INFO's fields.

// persistHost is the server as package persist sees it.
type persistHost struct{ s *Server }

func (h persistHost) Logf(format string, args ...any)  { h.s.Logf(format, args...) }
func (h persistHost) Warnf(format string, args ...any) { h.s.Warnf(format, args...) }
func (h persistHost) Snapshot(atCut func()) persist.Image {
	return h.s.snapshotImage(atCut)
}
func (h persistHost) Config(name string) string { return h.s.cfg.Get(name) }
func (h persistHost) Dirty() int64              { return int64(h.s.ks.Dirty()) }
func (h persistHost) SinceSave() int64 {
	return h.s.ks.Clock().Now().Unix() - h.s.LastSave()
}

// Saved records a save: changes made after the image remain unsaved.
func (h persistHost) Saved(meta persist.ImageMeta) {
	s := h.s
	s.lastSave.Store(s.ks.Clock().Now().Unix())
	if meta.Dirty > s.ks.DirtyTotal()-s.ks.Dirty() {
		s.ks.MarkSavedAt(meta.Dirty)
	}
}

// wirePersistence creates the persistence engine.
func (s *Server) wirePersistence() {
	s.pe = persist.New(persistHost{s}, Version, func() { s.fatalExit() })
	s.pe.SetInExec(func() bool { return s.execDepth.Load() > 0 })
	s.pe.OnStateChange(s.gateUpdate)
	s.pe.OnBgsaveDone(s.diskSyncDone) // replicas waiting for a file image
	prev := s.cfg.OnChange
	s.cfg.OnChange = func(name, value string) {
		if prev != nil {
			prev(name, value)
		}
		switch name {
		case "appendfsync", "aof-timestamp-enabled", "no-appendfsync-on-rewrite":
			s.pe.ConfigChanged()
		case "aof-disable-auto-gc":
			if value == "no" {
				s.pe.DelHistory()
			}
		}
	}
	s.cfg.Hooks.Appendonly = s.setAppendOnly
}

// fatalExit stops the process when it cannot keep its promises (an AOF
// write failed under appendfsync always). An embedded server panics.
func (s *Server) fatalExit() {
	if s.exitOnFatal {
		os.Exit(1)
	}
	panic("sluice: the append-only file could not be written (appendfsync always)")
}

// setAppendOnly applies CONFIG SET appendonly at run time.
func (s *Server) setAppendOnly(on bool) error {
	if !s.cfg.Running.Load() {
		return nil // start-up: LoadDataFile opens it
	}
	if on {
		if s.pe.AOFState() == persist.AOFOff {
			if err := s.pe.StartAppendOnly(); err != nil {
				return errors.New("Unable to turn on AOF. Check server logs.")
			}
			s.updateEffects()
		}
		return nil
	}
	if s.pe.AOFState() != persist.AOFOff {
		s.pe.StopAppendOnly()
		s.updateEffects()
	}
	return nil
}

// alreadyExpired reports whether an expiry at when (unix ms) deletes the
// key at once: not while a dataset loads, where it is set as it is
// (Redis's checkAlreadyExpired).
func (s *Server) alreadyExpired(when int64) bool {
	return when <= s.ks.Now() && !s.loading.on.Load()
}

// gate bits (Server.gate).
const (
	gateLoading = 1 << iota // a dataset is loading: -LOADING
	gateDisk                // writes are refused: -MISCONF
)

const errLoading = "LOADING Redis is loading the dataset in memory"

// gateUpdate recomputes the gate from the loading and disk error states.
func (s *Server) gateUpdate() {
	var g uint32
	if s.loading.on.Load() {
		g |= gateLoading
	}
	if s.pe.MaybeDenied() && s.pe.WriteDenied() != "" {
		g |= gateDisk
	}
	s.gate.Store(g)
}

// diskDenied refuses a write (and PING, as Redis does) with MISCONF while
// the last background save failed or the AOF cannot be written; it
// reports whether it did. The master's stream is obeyed.
func (c *Client) diskDenied(cmd *Command) bool {
	if c.replMaster {
		return false
	}
	write := cmd.Flags&cmdspec.Write != 0 || cmd.Name == "ping" || cmd.Name == "exec" && c.txQueued(cmdspec.Write)
	if !write {
		return false
	}
	msg := c.srv.pe.WriteDenied()
	if msg == "" {
		return false
	}
	c.rejectCmd(cmd, msg)
	return true
}

// ---- commands ----

func saveCommand(c *Client, args [][]byte) {
	if err := c.srv.pe.Save(true); err != nil {
		if err == persist.ErrBgsaveInProgress {
			c.w.Error(err.Error())
			return
		}
		c.w.Error("ERR")
		return
	}
	c.w.OK()
}

func bgsaveCommand(c *Client, args [][]byte) {
	schedule := false
	if len(args) > 1 {
		if len(args) == 2 && eq(args[1], "schedule") {
			schedule = true
		} else {
			c.w.Error(errSyntax)
			return
		}
	}
	reply, err := c.srv.pe.BGSave(schedule)
	if err != nil {
		c.w.Error(err.Error())
		return
	}
	c.w.Simple(reply)
}

func bgrewriteaofCommand(c *Client, args [][]byte) {
	reply, err := c.srv.pe.BGRewrite()
	if err != nil {
		c.w.Error(err.Error())
		return
	}
	c.w.Simple(reply)
}

// Save saves the dataset now (SAVE). It fails while a BGSAVE runs.
func (s *Server) Save() error { return s.pe.Save(false) }

// saveLocked is Save for a caller that holds the exclusive lock.
func (s *Server) saveLocked() error {
	if s.pe.BgsaveRunning() {
		return persist.ErrBgsaveInProgress
	}
	return s.pe.SaveImage(s.lockedImage())
}

// BGSave starts a background save; it fails if a save or rewrite runs.
func (s *Server) BGSave() error { return s.pe.BGSaveNow() }

// ---- loading ----

// loadState is what INFO shows while a dataset loads.
type loadState struct {
	on          atomic.Bool
	start       atomic.Int64 // unix seconds
	total       atomic.Int64
	loaded      atomic.Int64
	usedMem     atomic.Int64
	loadedKeys  atomic.Int64
	expiredKeys atomic.Int64
}

func (s *Server) startLoading(total int64) {
	s.ks.Loading.Store(true)
	l := &s.loading
	l.start.Store(time.Now().Unix())
	l.total.Store(total)
	l.loaded.Store(0)
	l.usedMem.Store(0)
	l.on.Store(true)
	s.gateUpdate()
}

func (s *Server) stopLoading() {
	s.ks.Loading.Store(false)
	s.loading.on.Store(false)
	s.gateUpdate()
}

// errLoadFailed: loading failed and the reason is in the log.
var errLoadFailed = errors.New("loading failed")

// IsLoadFailed reports whether LoadDataFile's error was already logged.
func IsLoadFailed(err error) bool { return err == errLoadFailed }

// BeginLoading makes clients get -LOADING until LoadDataFile is done (a
// server that listens before it loads).
func (s *Server) BeginLoading() { s.startLoading(0) }

// ExitOnFatal makes the process exit (status 1) when persistence cannot
// keep its promises, as redis-server does; an embedded server panics.
func (s *Server) ExitOnFatal() { s.exitOnFatal = true }

// LoadDataFile loads the dataset at start-up, as redis-server does: with
// appendonly yes from the AOF (appenddirname, its manifest, or an
// old-style appendfilename), else from dbfilename in the working
// directory (the "dir" directive). Missing files are not an error. With
// appendonly yes the AOF is then opened for appending. While it loads,
// clients get -LOADING. A file that cannot be loaded is an error; its
// reason is logged.
func (s *Server) LoadDataFile() error {
	defer s.stopLoading()
	if s.cfg.Get("appendonly") == "yes" {
		if err := s.pe.LoadManifest(); err != nil {
			return errLoadFailed
		}
		start := time.Now()
		res := s.loadAOF()
		switch res.Status {
		case persist.LoadFailed, persist.LoadOpenErr:
			return errLoadFailed
		case persist.LoadNotExist:
		default:
			s.Logf("DB loaded from append only file: %.3f seconds", time.Since(start).Seconds())
		}
		if err := s.pe.OpenAtStart(func() persist.Image { return s.snapshotImage(nil) }); err != nil {
			s.Warnf("%s", err)
			return errLoadFailed
		}
		s.updateEffects()
		return nil
	}
	name := s.cfg.Get("dbfilename")
	b, err := os.ReadFile(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("Fatal error loading the DB: %s. Exiting.", strerror(err))
	}
	start := time.Now()
	s.startLoading(int64(len(b)))
	s.replLoadBegin()
	if err := s.loadRDB(b); err != nil {
		return err
	}
	s.Logf("DB loaded from disk: %.3f seconds", time.Since(start).Seconds())
	s.replLoadEnd()
	return nil
}

// loadAOF replays the AOF the manifest lists into the keyspace.
func (s *Server) loadAOF() persist.LoadResult {
	rp := s.newReplayer()
	defer rp.done()
	return s.pe.Load(rp, func(total int64) { s.startLoading(total) })
}

// aofReplayer runs an AOF's commands as Redis's AOF client: no replies,
// never blocked, obeyed on a read-only replica, nothing propagated. It
// holds the exclusive lock, letting others in every 1024 commands.
type aofReplayer struct {
	s     *Server
	c     *Client
	delay time.Duration
	held  bool
}

func (s *Server) newReplayer() *aofReplayer {
	c := &Client{srv: s, slot: s.goSlot, fd: -1, authed: true, inExec: true, replMaster: true, addr: ""}
	c.w.Proto = 2
	c.created = time.Now()
	us, _ := strconv.ParseInt(s.cfg.Get("key-load-delay"), 10, 64)
	rp := &aofReplayer{s: s, c: c, delay: time.Duration(us) * time.Microsecond}
	s.ks.Lock.Lock()
	rp.held = true
	return rp
}

func (rp *aofReplayer) done() {
	if rp.held {
		rp.s.ks.Lock.Unlock()
		rp.held = false
	}
}

func (rp *aofReplayer) LoadRDB(p []byte) (int, error) {
	n, err := rp.s.loadRDBData(p, false, rp.yield)
	if err != nil {
		rp.s.Warnf("%v", err)
	}
	return n, err
}

// yield lets other goroutines take the keyspace for a moment.
func (rp *aofReplayer) yield() {
	if rp.held {
		rp.s.ks.Lock.Unlock()
		rp.s.ks.Lock.Lock()
	}
}

func (rp *aofReplayer) Known(args [][]byte) bool {
	cmd := lookupCommand(args[0])
	if cmd == nil {
		return false
	}
	if cmd.sub != nil && len(args) >= 2 && cmd.lookupSub(args[1]) == nil {
		return false
	}
	return true
}

func (rp *aofReplayer) Exec(args [][]byte) {
	cmd := lookupCommand(args[0])
	if cmd.sub != nil && len(args) >= 2 {
		cmd = cmd.lookupSub(args[1])
	}
	if (cmd.Arity > 0 && cmd.Arity != len(args)) || len(args) < -cmd.Arity {
		return // an error reply nobody reads
	}
	c := rp.c
	c.w.Buf = c.w.Buf[:0]
	c.cur, c.curArgs = cmd, args
	cmd.Fn(c, args)
	c.w.Buf = c.w.Buf[:0]
	c.cur, c.curArgs = nil, nil
	if rp.delay > 0 {
		time.Sleep(rp.delay)
	}
}

func (rp *aofReplayer) Progress(n int64) {
	rp.s.loading.loaded.Add(n)
	rp.yield()
}

// loadRDB loads an RDB file's contents into the (empty) keyspace, letting
// other goroutines in every 1024 keys.
func (s *Server) loadRDB(b []byte) error {
	s.ks.Lock.Lock()
	yield := func() {
		s.ks.Lock.Unlock()
		s.ks.Lock.Lock()
	}
	_, err := s.loadRDBData(b, false, yield)
	s.ks.Lock.Unlock()
	return err
}

// loadRDBLocked is loadRDB for a caller holding the exclusive lock. With
// merge (DEBUG RELOAD MERGE) keys and function libraries in the file
// replace those already loaded; without it they are an error.
func (s *Server) loadRDBLocked(b []byte, merge bool) error {
	_, err := s.loadRDBData(b, merge, nil)
	return err
}

// loadRDBData loads the RDB image at the start of b and returns its
// length. yield, when not nil, is called every 1024 keys.
func (s *Server) loadRDBData(b []byte, merge bool, yield func()) (int, error) {
	ld := &s.loading
	ld.loadedKeys.Store(0)
	ld.expiredKeys.Store(0)
	now := s.ks.Now()
	ndb := s.ks.NumDBs()
	empty := 0
	us, _ := strconv.ParseInt(s.cfg.Get("key-load-delay"), 10, 64)
	keyDelay := time.Duration(us) * time.Microsecond
	keys := 0
	h := &rdb.Handler{
		Aux: func(k, v []byte) {
			s.replLoadAux(string(k), string(v))
			switch strings.ToLower(string(k)) {
			case "redis-ver":
				s.Logf("Loading RDB produced by version %s", v)
			case "ctime":
				t, _ := strconv.ParseInt(string(v), 10, 64)
				s.Logf("RDB age %d seconds", max(0, time.Now().Unix()-t))
			case "used-mem":
				m, _ := strconv.ParseInt(string(v), 10, 64)
				ld.usedMem.Store(m)
				s.Logf("RDB memory usage when created %.2f Mb", float64(m)/(1024*1024))
			}
		},
		SelectDB: func(db int) error {
			if db >= ndb {
				return fmt.Errorf("FATAL: Data file was created with a Redis server configured to handle more than %d databases. Exiting", ndb)
			}
			return nil
		},
		Function: func(code []byte) error {
			_, err := s.lua.eng.LoadLibrary(string(code), merge)
			return err
		},
		EmptyKey: func(db int, key []byte) {
			if empty++; empty <= 10 {
				s.Warnf("rdbLoadObject skipping empty key: %s", key)
			}
		},
		Key: func(r *rdb.Record) error {
			if keys++; keys%1024 == 0 && yield != nil {
				yield()
			}
			if keyDelay > 0 {
				time.Sleep(keyDelay)
			}
			if r.HasExpire && r.Expire < now && s.replLink() == nil {
				// A master drops keys that expired while it was down, and
				// its replicas learn of it from its backlog (a replica
				// keeps them until its master deletes them).
				ld.expiredKeys.Add(1)
				s.replLoadExpired(r.DB, r.Key)
				return nil
			}
			e := s.entryFromRDB(r.Value)
			if e == nil {
				return fmt.Errorf("Bad data format of key '%s' in DB %d (duplicate members or fields)", r.Key, r.DB)
			}
			db := s.ks.DB(r.DB)
			if db.Exists(r.Key) {
				if !merge {
					return fmt.Errorf("RDB has duplicated key '%s' in DB %d", r.Key, r.DB)
				}
				db.Delete(r.Key)
			}
			var exp int64
			if r.HasExpire {
				exp = max(r.Expire, 1)
			}
			db.AddExpire(r.Key, e, exp)
			if r.Freq >= 0 && s.isLFUPolicy() {
				e.SetLRU(s.ks.LFUValue(uint32(r.Freq)))
			} else if r.Idle >= 0 && !s.isLFUPolicy() {
				clock := s.ks.LRUClock()
				idle := uint32(min(r.Idle, lruClockMaxSecs))
				if idle <= clock {
					e.SetLRU(clock - idle)
				}
			}
			ld.loadedKeys.Add(1)
			ld.loaded.Store(int64(len(b))) // whole-file progress is not tracked per key
			return nil
		},
	}
	n, err := rdb.ReadPrefix(b, s.cfg.Get("rdbchecksum") != "no", h)
	if err != nil {
		var fe *rdb.FileError
		if errors.As(err, &fe) {
			if errors.Is(err, rdb.ErrChecksum) {
				return n, fmt.Errorf("Wrong RDB checksum. Aborting now.\nInternal error in RDB reading offset %d: %s (CRC error)\nTerminating server after rdb file reading failure.", fe.Off, fe.Msg)
			}
			return n, fmt.Errorf("Internal error in RDB reading offset %d: %s\nTerminating server after rdb file reading failure.", fe.Off, fe.Msg)
		}
		return n, err
	}
	if empty > 0 {
		s.Logf("Done loading RDB, keys loaded: %d, keys expired: %d, empty keys skipped: %d.", ld.loadedKeys.Load(), ld.expiredKeys.Load(), empty)
	} else {
		s.Logf("Done loading RDB, keys loaded: %d, keys expired: %d.", ld.loadedKeys.Load(), ld.expiredKeys.Load())
	}
	// A freshly loaded dataset is the one on disk.
	s.ks.MarkSaved()
	return n, nil
}

// debugLoadAOF is DEBUG LOADAOF: the AOF written out, the dataset
// emptied and loaded back from the files the manifest (read again from
// disk) lists. A load that fails stops the server, as in Redis.
func debugLoadAOF(c *Client) {
	s := c.srv
	if err := s.pe.ReloadManifest(); err != nil {
		s.fatalExit()
		return
	}
	s.startLoading(0)
	var res persist.LoadResult
	// The loop's other clients are served meanwhile (a stand-in), and
	// get -LOADING, as Redis processes events while it loads.
	s.whileHeld(c, 10*time.Millisecond, func() {
		rp := s.newReplayer()
		s.flushAllLocked()
		res = s.pe.Load(rp, func(total int64) { s.loading.total.Store(total) })
		rp.done()
	})
	s.stopLoading()
	if res.Status != persist.LoadOK && res.Status != persist.LoadEmpty && res.Status != persist.LoadNotExist {
		s.fatalExit()
		return
	}
	s.ks.MarkSaved()
	s.Warnf("Append Only File loaded by DEBUG LOADAOF")
	c.w.OK()
}

// flushAllLocked empties every database and the function libraries; the
// exclusive lock is held.
func (s *Server) flushAllLocked() {
	for i := 0; i < s.ks.NumDBs(); i++ {
		s.ks.DB(i).Flush()
		s.ks.DB(i).DropScanSnapshots()
	}
	s.flushFunctions()
}

// ---- INFO ----

// infoPersistence writes INFO's persistence section.
func (s *Server) infoPersistence(f func(format string, args ...any)) {
	pi := s.pe.Info()
	ld := &s.loading
	loading := ld.on.Load()
	// A replica loading its master's payload: loading, or async_loading
	// while clients are served the old dataset (repl-diskless-load
	// swapdb).
	rl := s.repl.loading.Load()
	f("loading:%d", b2i(loading || rl == loadingSync))
	f("async_loading:%d", b2i(rl == loadingAsync))
	cow, cowPeak, lastCOW := s.snapshotInfo()
	f("current_cow_peak:%d", cowPeak)
	f("current_cow_size:%d", cow)
	f("current_cow_size_age:0")
	f("current_fork_perc:%.2f", pi.ForkPerc)
	f("current_save_keys_processed:%d", pi.KeysDone)
	f("current_save_keys_total:%d", pi.KeysAll)
	f("rdb_changes_since_last_save:%d", s.ks.Dirty())
	f("rdb_bgsave_in_progress:%d", b2i(pi.BgsaveRunning || s.replSyncRunning()))
	f("rdb_last_save_time:%d", s.LastSave())
	f("rdb_last_bgsave_status:%s", okErr(pi.LastBgsaveOK))
	f("rdb_last_bgsave_time_sec:%d", pi.LastBgsaveSec)
	f("rdb_current_bgsave_time_sec:%d", pi.CurBgsaveSec)
	f("rdb_saves:%d", pi.RDBSaves)
	f("rdb_last_cow_size:%d", lastCOW)
	f("rdb_last_load_keys_expired:%d", ld.expiredKeys.Load())
	f("rdb_last_load_keys_loaded:%d", ld.loadedKeys.Load())
	f("aof_enabled:%d", b2i(pi.AOFEnabled))
	f("aof_rewrite_in_progress:%d", b2i(pi.RewriteRunning))
	f("aof_rewrite_scheduled:%d", b2i(pi.RewriteScheduled))
	f("aof_last_rewrite_time_sec:%d", pi.LastRewriteSec)
	f("aof_current_rewrite_time_sec:%d", pi.CurRewriteSec)
	f("aof_last_bgrewrite_status:%s", okErr(pi.LastRewriteOK))
	f("aof_rewrites:%d", pi.Rewrites)
	f("aof_rewrites_consecutive_failures:%d", pi.RewriteFailures)
	f("aof_last_write_status:%s", okErr(pi.LastWriteOK))
	f("aof_last_cow_size:0")
	f("module_fork_in_progress:0")
	f("module_fork_last_cow_size:0")
	if s.cfg.Get("appendonly") == "yes" {
		f("aof_current_size:%d", pi.CurrentSize)
		f("aof_base_size:%d", pi.BaseSize)
		f("aof_pending_rewrite:%d", b2i(pi.RewriteScheduled))
		f("aof_buffer_length:%d", pi.BufferLength)
		f("aof_pending_bio_fsync:%d", pi.PendingBioFsync)
		f("aof_delayed_fsync:%d", pi.DelayedFsync)
	}
	if loading {
		total, loaded := ld.total.Load(), ld.loaded.Load()
		perc, remaining := 0.0, int64(1)
		if total > 0 {
			perc = float64(loaded) / float64(total) * 100
			remaining = total - loaded
		}
		elapsed := time.Now().Unix() - ld.start.Load()
		eta := int64(1)
		if elapsed > 0 {
			eta = elapsed * remaining / (loaded + 1)
		}
		f("loading_start_time:%d", ld.start.Load())
		f("loading_total_bytes:%d", total)
		f("loading_rdb_used_mem:%d", ld.usedMem.Load())
		f("loading_loaded_bytes:%d", loaded)
		f("loading_loaded_perc:%.2f", perc)
		f("loading_eta_seconds:%d", eta)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func okErr(ok bool) string {
	if ok {
		return "ok"
	}
	return "err"
}

// ---- SHUTDOWN ----

// shutdownSave is the persistence step of SHUTDOWN: children are killed
// (an initial AOF being written refuses, unless force), the AOF is
// fsynced, and the dataset saved when save is set.
func (s *Server) shutdownSave(save, force bool) error {
	if err := s.pe.Shutdown(force); err != nil {
		return err
	}
	if !save {
		return nil
	}
	if s.lua.busySince.Load() != 0 {
		// The script holds the keyspace: no save (SHUTDOWN NOSAVE ends it).
		return errors.New("a script is running")
	}
	s.Logf("Saving the final RDB snapshot before exiting.")
	// Writes wait while the image is written (reads go on), so no write
	// is acknowledged that the file lacks; on failure they resume.
	paused := s.pause.typ.Load() == pauseOff
	if paused {
		s.pauseClients(pauseWrite, 1<<62)
	}
	err := s.Save()
	if err == nil {
		// A write that was past the pause's check when it began is in
		// the file too: the dataset is saved again, held, if it changed
		// after the cut.
		s.ks.Lock.Lock()
		if s.ks.Dirty() != 0 {
			err = s.saveLocked()
		}
		s.ks.Lock.Unlock()
	}
	if err != nil {
		if force {
			s.Warnf("Error trying to save the DB. Exit anyway.")
			return nil
		}
		s.Warnf("Error trying to save the DB, can't exit.")
		if paused {
			s.unpauseClients()
		}
		return err
	}
	return nil
}

// flushAllSave is FLUSHALL's persistence step (the exclusive lock is
// held): a running BGSAVE is aborted, and with save points configured the
// now empty dataset is saved, as Redis does.
func (s *Server) flushAllSave() {
	s.pe.KillRDBChild()
	s.abortReplSync()
	if len(strings.Fields(s.cfg.Get("save"))) > 0 {
		s.saveLocked()
	}
}
