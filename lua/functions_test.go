package lua_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/lua"
	"github.com/sluicedb/sluice/resp"
)

// A fnStep is FUNCTION LOAD [REPLACE] of code (when code is set) or
// FCALL of fn, and the raw reply redis-server 7.0.15 gives it.
type fnStep struct {
	code       string
	replace    bool
	fn         string
	keys, args []string
	want       string
}

// fnCases are sequences of steps, each on a fresh engine (Redis: after
// FUNCTION FLUSH and FLUSHALL).
var fnCases = []struct {
	name  string
	steps []fnStep
}{
	{"load and call", []fnStep{
		{code: "#!lua name=lib\nredis.register_function('f', function(keys, args) return {keys[1], args[1], #keys, #args} end)", want: "$3\r\nlib\r\n"},
		{fn: "f", keys: []string{"k"}, args: []string{"a", "b"}, want: "*4\r\n$1\r\nk\r\n$1\r\na\r\n:1\r\n:2\r\n"},
		{fn: "F", keys: []string{"k"}, want: "*1\r\n$1\r\nk\r\n"},
	}},
	{"named arguments", []fnStep{
		{code: "#!lua name=lib\nredis.register_function{function_name = 'g', callback = function() return 'g' end, flags = {'no-writes', 'allow-oom'}, description = 'desc'}", want: "$3\r\nlib\r\n"},
		{fn: "g", want: "$1\r\ng\r\n"},
	}},
	{"call inside a function", []fnStep{
		{code: "#!lua name=lib\nredis.register_function('f', function(keys, args) redis.call('set', keys[1], args[1]); return redis.call('get', keys[1]) end)", want: "$3\r\nlib\r\n"},
		{fn: "f", keys: []string{"k"}, args: []string{"v"}, want: "$1\r\nv\r\n"},
	}},
	{"error inside a function", []fnStep{
		{code: "#!lua name=lib\nredis.register_function('f', function()\n  error('boom')\nend)", want: "$3\r\nlib\r\n"},
		{fn: "f", want: "-ERR user_function:3: boom script: f, on @user_function:3.\r\n"},
	}},
	{"no KEYS global", []fnStep{
		{code: "#!lua name=lib\nredis.register_function('f', function() return KEYS end)", want: "$3\r\nlib\r\n"},
		{fn: "f", want: "-ERR user_function:2: Script attempted to access nonexistent global variable 'KEYS' script: f, on @user_function:2.\r\n"},
	}},
	{"globals at load", []fnStep{
		{code: "#!lua name=lib\nlocal n = string.len('ab')\nredis.register_function('f', function() return n end)", want: "-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'string'\r\n"},
	}},
	{"redis.call at load", []fnStep{
		{code: "#!lua name=lib\nredis.call('ping')\nredis.register_function('f', function() return 1 end)", want: "-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'\r\n"},
	}},
	{"math at load", []fnStep{
		{code: "#!lua name=lib\nlocal x = math.random()\nredis.register_function('f', function() return 1 end)", want: "-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'math'\r\n"},
	}},
	{"functions see full globals", []fnStep{
		{code: "#!lua name=lib\nredis.register_function('f', function() return {string.len('abc'), redis.sha1hex('')} end)", want: "$3\r\nlib\r\n"},
		{fn: "f", want: "*2\r\n:3\r\n$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"},
	}},
	{"library replaced", []fnStep{
		{code: "#!lua name=lib\nredis.register_function('f', function() return 1 end)", want: "$3\r\nlib\r\n"},
		{code: "#!lua name=lib\nredis.register_function('f', function() return 2 end)", want: "-ERR Library 'lib' already exists\r\n"},
		{code: "#!lua name=lib\nredis.register_function('f', function() return 3 end)", replace: true, want: "$3\r\nlib\r\n"},
		{fn: "f", want: ":3\r\n"},
	}},
	{"function name taken by another library", []fnStep{
		{code: "#!lua name=lib1\nredis.register_function('f', function() return 1 end)", want: "$4\r\nlib1\r\n"},
		{code: "#!lua name=lib2\nredis.register_function('f', function() return 2 end)", want: "-ERR Function f already exists\r\n"},
	}},
	{"no metadata", []fnStep{{code: "redis.register_function('f', function() return 1 end)", want: "-ERR Missing library metadata\r\n"}}},
	{"no newline", []fnStep{{code: "#!lua name=lib", want: "-ERR Invalid library metadata\r\n"}}},
	{"unknown metadata", []fnStep{{code: "#!lua name=lib foo=bar\nreturn 1", want: "-ERR Invalid metadata value given: foo=bar\r\n"}}},
	{"no name", []fnStep{{code: "#!lua\nreturn 1", want: "-ERR Library name was not given\r\n"}}},
	{"name twice", []fnStep{{code: "#!lua name=a name=b\nreturn 1", want: "-ERR Invalid metadata value, name argument was given multiple times\r\n"}}},
	{"bad name", []fnStep{{code: "#!lua name=a-b\nreturn 1", want: "-ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long\r\n"}}},
	{"quoted name", []fnStep{{code: "#!lua name=\"qlib\"\nredis.register_function('f', function() return 1 end)", want: "$4\r\nqlib\r\n"}}},
	{"unknown engine", []fnStep{{code: "#!js name=lib\nreturn 1", want: "-ERR Engine 'js' not found\r\n"}}},
	{"no functions", []fnStep{{code: "#!lua name=lib\nlocal a = 1", want: "-ERR No functions registered\r\n"}}},
	{"runtime error at load", []fnStep{{code: "#!lua name=lib\nerror('at load')", want: "-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'error'\r\n"}}},
	{"unknown flag", []fnStep{{code: "#!lua name=lib\nredis.register_function{function_name = 'f', callback = function() end, flags = {'nosuchflag'}}", want: "-ERR Error registering functions: ERR unknown flag given\r\n"}}},
	{"missing callback", []fnStep{{code: "#!lua name=lib\nredis.register_function{function_name = 'f'}", want: "-ERR Error registering functions: ERR redis.register_function must get a callback argument\r\n"}}},
	{"missing name", []fnStep{{code: "#!lua name=lib\nredis.register_function{callback = function() end}", want: "-ERR Error registering functions: ERR redis.register_function must get a function name argument\r\n"}}},
	{"unknown named argument", []fnStep{{code: "#!lua name=lib\nredis.register_function{function_name = 'f', callback = function() end, foo = 1}", want: "-ERR Error registering functions: ERR unknown argument given to redis.register_function\r\n"}}},
	{"callback not a function", []fnStep{{code: "#!lua name=lib\nredis.register_function('f', 1)", want: "-ERR Error registering functions: ERR second argument to redis.register_function must be a function\r\n"}}},
	{"three arguments", []fnStep{{code: "#!lua name=lib\nredis.register_function('f', function() end, 1)", want: "-ERR Error registering functions: ERR wrong number of arguments to redis.register_function\r\n"}}},
	{"bad function name", []fnStep{{code: "#!lua name=lib\nredis.register_function('f-g', function() end)", want: "-ERR Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long\r\n"}}},
	{"function twice in a library", []fnStep{{code: "#!lua name=lib\nredis.register_function('f', function() end)\nredis.register_function('f', function() end)", want: "-ERR Error registering functions: ERR Function already exists in the library\r\n"}}},
	{"global write at load", []fnStep{{code: "#!lua name=lib\nx = 1\nredis.register_function('f', function() end)", want: "-ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table\r\n"}}},
	{"register_function at run", []fnStep{
		{code: "#!lua name=lib\nredis.register_function('f', function() redis.register_function('g', function() end) end)", want: "$3\r\nlib\r\n"},
		{fn: "f", want: "-ERR user_function:2: attempt to call field 'register_function' (a nil value) script: f, on @user_function:2.\r\n"},
	}},
	{"load times out", []fnStep{{code: "#!lua name=lib\nwhile true do end", want: "-ERR Error registering functions: ERR FUNCTION LOAD timeout\r\n"}}},
}

