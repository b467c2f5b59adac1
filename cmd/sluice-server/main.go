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
	done := make(chan struct{})
	srv.OnShutdown(func() { close(done) })
	if err := srv.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "Could not start server: %v\n", err)
		return 1
	}
	srv.Logf("Sluice %s (Redis %s protocol) ready to accept connections on %v", server.SluiceVersion, server.Version, srv.Addrs())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		srv.Logf("Received %v, scheduling shutdown...", s)
		srv.Stop()
	case <-done:
	}
	srv.Logf("Sluice is now ready to exit, bye bye...")
	return 0
}
