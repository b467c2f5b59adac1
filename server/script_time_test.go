package server_test

import "testing"

// A script sees the expiry of its keys as at its start, as Redis's
// ("Script block the time during execution"): a key that expires while
// the script runs stays for the rest of it and is gone after; TIME goes
// on meanwhile.
func TestScriptHoldsExpiryTimeVsRedis(t *testing.T) {
	script := `redis.call('SET', KEYS[1], 'v', 'PX', 1)
local t0 = redis.call('TIME')
redis.call('DEBUG', 'SLEEP', 0.01)
local t1 = redis.call('TIME')
local moved = (t1[1] * 1000000 + t1[2]) - (t0[1] * 1000000 + t0[2]) >= 10000
return {redis.call('EXISTS', KEYS[1]), redis.call('PTTL', KEYS[1]), moved and 1 or 0}`
	sameReplies(t, []string{"enable-debug-command", "yes"}, [][]string{
		{"DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"}, // DEBUG SLEEP from a script, as Redis's test
		{"EVAL", script, "1", "key"},
		{"EXISTS", "key"},
	})
}
