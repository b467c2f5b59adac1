// Package proctitle sets the process's title, the command line ps and
// /proc/PID/cmdline show, as Redis's setproctitle.c does: over the
// memory of the process's arguments and environment strings (Linux; a
// no-op elsewhere).
//
// The program must copy os.Args before the first Set (CloneArgs): the
// runtime's argument strings are that memory. Its environment strings are
// the runtime's own copies.
package proctitle

import (
	"os"
	"strings"
)

// CloneArgs replaces os.Args's strings with copies, which Set leaves
// alone.
func CloneArgs() {
	for i, a := range os.Args {
		os.Args[i] = strings.Clone(a)
	}
}
