package server

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	slua "github.com/sluicedb/sluice/lua"
	"github.com/sluicedb/sluice/resp"
)

// A luaVM is one Lua interpreter with Redis's sandbox: only the allowed
// globals, a read-only global table (through an empty proxy whose
// __newindex fails), read-only library tables, the redis API, cjson, bit.
// A VM is used only under the exclusive keyspace lock, by one script at a
// time, and is reused across runs.
type luaVM struct {
	L       *lua.LState
	globals *lua.LTable // the real globals (KEYS/ARGV are set here)
	env     *lua.LTable // the read-only proxy scripts see as _G
	handler *lua.LFunction
	st      *scriptingState
	fnMode  bool // the functions VM (FCALL, FUNCTION LOAD)
	// ro holds the read-only proxies (the library tables, _G and the
	// proxy getmetatable(_G) returns): setmetatable on them fails.
	ro      map[*lua.LTable]bool
	envMeta *lua.LTable // what getmetatable(_G) returns
	envMT   *lua.LTable // _G's real metatable: __index is the globals
	// loadGlobals are the only globals of a library's load run (the
	// functions VM): redis with register_function, log and the
	// constants; any other name is an error (function_lua.c's
	// LIBRARY_API_NAME table).
	loadGlobals *lua.LTable
	ctx         context.Context
	cancel      context.CancelFunc
}

const (
	errReadonlyTable = "Attempt to modify a readonly table"
	logDebug         = 0
	logVerbose       = 1
	logNotice        = 2
	logWarning       = 3
)

// allowed globals of the base library (script_lua.c's allow list).
var luaAllowedBase = []string{"xpcall", "tostring", "getfenv", "setmetatable", "next", "assert", "tonumber",
	"rawequal", "collectgarbage", "getmetatable", "rawset", "pcall", "coroutine", "type", "select", "unpack",
	"pairs", "rawget", "loadstring", "ipairs", "_VERSION", "setfenv", "load", "error"}

func init() {
	// Lua 5.0's implicit 'arg' table for vararg functions would be built
	// on every script call (a table per EVAL); scripts use '...' instead.
	lua.CompatVarArg = false
}

