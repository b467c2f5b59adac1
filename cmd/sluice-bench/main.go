// Command sluice-bench runs the users' benchmarks against Sluice and Redis side by side.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "usage: sluice-bench throughput|sweetspot|compare [flags]")
	os.Exit(2)
}
