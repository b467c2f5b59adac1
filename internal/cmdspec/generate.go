//go:build ignore

// generate.go writes the command table (table_gen.go here, and
// server/commands_gen.go) from commands/*.json and overlay.json: run
// "go generate ./internal/cmdspec" (go run -tags cmdspecgen generate.go:
// the tag leaves the old table out of the build).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluicedb/sluice/internal/cmdspec/gen"
)

func main() {
	files, err := gen.Generate(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cmdspec:", err)
		os.Exit(1)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.FromSlash(f.Path), f.Data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "cmdspec:", err)
			os.Exit(1)
		}
	}
}