func newLuaVM(st *scriptingState, fnMode bool) *luaVM {
	// Redis lets a script hold about 8000 values on its stack (unpack of a
	// 7999-element table is in its tests): the registry grows on demand.
	L := lua.NewState(lua.Options{SkipOpenLibs: true, RegistryMaxSize: 1 << 20, RegistryGrowStep: 1024})
	vm := &luaVM{L: L, st: st, fnMode: fnMode, ro: map[*lua.LTable]bool{}}
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	orig := L.G.Global
	g := L.NewTable()
	for _, name := range luaAllowedBase {
		g.RawSetString(name, orig.RawGetString(name))
	}
	env := L.NewTable()
	vm.globals, vm.env = g, env

	strLib := orig.RawGetString("string").(*lua.LTable)
	strLib.RawSetString("dump", L.NewFunction(luaStringDump))
	g.RawSetString("loadstring", L.NewFunction(luaLoadstring))
	tostr := orig.RawGetString("tostring")
	g.RawSetString("tostring", L.NewFunction(func(L *lua.LState) int {
		// Lua 5.1 prints numbers with "%.14g" (LUAI_NUMFFORMAT).
		if L.GetTop() == 0 {
			L.RaiseError("bad argument #1 to 'tostring' (value expected)")
		}
		if n, ok := L.Get(1).(lua.LNumber); ok {
			L.Push(lua.LString(slua.FormatNumber(float64(n))))
			return 1
		}
		L.Insert(tostr, 1)
		L.Call(L.GetTop()-1, 1)
		return 1
	}))
	mathLib := orig.RawGetString("math").(*lua.LTable)
	mathLib.RawSetString("random", L.NewFunction(vm.mathRandom))
	mathLib.RawSetString("randomseed", L.NewFunction(vm.mathRandomseed))

	// Libraries: copied into fresh tables, exposed read-only.
	for _, name := range []string{"string", "table", "math"} {
		g.RawSetString(name, vm.readonly(orig.RawGetString(name).(*lua.LTable)))
	}
	libs := slua.Libraries(L)
	for _, name := range []string{"cjson", "bit", "cmsgpack", "struct"} {
		g.RawSetString(name, vm.readonly(libs[name]))
	}
	g.RawSetString("redis", vm.readonly(vm.redisLib()))
	g.RawSetString("pcall", L.NewFunction(vm.luaPcall))
	g.RawSetString("_G", env)

	// Globals: reads fall through to g, whose own metatable errors on a
	// missing name; writes always hit the proxy's __newindex.
	gm := L.NewTable()
	gm.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	}))
	L.SetMetatable(g, gm)
	em := L.NewTable()
	em.RawSetString("__index", g)
	em.RawSetString("__newindex", L.NewFunction(readonlyNewIndex))
	em.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(env, em)
	vm.envMT = em
	vm.ro[env] = true
	if fnMode {
		rt := vm.redisLib()
		lr := L.NewTable()
		lr.RawSetString("register_function", L.NewFunction(vm.registerFunction))
		for _, name := range []string{"log", "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING",
			"REDIS_VERSION", "REDIS_VERSION_NUM"} {
			lr.RawSetString(name, rt.RawGetString(name))
		}
		lg := L.NewTable()
		lg.RawSetString("redis", vm.readonly(lr, gm))
		L.SetMetatable(lg, gm)
		vm.loadGlobals = lg
	}
	vm.envMeta = vm.readonly(em)
	setmeta, getmeta := orig.RawGetString("setmetatable"), orig.RawGetString("getmetatable")
	g.RawSetString("setmetatable", L.NewFunction(func(L *lua.LState) int {
		// Redis's read-only tables refuse a new metatable like any write.
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			L.RaiseError("bad argument #1 to 'setmetatable' (table expected, got %s)", luaTypeName(L.Get(1)))
		}
		if m := L.Get(2); m != lua.LNil && m.Type() != lua.LTTable {
			L.RaiseError("bad argument #2 to 'setmetatable' (nil or table expected)")
		}
		if vm.ro[t] {
			L.Error(lua.LString(errReadonlyTable), 0)
		}
		L.Insert(setmeta, 1)
		L.Call(L.GetTop()-1, 1)
		return 1
	}))
	g.RawSetString("getmetatable", L.NewFunction(func(L *lua.LState) int {
		// _G's metatable is itself read-only; the library tables have
		// none (their proxies' metatables are an implementation detail).
		if L.GetTop() == 0 {
			L.RaiseError("bad argument #1 to 'getmetatable' (value expected)")
		}
		if t, ok := L.Get(1).(*lua.LTable); ok && vm.ro[t] {
			if t == env {
				L.Push(vm.envMeta)
			} else {
				L.Push(lua.LNil)
			}
			return 1
		}
		L.Insert(getmeta, 1)
		L.Call(L.GetTop()-1, 1)
		return 1
	}))
	L.G.Global = env
	L.Env = env
	vm.handler = L.NewFunction(vm.errHandler)
	vm.ctx, vm.cancel = context.WithCancel(context.Background())
	L.SetContext(vm.ctx)
	return vm
}

func readonlyNewIndex(L *lua.LState) int {
	L.RaiseError(errReadonlyTable)
	return 0
}

// readonly returns an empty proxy reading from t whose writes fail; a
// missing name calls onMiss's __index when given.
func (vm *luaVM) readonly(t *lua.LTable, onMiss ...*lua.LTable) *lua.LTable {
	L := vm.L
	cp := L.NewTable()
	luaForEach(t, func(k, v lua.LValue) { cp.RawSet(k, v) })
	if len(onMiss) > 0 {
		L.SetMetatable(cp, onMiss[0])
	}
	p := L.NewTable()
	m := L.NewTable()
	m.RawSetString("__index", cp)
	m.RawSetString("__newindex", L.NewFunction(readonlyNewIndex))
	m.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(p, m)
	vm.ro[p] = true
	return p
}

// compileLua compiles source into a prototype (no VM needed).
func compileLua(src, chunk string) (*lua.FunctionProto, error) {
	chunkList, err := parse.Parse(strings.NewReader(src), chunk)
	if err != nil {
		return nil, err
	}
	return lua.Compile(chunkList, chunk)
}

