package repl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// Loading a full sync's payload on a replica, after Redis 7.0's
// readSyncBulkPayload. repl-diskless-load says how: written to disk
// first (disabled), read straight from the socket into the emptied
// dataset (on-empty-db, when it is empty), or into a dataset aside that
// replaces the old one once whole (swapdb: clients go on reading the old
// one while the replication id is the master's). The server (Loader)
// owns the dataset: it adds the keys and function libraries, empties and
// swaps.

// Loading states (INFO's loading and async_loading), Master.Loading.
const (
	LoadingNone = iota
	LoadingSync
	LoadingAsync
)

// LoadConfig is the configuration a load reads.
type LoadConfig struct {
	Mode       string        // repl-diskless-load
	DBFilename string        // dbfilename
	Checksum   bool          // rdbchecksum
	KeyDelay   int64         // key-load-delay, microseconds
	Watchdog   time.Duration // watchdog-period (0: off)
	// EventsEvery is loading-process-events-interval-bytes: how often a
	// load that holds the server lets the commands waiting on it be
	// answered -LOADING (Master.LoadPoint).
	EventsEvery int64
}

// Loader is the server a master's payload is loaded into.
type Loader interface {
	Logger
	LoadConfig() LoadConfig
	// Current reports whether the link loading is still the server's.
	Current() bool
	NumDBs() int
	DatasetEmpty() bool
	// StopAOF stops the AOF for the load and returns what starts it
	// again (nil when it was off).
	StopAOF() (restart func())
	// Detach ends this server's own history: its replicas must sync
	// again and its backlog is of no use (replicationAttachToNewMaster).
	Detach()
	// Flush empties the dataset and the function libraries.
	Flush()
	// AddKey adds a key of the payload to the dataset, or to aside when
	// set; false when its value is malformed.
	AddKey(aside *store.Keyspace, rec *rdb.Record) bool
	// LoadFunction loads a function library into the dataset.
	LoadFunction(code []byte) error
	// NewAside returns an empty dataset to load aside; SwapAside puts it
	// in place of the dataset, with the function libraries it holds.
	NewAside() *store.Keyspace
	SwapAside(aside *store.Keyspace, funcs []string)
	// Loaded makes the stream id, cut at offset and continued in
	// database db, this server's history (it fails when the link was
	// replaced meanwhile).
	Loaded(id string, offset int64, db int) error
}

// errReplaced ends a load whose link was replaced (REPLICAOF).
var errReplaced = errors.New("replaced")

// LoadFullSync loads the payload of a full sync of the stream id from
// offset into h.
func (m *Master) LoadFullSync(h Loader, id string, offset int64, hdr PayloadHeader, payload io.Reader) error {
	cfg := h.LoadConfig()
	diskless := cfg.Mode == "swapdb" || cfg.Mode == "on-empty-db" && h.DatasetEmpty()
	target := "disk"
	if diskless {
		target = "parser"
	}
	if hdr.Size < 0 {
		h.Logf("MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to %s", target)
	} else {
		h.Logf("MASTER <-> REPLICA sync: receiving %d bytes from master to %s", hdr.Size, target)
	}
	if !h.Current() {
		return errReplaced
	}
	if restart := h.StopAOF(); restart != nil {
		// The AOF starts again after the load, with a rewrite of the new
		// dataset (Redis's restartAOFAfterSYNC).
		defer restart()
	}
	ld := &load{m: m, h: h, cfg: cfg}
	var err error
	switch {
	case !diskless:
		err = ld.viaDisk(payload)
	case cfg.Mode == "swapdb":
		m.mu.Lock()
		async := m.ID == id
		m.mu.Unlock()
		err = ld.aside(payload, async)
	default:
		h.Detach()
		done := ld.loading(LoadingSync)
		h.Logf("MASTER <-> REPLICA sync: Flushing old data")
		h.Flush()
		h.Logf("MASTER <-> REPLICA sync: Loading DB in memory")
		if err = ld.run(payload); err != nil {
			h.Warnf("Failed trying to load the MASTER synchronization DB from socket, check server logs.")
			h.Flush()
		}
		done()
	}
	if err != nil {
		return err
	}
	if err := h.Loaded(id, offset, ld.streamDB); err != nil {
		return err
	}
	h.Logf("MASTER <-> REPLICA sync: Finished with success")
	return nil
}

