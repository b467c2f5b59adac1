package server_test

import "testing"

// Scripts on a replica whose master is unreachable, with
// replica-serve-stale-data no, as Redis's scriptPrepareForRun and
// scriptVerifyAllowStale answer them (Redis's "FUNCTION - allow stale"):
// MASTERDOWN without the allow-stale flag (and for EVAL without a
// shebang); with it, commands without the stale flag are refused inside
// the script.
func TestScriptsOnStaleReplicaVsRedis(t *testing.T) {
	lib := `#!lua name=test
redis.register_function{function_name='f1', callback=function() return 'hello' end, flags={'no-writes'}}
redis.register_function{function_name='f2', callback=function() return 'hello' end, flags={'allow-stale', 'no-writes'}}
redis.register_function{function_name='f3', callback=function() return redis.call('get', 'x') end, flags={'allow-stale', 'no-writes'}}
redis.register_function{function_name='f4', callback=function() return redis.call('ping') end, flags={'allow-stale', 'no-writes'}}`
	sameReplies(t, nil, [][]string{
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
	})
}