// compileErrorText turns a gopher-lua parse error into Lua 5.1's
// "chunk:line: msg near 'tok'" form as far as possible.
func compileErrorText(err error, chunk, src string) string {
	if pe, ok := err.(*parse.Error); ok {
		tok := pe.Token
		near := "'" + tok + "'"
		line := pe.Pos.Line
		if tok == "" || tok == "EOF" || tok == "<EOF>" || line < 0 {
			near = "'<eof>'"
			line = strings.Count(src, "\n") + 1
		}
		if pe.Message == "unterminated string" {
			pe.Message = "unfinished string"
		}
		msg := pe.Message
		if msg == "Invalid token" {
			// A character the lexer rejects: Lua 5.1 names control
			// characters by code (luaX_token2str).
			msg = "unexpected symbol"
			if len(tok) == 1 && (tok[0] < ' ' || tok[0] == 127) {
				near = "'char(" + strconv.Itoa(int(tok[0])) + ")'"
			}
		}
		if msg == "syntax error" {
			msg = "unexpected symbol"
		}
		return chunk + ":" + strconv.Itoa(line) + ": " + msg + " near " + near
	}
	return err.Error()
}

func (vm *luaVM) redisLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	set := func(name string, fn lua.LGFunction) { t.RawSetString(name, L.NewFunction(fn)) }
	set("call", func(L *lua.LState) int { return vm.redisCall(L, true) })
	set("pcall", func(L *lua.LState) int { return vm.redisCall(L, false) })
	set("error_reply", func(L *lua.LState) int { return singleField(L, "err") })
	set("status_reply", func(L *lua.LState) int { return singleField(L, "ok") })
	set("sha1hex", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			raiseRedisError(L, "wrong number of arguments")
		}
		s := L.ToString(1)
		sum := sha1.Sum([]byte(s))
		L.Push(lua.LString(hex.EncodeToString(sum[:])))
		return 1
	})
	set("log", vm.redisLog)
	set("acl_check_cmd", vm.aclCheckCmd)
	set("setresp", func(L *lua.LState) int {
		run := vm.st.cur
		if run == nil {
			vm.notAtLoad(L, "setresp")
			raiseRedisError(L, "redis.setresp can only be called inside a script invocation")
		}
		if L.GetTop() != 1 {
			raiseRedisError(L, "redis.setresp() requires one argument.")
		}
		v := L.ToInt(1)
		if v != 2 && v != 3 {
			raiseRedisError(L, "RESP version must be 2 or 3.")
		}
		run.pc.w.Proto = v
		return 0
	})
	set("set_repl", func(L *lua.LState) int {
		if vm.st.cur == nil {
			vm.notAtLoad(L, "set_repl")
			raiseRedisError(L, "redis.set_repl can only be called inside a script invocation")
		}
		if L.GetTop() != 1 {
			raiseRedisError(L, "redis.set_repl() requires two arguments.")
		}
		f := L.ToInt(1)
		if f&^3 != 0 {
			raiseRedisError(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
		}
		return 0
	})
	set("replicate_commands", func(L *lua.LState) int { L.Push(lua.LTrue); return 1 })
	t.RawSetString("REDIS_VERSION", lua.LString(Version))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(7<<16|0<<8|15))
	for name, v := range map[string]int{"LOG_DEBUG": logDebug, "LOG_VERBOSE": logVerbose, "LOG_NOTICE": logNotice,
		"LOG_WARNING": logWarning, "REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		t.RawSetString(name, lua.LNumber(v))
	}
	return t
}

// raiseRedisError raises a Redis error table (luaPushError + luaError):
// msg without a code gets "ERR".
func raiseRedisError(L *lua.LState, msg string) {
	L.Error(errorTable(L, msg), 0)
}

// errorTable builds {err="CODE msg"} as luaPushErrorBuff does.
func errorTable(L *lua.LState, msg string) *lua.LTable {
	t := L.CreateTable(0, 2)
	t.RawSetString("err", lua.LString(errorWithCode(msg)))
	return t
}

func errorWithCode(msg string) string {
	if strings.HasPrefix(msg, "-") {
		msg = msg[1:]
		if i := strings.IndexByte(msg, ' '); i < 0 {
			msg = "ERR " + msg
		}
	} else {
		msg = "ERR " + msg
	}
	return strings.TrimRight(msg, "\r\n")
}

func singleField(L *lua.LState, field string) int {
	if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
		L.SetTop(0)
		L.Push(errorTable(L, "wrong number or type of arguments"))
		return 1
	}
	t := L.CreateTable(0, 1)
	s := L.ToString(1)
	if field == "err" {
		if !strings.HasPrefix(s, "-") {
			s = "-" + s
		}
		s = errorWithCode(s)
	}
	t.RawSetString(field, lua.LString(s))
	L.Push(t)
	return 1
}

