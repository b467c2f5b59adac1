package server

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/cluster"
	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/latency"
	"github.com/sluicedb/sluice/persist"
	"github.com/sluicedb/sluice/pubsub"
	"github.com/sluicedb/sluice/store"
	"github.com/sluicedb/sluice/tracking"
)

// Version is the Redis version Sluice reports (the protocol level it implements).
const Version = "7.0.15"

// SluiceVersion is Sluice's own version.
const SluiceVersion = "0.1.0"

// Server is a Sluice server: configuration, keyspace, clients and the
// drivers that move their bytes.
type Server struct {
	// cmds is the command table under rename-command's names, nil
	// without renames (the shared table then).
	cmds map[string]*Command

	cfg            *Config
	ks             *store.Keyspace
	log            *log.Logger
	logRedisFormat bool // lines carry redis-server's pid, time and level prefix
	// activeExpireOff is DEBUG SET-ACTIVE-EXPIRE 0: expired keys go only
	// when touched.
	activeExpireOff atomic.Bool
	// pauseCron is DEBUG PAUSE-CRON 1: the server's cron, the loops' crons
	// and the active expiry skip their work, as Redis's serverCron does.
	pauseCron      atomic.Bool
	migrate        cluster.Migrator // MIGRATE's connections to other servers
	lazyfreed      atomic.Int64     // INFO lazyfreed_objects
	latmon         latency.Monitor
	denyScriptsOff atomic.Bool // DEBUG SET-DISABLE-DENY-SCRIPTS 1: scripts may call noscript commands
	skipChecksum   atomic.Bool // DEBUG SET-SKIP-CHECKSUM-VALIDATION 1: RESTORE and RDB loads skip the CRC-64

	// Reply buffer sizing (replybuf.go): DEBUG REPLYBUFFER's settings and
	// INFO's counts.
	replyPeakReset atomic.Int64 // ms between peak resets; -1: never
	replyResizeOff atomic.Bool  // DEBUG REPLYBUFFER RESIZING 0
	replyShrinks   atomic.Int64
	replyExpands   atomic.Int64

	mu      sync.Mutex
	clients map[int64]*Client
	nextID  atomic.Int64
	nconns  atomic.Int64

	stats   []slotStats // one per BigLock slot
	goSlot  int         // slot of the goroutine driver and background work
	loops   []*loop
	spinFor time.Duration // see spinGate
	lns     []net.Listener
	addrs   []net.Addr
	started time.Time
	runID   string

	stopOnce sync.Once
	lnMu     sync.Mutex // the listeners, when CONFIG SET port or bind moves them
	stopCh   chan struct{}
	replTick chan struct{} // cron to replCron, every 100 ms
	done     chan struct{}
	wg       sync.WaitGroup

	// preCall, when set, may intercept a command before it runs (pub/sub
	// context rules); it returns false when it has replied itself.
	preCall func(c *Client, cmd *Command, args [][]byte) bool

	watches  watchRegistry
	tracking tracking.Table[*Client]
	avgTTL   []atomic.Int64 // INFO avg_ttl per database, written by cron only
	pubsub   pubsub.Registry[*Client]
	monitors monitorRegistry
	lua      scriptingState // Lua scripting and functions (scripting.go)
	held     heldState      // a script holding its event loop (whileHeld)

	shutdownHook  atomic.Pointer[func()] // called by SHUTDOWN (the binary exits)
	procTitle     func()                 // sets the process's title (SetProcTitle), nil when embedded
	onClientClose func(c *Client)
	// notifyHook, when set, observes every keyspace notification (tests).
	notifyHook atomic.Pointer[notifyFunc]
	statResets atomic.Int64

	// Hooks for the connection commands, set by the families that own the
	// state (nil when unused).
	// subCounts returns a client's channel, pattern and shard channel
	// subscriptions (CLIENT LIST, RESET, PING in subscribed context).
	subCounts func(c *Client) (sub, psub, ssub int)
	// resetHooks run on RESET before the connection state is cleared
	// (unsubscribe, UNWATCH, ...).
	resetHooks []func(c *Client)
	// unblockHook ends the block of a client for CLIENT UNBLOCK, replying
	// to it as on timeout (or with an UNBLOCKED error); false if it could
	// not.
	unblockHook func(c *Client, withError bool) bool
	lastSave    atomic.Int64    // unix seconds of the last successful save (LASTSAVE)
	pe          *persist.Engine // RDB files, the AOF, background saves (persist.go)
	snapStats   snapStats       // snapshots' INFO figures (snapshot.go)
	loading     loadState       // a dataset being loaded (INFO loading fields)
	// gate is non-zero while commands may be refused before they run:
	// the dataset is loading, or writes are refused for a disk error.
	gate atomic.Uint32
	// execDepth counts transactions running (a BGSAVE or rewrite asked
	// for inside one is scheduled).
	execDepth atomic.Int32
	// exitOnFatal: the process exits when persistence cannot keep its
	// promises (sluice-server); an embedded server panics instead.
	exitOnFatal bool
	fx          effectsState // the stream of write effects (effects.go)
	slowLogged  int64        // the script start slowScriptCheck last logged (cron only)
	shutdown    shutdownState
	slowlog     slowLog
	errStatsMu  sync.Mutex
	errStats    map[string]int64 // error replies by code (INFO errorstats)
	// pubsubCounts returns the server's channels, patterns and shard
	// channels with subscribers (INFO stats), set by pub/sub.
	pubsubCounts func() (channels, patterns, shardChannels int)

	opsMu                    sync.Mutex // instantaneous_ops_per_sec state
	opsAt, opsCount, opsRate int64
	blocking                 blockRegistry    // clients blocked on keys (blocking.go)
	ev                       *evictState      // maxmemory (evict.go)
	mem                      memState         // used memory beyond the keyspace (memory.go)
	pause                    pauseState       // CLIENT PAUSE (pause.go)
	repl                     replState        // replication, both sides (replication.go, replica.go)
	tls                      tlsState         // TLS configuration in force (tls.go)
	embed                    embedState       // the embedded mode's hooks (embed.go)
	cluster                  *cluster.Cluster // cluster mode (cmd_cluster.go), nil when off
}

