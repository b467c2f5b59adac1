package server_test

import (
	"strings"
	"testing"

	"github.com/sluicedb/sluice/server"
)

// Start-up "save" lines add up as in redis-server: the first replaces the
// default, later ones (config file or flags) append, an empty one clears.
func TestStartupSaveLinesAppend(t *testing.T) {
	cases := []struct {
		file string
		args []string
		want string
	}{
		{"save 900 1\n", nil, "900 1"},
		{"save 900 1\nsave 300 10\n", nil, "900 1 300 10"},
		{"save 900 1\n", []string{"--save", "100 100"}, "900 1 100 100"},
		{"save 900 1\n", []string{"--save", ""}, ""},
		{"save 900 1\n", []string{"--save", "", "--save", "5 5"}, "5 5"},
		{"", []string{"--save", "60 1"}, "60 1"},
	}
	for _, tc := range cases {
		cfg := server.NewConfig()
		if err := cfg.LoadConfig(strings.NewReader(tc.file)); err != nil {
			t.Fatal(err)
		}
		if err := cfg.ApplyArgs(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := cfg.Get("save"); got != tc.want {
			t.Errorf("file %q args %q: save %q, want %q", tc.file, tc.args, got, tc.want)
		}
	}
}
