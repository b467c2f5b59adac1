package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// RDB persistence (Redis's rdb.c): SAVE, BGSAVE, automatic saves on the
// "save" points, the save before SHUTDOWN, and loading dbfilename at
// start-up, in Redis 7.0's RDB format (version 10).
//
// There is no fork. A snapshot is taken with the keyspace's exclusive
// lock held (every command, transaction and script is excluded for that
// time): each shard's live keys are encoded, in parallel, into memory
// buffers, exactly as they are at that instant, and the lock is released.
// Writing the file (header, functions, the buffers, EOF and CRC-64, to a
// temporary file renamed over dbfilename) happens after, without the
// lock: for BGSAVE in a goroutine while the server keeps serving, for
// SAVE in the calling client's turn, as Redis's SAVE blocks its caller.
// The cost is the encoding time under the lock (the pause) and memory for
// the encoded dataset until the file is written.

func init() {
	register(
		&Command{Name: "save", Arity: 1, Flags: []string{"admin", "noscript", "no_async_loading", "no_multi"}, Group: "server", Since: "1.0.0", Summary: "Synchronously save the dataset to disk", Complexity: "O(N) where N is the total number of keys in all databases", Fn: saveCommand},
		&Command{Name: "bgsave", Arity: -1, Flags: []string{"admin", "noscript", "no_async_loading"}, Group: "server", Since: "1.0.0", Summary: "Asynchronously save the dataset to disk", Complexity: "O(1)", Fn: bgsaveCommand},
	)
}

const (
	errBgsaveInProgress = "ERR Background save already in progress"
	bgsaveRetryDelay    = 5 // seconds (CONFIG_BGSAVE_RETRY_DELAY)
)

// persistState is the server's saving and loading state (INFO persistence).
type persistState struct {
	mu        sync.Mutex
	bgRunning bool
	bgStart   time.Time
	bgCancel  chan struct{} // closed to abort the running BGSAVE
	bgDone    chan struct{} // closed when it has ended
	scheduled bool          // BGSAVE SCHEDULE (or inside MULTI) pending
	lastBgTry int64         // unix seconds
	lastBgOK  bool
	lastBgSec int64 // duration of the last BGSAVE, -1 if none

	// writeMu serializes file writers; seq orders snapshots so that an
	// older snapshot never replaces a newer one on disk.
	writeMu  sync.Mutex
	seq      uint64 // last snapshot taken (under the exclusive lock)
	written  uint64 // newest snapshot written
	saves    atomic.Int64
	keysDone atomic.Int64 // current_save_keys_processed
	keysAll  atomic.Int64 // current_save_keys_total

	loadedKeys  atomic.Int64
	expiredKeys atomic.Int64

	// The snapshot pause of the latest BGSAVE (INFO latest_fork_usec, the
	// nearest thing to Redis's fork time) and the number of BGSAVEs
	// (total_forks).
	pauseUs atomic.Int64
	bgsaves atomic.Int64
}

// snapshot is the encoded dataset at one instant.
type snapshot struct {
	seq     uint64
	dirty   uint64 // the keyspace's DirtyTotal at the snapshot
	ctime   int64
	usedMem uint64
	funcs   []string
	dbs     []dbSnapshot
	keys    int64
}

type dbSnapshot struct {
	id            int
	size, expires uint64
	chunks        []snapChunk
}

type snapChunk struct {
	buf           []byte
	keys, expires int
}

// takeSnapshot encodes the whole dataset. The exclusive lock must be held.
func (s *Server) takeSnapshot() *snapshot {
	p := &s.persist
	p.seq++
	snap := &snapshot{seq: p.seq, dirty: s.ks.DirtyTotal(), ctime: time.Now().Unix(), usedMem: readMemory().used}
	for _, l := range s.lua.eng.Libraries() {
		snap.funcs = append(snap.funcs, l.Code)
	}
	now := s.ks.Now()
	ndb := s.ks.NumDBs()
	chunks := make([]snapChunk, ndb*store.NShards)
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := max(1, min(runtime.GOMAXPROCS(0), 16))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= len(chunks) {
					return
				}
				chunks[j] = s.encodeShard(s.ks.DB(j/store.NShards), j%store.NShards, now)
			}
		}()
	}
	wg.Wait()
	for d := range ndb {
		ds := dbSnapshot{id: d}
		for _, ch := range chunks[d*store.NShards : (d+1)*store.NShards] {
			if ch.keys == 0 {
				continue
			}
			ds.size += uint64(ch.keys)
			ds.expires += uint64(ch.expires)
			ds.chunks = append(ds.chunks, ch)
		}
		if ds.size > 0 {
			snap.keys += int64(ds.size)
			snap.dbs = append(snap.dbs, ds)
		}
	}
	return snap
}

