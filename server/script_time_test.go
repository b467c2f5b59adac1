package server_test

import (
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
)

// A script sees the expiry of its keys as at its start, as Redis's
// ("Script block the time during execution"): a key that expires while
// the script runs stays for the rest of it and is gone after; TIME goes
// on meanwhile.
func TestScriptHoldsExpiryTimeVsRedis(t *testing.T) {
	raddr := redistest.StartRedis(t, "--enable-debug-command", "yes")
	_, saddr := redistest.StartSluice(t, "enable-debug-command", "yes")
	script := `redis.call('SET', KEYS[1], 'v', 'PX', 1)
local t0 = redis.call('TIME')
redis.call('DEBUG', 'SLEEP', 0.01)
local t1 = redis.call('TIME')
local moved = (t1[1] * 1000000 + t1[2]) - (t0[1] * 1000000 + t0[2]) >= 10000
return {redis.call('EXISTS', KEYS[1]), redis.call('PTTL', KEYS[1]), moved and 1 or 0}`
	run := func(addr string) []string {
		c := redistest.Dial(t, addr)
		var out []string
		for _, cmd := range [][]string{
			{"DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"}, // DEBUG SLEEP from a script, as Redis's test
			{"EVAL", script, "1", "key"},
			{"EXISTS", "key"},
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
}