func TestFunctionCases(t *testing.T) {
	for _, tc := range fnCases {
		e := lua.New(newMapHost(), "7.0.15")
		for i, st := range tc.steps {
			var w resp.Writer
			w.Proto = 2
			if st.code != "" {
				if name, err := e.LoadLibrary(st.code, st.replace); err != nil {
					w.Error("ERR " + err.Error())
				} else {
					w.BulkString(name)
				}
			} else if f := e.Function([]byte(st.fn)); f == nil {
				w.Error("ERR Function not found")
			} else {
				e.StartFunction(f, bytesOf(st.keys), bytesOf(st.args))
				e.Run()
				e.Reply(&w)
			}
			if got := string(w.Buf); got != st.want {
				t.Errorf("%s, step %d:\n got %q\nwant %q", tc.name, i+1, got, st.want)
			}
		}
	}
}

// TestFunctionCasesMatchRedis checks the recorded replies against a real
// redis-server (skipped when none is installed).
func TestFunctionCasesMatchRedis(t *testing.T) {
	c := redistest.Dial(t, redistest.StartRedis(t))
	for _, tc := range fnCases {
		for _, cmd := range [][]string{{"FLUSHALL"}, {"FUNCTION", "FLUSH"}} {
			if _, err := c.Do(cmd...); err != nil {
				t.Fatal(err)
			}
		}
		for i, st := range tc.steps {
			var args []string
			if st.code != "" {
				args = []string{"FUNCTION", "LOAD"}
				if st.replace {
					args = append(args, "REPLACE")
				}
				args = append(args, st.code)
			} else {
				args = append([]string{"FCALL", st.fn, strconv.Itoa(len(st.keys))}, st.keys...)
				args = append(args, st.args...)
			}
			got, err := c.Do(args...)
			if err != nil {
				t.Fatal(err)
			}
			if got != st.want {
				t.Errorf("%s, step %d: redis-server replies %q, recorded %q", tc.name, i+1, got, st.want)
			}
		}
	}
}

