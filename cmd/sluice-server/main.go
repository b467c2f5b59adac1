// Command sluice-server runs a Sluice server: a Redis-compatible in-memory
// data server. Usage mirrors redis-server:
//
//	sluice-server [/path/to/sluice.conf] [--port 6379] [--bind 127.0.0.1] ...
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluicedb/sluice/internal/proctitle"
	"github.com/sluicedb/sluice/server"
)

func main() {
	// The process's title is written over its arguments' memory, which
	// os.Args's strings are until copied.
	proctitle.CloneArgs()
	os.Exit(run(os.Args[1:]))
}

func run(argv []string) int {
	cfg := server.NewConfig()
	if len(argv) > 0 && (argv[0] == "-h" || argv[0] == "--help") {
		fmt.Println("Usage: sluice-server [/path/to/sluice.conf] [options]\n       sluice-server -v or --version\n\nExamples:\n       sluice-server\n       sluice-server --port 7777\n       sluice-server /etc/sluice/6379.conf --loglevel verbose")
		return 0
	}
	if len(argv) > 0 && (argv[0] == "-v" || argv[0] == "--version") {
		fmt.Printf("Sluice server v=%s redis_version=%s\n", server.SluiceVersion, server.Version)
		return 0
	}
	configFile := ""
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "--") {
		configFile = argv[0]
		if err := cfg.LoadConfigFile(argv[0]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		argv = argv[1:]
	}
	if len(argv) > 0 && argv[0] == "-" {
		configFile = "-"
		// Configuration from standard input, as redis-server accepts it.
		if err := cfg.LoadConfigFile("-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		argv = argv[1:]
	}
	if err := cfg.ApplyArgs(argv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := server.New(cfg)
	srv.SpinWhenBusy()
	srv.SetProcTitle(os.Args[0], proctitle.Set)
	// The log goes to standard output unless logfile names a file, in
	// redis-server's line format, as tools that watch Redis's log expect.
	srv.SetLogWriter(os.Stdout)
	if lf := cfg.Get("logfile"); lf != "" {
		f, err := os.OpenFile(lf, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "Can't open the log file: %v\n", err)
			return 1
		}
		srv.SetLogWriter(f)
	}
	srv.Warnf("oO0OoO0OoO0Oo Sluice is starting oO0OoO0OoO0Oo")
	srv.Warnf("Sluice version=%s, redis_version=%s, bits=64, pid=%d, just started", server.SluiceVersion, server.Version, os.Getpid())
	if configFile == "" {
		srv.Warnf("Warning: no config file specified, using the default config. In order to specify a config file use %s /path/to/sluice.conf", os.Args[0])
	} else {
		srv.Warnf("Configuration loaded")
	}
	// With persistence configured (save points, dir or dbfilename given,
	// or appendonly yes), the dataset on disk (the AOF with appendonly
	// yes, else dir/dbfilename) is loaded once the server listens, clients
	// getting -LOADING meanwhile, as redis-server does; a file that cannot
	// be loaded stops start-up. A plain sluice-server keeps to memory: it
	// never reads a dump.rdb it happens to find in its working directory.
	persistent := cfg.Get("save") != "" || cfg.Given("dir") || cfg.Given("dbfilename") || cfg.Get("appendonly") == "yes"
	srv.ExitOnFatal()
	if persistent {
		srv.BeginLoading()
	}
	done := make(chan struct{})
	srv.OnShutdown(func() { close(done) })
	if err := srv.Start(); err != nil {
		var le *server.ListenError
		switch {
		case errors.Is(err, server.ErrTLSConfig):
			// Start logged why, as redis-server does.
		case errors.As(err, &le) && le.TLS:
			srv.Warnf("Warning: Could not create server TCP listening socket %s: %v", net.JoinHostPort(cfg.Get("bind"), le.Port), le.Err)
			srv.Warnf("Failed listening on port %s (TLS), aborting.", le.Port)
		case errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EADDRNOTAVAIL):
			srv.Warnf("Warning: Could not create server TCP listening socket %s: %v", net.JoinHostPort(cfg.Get("bind"), cfg.Get("port")), err)
			srv.Warnf("Failed listening on port %s (TCP), aborting.", cfg.Get("port"))
		default:
			srv.Warnf("Could not start server: %v", err)
		}
		return 1 // the log says why; stderr stays empty, as with redis-server
	}
	port := cfg.Get("port")
	if addrs := srv.Addrs(); len(addrs) > 0 {
		if ta, ok := addrs[0].(*net.TCPAddr); ok {
			port = strconv.Itoa(ta.Port)
		}
	}
	mode := "standalone"
	if cfg.Get("cluster-enabled") == "yes" {
		mode = "cluster"
	}
	if cfg.Get("always-show-logo") == "yes" {
		// Redis's ASCII-art logo, in words: the lines that carry the
		// version, port and PID, which scripts (and Redis's own test
		// harness) look for.
		srv.LogRaw(server.LogNotice, fmt.Sprintf("\n    Sluice %s (Redis %s compatible) 64 bit\n    Running in %s mode\n    Port: %s\n    PID: %d\n\n", server.SluiceVersion, server.Version, mode, port, os.Getpid()))
	} else {
		srv.Logf("Running mode=%s, port=%s.", mode, port)
	}
	srv.Warnf("Server initialized")
	// SIGABRT: the crash report in the log (every goroutine's stack), as
	// redis-server logs one, then the signal's default action.
	abort := make(chan os.Signal, 1)
	signal.Notify(abort, syscall.SIGABRT)
	go func() {
		<-abort
		srv.CrashReport(fmt.Sprintf("Sluice %s crashed by signal: %d (SIGABRT)", server.SluiceVersion, syscall.SIGABRT))
		signal.Reset(syscall.SIGABRT)
		syscall.Kill(os.Getpid(), syscall.SIGABRT)
	}()
	if persistent {
		if err := srv.LoadDataFile(); err != nil {
			if !server.IsLoadFailed(err) {
				srv.Warnf("%v", err)
			}
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	srv.Logf("Ready to accept connections")
	srv.Verbosef("Listening on %v", srv.Addrs())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	for stopped := false; !stopped; {
		select {
		case s := <-sig:
			// The shutdown runs on the server's cron, as Redis's does:
			// it may wait for replicas (shutdown-timeout), saves as
			// shutdown-on-sigterm/sigint say, and if a step fails the
			// server keeps running.
			name := "sigterm"
			if s == syscall.SIGINT {
				name = "sigint"
			}
			srv.ShutdownSignal(name)
		case <-done:
			stopped = true
		}
	}
	srv.Warnf("Sluice is now ready to exit, bye bye...")
	return 0
}
