package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// PairConfig says which two servers a side-by-side driver (pubsub, multi)
// measures: addresses of running servers, or servers it starts itself the
// way compare does (sluice-server built from this tree, redis-server from
// PATH, loopback, no persistence).
type PairConfig struct {
	Target        string // address of the server under test; empty: build and start sluice-server
	Reference     string // address of the reference; empty: start redis-server from PATH
	TargetName    string
	ReferenceName string
	SluiceBin     string // prebuilt sluice-server (skips the build)
	RedisServer   string // redis-server binary (default: from PATH)
	SourceDir     string // where to look for the module root (default: working directory)
	Extra         []string
	Log           io.Writer `json:"-"`
}

func defaultPair() PairConfig {
	return PairConfig{TargetName: "Sluice", ReferenceName: "Redis"}
}

func pairFlags(fs *flag.FlagSet, c *PairConfig) {
	fs.StringVar(&c.Target, "target", "", "address of the server under test (default: build sluice-server from this tree and start it)")
	fs.StringVar(&c.Reference, "reference", "", "address of the reference server (default: start redis-server from PATH)")
	fs.StringVar(&c.TargetName, "target-name", c.TargetName, "name of the target in the report")
	fs.StringVar(&c.ReferenceName, "reference-name", c.ReferenceName, "name of the reference in the report")
	fs.StringVar(&c.SluiceBin, "sluice-bin", "", "prebuilt sluice-server binary to start instead of building one")
	fs.StringVar(&c.RedisServer, "redis-server", "", "redis-server binary (default: from PATH)")
}

// StartPair returns the target's and the reference's addresses, starting
// the servers that were not given; stop stops what it started.
func StartPair(ctx context.Context, cfg PairConfig) (target, reference string, stop func(), err error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	var started []*Process
	tmp, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return "", "", nil, err
	}
	stop = func() {
		for _, p := range started {
			p.Stop()
		}
		os.RemoveAll(tmp)
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	target, reference = cfg.Target, cfg.Reference
	if reference == "" {
		bin := cfg.RedisServer
		if bin == "" {
			bin = "redis-server"
		}
		if bin, err = lookTool(bin, errNoRedisServer); err != nil {
			return "", "", nil, &ExitError{Code: 3, Err: err}
		}
		p, err := StartServer(cfg.ReferenceName, bin, filepath.Join(tmp, "reference.log"), cfg.Extra...)
		if err != nil {
			return "", "", nil, err
		}
		started = append(started, p)
		reference = p.Addr
		fmt.Fprintf(cfg.Log, "started %s (%s) on %s\n", cfg.ReferenceName, bin, reference)
	}
	if target == "" {
		bin := cfg.SluiceBin
		if bin == "" {
			src := cfg.SourceDir
			if src == "" {
				src = "."
			}
			root, err := ModuleRoot(src)
			if err != nil {
				return "", "", nil, err
			}
			fmt.Fprintf(cfg.Log, "building sluice-server from %s ...\n", root)
			if bin, err = BuildSluice(ctx, root, tmp); err != nil {
				return "", "", nil, err
			}
		}
		p, err := StartServer(cfg.TargetName, bin, filepath.Join(tmp, "target.log"), cfg.Extra...)
		if err != nil {
			return "", "", nil, err
		}
		started = append(started, p)
		target = p.Addr
		fmt.Fprintf(cfg.Log, "started %s (%s) on %s\n", cfg.TargetName, bin, target)
	}
	return target, reference, stop, nil
}