func (vm *luaVM) redisLog(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		raiseRedisError(L, "redis.log() requires two arguments or more.")
	}
	if L.Get(1).Type() != lua.LTNumber {
		raiseRedisError(L, "First argument must be a number (log level).")
	}
	level := L.ToInt(1)
	if level < logDebug || level > logWarning {
		raiseRedisError(L, "Invalid debug level.")
	}
	parts := make([]string, 0, n-1)
	for i := 2; i <= n; i++ {
		parts = append(parts, L.ToString(i))
	}
	vm.st.srv.LogAt(level-logDebug+LogDebug, "%s", strings.Join(parts, " "))
	return 0
}

// luaPcall is Redis's pcall: like Lua's, but an error table with an err
// field is returned as that string.
func (vm *luaVM) luaPcall(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.ArgError(1, "value expected")
	}
	base := 0
	fn, _ := L.Get(1).(*lua.LFunction)
	err := L.PCall(n-1, lua.MultRet, nil)
	if err != nil {
		obj := lua.LValue(lua.LString(err.Error()))
		if ae, ok := err.(*lua.ApiError); ok {
			obj = ae.Object
		}
		if msg, ok := obj.(lua.LString); ok {
			s := luaErrorText(string(msg))
			// A Go function called by pcall itself raised this: Lua 5.1's
			// luaL_error would name pcall's position (a C function: none),
			// where gopher-lua names the script line calling pcall.
			if fn != nil && fn.IsG {
				if where := L.Where(1); where != "" {
					s = strings.TrimPrefix(s, where+" ")
				}
			}
			obj = lua.LString(s)
		}
		if t, ok := obj.(*lua.LTable); ok {
			if s, ok := t.RawGetString("err").(lua.LString); ok {
				obj = s
			}
		}
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	nret := L.GetTop() - base
	L.Insert(lua.LTrue, 1)
	return nret + 1
}

// errHandler is __redis__err__handler: it turns the error into a table
// with err, source and line of the Lua code that raised it.
func (vm *luaVM) errHandler(L *lua.LState) int {
	e := L.Get(1)
	t, ok := e.(*lua.LTable)
	if !ok {
		t = L.CreateTable(0, 3)
		t.RawSetString("err", lua.LString("ERR "+luaErrorText(lua.LVAsString(e))))
		if e.Type() != lua.LTString && e.Type() != lua.LTNumber {
			t.RawSetString("err", lua.LString("ERR "+e.String()))
		}
	}
	for lvl := 1; lvl < 4; lvl++ {
		dbg, ok := L.GetStack(lvl)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.What == "G" || dbg.CurrentLine < 0 {
			continue
		}
		src := "@" + dbg.Source
		if inner, ok := strings.CutPrefix(dbg.Source, `[string "`); ok && strings.HasSuffix(inner, `"]`) && !strings.HasSuffix(inner, `..."]`) {
			src = strings.TrimSuffix(inner, `"]`) // loadstring's chunk name
		}
		t.RawSetString("source", lua.LString(src))
		t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
		if msg, ok := e.(lua.LString); ok && lvl == 1 && strings.HasSuffix(string(msg), luaCallErr) {
			if desc := describeFailedCall(L, dbg); desc != "" {
				m := strings.TrimSuffix(string(msg), luaCallErr) + "attempt to call " + desc
				t.RawSetString("err", lua.LString("ERR "+m))
			}
		}
		break
	}
	L.Push(t)
	return 1
}

const luaCallErr = "attempt to call a non-function object"

