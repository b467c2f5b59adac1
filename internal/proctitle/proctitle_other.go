//go:build !linux

package proctitle

// Set does nothing where the process's command line cannot be rewritten.
func Set(title string) error { return nil }