// load is one payload being loaded.
type load struct {
	m        *Master
	h        Loader
	cfg      LoadConfig
	into     *store.Keyspace // a dataset aside; nil: the server's
	funcs    []string        // the libraries loaded aside
	streamDB int
	loaded   int64
}

// tempSeq tells apart the temporary files of loads in one process.
var tempSeq atomic.Int64

// viaDisk writes the payload to a temporary file, renames it over
// dbfilename and loads it (repl-diskless-load disabled).
func (ld *load) viaDisk(payload io.Reader) error {
	h := ld.h
	// Servers in one process share the working directory: the name is
	// the process's and this load's.
	tmp := fmt.Sprintf("temp-%d.%d.%d.rdb", time.Now().Unix(), os.Getpid(), tempSeq.Add(1))
	f, err := os.Create(tmp)
	if err != nil {
		h.Warnf("Opening the temp file needed for MASTER <-> REPLICA synchronization: %s", persist.Strerror(err))
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	_, err = io.Copy(bw, payload)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err != nil {
		os.Remove(tmp)
		h.Warnf("I/O error trying to sync with MASTER: %v", err)
		return err
	}
	h.Detach()
	// Opened before the rename: the load reads this payload even if
	// another server of the process renames its own over dbfilename.
	f, err = os.Open(tmp)
	if err != nil {
		os.Remove(tmp)
		return err
	}
	defer f.Close()
	if err := os.Rename(tmp, ld.cfg.DBFilename); err != nil {
		h.Warnf("Failed trying to rename the temp DB into %s in MASTER <-> REPLICA synchronization: %s", ld.cfg.DBFilename, persist.Strerror(err))
		os.Remove(tmp)
		return err
	}
	defer ld.loading(LoadingSync)()
	h.Logf("MASTER <-> REPLICA sync: Flushing old data")
	h.Flush()
	h.Logf("MASTER <-> REPLICA sync: Loading DB in memory")
	if err := ld.run(bufio.NewReaderSize(f, 1<<20)); err != nil {
		h.Warnf("Failed trying to load the MASTER synchronization DB from disk, check server logs.")
		h.Flush()
		return err
	}
	return nil
}

// aside loads the payload into a dataset aside and swaps it in once
// whole (swapdb). async: clients go on with the old dataset meanwhile
// (the master's replication id is ours); else they get -LOADING.
func (ld *load) aside(payload io.Reader, async bool) error {
	h := ld.h
	state := int32(LoadingSync)
	if async {
		state = LoadingAsync
	}
	h.Logf("MASTER <-> REPLICA sync: Loading DB in memory")
	ld.into = h.NewAside()
	defer ld.loading(state)()
	if err := ld.run(payload); err != nil {
		h.Warnf("Failed trying to load the MASTER synchronization DB from socket, check server logs.")
		h.Logf("MASTER <-> REPLICA sync: Discarding temporary DB in background")
		return err
	}
	h.Detach()
	h.Logf("MASTER <-> REPLICA sync: Swapping active DB with loaded DB")
	h.SwapAside(ld.into, ld.funcs)
	h.Logf("MASTER <-> REPLICA sync: Discarding old DB in background")
	return nil
}

// loading puts the server in the loading state given (INFO's loading or
// async_loading) until done is called.
func (ld *load) loading(state int32) (done func()) {
	m := ld.m
	m.mu.Lock()
	m.loadPoint, m.loadSeen = make(chan struct{}), false
	m.mu.Unlock()
	m.Loading.Store(state)
	return func() {
		m.Loading.Store(LoadingNone)
		m.mu.Lock()
		close(m.loadPoint)
		m.loadPoint = nil
		m.mu.Unlock()
	}
}

// LoadPoint is closed at the next point where the load lets waiting
// commands be answered, or at its end (nil: no load, or the load has
// passed such a point already). Redis loads a payload on its main thread
// and serves its clients every loading-process-events-interval-bytes
// only: until its first point, a command that a load refuses waits for
// that point (then gets -LOADING), or for the load's end (then runs), as
// it waits in Redis, so a small payload is never seen loading. After it,
// such a command is refused at once: Redis answers every client that
// waits at each point, where waiting for the next point one command
// after another would hold up an event loop's clients for a point each.
func (m *Master) LoadPoint() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loadSeen {
		return nil
	}
	return m.loadPoint
}

