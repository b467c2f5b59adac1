package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc64"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// Redis 7 functions (functions.c, function_lua.c): libraries loaded with
// FUNCTION LOAD into their own Lua VM, called with FCALL/FCALL_RO.

func init() {
	fkeys := func(args [][]byte) []int { return numkeysPositions(args, 2, 3) }
	register(
		&Command{Name: "fcall", Arity: -3, Flags: []string{"noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale", "lock_all"}, Keys: fkeys, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Invoke a function", Complexity: "Depends on the function that is executed.", Fn: func(c *Client, a [][]byte) { fcallCommand(c, a, false) }},
		&Command{Name: "fcall_ro", Arity: -3, Flags: []string{"noscript", "skip_monitor", "no_mandatory_keys", "stale", "readonly", "lock_all"}, Keys: fkeys, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Invoke a read-only function", Complexity: "Depends on the function that is executed.", Fn: func(c *Client, a [][]byte) { fcallCommand(c, a, true) }},
		&Command{Name: "function", Arity: -2, ACL: []string{"slow"}, Group: "scripting", Since: "7.0.0", Summary: "A container for function commands", Complexity: "Depends on subcommand.", Subs: []*Command{
			{Name: "load", Arity: -3, Flags: []string{"write", "denyoom", "noscript", "lock_all"}, ACL: []string{"write", "slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Create a function with the given arguments (name, code, description)", Complexity: "O(1) (considering compilation time is redundant)", Fn: functionLoadCommand},
			{Name: "delete", Arity: 3, Flags: []string{"write", "noscript", "lock_all"}, ACL: []string{"write", "slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Delete a function by name", Complexity: "O(1)", Fn: functionDeleteCommand},
			{Name: "flush", Arity: -2, Flags: []string{"write", "noscript", "lock_all"}, ACL: []string{"write", "slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Deleting all functions", Complexity: "O(N) where N is the number of functions deleted", Fn: functionFlushCommand},
			{Name: "list", Arity: -2, Flags: []string{"noscript", "lock_all"}, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "List information about all the functions", Complexity: "O(N) where N is the number of functions", Fn: functionListCommand},
			{Name: "dump", Arity: 2, Flags: []string{"noscript", "lock_all"}, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Dump all functions into a serialized binary payload", Complexity: "O(N) where N is the number of functions", Fn: functionDumpCommand},
			{Name: "restore", Arity: -3, Flags: []string{"write", "denyoom", "noscript", "lock_all"}, ACL: []string{"write", "slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Restore all the functions on the given payload", Complexity: "O(N) where N is the number of functions on the payload", Fn: functionRestoreCommand},
			{Name: "stats", Arity: 2, Flags: []string{"noscript", "allow_busy"}, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Return information about the function currently running (name, description, duration)", Complexity: "O(1)", Fn: functionStatsCommand},
			{Name: "kill", Arity: 2, Flags: []string{"noscript", "allow_busy"}, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Kill the function currently in execution.", Complexity: "O(1)", Fn: func(c *Client, _ [][]byte) { scriptKill(c, false) }},
			{Name: "help", Arity: 2, Flags: []string{"loading", "stale"}, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Show helpful text about the different subcommands", Complexity: "O(1)", Fn: functionHelpCommand},
		}},
	)
}

type luaLibrary struct {
	name  string
	code  string
	funcs map[string]*luaFunction
}

type luaFunction struct {
	name  string
	desc  *string
	flags int
	fn    *lua.LFunction
	lib   *luaLibrary
}

type functionsState struct {
	libs    map[string]*luaLibrary
	funcs   map[string]*luaFunction
	loading *luaLibrary // library being loaded (register_function target)
}

func (st *scriptingState) functions() *functionsState {
	if st.fnVM == nil {
		st.fnVM = newLuaVM(st, true)
	}
	return &st.fn
}

func validLibName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// loadLibrary compiles and runs a library, linking it on success.
func (st *scriptingState) loadLibrary(code string, replace bool) (string, string) {
	fs := st.functions()
	if !strings.HasPrefix(code, "#!") {
		return "", "Missing library metadata"
	}
	nl := strings.IndexByte(code, '\n')
	if nl < 0 {
		return "", "Invalid library metadata"
	}
	// The shebang line is split as sdssplitargs does: name="foo" is foo.
	parts, ok := splitConfigArgs(code[:nl])
	if !ok || len(parts) == 0 {
		return "", "Invalid library metadata"
	}
	engine := parts[0][2:]
	name, named := "", false
	for _, p := range parts[1:] {
		if len(p) >= 5 && strings.EqualFold(p[:5], "name=") {
			if named {
				return "", "Invalid metadata value, name argument was given multiple times"
			}
			name, named = p[5:], true
			continue
		}
		return "", "Invalid metadata value given: " + p
	}
	if !named {
		return "", "Library name was not given"
	}
	if !validLibName(name) {
		return "", "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	}
	if !strings.EqualFold(engine, "lua") {
		return "", "Engine '" + engine + "' not found"
	}
	old := fs.libs[name]
	if old != nil && !replace {
		return "", "Library '" + name + "' already exists"
	}
	lib := &luaLibrary{name: name, code: code, funcs: map[string]*luaFunction{}}
	proto, err := compileLua(code[nl:], "user_function")
	if err != nil {
		return "", "Error compiling function: " + compileErrorText(err, "user_function", code)
	}
	vm := st.fnVM
	L := vm.L
	fn := L.NewFunctionFromProto(proto)
	fn.Env = vm.env
	fs.loading = lib
	L.Push(fn)
	// Loading a library may not run longer than Redis's 500 ms
	// (LOAD_TIMEOUT_MS): a load that loops forever must not hold the server.
	ctx, cancel := context.WithTimeout(vm.ctx, loadTimeout)
	L.SetContext(ctx)
	// The load run sees only the library API as its globals (Redis 7.0
	// swaps the __index of the globals' metatable the same way); the
	// functions it registers see the full globals when called.
	vm.envMT.RawSetString("__index", vm.loadGlobals)
	perr := pcallLoad(L)
	vm.envMT.RawSetString("__index", vm.globals)
	L.SetContext(vm.ctx)
	timedOut := ctx.Err() == context.DeadlineExceeded
	cancel()
	fs.loading = nil
	L.SetTop(0)
	if timedOut {
		return "", "Error registering functions: FUNCTION LOAD timeout"
	}
	if perr != nil {
		msg := perr.Error()
		if ae, ok := perr.(*lua.ApiError); ok {
			msg = "ERR " + lua.LVAsString(ae.Object)
			if t, ok := ae.Object.(*lua.LTable); ok {
				msg = lua.LVAsString(t.RawGetString("err"))
			}
		}
		return "", "Error registering functions: " + msg
	}
	if len(lib.funcs) == 0 {
		return "", "No functions registered"
	}
	for fname := range lib.funcs {
		if f := fs.funcs[strings.ToLower(fname)]; f != nil && f.lib != old {
			return "", "Function " + fname + " already exists"
		}
	}
	if old != nil {
		st.unlinkLibrary(old)
	}
	fs.libs[name] = lib
	for fname, f := range lib.funcs {
		fs.funcs[strings.ToLower(fname)] = f
	}
	return name, ""
}

func (st *scriptingState) unlinkLibrary(lib *luaLibrary) {
	delete(st.fn.libs, lib.name)
	for fname := range lib.funcs {
		delete(st.fn.funcs, strings.ToLower(fname))
	}
}

// registerFunction is redis.register_function.
func (vm *luaVM) registerFunction(L *lua.LState) int {
	lib := vm.st.fn.loading
	if lib == nil {
		raiseRedisError(L, "redis.register_function can only be called on FUNCTION LOAD command")
	}
	var name string
	var desc *string
	var cb *lua.LFunction
	flags := 0
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			raiseRedisError(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var errText string
		luaForEach(t, func(k, v lua.LValue) {
			if errText != "" {
				return
			}
			ks, ok := k.(lua.LString)
			if !ok {
				errText = "named argument key given to redis.register_function is not a string"
				return
			}
			switch strings.ToLower(string(ks)) {
			case "function_name":
				s, ok := luaStringish(v)
				if !ok {
					errText = "function_name argument given to redis.register_function must be a string"
					return
				}
				name = string(s)
			case "description":
				s, ok := luaStringish(v)
				if !ok {
					errText = "description argument given to redis.register_function must be a string"
					return
				}
				d := string(s)
				desc = &d
			case "callback":
				f, ok := v.(*lua.LFunction)
				if !ok {
					errText = "callback argument given to redis.register_function must be a function"
					return
				}
				cb = f
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					errText = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				for i := 1; ; i++ {
					fv := ft.RawGetInt(i)
					if fv == lua.LNil {
						break
					}
					found := false
					if s, ok := fv.(lua.LString); ok {
						for _, d := range scriptFlagNames {
							if strings.EqualFold(d.name, string(s)) {
								flags |= d.flag
								found = true
							}
						}
					}
					if !found {
						errText = "unknown flag given"
						return
					}
				}
			default:
				errText = "unknown argument given to redis.register_function"
			}
		})
		if errText != "" {
			raiseRedisError(L, errText)
		}
		if name == "" && cb == nil && errText == "" {
			raiseRedisError(L, "redis.register_function must get a function name argument")
		}
		if name == "" {
			raiseRedisError(L, "redis.register_function must get a function name argument")
		}
		if cb == nil {
			raiseRedisError(L, "redis.register_function must get a callback argument")
		}
	case 2:
		s, ok := L.Get(1).(lua.LString)
		if !ok {
			if n, isNum := L.Get(1).(lua.LNumber); isNum {
				s, ok = lua.LString(n.String()), true
			}
		}
		if !ok {
			raiseRedisError(L, "first argument to redis.register_function must be a string")
		}
		f, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			raiseRedisError(L, "second argument to redis.register_function must be a function")
		}
		name, cb = string(s), f
	default:
		raiseRedisError(L, "wrong number of arguments to redis.register_function")
	}
	if !validLibName(name) {
		raiseRedisError(L, "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	if lib.funcs[name] != nil {
		raiseRedisError(L, "Function already exists in the library")
	}
	lib.funcs[name] = &luaFunction{name: name, desc: desc, flags: flags, fn: cb, lib: lib}
	return 0
}

// luaStringish is lua_isstring + lua_tostring: strings and numbers.
func luaStringish(v lua.LValue) (lua.LString, bool) {
	switch v := v.(type) {
	case lua.LString:
		return v, true
	case lua.LNumber:
		return lua.LString(v.String()), true
	}
	return "", false
}

func fcallCommand(c *Client, args [][]byte, ro bool) {
	c.srv.feedMonitors(c, c.dbi, args, false) // before the commands it runs
	st := c.srv.scripting()
	fs := st.functions()
	// Function names are looked up ignoring case (functionDictType).
	f := fs.funcs[string(args[1])]
	if f == nil {
		f = fs.funcs[strings.ToLower(string(args[1]))]
	}
	if f == nil {
		c.w.Error("ERR Function not found")
		return
	}
	numkeys, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error("ERR Bad number of keys provided")
		return
	}
	if numkeys > int64(len(args)-3) {
		c.w.Error("ERR Number of keys can't be greater than number of args")
		return
	} else if numkeys < 0 {
		c.w.Error("ERR Number of keys can't be negative")
		return
	}
	if !st.checkFlags(c, f.flags, ro) {
		return
	}
	L := st.fnVM.L
	L.Push(f.fn)
	L.Push(stringsTable(L, args[3:3+numkeys]))
	L.Push(stringsTable(L, args[3+numkeys:]))
	// FUNCTION STATS shows the running command (published with the run).
	st.run.cmd = st.run.cmd[:0]
	for _, a := range args {
		st.run.cmd = append(st.run.cmd, string(a))
	}
	st.run.keys = args[3 : 3+numkeys]
	st.execute(c, st.fnVM, f.name, false, ro || f.flags&sfNoWrites != 0, 2)
}

func functionLoadCommand(c *Client, args [][]byte) {
	replace := false
	i := 2
	for ; i < len(args)-1; i++ {
		if eq(args[i], "replace") {
			replace = true
			continue
		}
		c.w.Error("ERR Unknown option given: " + string(args[i]))
		return
	}
	if i >= len(args) {
		c.w.Error("ERR Function code is missing")
		return
	}
	st := c.srv.scripting()
	st.mu.Lock()
	name, err := st.loadLibrary(string(args[i]), replace)
	st.mu.Unlock()
	if err != "" {
		c.w.Error("ERR " + err)
		return
	}
	c.w.BulkString(name)
}

func functionDeleteCommand(c *Client, args [][]byte) {
	st := c.srv.scripting()
	st.mu.Lock()
	defer st.mu.Unlock()
	fs := st.functions()
	lib := fs.libs[string(args[2])]
	if lib == nil {
		c.w.Error("ERR Library not found")
		return
	}
	st.unlinkLibrary(lib)
	c.w.OK()
}

func functionFlushCommand(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.w.Error("ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.")
		return
	}
	if len(args) == 3 && !eq(args[2], "sync") && !eq(args[2], "async") {
		c.w.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	c.srv.flushFunctions()
	c.w.OK()
}

// flushFunctions deletes every function library.
func (s *Server) flushFunctions() {
	st := s.scripting()
	st.mu.Lock()
	defer st.mu.Unlock()
	fs := st.functions()
	fs.libs = map[string]*luaLibrary{}
	fs.funcs = map[string]*luaFunction{}
}

func (fs *functionsState) sortedLibs() []*luaLibrary {
	out := make([]*luaLibrary, 0, len(fs.libs))
	for _, l := range fs.libs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func functionListCommand(c *Client, args [][]byte) {
	withCode := false
	var pattern []byte
	for i := 2; i < len(args); i++ {
		if !withCode && eq(args[i], "withcode") {
			withCode = true
			continue
		}
		if pattern == nil && eq(args[i], "libraryname") {
			if i >= len(args)-1 {
				c.w.Error("ERR library name argument was not given")
				return
			}
			i++
			pattern = args[i]
			continue
		}
		c.w.Error("ERR Unknown argument " + string(args[i]))
		return
	}
	fs := c.srv.scripting().functions()
	var libs []*luaLibrary
	for _, l := range fs.sortedLibs() {
		if pattern == nil || store.Match(pattern, []byte(l.name), false) {
			libs = append(libs, l)
		}
	}
	c.w.Array(len(libs))
	for _, l := range libs {
		if withCode {
			c.w.Map(4)
		} else {
			c.w.Map(3)
		}
		c.w.BulkString("library_name")
		c.w.BulkString(l.name)
		c.w.BulkString("engine")
		c.w.BulkString("LUA")
		c.w.BulkString("functions")
		names := make([]string, 0, len(l.funcs))
		for n := range l.funcs {
			names = append(names, n)
		}
		sort.Strings(names)
		c.w.Array(len(names))
		for _, n := range names {
			f := l.funcs[n]
			c.w.Map(3)
			c.w.BulkString("name")
			c.w.BulkString(f.name)
			c.w.BulkString("description")
			if f.desc != nil {
				c.w.BulkString(*f.desc)
			} else {
				c.w.Null()
			}
			c.w.BulkString("flags")
			nf := 0
			for _, d := range scriptFlagNames {
				if f.flags&d.flag != 0 {
					nf++
				}
			}
			c.w.Set(nf)
			for _, d := range scriptFlagNames {
				if f.flags&d.flag != 0 {
					c.w.Simple(d.name)
				}
			}
		}
		if withCode {
			c.w.BulkString("library_code")
			c.w.BulkString(l.code)
		}
	}
}

// FUNCTION DUMP payload (Sluice's own format, not Redis's RDB one):
//
//	"SLFN" | uint32 count | count × (uint32 len | library code) | uint16 version(1) | uint64 crc64(ECMA) of all before
//
// Libraries are re-created from their code (the name is in the shebang).
var crcTable = crc64.MakeTable(crc64.ECMA)

func functionDumpCommand(c *Client, args [][]byte) {
	fs := c.srv.scripting().functions()
	b := []byte("SLFN")
	libs := fs.sortedLibs()
	b = binary.BigEndian.AppendUint32(b, uint32(len(libs)))
	for _, l := range libs {
		b = binary.BigEndian.AppendUint32(b, uint32(len(l.code)))
		b = append(b, l.code...)
	}
	b = binary.BigEndian.AppendUint16(b, 1)
	b = binary.BigEndian.AppendUint64(b, crc64.Checksum(b, crcTable))
	c.w.Bulk(b)
}

func decodeFunctionDump(b []byte) ([]string, bool) {
	if len(b) < 4+4+2+8 || string(b[:4]) != "SLFN" {
		return nil, false
	}
	body := b[:len(b)-8]
	if crc64.Checksum(body, crcTable) != binary.BigEndian.Uint64(b[len(b)-8:]) ||
		binary.BigEndian.Uint16(body[len(body)-2:]) != 1 {
		return nil, false
	}
	p := body[4 : len(body)-2]
	n := binary.BigEndian.Uint32(p)
	p = p[4:]
	var out []string
	for i := uint32(0); i < n; i++ {
		if len(p) < 4 {
			return nil, false
		}
		l := binary.BigEndian.Uint32(p)
		p = p[4:]
		if uint32(len(p)) < l {
			return nil, false
		}
		out = append(out, string(p[:l]))
		p = p[l:]
	}
	return out, len(p) == 0
}

func functionRestoreCommand(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.w.Error("ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP.")
		return
	}
	policy := "append"
	if len(args) == 4 {
		switch {
		case eq(args[3], "flush"):
			policy = "flush"
		case eq(args[3], "append"):
		case eq(args[3], "replace"):
			policy = "replace"
		default:
			c.w.Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	codes, ok := decodeFunctionDump(args[2])
	if !ok {
		c.w.Error("ERR DUMP payload version or checksum are wrong")
		return
	}
	st := c.srv.scripting()
	st.mu.Lock()
	defer st.mu.Unlock()
	fs := st.functions()
	saveLibs, saveFuncs := fs.libs, fs.funcs
	// Load into a fresh context, then join (as libraryJoin does).
	fs.libs, fs.funcs = map[string]*luaLibrary{}, map[string]*luaFunction{}
	for _, code := range codes {
		if _, err := st.loadLibrary(code, false); err != "" {
			fs.libs, fs.funcs = saveLibs, saveFuncs
			c.w.Error("ERR " + err)
			return
		}
	}
	newLibs := fs.libs
	fs.libs, fs.funcs = saveLibs, saveFuncs
	if policy == "flush" {
		fs.libs, fs.funcs = map[string]*luaLibrary{}, map[string]*luaFunction{}
	}
	for _, l := range newLibs {
		if fs.libs[l.name] != nil && policy != "replace" {
			c.w.Error("ERR Library " + l.name + " already exists")
			fs.libs, fs.funcs = saveLibs, saveFuncs
			return
		}
	}
	libs, funcs := map[string]*luaLibrary{}, map[string]*luaFunction{}
	for k, v := range fs.libs {
		if newLibs[k] == nil {
			libs[k] = v
			for fk, fv := range v.funcs {
				funcs[strings.ToLower(fk)] = fv
			}
		}
	}
	for k, v := range newLibs {
		for fk, fv := range v.funcs {
			if funcs[strings.ToLower(fk)] != nil {
				c.w.Error("ERR Function " + fk + " already exists")
				fs.libs, fs.funcs = saveLibs, saveFuncs
				return
			}
			funcs[strings.ToLower(fk)] = fv
		}
		libs[k] = v
	}
	fs.libs, fs.funcs = libs, funcs
	c.w.OK()
}

func functionStatsCommand(c *Client, args [][]byte) {
	st := c.srv.scripting()
	st.mu.Lock()
	run := st.running.Load()
	var since int64
	if run != nil {
		since = st.busySince.Load()
	}
	nlibs, nfuncs := len(st.fn.libs), len(st.fn.funcs)
	st.mu.Unlock()
	if run != nil && run.eval {
		c.w.Error(errBusyScript)
		return
	}
	c.w.Map(2)
	c.w.BulkString("running_script")
	if run == nil {
		c.w.Null()
	} else {
		c.w.Map(3)
		c.w.BulkString("name")
		c.w.BulkString(run.name)
		c.w.BulkString("command")
		c.w.Array(len(run.cmd))
		for _, a := range run.cmd {
			c.w.BulkString(a)
		}
		c.w.BulkString("duration_ms")
		c.w.Int((nanotime() - since) / 1e6)
	}
	c.w.BulkString("engines")
	c.w.Map(1)
	c.w.BulkString("LUA")
	c.w.Map(2)
	c.w.BulkString("libraries_count")
	c.w.Int(int64(nlibs))
	c.w.BulkString("functions_count")
	c.w.Int(int64(nfuncs))
}

func functionHelpCommand(c *Client, args [][]byte) {
	lines := []string{
		"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"LOAD [REPLACE] <FUNCTION CODE>",
		"    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>",
		"    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
		"    Return general information on all the libraries:",
		"    * Library name",
		"    * The engine used to run the Library",
		"    * Library description",
		"    * Functions list",
		"    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
		"STATS",
		"    Return information about the current function running:",
		"    * Function name",
		"    * Command used to run the function",
		"    * Duration in MS that the function is running",
		"    If no function is running, return nil",
		"    In addition, returns a list of available engines.",
		"KILL",
		"    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]",
		"    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.",
		"    * SYNC: Synchronously flush the libraries.",
		"DUMP",
		"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
		"      libraries with the new libraries (notice that even on this case there is no guarantee that the",
		"      new libraries will have a new name or is unique.)",
		"HELP",
		"    Prints this help.",
	}
	c.w.Array(len(lines))
	for _, l := range lines {
		c.w.Simple(l)
	}
}

// loadTimeout bounds FUNCTION LOAD's run of a library's body.
const loadTimeout = 500 * time.Millisecond

// pcallLoad runs the library body on top of L's stack, turning a panic
// out of the VM into an error (as pcallGuarded does for scripts).
func pcallLoad(L *lua.LState) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return L.PCall(0, 0, nil)
}