// OnReset registers fn to run when a client sends RESET.
func (s *Server) OnReset(fn func(c *Client)) { s.resetHooks = append(s.resetHooks, fn) }

// New returns a server for cfg (nil: defaults). Call Start to listen.
func New(cfg *Config) *Server {
	if cfg == nil {
		cfg = NewConfig()
	}
	nloops := cfg.LoopsWanted
	if nloops == 0 {
		// One event loop per two CPUs: the kernel's network stack (and,
		// on a small machine, the clients) needs the other half. Measured
		// on 2 cores with redis-benchmark local, one loop used less CPU per
		// request than redis-server and two used more, with worse p99.
		nloops = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if !eventLoopsSupported || cfg.LoopsWanted < 0 {
		nloops = 0
	}
	dbs, _ := strconv.Atoi(cfg.Get("databases"))
	allocated := allocatedSoFar()
	s := &Server{
		cfg:      cfg,
		clients:  map[int64]*Client{},
		stopCh:   make(chan struct{}),
		replTick: make(chan struct{}, 1),
		done:     make(chan struct{}),
		started:  time.Now(),
		runID:    randomHex(40),
	}
	s.replyPeakReset.Store(replyPeakResetDefault)
	s.SetLogWriter(os.Stderr)
	s.applyRenames(cfg.Renames)
	cfg.Hooks.Listen = s.applyListen
	s.spinFor, _ = spinFromEnv() // sluice-server: SpinWhenBusy
	s.ks = store.New(dbs, nloops+1)
	if cfg.Get("cluster-enabled") == "yes" {
		s.ks.EnableSlotIndex(cluster.KeySlotString)
	}
	s.avgTTL = make([]atomic.Int64, dbs)
	s.wireWatches()
	s.wirePubSub()
	s.wireBlocking()
	s.wireMonitors()
	s.wireEviction()
	s.wireReplication()
	s.wireTLS()
	s.wireScripting()
	s.wirePersistence()
	s.goSlot = nloops
	s.stats = make([]slotStats, nloops+1)
	for i := range s.stats {
		s.stats[i] = newSlotStats()
	}
	for i := 0; i < nloops; i++ {
		s.loops = append(s.loops, &loop{srv: s, id: i})
	}
	// used_memory_startup: what building the server allocated, and the
	// loops' read buffers to come.
	s.mem.startup = max(0, allocatedSoFar()-allocated) + int64(nloops)*readSize
	return s
}

// Config returns the server's configuration.
func (s *Server) Config() *Config { return s.cfg }

// Keyspace returns the server's keyspace, for direct access in tests.
func (s *Server) Keyspace() *store.Keyspace { return s.ks }

// SetLogger replaces the server's logger (nil discards).
func (s *Server) SetLogger(l *log.Logger) {
	if l == nil {
		l = log.New(io.Discard, "", 0)
	}
	s.log = l
	s.logRedisFormat = false
}

// OnShutdown sets what SHUTDOWN does after the server stopped.
func (s *Server) OnShutdown(fn func()) { s.shutdownHook.Store(&fn) }

// Addrs returns the addresses the server listens on.
func (s *Server) Addrs() []net.Addr {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	return s.addrs
}

// Start opens the listeners from the configuration (bind, port,
// tls-port, unixsocket) and starts serving. Port 0 with no TLS port and no
// unix socket picks a free port. When TLS is wanted (tls-port,
// tls-replication or tls-cluster) its configuration is loaded first; a
// failure is logged as redis-server logs it and returned wrapping
// ErrTLSConfig.
func (s *Server) Start() error {
	if s.cfg.TLSWanted() {
		if err := s.configureTLS(); err != nil {
			s.Warnf("%v", ErrTLSConfig)
			return fmt.Errorf("%w: %v", ErrTLSConfig, err)
		}
	}
	port, tlsPort := s.cfg.Get("port"), s.cfg.Get("tls-port")
	var lns []net.Listener
	listen := func(port string, tls bool) error {
		for _, entry := range strings.Fields(s.cfg.Get("bind")) {
			network, host, optional := config.BindAddr(entry)
			ln, err := net.Listen(network, net.JoinHostPort(host, port))
			if err != nil {
				if optional {
					continue
				}
				closeAll(lns)
				return &ListenError{Port: port, TLS: tls, Err: err}
			}
			if tls {
				ln = &tlsListener{TCPListener: ln.(*net.TCPListener), srv: s}
			}
			lns = append(lns, ln)
			if port == "0" {
				// All bind addresses share the port the first one got.
				port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			}
		}
		return nil
	}
	if port != "0" || s.cfg.Get("unixsocket") == "" && tlsPort == "0" {
		if err := listen(port, false); err != nil {
			return err
		}
	}
	if tlsPort != "0" {
		if err := listen(tlsPort, true); err != nil {
			return err
		}
	}
	if path := s.cfg.Get("unixsocket"); path != "" {
		os.Remove(path)
		ln, err := net.Listen("unix", path)
		if err != nil {
			closeAll(lns)
			return err
		}
		if perm, _ := strconv.ParseInt(s.cfg.Get("unixsocketperm"), 10, 32); perm != 0 {
			os.Chmod(path, os.FileMode(perm))
		}
		lns = append(lns, ln)
	}
	if err := s.Serve(lns...); err != nil {
		return err
	}
	if s.procTitle != nil && s.cfg.Get("set-proc-title") == "yes" {
		s.procTitle()
	}
	return nil
}

func closeAll(lns []net.Listener) {
	for _, l := range lns {
		l.Close()
	}
}

// Serve serves connections accepted from the given listeners.
func (s *Server) Serve(lns ...net.Listener) error {
	s.lnMu.Lock()
	s.lns = lns
	for _, ln := range lns {
		s.addrs = append(s.addrs, ln.Addr())
	}
	s.lnMu.Unlock()
	s.cfg.Running.Store(true)
	if s.cfg.Get("cluster-enabled") == "yes" {
		if err := s.startCluster(); err != nil {
			closeAll(lns)
			return err
		}
	}
	if len(s.loops) > 0 {
		if err := s.startLoops(lns); err != nil {
			return err
		}
	} else {
		for _, ln := range lns {
			s.wg.Add(1)
			go s.acceptLoop(ln)
		}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		paused := func() bool { return s.activeExpireOff.Load() || s.pauseCron.Load() }
		s.ks.RunExpiry(s.goSlot, func() int { return int(s.cfg.Hz.Load()) }, paused, func(d time.Duration) {
			s.latencyAddIfNeeded("expire-cycle", d.Milliseconds())
		}, s.stopCh)
	}()
	s.wg.Add(1)
	go s.cron()
	return nil
}

// acceptLoop accepts connections for the goroutine driver.
func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			select {
			case <-s.stopCh:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		go s.ServeConn(conn)
	}
}