// loadPointPassed wakes the commands waiting on the load (LoadPoint).
func (m *Master) loadPointPassed() {
	m.mu.Lock()
	if m.loadPoint != nil {
		close(m.loadPoint)
		m.loadPoint = make(chan struct{})
		m.loadSeen = true
	}
	m.mu.Unlock()
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// run reads the RDB payload into the dataset (or the one aside), the
// server in a loading state (loading).
func (ld *load) run(payload io.Reader) error {
	h, m := ld.h, ld.m
	in := &countingReader{r: payload}
	point := int64(0)
	if p := ld.cfg.Watchdog; p > 0 {
		// A load holds Redis's main thread: its software watchdog fires.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			t := time.NewTicker(p)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					h.Warnf("--- WATCHDOG TIMER EXPIRED ---")
				}
			}
		}()
	}
	delay := persist.KeyDelay{Usec: ld.cfg.KeyDelay}
	ndb := h.NumDBs()
	rh := &rdb.Handler{
		Aux: func(k, v []byte) {
			switch strings.ToLower(string(k)) {
			case "repl-stream-db":
				n, _ := strconv.Atoi(string(v))
				if n >= 0 && n < ndb {
					ld.streamDB = n
				}
			case "redis-ver":
				h.Logf("Loading RDB produced by version %s", v)
			}
		},
		SelectDB: func(db int) error {
			if db >= ndb {
				return fmt.Errorf("FATAL: Data file was created with a Redis server configured to handle more than %d databases. Exiting", ndb)
			}
			return nil
		},
		Function: func(code []byte) error {
			if ld.into != nil {
				ld.funcs = append(ld.funcs, string(code))
				return nil
			}
			return h.LoadFunction(code)
		},
		Key: func(rec *rdb.Record) error {
			if !h.AddKey(ld.into, rec) {
				return fmt.Errorf("Bad data format of key '%s' in DB %d (duplicate members or fields)", rec.Key, rec.DB)
			}
			ld.loaded++
			delay.Key(nil)
			if every := ld.cfg.EventsEvery; every > 0 && in.n-point >= every {
				point = in.n
				m.loadPointPassed()
			}
			return nil
		},
	}
	if err := rdb.ReadStream(in, ld.cfg.Checksum, rh); err != nil {
		h.Warnf("%s", loadErrorLine(err))
		return err
	}
	h.Logf("Done loading RDB, keys loaded: %d, keys expired: 0.", ld.loaded)
	return nil
}

// loadErrorLine is the log line for a payload that failed to load
// (rdbReportError's, as a replica reading from a socket writes it).
func loadErrorLine(err error) string {
	var fe *rdb.FileError
	switch {
	case errors.As(err, &fe) && fe.Err == nil && strings.HasPrefix(fe.Msg, "Unexpected EOF"):
		return fmt.Sprintf("Internal error in RDB reading offset %d, function at rdb.c:0 -> %s. Failure loading rdb format from socket, assuming connection error, resuming operation.", fe.Off, fe.Msg)
	case errors.As(err, &fe):
		return fmt.Sprintf("Internal error in RDB reading offset %d, function at rdb.c:0 -> %s. Failure loading rdb format", fe.Off, fe.Msg)
	}
	return fmt.Sprintf("Internal error in RDB reading offset 0, function at rdb.c:0 -> %v. Failure loading rdb format from socket, assuming connection error, resuming operation.", err)
}