// describeFailedCall finds, for gopher-lua's bare "attempt to call a
// non-function object", what Lua 5.1 would say after "attempt to call ":
// "global 'f' (a nil value)", "field 'x' (a nil value)", "a nil value"...
// The frame stopped at a call on its current line whose function register
// holds a value that cannot be called; the instruction that loaded that
// register tells the kind of name (luaG_typeerror's getobjname).
func describeFailedCall(L *lua.LState, dbg *lua.Debug) string {
	fv, err := L.GetInfo("f", dbg, lua.LNil)
	f, ok := fv.(*lua.LFunction)
	if err != nil || !ok || f.IsG || f.Proto == nil {
		return ""
	}
	p := f.Proto
	op := func(inst uint32) int { return int(inst >> 26) }
	argA := func(inst uint32) int { return int(inst>>18) & 0xff }
	for pc := len(p.Code) - 1; pc >= 0; pc-- {
		inst := p.Code[pc]
		if pc >= len(p.DbgSourcePositions) || p.DbgSourcePositions[pc] != dbg.CurrentLine ||
			(op(inst) != lua.OP_CALL && op(inst) != lua.OP_TAILCALL) {
			continue
		}
		a := argA(inst)
		name, v := L.GetLocal(dbg, a+1)
		if name == "" || v.Type() == lua.LTFunction || L.GetMetaField(v, "__call") != lua.LNil {
			continue
		}
		typ := "a " + v.Type().String() + " value"
		callName := ""
		for _, c := range p.DbgCalls {
			if c.Pc == pc {
				callName = c.Name
			}
		}
		kind := ""
		for j := pc - 1; j >= 0 && callName != "" && callName != "(anonymous)"; j-- {
			prev := p.Code[j]
			if argA(prev) != a {
				continue
			}
			switch op(prev) {
			case lua.OP_GETGLOBAL:
				kind = "global"
			case lua.OP_GETTABLEKS, lua.OP_GETTABLE:
				kind = "field"
			case lua.OP_SELF:
				kind = "method"
			case lua.OP_GETUPVAL:
				kind = "upvalue"
			case lua.OP_MOVE:
				kind = "local"
			}
			break
		}
		if kind == "" || (callName == "?" && kind != "field") {
			return typ
		}
		return kind + " '" + callName + "' (" + typ + ")"
	}
	return ""
}

// redisCall implements redis.call (raise) and redis.pcall.
func (vm *luaVM) redisCall(L *lua.LState, raise bool) int {
	run := vm.st.cur
	if run == nil {
		if raise {
			vm.notAtLoad(L, "call")
		} else {
			vm.notAtLoad(L, "pcall")
		}
		raiseRedisError(L, "redis.call/pcall can only be called inside a script invocation")
	}
	n := L.GetTop()
	if n == 0 {
		return vm.callFailed(L, raise, "Please specify at least one argument for this redis lib call", nil)
	}
	argv := run.argv[:0]
	buf := run.argbuf[:0]
	offs := run.offs[:0]
	for i := 1; i <= n; i++ {
		start := len(buf)
		switch v := L.Get(i).(type) {
		case lua.LString:
			buf = append(buf, v...)
		case lua.LNumber:
			buf = resp.AppendDouble(buf, float64(v))
		default:
			return vm.callFailed(L, raise, "Lua redis lib command arguments must be strings or integers", nil)
		}
		offs = append(offs, start, len(buf))
	}
	for i := 0; i < len(offs); i += 2 {
		argv = append(argv, buf[offs[i]:offs[i+1]:offs[i+1]])
	}
	run.argv, run.argbuf, run.offs = argv, buf, offs
	L.SetTop(0)
	pc := run.pc
	cmd := lookupCommand(argv[0])
	if cmd != nil && cmd.sub != nil {
		if len(argv) >= 2 {
			cmd = cmd.lookupSub(argv[1])
		}
	}
	if cmd == nil || (cmd.Arity > 0 && cmd.Arity != len(argv)) || len(argv) < -cmd.Arity {
		msg := "Unknown Redis command called from script"
		if cmd != nil {
			msg = "Wrong number of args calling Redis command from script"
		}
		return vm.rejectCall(L, raise, msg, cmd)
	}
	if cmd.flags&flagNoScript != 0 && !vm.st.srv.denyScriptsOff.Load() {
		return vm.rejectCall(L, raise, "This Redis command is not allowed from script", cmd)
	}
	if run.caller != nil {
		if msg := pc.aclScriptDenied(run.caller, cmd, argv); msg != "" {
			return vm.rejectCall(L, raise, msg, cmd)
		}
	}
	if run.readOnly && (cmd.flags&flagWrite != 0 || hasFlag(cmd, "may_replicate")) {
		return vm.rejectCall(L, raise, "Write commands are not allowed from read-only scripts.", cmd)
	}
	if cmd.flags&flagDenyOOM != 0 && !run.wrote && run.caller != nil && run.caller.preOOM &&
		!run.caller.scriptAllowOOM && vm.st.srv.cfg.maxMemory.Load() != 0 {
		// Over maxmemory when the script began, and no write yet
		// (scriptVerifyOOM).
		return vm.rejectCall(L, raise, "-"+errOOM, cmd)
	}
	if cmd.flags&flagWrite != 0 && run.caller != nil && vm.st.srv.readOnlyReplicaFor(run.caller) {
		return vm.rejectCall(L, raise, "-READONLY You can't write against a read only replica.", cmd) // scriptVerifyWriteCommandAllow
	}
	if cmd.flags&flagWrite != 0 && vm.st.srv.replicasMissing() {
		return vm.rejectCall(L, raise, "-"+errNoReplicas, cmd) // scriptVerifyWriteCommandAllow
	}
	if cmd.flags&flagWrite != 0 {
		run.wrote = true
	}
	pc.w.Buf = pc.w.Buf[:0]
	pc.mark = 0 // time each call on its own, not since the previous one
	pc.call(cmd, argv)
	if pc.blocked {
		pc.blocked = false
		pc.blockedFlag.Store(false)
	}
	r := respReader{b: pc.w.Buf}
	v := r.value(L)
	if raise {
		if t, ok := v.(*lua.LTable); ok && len(pc.w.Buf) > 0 && pc.w.Buf[0] == '-' {
			L.Error(t, 0)
		}
	}
	L.Push(v)
	return 1
}