// cron does the periodic work that is not per event loop: idle timeouts
// for goroutine-driven clients and output buffer soft limits.
func (s *Server) cron() {
	defer s.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stopCh:
			return
		case <-t.C:
		}
		// The replication cron's tick (one timer for both: an idle
		// server's wake-ups are its CPU time). A tick it has not taken
		// yet is not doubled.
		select {
		case s.replTick <- struct{}{}:
		default:
		}
		// BCAST invalidations of keys that expired in the background.
		s.trackingBroadcast(nil)
		s.gateUpdate()
		s.slowScriptCheck()
		s.watchdogCheck(nanotime())
		if s.pauseCron.Load() {
			// DEBUG PAUSE-CRON 1 stops what Redis's serverCron does; the
			// above is done elsewhere in Redis (beforeSleep, the script's
			// hook, the watchdog's timer), and so is evicting clients
			// over maxmemory-clients (by figures the cron no longer
			// updates).
			s.evictClients()
			continue
		}
		s.trackingLimitKeys(nil)
		s.updateAvgTTL()
		s.pe.Cron()
		s.shutdownCron()
		s.migrate.Expire(time.Now())
		s.enterEvictViews(true)
		s.evictClients()
		if s.cluster != nil {
			s.clusterRedirectBlocked()
		}
		timeout := s.cfg.TimeoutSec.Load()
		if timeout <= 0 {
			continue
		}
		now := time.Now().UnixMilli()
		s.mu.Lock()
		for _, c := range s.clients {
			// Event-loop clients are timed out by their own loop.
			if c.slot == s.goSlot && !c.blockedFlag.Load() && now-c.lastIO.Load() > timeout*1000 && !c.replMaster && c.replica.Load() == nil {
				c.kill()
			}
		}
		s.mu.Unlock()
	}
}

