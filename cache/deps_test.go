package cache_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCodecDependencies checks with `go list -deps` that each codec
// package pulls in only its own serialization library, that the cache
// core pulls in none, and that no codec depends on go-redis.
func TestCodecDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	libs := map[string][]string{ // codec package -> module paths only it may use
		"goccy":   {"github.com/goccy/go-json"},
		"msgpack": {"github.com/vmihailenco/"},
		"proto":   {"google.golang.org/protobuf"},
		"msgp":    {"github.com/tinylib/msgp", "github.com/philhofer/fwd"},
	}
	const mod = "github.com/sluicedb/sluice/cache"
	pkgs := []string{mod, mod + "/codec/json", mod + "/codec/goccy", mod + "/codec/msgpack",
		mod + "/codec/proto", mod + "/codec/msgp", mod + "/codec/hash"}
	out, err := exec.Command(goBin, append([]string{"list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		seen++
		own := strings.TrimPrefix(pkg, mod+"/codec/")
		for codec, prefixes := range libs {
			if codec == own {
				continue
			}
			for _, d := range deps {
				for _, p := range prefixes {
					if strings.HasPrefix(d, p) {
						t.Errorf("%s depends on %s (the %s codec's library)", pkg, d, codec)
					}
				}
			}
		}
		if pkg != mod {
			for _, d := range deps {
				if strings.HasPrefix(d, "github.com/redis/go-redis") || d == mod {
					t.Errorf("codec %s depends on %s", pkg, d)
				}
			}
		}
		if p, ok := libs[own]; ok && !hasPrefix(deps, p[0]) {
			t.Errorf("%s does not use %s: is the check looking at the right packages?", pkg, p[0])
		}
	}
	if seen != len(pkgs) {
		t.Errorf("go list described %d packages, want %d:\n%s", seen, len(pkgs), out)
	}
}

func hasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