func hasFlag(cmd *Command, f string) bool {
	for _, x := range cmd.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// rejectCall fails a redis.call/pcall whose command (nil when unknown) was
// refused before running. As in Redis, the error counts once here, in
// errorstats and the command's rejected_calls, and the table is marked so
// that the script's reply does not count it again.
func (vm *luaVM) rejectCall(L *lua.LState, raise bool, msg string, cmd *Command) int {
	if cmd != nil {
		s := &vm.st.srv.stats[vm.st.cur.pc.slot]
		s.cmds[cmd.id].rejected.Add(1)
	}
	return vm.callFailed(L, raise, msg, func(t *lua.LTable) {
		vm.st.srv.countError(t.RawGetString("err").String())
		t.RawSetString(errNoStatsField, lua.LTrue)
	})
}

// errNoStatsField marks an error table whose error was already counted in
// the error statistics (by the command that replied with it), so that a
// script returning or raising it does not count it twice. Scripts see it,
// as in Redis.
const errNoStatsField = "ignore_error_stats_update"

// errorCounted reports whether the error table t carries errNoStatsField.
func errorCounted(t *lua.LTable) bool {
	return lua.LVAsBool(t.RawGetString(errNoStatsField))
}

func (vm *luaVM) callFailed(L *lua.LState, raise bool, msg string, mark func(*lua.LTable)) int {
	t := errorTable(L, msg)
	if mark != nil {
		mark(t)
	}
	if raise {
		L.Error(t, 0)
	}
	L.SetTop(0)
	L.Push(t)
	return 1
}

// respReader converts one RESP2/RESP3 reply into a Lua value as
// script_lua.c's redisProtocolToLuaType does.
type respReader struct {
	b   []byte
	off int
}

func (r *respReader) line() []byte {
	i := r.off
	for i+1 < len(r.b) && !(r.b[i] == '\r' && r.b[i+1] == '\n') {
		i++
	}
	l := r.b[r.off:i]
	r.off = i + 2
	return l
}

func (r *respReader) value(L *lua.LState) lua.LValue {
	if r.off >= len(r.b) {
		return lua.LNil
	}
	t := r.b[r.off]
	r.off++
	l := r.line()
	switch t {
	case '+':
		tb := L.CreateTable(0, 1)
		tb.RawSetString("ok", lua.LString(l))
		return tb
	case '-':
		tb := L.CreateTable(0, 2)
		tb.RawSetString("err", lua.LString(l))
		tb.RawSetString(errNoStatsField, lua.LTrue) // the command counted it
		return tb
	case ':':
		n, _ := strconv.ParseInt(string(l), 10, 64)
		return lua.LNumber(n)
	case '$', '=':
		n, _ := strconv.Atoi(string(l))
		if n < 0 {
			return lua.LFalse
		}
		s := r.b[r.off : r.off+n]
		r.off += n + 2
		if t == '=' {
			tb := L.CreateTable(0, 1)
			v := L.CreateTable(0, 2)
			v.RawSetString("format", lua.LString(s[:3]))
			v.RawSetString("string", lua.LString(s[4:]))
			tb.RawSetString("verbatim_string", v)
			return tb
		}
		return lua.LString(s)
	case '*', '~', '%', '>':
		n, _ := strconv.Atoi(string(l))
		if n < 0 {
			return lua.LFalse
		}
		switch t {
		case '%':
			m := L.CreateTable(0, n)
			for i := 0; i < n; i++ {
				k := r.value(L)
				m.RawSet(k, r.value(L))
			}
			tb := L.CreateTable(0, 1)
			tb.RawSetString("map", m)
			return tb
		case '~':
			m := L.CreateTable(0, n)
			for i := 0; i < n; i++ {
				m.RawSet(r.value(L), lua.LTrue)
			}
			tb := L.CreateTable(0, 1)
			tb.RawSetString("set", m)
			return tb
		}
		a := L.CreateTable(n, 0)
		for i := 0; i < n; i++ {
			a.RawSetInt(i+1, r.value(L))
		}
		return a
	case '_':
		return lua.LNil
	case '#':
		return lua.LBool(len(l) > 0 && l[0] == 't')
	case ',':
		f, _ := strconv.ParseFloat(string(l), 64)
		switch string(l) {
		case "inf":
			f = math.Inf(1)
		case "-inf":
			f = math.Inf(-1)
		}
		tb := L.CreateTable(0, 1)
		tb.RawSetString("double", lua.LNumber(f))
		return tb
	case '(':
		tb := L.CreateTable(0, 1)
		tb.RawSetString("big_number", lua.LString(l))
		return tb
	}
	return lua.LNil
}

// writeLuaReply converts a script's return value into the caller's reply
// (luaReplyToRedisReply); resp3 is the script's redis.setresp state.
func writeLuaReply(c *Client, v lua.LValue, resp3 bool, depth int) {
	w := &c.w
	switch v := v.(type) {
	case lua.LString:
		w.BulkString(string(v))
	case lua.LBool:
		if !resp3 {
			if v {
				w.Int(1)
			} else {
				w.Null()
			}
		} else {
			w.Bool(bool(v))
		}
	case lua.LNumber:
		w.Int(luaToInt(v))
	case *lua.LTable:
		if depth > 1000 {
			w.Error("ERR reached lua stack limit")
			return
		}
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			if errorCounted(v) {
				c.errorNoStats(string(e))
			} else {
				w.Error(string(e))
			}
			return
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			w.Simple(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))
			return
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			w.Double(float64(d))
			return
		}
		if s, ok := v.RawGetString("big_number").(lua.LString); ok {
			s := strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s))
			if w.Proto == 3 {
				w.Buf = append(w.Buf, '(')
				w.Buf = append(w.Buf, s...)
				w.Buf = append(w.Buf, '\r', '\n')
			} else {
				w.BulkString(s)
			}
			return
		}
		if vt, ok := v.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, ok1 := vt.RawGetString("format").(lua.LString)
			s, ok2 := vt.RawGetString("string").(lua.LString)
			if ok1 && ok2 {
				w.Verbatim(string(f), string(s))
				return
			}
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			n := 0
			luaForEach(m, func(_, _ lua.LValue) { n++ })
			w.Map(n)
			luaForEach(m, func(k, val lua.LValue) {
				writeLuaReply(c, k, resp3, depth+1)
				writeLuaReply(c, val, resp3, depth+1)
			})
			return
		}
		if m, ok := v.RawGetString("set").(*lua.LTable); ok {
			n := 0
			luaForEach(m, func(_, _ lua.LValue) { n++ })
			w.Set(n)
			luaForEach(m, func(k, _ lua.LValue) { writeLuaReply(c, k, resp3, depth+1) })
			return
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		w.Array(n)
		for i := 1; i <= n; i++ {
			writeLuaReply(c, v.RawGetInt(i), resp3, depth+1)
		}
	default:
		w.Null()
	}
}

