package miniredis_test

import (
	"os"
	"strings"
	"testing"
)

// The compatibility tests run against the real miniredis from a copy that
// differs only in its import line; go generate makes it.
func TestCompatCopyMatches(t *testing.T) {
	ours, err := os.ReadFile("compat_test.go")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.ReadFile("internal/against/compat_test.go")
	if err != nil {
		t.Fatal(err)
	}
	const from, to = `"github.com/sluicedb/sluice/sluicetest/miniredis"`, `"github.com/alicebob/miniredis/v2"`
	if strings.Count(string(ours), from) != 1 {
		t.Fatalf("compat_test.go should import %s once", from)
	}
	if strings.Replace(string(ours), from, to, 1) != string(theirs) {
		t.Fatal("internal/against/compat_test.go differs from compat_test.go beyond the import line: run go generate ./sluicetest/miniredis/")
	}
}
