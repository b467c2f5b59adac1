// Package lua is Sluice's Lua scripting engine, after Redis 7.0's
// eval.c, script_lua.c and function_lua.c, on gopher-lua: the sandboxed
// VM (allowed globals, read-only tables), the libraries Redis bundles
// (cjson, cmsgpack, bit, struct), Redis's error texts, the conversion of
// replies to Lua values and of Lua values to replies (RESP2 and RESP3),
// the EVAL script cache, the FUNCTION libraries, and the Lua debugger's
// synchronous sessions (ldb.go).
//
// The engine reaches the server only through a Host: run a command for
// redis.call/pcall, write a redis.log line, check the caller's ACL. The
// gates a command passes before it runs (noscript, out of memory,
// read-only replica, the script's flags), timeouts and propagation stay
// with the server.
package lua
