// Command sluice-bench runs the users' benchmarks against Sluice and Redis
// side by side:
//
//	sluice-bench throughput [-addr host:port] [-workers N] [-autopipeline] ...
//	sluice-bench sweetspot  [-addr host:port] [-workers 10,50,100,300] ...
//	sluice-bench compare    [-suite default|concurrency|value-size|pipeline|mixed|commands|all] ...
//
// The logic lives in package bench; see its README section for details.
package main

import (
	"os"

	"github.com/sluicedb/sluice/bench"
)

func main() {
	os.Exit(bench.CLI(os.Args[1:], os.Stdout, os.Stderr))
}