// newClient registers a new client, or returns nil after writing the
// maxclients error when the server is full. setup, when not nil, runs
// before the client is visible to other goroutines (through s.clients):
// drivers set the client's hooks and fd there.
func (s *Server) newClient(slot int, addr, laddr string, unix bool, setup func(c *Client)) *Client {
	if s.nconns.Add(1) > s.cfg.MaxClients.Load() {
		s.nconns.Add(-1)
		s.stats[slot].rejectedConns.Add(1)
		return nil
	}
	c := &Client{srv: s, slot: slot, addr: addr, laddr: laddr, unixSock: unix, created: time.Now(), fd: -1}
	c.ID = s.nextID.Add(1)
	c.w.Proto = 2
	c.w.OnError = s.countError
	c.authed = s.cfg.RequirePass() == ""
	c.implicitAuth = c.authed
	c.lastIO.Store(time.Now().UnixMilli())
	if setup != nil {
		setup(c)
	}
	s.stats[slot].connections.Add(1)
	c.memCountedClass.Store(memNormal)
	c.initReplyBuf()
	c.refreshOwnMemory()
	c.updateMem()
	s.mu.Lock()
	s.clients[c.ID] = c
	s.mu.Unlock()
	return c
}

func (s *Server) removeClient(c *Client) {
	s.mu.Lock()
	if _, ok := s.clients[c.ID]; ok {
		delete(s.clients, c.ID)
		s.nconns.Add(-1)
	}
	s.mu.Unlock()
	// Whoever waits on the client (a full sync's sender waiting for its
	// output to drain) sees it is gone.
	c.closeASAP.Store(true)
	s.watches.UnwatchAll(&c.watch)
	s.tracking.Disable(c, c.trk.Load())
	c.unsubscribeAll()
	s.blocking.clientClosed(c)
	s.pauseClientClosed(c)
	s.monitors.remove(c)
	if hook := s.onClientClose; hook != nil {
		hook(c)
	}
	c.releaseMem()
}