func luaToInt(v lua.LNumber) int64 {
	f := float64(v)
	if math.IsNaN(f) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return math.MinInt64
	}
	return int64(f)
}

// notAtLoad raises Redis 7.0's error for a name that a library's body may
// not use while FUNCTION LOAD runs it (the load-time redis table has only
// register_function, log and the constants).
func (vm *luaVM) notAtLoad(L *lua.LState, name string) {
	if vm.st.fn.loading != nil {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", name)
	}
}

// The scripts' PRNG is Redis's redisLrand48: the 48-bit linear
// congruential generator of lrand48, starting from srand48's fixed state,
// so that a seeded sequence matches Redis's on every platform.
const (
	rand48Init = 0x1234ABCD330E
	rand48Mul  = 0x5DEECE66D
	rand48Max  = math.MaxInt32
)

func (st *scriptingState) lrand48() int32 {
	st.rand48 = (st.rand48*rand48Mul + 0xB) & (1<<48 - 1)
	return int32(st.rand48 >> 17)
}

// luaCheckInt is luaL_checkint: a number or a numeric string, truncated.
func luaCheckInt(L *lua.LState, i int) int {
	v := L.Get(i)
	switch n := v.(type) {
	case lua.LNumber:
		return int(int32(int64(n)))
	case lua.LString:
		if f, err := strconv.ParseFloat(strings.TrimSpace(string(n)), 64); err == nil {
			return int(int32(int64(f)))
		}
	}
	L.ArgError(i, "number expected, got "+luaTypeName(v))
	return 0
}

