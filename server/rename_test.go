package server_test

import (
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/server"
)

// rename-command, as redis-server 7.0.15 reads it from its command line:
// the old name is unknown, the new one runs the command (from clients,
// MULTI and scripts), "" removes a command, and the directive's errors
// stop start-up with Redis's messages.
func TestRenameCommandVsRedis(t *testing.T) {
	args := []string{"--rename-command", "flushdb", "badger", "--rename-command", "keys", "",
		"--rename-command", "SET", "put", "--rename-command", "put", "store"}
	// With an AOF, which holds the commands under the names the clients
	// gave, and DEBUG LOADAOF to read it back.
	args = append(args, "--appendonly", "yes", "--enable-debug-command", "yes")
	raddr := redistest.StartRedis(t, append(args, "--dir", t.TempDir())...)
	_, saddr := redistest.StartSluiceArgs(t, args...)
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		var out []string
		for _, cmd := range [][]string{
			{"FLUSHDB"}, {"BADGER"}, {"keys", "*"}, {"set", "k", "v"}, {"put", "k", "v"}, {"STORE", "k", "v"}, {"GET", "k"},
			{"MULTI"}, {"store", "a", "1"}, {"flushdb"}, {"EXEC"},
			{"MULTI"}, {"store", "a", "1"}, {"EXEC"},
			{"EVAL", "return redis.pcall('set', 'x', 1)", "0"},
			{"EVAL", "return redis.call('store', 'x', 1)", "0"},
			{"COMMAND", "GETKEYS", "store", "x", "1"},
			{"badger"}, {"DBSIZE"},
			{"store", "k1", "v1"}, {"MULTI"}, {"store", "k2", "v2"}, {"EXEC"}, {"badger"}, {"store", "k3", "v3"},
			{"DEBUG", "LOADAOF"}, {"DBSIZE"}, {"GET", "k3"},
		} {
			r, err := c.Do(cmd...)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	want, got := run(raddr), run(saddr)
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("reply %d: redis %q, sluice %q", i, want[i], got[i])
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rename-command", "nosuch", "x"}, "No such command in rename-command"},
		{[]string{"--rename-command", "get", "set"}, "Target command name already exists"},
		{[]string{"--rename-command", "get", "g", "--rename-command", "get", "h"}, "No such command in rename-command"},
	} {
		err := server.NewConfig().ApplyArgs(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