// encodeShard encodes the live keys of one shard as RDB key-value records.
func (s *Server) encodeShard(db *store.DB, shard int, now int64) snapChunk {
	var ch snapChunk
	if n := db.ShardLen(shard); n > 0 {
		// Room for small keys; bigger values grow the buffer.
		ch.buf = make([]byte, 0, n*32)
	}
	db.EachInShard(shard, now, func(key string, e *store.Entry, expire int64) bool {
		typ, ok := rdbType(e)
		if !ok {
			return true // no other types exist in the store
		}
		if expire != 0 {
			ch.buf = rdb.AppendExpireMs(ch.buf, expire)
			ch.expires++
		}
		ch.buf = rdb.AppendKey(ch.buf, typ, strBytes(key))
		ch.buf = s.appendRDBValue(ch.buf, e)
		ch.keys++
		return true
	})
	return ch
}

// crcWriter writes through a buffer and keeps the running CRC-64.
type crcWriter struct {
	w   *bufio.Writer
	crc uint64
}

func (w *crcWriter) write(p []byte) error {
	w.crc = rdb.CRC64(w.crc, p)
	_, err := w.w.Write(p)
	return err
}

var errSaveAborted = errors.New("save aborted")

// writeSnapshot writes snap to dbfilename in the working directory (the
// "dir" directive), through a temporary file that is synced and renamed
// over it. cancel, when closed, aborts the write.
func (s *Server) writeSnapshot(snap *snapshot, cancel <-chan struct{}) error {
	p := &s.persist
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if snap.seq < p.written {
		return nil // a newer snapshot is already on disk
	}
	p.keysDone.Store(0)
	p.keysAll.Store(snap.keys)
	defer func() { p.keysDone.Store(0); p.keysAll.Store(0) }()
	tmp := fmt.Sprintf("temp-%d.rdb", os.Getpid())
	f, err := os.Create(tmp)
	if err != nil {
		s.Warnf("Failed opening the temp RDB file %s (in server root dir %s) for saving: %s", tmp, workDir(), strerror(err))
		return err
	}
	fail := func(op string, err error) error {
		if err != errSaveAborted {
			s.Warnf("Write error saving DB on disk(%s): %s", op, strerror(err))
		}
		f.Close()
		os.Remove(tmp)
		return err
	}
	w := &crcWriter{w: bufio.NewWriterSize(f, 1<<20)}
	head := rdb.AppendHeader(nil)
	head = rdb.AppendAux(head, "redis-ver", Version)
	head = rdb.AppendAuxInt(head, "redis-bits", 64)
	head = rdb.AppendAuxInt(head, "ctime", snap.ctime)
	head = rdb.AppendAuxInt(head, "used-mem", int64(snap.usedMem))
	head = rdb.AppendAuxInt(head, "aof-base", 0)
	for _, code := range snap.funcs {
		head = rdb.AppendFunction(head, []byte(code))
	}
	if err := w.write(head); err != nil {
		return fail("rdbSaveRio", err)
	}
	delay := s.cfg.Get("rdb-key-save-delay")
	delayUs, _ := strconv.ParseInt(delay, 10, 64)
	var tmpBuf []byte
	for _, ds := range snap.dbs {
		tmpBuf = rdb.AppendSelectDB(tmpBuf[:0], ds.id, ds.size, ds.expires)
		if err := w.write(tmpBuf); err != nil {
			return fail("rdbSaveRio", err)
		}
		for _, ch := range ds.chunks {
			select {
			case <-cancel:
				return fail("rdbSaveRio", errSaveAborted)
			default:
			}
			if err := w.write(ch.buf); err != nil {
				return fail("rdbSaveRio", err)
			}
			p.keysDone.Add(int64(ch.keys))
			if delayUs > 0 {
				// rdb-key-save-delay (tests): microseconds per key.
				if !sleepOrCancel(time.Duration(delayUs)*time.Microsecond*time.Duration(ch.keys), cancel) {
					return fail("rdbSaveRio", errSaveAborted)
				}
			}
		}
	}
	tail := []byte{rdb.OpEOF}
	if err := w.write(tail); err != nil {
		return fail("rdbSaveRio", err)
	}
	crc := w.crc
	if s.cfg.Get("rdbchecksum") == "no" {
		crc = 0
	}
	if _, err := w.w.Write(binary.LittleEndian.AppendUint64(nil, crc)); err != nil {
		return fail("rdbSaveRio", err)
	}
	if err := w.w.Flush(); err != nil {
		return fail("fflush", err)
	}
	if err := f.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		s.Warnf("Write error saving DB on disk(fclose): %s", strerror(err))
		return err
	}
	name := s.cfg.Get("dbfilename")
	if err := os.Rename(tmp, name); err != nil {
		s.Warnf("Error moving temp DB file %s on the final destination %s (in server root dir %s): %s", tmp, name, workDir(), strerror(err))
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(name)); err == nil {
		d.Sync()
		d.Close()
	}
	p.written = snap.seq
	s.lastSave.Store(s.ks.Clock().Now().Unix())
	// Changes made after the snapshot remain unsaved.
	if snap.dirty > s.ks.DirtyTotal()-s.ks.Dirty() {
		s.ks.MarkSavedAt(snap.dirty)
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

// Save saves the dataset now (SAVE): snapshot under the exclusive lock,
// then the file. It fails while a BGSAVE runs.
func (s *Server) Save() error {
	if s.bgsaveRunning() {
		return errors.New(errBgsaveInProgress)
	}
	s.ks.Lock.Lock()
	snap := s.takeSnapshot()
	s.ks.Lock.Unlock()
	return s.finishSave(snap)
}

// saveLocked is Save for a caller that holds the exclusive lock.
func (s *Server) saveLocked() error {
	return s.finishSave(s.takeSnapshot())
}

func (s *Server) finishSave(snap *snapshot) error {
	s.persist.saves.Add(1)
	if err := s.writeSnapshot(snap, nil); err != nil {
		return err
	}
	s.Logf("DB saved on disk")
	s.persist.mu.Lock()
	s.persist.lastBgOK = true
	s.persist.mu.Unlock()
	return nil
}

func (s *Server) bgsaveRunning() bool {
	s.persist.mu.Lock()
	defer s.persist.mu.Unlock()
	return s.persist.bgRunning
}

// BGSave starts a background save; it fails if one is already running.
func (s *Server) BGSave() error { return s.bgsave(false) }

// bgsave starts a background save. lockHeld: the caller holds the
// exclusive lock (else it is taken for the snapshot).
func (s *Server) bgsave(lockHeld bool) error {
	p := &s.persist
	if s.bgsaveRunning() {
		return errors.New(errBgsaveInProgress) // without stalling every client for the lock
	}
	// The lock first: FLUSHALL, holding it, waits for a running BGSAVE to
	// end, so a BGSAVE must not be marked running while it waits for it.
	t0 := time.Now()
	if !lockHeld {
		s.ks.Lock.Lock()
	}
	t1 := time.Now()
	p.mu.Lock()
	if p.bgRunning {
		p.mu.Unlock()
		if !lockHeld {
			s.ks.Lock.Unlock()
		}
		return errors.New(errBgsaveInProgress)
	}
	p.bgRunning = true
	p.scheduled = false
	p.bgStart = t1
	p.lastBgTry = t1.Unix()
	cancel, done := make(chan struct{}), make(chan struct{})
	p.bgCancel, p.bgDone = cancel, done
	p.mu.Unlock()
	p.saves.Add(1)
	snap := s.takeSnapshot()
	// INFO shows the save's size from the moment BGSAVE replies, as
	// Redis's does from its fork.
	p.keysDone.Store(0)
	p.keysAll.Store(snap.keys)
	if !lockHeld {
		s.ks.Lock.Unlock()
	}
	pause := time.Since(t1)
	p.pauseUs.Store(pause.Microseconds())
	p.bgsaves.Add(1)
	s.Logf("Background saving started: snapshot of %d keys in %.3f ms (%.3f ms waiting for the lock)", snap.keys, float64(pause.Microseconds())/1000, float64(t1.Sub(t0).Microseconds())/1000)
	go func() {
		err := s.writeSnapshot(snap, cancel)
		p.mu.Lock()
		p.bgRunning = false
		p.lastBgSec = int64(time.Since(p.bgStart).Seconds())
		switch {
		case err == nil:
			s.Logf("Background saving terminated with success")
			p.lastBgOK = true
		case err == errSaveAborted:
			s.Warnf("Background saving terminated by request")
		default:
			s.Warnf("Background saving error")
			p.lastBgOK = false
		}
		close(done)
		p.mu.Unlock()
	}()
	return nil
}

// killBgsave aborts a running BGSAVE and waits for it to end (FLUSHALL,
// SHUTDOWN): its temporary file is removed and dbfilename is untouched.
func (s *Server) killBgsave() {
	p := &s.persist
	p.mu.Lock()
	if !p.bgRunning {
		p.mu.Unlock()
		return
	}
	select {
	case <-p.bgCancel:
	default:
		close(p.bgCancel)
	}
	done := p.bgDone
	p.mu.Unlock()
	<-done
}

func saveCommand(c *Client, args [][]byte) {
	if err := c.srv.Save(); err != nil {
		if err.Error() == errBgsaveInProgress {
			c.w.Error(errBgsaveInProgress)
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
	_ = schedule // no other child process (AOF rewrite) can delay a BGSAVE
	s := c.srv
	if c.inExec {
		// Redis schedules a BGSAVE asked for inside a transaction.
		if s.bgsaveRunning() {
			c.w.Error(errBgsaveInProgress)
			return
		}
		s.persist.mu.Lock()
		s.persist.scheduled = true
		s.persist.mu.Unlock()
		c.w.Simple("Background saving scheduled")
		return
	}
	if err := s.bgsave(false); err != nil {
		c.w.Error(err.Error())
		return
	}
	c.w.Simple("Background saving started")
}

// saveParams parses the "save" directive: (seconds, changes) pairs.
func (s *Server) saveParams() [][2]int64 {
	f := strings.Fields(showNumbers("save")(s.cfg))
	var out [][2]int64
	for i := 0; i+1 < len(f); i += 2 {
		sec, _ := strconv.ParseInt(f[i], 10, 64)
		ch, _ := strconv.ParseInt(f[i+1], 10, 64)
		out = append(out, [2]int64{sec, ch})
	}
	return out
}

// persistCron starts the BGSAVEs that are due: a scheduled one, or one
// whose save point is reached (serverCron's checks).
func (s *Server) persistCron() {
	p := &s.persist
	now := time.Now().Unix()
	p.mu.Lock()
	if p.bgRunning {
		p.mu.Unlock()
		return
	}
	retryOK := now-p.lastBgTry > bgsaveRetryDelay || p.lastBgOK
	scheduled := p.scheduled
	p.mu.Unlock()
	if !retryOK {
		return
	}
	if scheduled {
		go s.bgsave(false)
		return
	}
	params := s.saveParams()
	if len(params) == 0 {
		return // no save points (sluice-server's default): nothing to count
	}
	dirty := int64(s.ks.Dirty())
	elapsed := s.ks.Clock().Now().Unix() - s.LastSave()
	for _, sp := range params {
		if dirty >= sp[1] && elapsed > sp[0] {
			s.Logf("%d changes in %d seconds. Saving...", sp[1], sp[0])
			// Mark it running before the goroutine takes the lock, so the
			// next tick does not start another.
			p.mu.Lock()
			p.scheduled = true
			p.mu.Unlock()
			go s.bgsave(false)
			return
		}
	}
}

// ---- loading ----

// LoadDataFile loads dbfilename from the working directory (the "dir"
// directive) into the keyspace, as redis-server does at start-up. A
// missing file is not an error. Keys already expired are skipped.
func (s *Server) LoadDataFile() error {
	name := s.cfg.Get("dbfilename")
	b, err := os.ReadFile(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("Fatal error loading the DB: %s. Exiting.", strerror(err))
	}
	start := time.Now()
	if err := s.loadRDB(b); err != nil {
		return err
	}
	s.Logf("DB loaded from disk: %.3f seconds", time.Since(start).Seconds())
	return nil
}

// loadRDB loads an RDB file's contents into the (empty) keyspace.
func (s *Server) loadRDB(b []byte) error {
	s.ks.Lock.Lock()
	defer s.ks.Lock.Unlock()
	return s.loadRDBLocked(b, false)
}

// loadRDBLocked is loadRDB for a caller holding the exclusive lock. With
// merge (DEBUG RELOAD MERGE) keys and function libraries in the file
// replace those already loaded; without it they are an error.
func (s *Server) loadRDBLocked(b []byte, merge bool) error {
	p := &s.persist
	p.loadedKeys.Store(0)
	p.expiredKeys.Store(0)
	now := s.ks.Now()
	ndb := s.ks.NumDBs()
	empty := 0
	h := &rdb.Handler{
		Aux: func(k, v []byte) {
			switch strings.ToLower(string(k)) {
			case "redis-ver":
				s.Logf("Loading RDB produced by version %s", v)
			case "ctime":
				t, _ := strconv.ParseInt(string(v), 10, 64)
				s.Logf("RDB age %d seconds", max(0, time.Now().Unix()-t))
			case "used-mem":
				m, _ := strconv.ParseInt(string(v), 10, 64)
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
			if r.HasExpire && r.Expire < now {
				p.expiredKeys.Add(1)
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
			p.loadedKeys.Add(1)
			return nil
		},
	}
	if err := rdb.ReadFile(b, s.cfg.Get("rdbchecksum") != "no", h); err != nil {
		var fe *rdb.FileError
		if errors.As(err, &fe) {
			return fmt.Errorf("Internal error in RDB reading offset %d: %s\nTerminating server after rdb file reading failure.", fe.Off, fe.Msg)
		}
		return err
	}
	if empty > 0 {
		s.Logf("Done loading RDB, keys loaded: %d, keys expired: %d, empty keys skipped: %d.", p.loadedKeys.Load(), p.expiredKeys.Load(), empty)
	} else {
		s.Logf("Done loading RDB, keys loaded: %d, keys expired: %d.", p.loadedKeys.Load(), p.expiredKeys.Load())
	}
	// A freshly loaded dataset is the one on disk.
	s.ks.MarkSaved()
	return nil
}

// ---- INFO and SHUTDOWN ----

type persistInfo struct {
	running, lastOK          bool
	lastSec, curSec          int64
	keysDone, keysAll, saves int64
	loaded, expired          int64
	forkPerc                 float64
}

func (s *Server) persistInfo() persistInfo {
	p := &s.persist
	p.mu.Lock()
	pi := persistInfo{running: p.bgRunning, lastOK: p.lastBgOK, lastSec: p.lastBgSec, curSec: -1}
	if p.bgRunning {
		pi.curSec = int64(time.Since(p.bgStart).Seconds())
	}
	p.mu.Unlock()
	pi.keysDone, pi.keysAll = p.keysDone.Load(), p.keysAll.Load()
	if pi.running && pi.keysAll > 0 {
		pi.forkPerc = float64(pi.keysDone) * 100 / float64(pi.keysAll)
	}
	pi.saves = p.saves.Load()
	pi.loaded, pi.expired = p.loadedKeys.Load(), p.expiredKeys.Load()
	return pi
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

// shutdownSave is the save before SHUTDOWN: a running BGSAVE is aborted,
// then the dataset is saved synchronously.
func (s *Server) shutdownSave() error {
	if s.lua.busySince.Load() != 0 {
		return errors.New("a script is running")
	}
	s.killBgsave()
	s.Logf("Saving the final RDB snapshot before exiting.")
	return s.Save()
}

// PrepareShutdown runs what a signal's shutdown does before the server
// stops (shutdown-on-sigterm / shutdown-on-sigint): the final save when
// save points are configured ("default"), always ("save") or never
// ("nosave"). A failed save returns an error, and the server should keep
// running, unless "force" is set.
func (s *Server) PrepareShutdown(sig string) error {
	flags := " " + s.cfg.Get("shutdown-on-"+sig) + " "
	save := strings.Contains(flags, " save ")
	nosave := strings.Contains(flags, " nosave ")
	force := strings.Contains(flags, " force ")
	if nosave || !save && len(s.saveParams()) == 0 {
		s.killBgsave()
		return nil
	}
	if err := s.shutdownSave(); err != nil {
		if force {
			s.Warnf("Error trying to save the DB. Exit anyway.")
			return nil
		}
		s.Warnf("Error trying to save the DB, can't exit.")
		return err
	}
	return nil
}

// flushAllSave is FLUSHALL's persistence step (the exclusive lock is
// held): a running BGSAVE is aborted, and with save points configured the
// now empty dataset is saved, as Redis does.
func (s *Server) flushAllSave() {
	s.killBgsave()
	if len(s.saveParams()) > 0 {
		s.saveLocked()
	}
}