// Stop closes the listeners and every connection and waits for the
// server's goroutines to end.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		close(s.stopCh)
		if s.cluster != nil {
			s.cluster.Stop()
		}
		s.abortScripts() // a loop held by a script must come back to stop
		s.lnMu.Lock()
		closeAll(s.lns)
		s.lnMu.Unlock()
		for _, l := range s.loops {
			l.wake()
		}
		s.mu.Lock()
		for _, c := range s.clients {
			c.kill()
		}
		s.mu.Unlock()
		// A replica's link ends before Stop returns: a load under way
		// must not write its file after the server is gone.
		if link := s.repl.m.Link(); link != nil {
			link.Stop()
		}
		s.wg.Wait()
		s.pe.Close()
		close(s.done)
	})
}

// Done is closed when the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

func randomHex(n int) string {
	b := make([]byte, n/2)
	f, err := os.Open("/dev/urandom")
	if err == nil {
		io.ReadFull(f, b)
		f.Close()
	} else {
		for i := range b {
			b[i] = byte(time.Now().UnixNano() >> (i % 8))
		}
	}
	return fmt.Sprintf("%x", b)
}

// SetLogWriter sends the server's log to w, one line per message in
// redis-server's format ("pid:M 23 Nov 2026 04:35:18.123 * message"), which
// log watchers and Redis's own test harness parse.
func (s *Server) SetLogWriter(w io.Writer) {
	s.log = log.New(w, "", 0)
	s.logRedisFormat = true
}

// Log levels, as loglevel names them.
const (
	LogDebug = iota
	LogVerbose
	LogNotice
	LogWarning
)

var logLevelMark = [...]byte{'.', '-', '*', '#'}

func (s *Server) logLevel() int {
	switch s.cfg.Get("loglevel") {
	case "debug":
		return LogDebug
	case "verbose":
		return LogVerbose
	case "warning":
		return LogWarning
	case "nothing":
		return LogWarning + 1
	}
	return LogNotice
}

// LogAt writes a line to the server's log when level is at least loglevel.
func (s *Server) LogAt(level int, format string, args ...any) {
	if level < s.logLevel() {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if !s.logRedisFormat {
		s.log.Print(msg)
		return
	}
	now := time.Now()
	s.log.Print(strconv.Itoa(os.Getpid()) + ":M " + now.Format("02 Jan 2006 15:04:05.000") + " " + string(logLevelMark[level]) + " " + msg)
}

// LogRaw writes text to the log as it is, with no prefix (the start-up
// banner), when level is at least loglevel.
func (s *Server) LogRaw(level int, text string) {
	if level < s.logLevel() {
		return
	}
	s.log.Writer().Write([]byte(text))
}

// Warnf writes a line to the server's log unless loglevel is "nothing".
func (s *Server) Warnf(format string, args ...any) { s.LogAt(LogWarning, format, args...) }

// Logf writes a line to the server's log (loglevel notice and above).
func (s *Server) Logf(format string, args ...any) { s.LogAt(LogNotice, format, args...) }

// Verbosef writes a line to the server's log at loglevel verbose.
func (s *Server) Verbosef(format string, args ...any) { s.LogAt(LogVerbose, format, args...) }