// TestFunctionList checks what FUNCTION LIST shows of a library: its
// functions sorted by name, their descriptions, and their flags by
// Redis's names.
func TestFunctionList(t *testing.T) {
	e := lua.New(newMapHost(), "7.0.15")
	code := "#!lua name=lib\n" +
		"redis.register_function{function_name = 'b', callback = function() end, flags = {'allow-stale', 'no-writes', 'allow-cross-slot-keys', 'no-cluster', 'allow-oom'}}\n" +
		"redis.register_function{function_name = 'a', callback = function() end, description = 'the a'}"
	if _, err := e.LoadLibrary(code, false); err != nil {
		t.Fatal(err)
	}
	libs := e.Libraries()
	if len(libs) != 1 || libs[0].Name != "lib" || libs[0].Code != code {
		t.Fatalf("libraries: %+v", libs)
	}
	var got []string
	for _, f := range libs[0].Functions() {
		desc := "<nil>"
		if f.Description != nil {
			desc = *f.Description
		}
		got = append(got, f.Name+" "+desc+" "+strings.Join(f.Flags.Names(), ","))
	}
	// Flags in redis-server 7.0.15's order; functions by name (Redis lists
	// them in its hash table's order).
	want := []string{"a the a ", "b <nil> no-writes,allow-oom,allow-stale,no-cluster,allow-cross-slot-keys"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("functions %q, want %q", got, want)
	}
	if l, f := e.Counts(); l != 1 || f != 2 {
		t.Fatalf("counts %d %d", l, f)
	}
}
