package server

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
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

// The server as an RDB file being loaded sees it (persist.RDBSink).
func (h persistHost) Aux(k, v string) { h.s.replLoadAux(k, v) }
func (h persistHost) Function(code []byte, merge bool) error {
	_, err := h.s.lua.eng.LoadLibrary(string(code), merge)
	return err
}
func (h persistHost) Limits() rdb.Limits { return h.s.rdbLimits() }
func (h persistHost) LFU() bool          { return h.s.isLFUPolicy() }

// DropExpired: a master drops keys that expired while it was down, and
// its replicas learn of it from its backlog (a replica keeps them until
// its master deletes them).
func (h persistHost) DropExpired(db int, key []byte) bool {
	if !h.s.iAmMaster() {
		return false
	}
	h.s.replLoadExpired(db, key)
	return true
}

// wirePersistence creates the persistence engine.
func (s *Server) wirePersistence() {
	s.pe = persist.New(persistHost{s}, Version, func() { s.fatalExit() })
	s.pe.ChildStarted = func(pid int) { s.cfg.ApplyChildOOMScore(pid) }
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
	s.cfg.Hooks.Loading = func() bool { return s.loading.On.Load() || s.repl.loading.Load() == loadingSync }
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
// key at once: not while a dataset loads, nor on a replica, where it is
// set as it is and the master's DEL removes it (Redis's
// checkAlreadyExpired).
func (s *Server) alreadyExpired(when int64) bool {
	return when <= s.ks.Now() && !s.loading.On.Load() && s.replLink() == nil
}

// iAmMaster is Redis's iAmMaster: this server is not a replica; in
// cluster mode, its node is a master (the cluster starts, with its
// nodes.conf, before the dataset loads).
func (s *Server) iAmMaster() bool {
	if s.cluster != nil {
		return !s.cluster.IsReplica()
	}
	return s.replLink() == nil
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
	if s.loading.On.Load() {
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

// loadState is what INFO shows while a dataset loads, and of the last
// RDB load (Server.loading).
type loadState = persist.LoadState

func (s *Server) startLoading(total int64) {
	s.ks.Loading.Store(true)
	s.loading.Begin(total)
	s.gateUpdate()
}

func (s *Server) stopLoading() {
	s.ks.Loading.Store(false)
	s.loading.On.Store(false)
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
// reason is logged. In cluster mode the dataset is then checked against
// the slots (verifyClusterData).
func (s *Server) LoadDataFile() error {
	defer s.stopLoading()
	if err := s.loadDataFile(); err != nil {
		return err
	}
	return s.verifyClusterData()
}

func (s *Server) loadDataFile() error {
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
	delay persist.KeyDelay // key-load-delay, after each command
	held  bool
}

func (s *Server) newReplayer() *aofReplayer {
	c := &Client{srv: s, slot: s.goSlot, fd: -1, authed: true, inExec: true, replMaster: true, addr: ""}
	c.w.Proto = 2
	c.created = time.Now()
	us, _ := strconv.ParseInt(s.cfg.Get("key-load-delay"), 10, 64)
	rp := &aofReplayer{s: s, c: c, delay: persist.KeyDelay{Usec: us}}
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
	n, err := rp.s.loadRDBData(p, false, rp.pause)
	if err != nil {
		rp.s.Warnf("%v", err)
	}
	return n, err
}

// pause lets other goroutines take the keyspace for a moment, and sleeps
// d meanwhile.
func (rp *aofReplayer) pause(d time.Duration) {
	if rp.held {
		rp.s.ks.Lock.Unlock()
	}
	if d > 0 {
		time.Sleep(d)
	}
	if rp.held {
		rp.s.ks.Lock.Lock()
	}
}

func (rp *aofReplayer) Known(args [][]byte) bool {
	cmd := rp.s.lookupCommandOrOriginal(args[0])
	if cmd == nil {
		return false
	}
	if cmd.sub != nil && len(args) >= 2 && cmd.lookupSub(args[1]) == nil {
		return false
	}
	return true
}

func (rp *aofReplayer) Exec(args [][]byte) {
	cmd := rp.s.lookupCommandOrOriginal(args[0])
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
	rp.delay.Key(rp.pause)
}

func (rp *aofReplayer) Progress(n int64) {
	rp.s.loading.Loaded.Add(n)
	rp.pause(0)
}

// loadRDB loads an RDB file's contents into the (empty) keyspace, letting
// other goroutines in every 1024 keys, every
// loading-process-events-interval-bytes, and while key-load-delay sleeps.
func (s *Server) loadRDB(b []byte) error {
	s.ks.Lock.Lock()
	_, err := s.loadRDBData(b, false, func(d time.Duration) {
		s.ks.Lock.Unlock()
		if d > 0 {
			time.Sleep(d)
		}
		s.ks.Lock.Lock()
	})
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
// length (persist.LoadRDB). pause, when not nil, lets other goroutines
// take the keyspace for a moment and sleeps d meanwhile: it is called
// every 1024 keys and every loading-process-events-interval-bytes (d 0),
// and for key-load-delay's sleeps.
func (s *Server) loadRDBData(b []byte, merge bool, pause func(d time.Duration)) (int, error) {
	us, _ := strconv.ParseInt(s.cfg.Get("key-load-delay"), 10, 64)
	every, _ := strconv.ParseInt(s.cfg.Get("loading-process-events-interval-bytes"), 10, 64)
	opt := persist.LoadRDBOptions{
		Verify: s.cfg.Get("rdbchecksum") != "no" && !s.skipChecksum.Load(), Merge: merge,
		KeyDelay: us, Sleep: pause, YieldBytes: every,
	}
	if pause != nil {
		opt.Yield = func() { pause(0) }
	}
	return persist.LoadRDB(s.ks, b, persistHost{s}, &s.loading, opt)
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
		res = s.pe.Load(rp, func(total int64) { s.loading.Total.Store(total) })
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
	// A replica loading its master's payload: loading, or async_loading
	// while clients are served the old dataset (repl-diskless-load
	// swapdb).
	rl := s.repl.loading.Load()
	cow, cowPeak, lastCOW := s.snapshotInfo()
	persist.WriteInfo(f, pi, persist.HostInfo{
		ReplLoading: rl == loadingSync, AsyncLoading: rl == loadingAsync,
		COW: cow, COWPeak: cowPeak, LastCOW: lastCOW,
		Dirty: s.ks.Dirty(), SyncSaving: s.replSyncRunning(), LastSave: s.LastSave(),
		AppendOnly: s.cfg.Get("appendonly") == "yes",
	}, &s.loading)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
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