func luaTypeName(v lua.LValue) string {
	if v == lua.LNil {
		return "no value"
	}
	return v.Type().String()
}

// mathRandom is Redis's math.random (Lua 5.1's, over redisLrand48).
func (vm *luaVM) mathRandom(L *lua.LState) int {
	if vm.st.cur == nil {
		L.RaiseError("math.random can only be called inside a script invocation")
	}
	r := float64(vm.st.lrand48()%rand48Max) / float64(rand48Max)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := luaCheckInt(L, 1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := luaCheckInt(L, 1), luaCheckInt(L, 2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (vm *luaVM) mathRandomseed(L *lua.LState) int {
	if vm.st.cur == nil {
		L.RaiseError("math.randomseed can only be called inside a script invocation")
	}
	seed := uint32(int32(luaCheckInt(L, 1)))
	vm.st.rand48 = uint64(seed)<<16 | 0x330E
	return 0
}

// luaErrorText brings a gopher-lua error message closer to Lua 5.1's:
// "bad argument #1 to 'name' (...)" quotes the function name.
func luaErrorText(s string) string {
	i := strings.Index(s, "bad argument #")
	if i < 0 {
		return s
	}
	rest := s[i+len("bad argument #"):]
	j := strings.Index(rest, " to ")
	if j < 0 || j > 3 {
		return s
	}
	name := rest[j+4:]
	k := strings.Index(name, " (")
	if k <= 0 || name[0] == '\'' {
		return s
	}
	at := i + len("bad argument #") + j + 4
	fname := name[:k]
	if fname == "(anonymous)" {
		fname = "?"
	}
	return s[:at] + "'" + fname + "'" + s[at+k:]
}

// luaForEach visits t's pairs in the order of next() (the array part,
// then the hash part in insertion order), unlike LTable.ForEach, which
// ranges over Go maps: encodings and replies built from a table must
// not change from one run to the next.
func luaForEach(t *lua.LTable, cb func(k, v lua.LValue)) {
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		cb(k, v)
	}
}

// luaChunkID is Lua 5.1's luaO_chunkid for a chunk loaded from a string:
// [string "first line..."], and =name / @file as given.
func luaChunkID(source string) string {
	const idSize = 60
	if i := strings.IndexByte(source, 0); i >= 0 {
		source = source[:i]
	}
	switch {
	case strings.HasPrefix(source, "="):
		if len(source)-1 > idSize-1 {
			return source[1:idSize]
		}
		return source[1:]
	case strings.HasPrefix(source, "@"):
		name := source[1:]
		if max := idSize - 1; len(name) > max {
			name = "..." + name[len(name)-max+3:]
		}
		return name
	}
	n := strings.IndexAny(source, "\n\r")
	if n < 0 {
		n = len(source)
	}
	limit := idSize - len(" [string \"...\"] ") - 1
	if n > limit {
		n = limit
	}
	if n < len(source) {
		return `[string "` + source[:n] + `..."]`
	}
	return `[string "` + source + `"]`
}

// luaLoadstring is Lua 5.1's loadstring(s [, chunkname]): the compiled
// chunk, or nil and the compile error. A precompiled (binary) chunk is
// only ever read as source text, as Redis's Lua does since it refused
// bytecode loading.
func luaLoadstring(L *lua.LState) int {
	src := L.CheckString(1)
	name := L.OptString(2, src)
	chunk := luaChunkID(name)
	proto, err := compileLua(src, chunk)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(compileErrorText(err, chunk, src)))
		return 2
	}
	fn := L.NewFunctionFromProto(proto)
	fn.Env = L.Env
	L.Push(fn)
	return 1
}

// luaStringDump stands for string.dump: gopher-lua has no bytecode to
// give, so the result is a bare Lua 5.1 chunk header, which (like any
// binary chunk in Redis) cannot be loaded back.
func luaStringDump(L *lua.LState) int {
	fn := L.CheckFunction(1)
	if fn.IsG {
		L.RaiseError("unable to dump given function")
	}
	L.Push(lua.LString("\x1bLuaQ\x00\x01\x04\x08\x04\x08\x00"))
	return 1
}
