// Command sluice-server runs a Sluice server: a Redis-compatible in-memory
// data server. Usage mirrors redis-server:
//
//	sluice-server [/path/to/sluice.conf] [--port 6379] [--bind 127.0.0.1] ...
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sluicedb/sluice/server"
)

func main() {
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
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "--") {
		if err := cfg.LoadConfigFile(argv[0]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		argv = argv[1:]
	}
	if len(argv) > 0 && argv[0] == "-" {
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
	if lf := cfg.Get("logfile"); lf != "" {
		f, err := os.OpenFile(lf, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "Can't open the log file: %v\n", err)
			return 1
		}
		srv.SetLogWriter(f)
	}
	// With persistence configured (save points, or dir or dbfilename
	// given), the snapshot in dir/dbfilename, if there is one, is loaded
	// before clients are served, as redis-server does; a corrupt one stops
	// start-up. A plain sluice-server keeps to memory: it never reads a
	// dump.rdb it happens to find in its working directory.
	if cfg.Get("save") != "" || cfg.Given("dir") || cfg.Given("dbfilename") {
		if err := srv.LoadDataFile(); err != nil {
			srv.Warnf("%v", err)
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	done := make(chan struct{})
	srv.OnShutdown(func() { close(done) })
	if err := srv.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "Could not start server: %v\n", err)
		return 1
	}
	srv.Logf("Sluice %s (Redis %s protocol) ready to accept connections on %v", server.SluiceVersion, server.Version, srv.Addrs())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	for stopped := false; !stopped; {
		select {
		case s := <-sig:
			name := "sigterm"
			if s == syscall.SIGINT {
				name = "sigint"
			}
			srv.Logf("Received %v, scheduling shutdown...", s)
			// The final save when save points are configured (or as
			// shutdown-on-sigterm/sigint say); if it fails the server
			// keeps running, as Redis does.
			if err := srv.PrepareShutdown(name); err != nil {
				srv.Warnf("%s received but errors trying to shut down the server, check the logs for more information", strings.ToUpper(name))
				continue
			}
			srv.Stop()
		case <-done:
		}
		stopped = true
	}
	srv.Logf("Sluice is now ready to exit, bye bye...")
	return 0
}
