// Package miniredis is miniredis v2's API on Sluice's real engine: change
//
//	import "github.com/alicebob/miniredis/v2"
//
// to
//
//	import "github.com/sluicedb/sluice/sluicetest/miniredis"
//
// and a test suite written for miniredis runs against the same server as
// sluice-server, in process. Start a server with `s := miniredis.RunT(t)`
// (shut down through t.Cleanup) or `s, err := miniredis.Run(); defer
// s.Close()`, point the client at s.Addr(), seed and inspect keys with the
// direct helpers (s.Set, s.HSet, s.CheckGet, s.DB(2).Get, ...), and move
// time with s.FastForward and s.SetTime.
//
// # What behaves differently, for the better
//
// Commands answer as Redis 7.0 answers them, byte for byte: replies,
// error texts (WRONGPASS, WRONGTYPE, the arity and syntax errors), types
// (a HyperLogLog is a "string" for TYPE, and so for the Type helper),
// encodings, Lua (the real scripting engine with cjson, cmsgpack, bit and
// struct), and the commands miniredis lacks (OBJECT, FUNCTION/FCALL,
// CLIENT, CONFIG, SORT, keyspace notifications, client-side caching, the
// full DUMP/RESTORE, ...).
//
// Time is one clock per server, and everything follows it. FastForward(d)
// moves it forward, so TTLs drop by d and expired keys are gone at once,
// for the direct helpers and for clients (TTL, EXISTS, GET, DBSIZE,
// expired notifications); SetTime(t) sets it. TIME, EXPIRETIME, the IDs
// XADD makes, stream idle times, OBJECT IDLETIME and LASTSAVE read it, so
// they move with FastForward too (miniredis's TIME ignores FastForward),
// and SetTime to a later instant expires the keys whose time it passes
// (miniredis only changes the base of later EXPIREATs). As in miniredis,
// the clock stands still between those calls, so TTLs move only when the
// test moves them; until the first SetTime, TIME reads the moment the
// server was created plus what FastForward added (miniredis reads the wall
// clock). ClockTTL(true) lets the clock run, as in Redis. TTLs have
// millisecond precision, as in Redis. Waits under way (BLPOP's timeout,
// CLIENT PAUSE) run on the wall clock, as in miniredis.
//
// Close stops the server completely (no goroutine stays behind); the data
// stays readable and writable through the direct helpers, and Restart (or
// Start) brings the server back on the same port with the data and the
// clock, as a redis-server restarted with its dump file: CONFIG SET
// changes and idle times do not survive it. Restart keeps TLS on a server
// started with RunTLS or StartTLS (miniredis's comes back without it).
//
// CommandCount counts the commands the server ran, as Redis's
// total_commands_processed (a command refused with NOAUTH, or an unknown
// one, does not count); the direct helpers' own commands are left out.
//
// # What follows miniredis rather than Redis
//
// RequireAuth and RequireUserAuth apply to connections already open that
// have not sent AUTH (a redis-server keeps those logged in). Each
// RequireUserAuth user may run every command.
//
// The direct helpers keep miniredis's contracts where they differ from
// the commands: Set fails with ErrWrongType over a key of another type,
// HSet replaces one, TTL is 0 for a key without expiry, HGet and ZScore
// return zero values for missing fields and members.
//
// Hash field TTLs (HExpire, HSetEX, HTTL, HPersist) are kept by this
// package, because Redis 7.0 has no HEXPIRE: a field whose time is up is
// deleted when FastForward or SetTime passes it or a direct helper reads
// the hash; a client's HGET sees it until then. The HEXPIRE command
// family is not served.
//
// # What is not there
//
// Server returns Sluice's *server.Server: miniredis's custom commands
// (Server().Register) have no counterpart. Seed is accepted and has no
// effect: random picks (SPOP, SRANDMEMBER, RANDOMKEY) are Redis's.
// Dial on a server that was never started starts it on a random port
// first. Running inside a testing/synctest bubble is not supported.
//
// The tests in compat_test.go are written against miniredis's API; the
// same file, with only its import line changed, runs against the real
// miniredis in internal/against.
package miniredis

//go:generate sh -c "sed 's#\"github.com/sluicedb/sluice/sluicetest/miniredis\"#\"github.com/alicebob/miniredis/v2\"#' compat_test.go > internal/against/compat_test.go"
