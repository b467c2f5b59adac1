package server_test

import (
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
)

// Scripts on a replica whose master is unreachable, with
// replica-serve-stale-data no, as Redis's scriptPrepareForRun and
// scriptVerifyAllowStale answer them (Redis's "FUNCTION - allow stale"):
// MASTERDOWN without the allow-stale flag (and for EVAL without a
// shebang); with it, commands without the stale flag are refused inside
// the script.
func TestScriptsOnStaleReplicaVsRedis(t *testing.T) {
	raddr := redistest.StartRedis(t)
	_, saddr := redistest.StartSluice(t)
	lib := `#!lua name=test
redis.register_function{function_name='f1', callback=function() return 'hello' end, flags={'no-writes'}}
redis.register_function{function_name='f2', callback=function() return 'hello' end, flags={'allow-stale', 'no-writes'}}
redis.register_function{function_name='f3', callback=function() return redis.call('get', 'x') end, flags={'allow-stale', 'no-writes'}}
redis.register_function{function_name='f4', callback=function() return redis.call('ping') end, flags={'allow-stale', 'no-writes'}}`
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		var out []string
		for _, cmd := range [][]string{
			{"FUNCTION", "LOAD", "REPLACE", lib},
			{"CONFIG", "SET", "replica-serve-stale-data", "no"},
			{"REPLICAOF", "127.0.0.1", "1"},
			{"FCALL", "f1", "0"},
			{"FCALL", "f2", "0"},
			{"FCALL", "f3", "0"},
			{"FCALL", "f4", "0"},
			{"EVAL", "return 1", "0"},
			{"EVAL", "#!lua flags=allow-stale,no-writes\nreturn 2", "0"},
			{"REPLICAOF", "NO", "ONE"},
			{"FCALL", "f1", "0"},
		} {
			r, err := c.Do(cmd...)
			if err != nil {
				t.Fatal(err)
			}
			// The script's position in an error ("script: f3, on
			// @user_function:...") is Lua's: keep the message.
			if i := strings.Index(r, " script: "); i > 0 {
				r = r[:i]
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
}
