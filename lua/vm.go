package lua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/sluicedb/sluice/resp"
)

// A machine is one Lua interpreter with Redis's sandbox: only the allowed
// globals, a read-only global table (through an empty proxy whose
// __newindex fails), read-only library tables, the redis API, cjson, bit.
// A machine runs one script at a time and is reused across runs.
type machine struct {
	L       *glua.LState
	globals *glua.LTable // the real globals (KEYS/ARGV are set here)
	env     *glua.LTable // the read-only proxy scripts see as _G
	handler *glua.LFunction
	e       *Engine
	fnMode  bool // the functions VM (FCALL, FUNCTION LOAD)
	// ro holds the read-only proxies (the library tables, _G and the
	// proxy getmetatable(_G) returns): setmetatable on them fails.
	ro      map[*glua.LTable]bool
	envMeta *glua.LTable // what getmetatable(_G) returns
	envMT   *glua.LTable // _G's real metatable: __index is the globals
	// loadGlobals are the only globals of a library's load run (the
	// functions VM): redis with register_function, log and the
	// constants; any other name is an error (function_lua.c's
	// LIBRARY_API_NAME table).
	loadGlobals *glua.LTable
	ctx         context.Context
	cancel      context.CancelFunc
}

const errReadonlyTable = "Attempt to modify a readonly table"

// Log levels of redis.log (redis.LOG_DEBUG ... redis.LOG_WARNING).
const (
	LogDebug = iota
	LogVerbose
	LogNotice
	LogWarning
)

// allowed globals of the base library (script_lua.c's allow list).
var luaAllowedBase = []string{"xpcall", "tostring", "getfenv", "setmetatable", "next", "assert", "tonumber",
	"rawequal", "collectgarbage", "getmetatable", "rawset", "pcall", "coroutine", "type", "select", "unpack",
	"pairs", "rawget", "loadstring", "ipairs", "_VERSION", "setfenv", "load", "error"}

func init() {
	// Lua 5.0's implicit 'arg' table for vararg functions would be built
	// on every script call (a table per EVAL); scripts use '...' instead.
	glua.CompatVarArg = false
}

func newMachine(e *Engine, fnMode bool) *machine {
	// Redis lets a script hold about 8000 values on its stack (unpack of a
	// 7999-element table is in its tests): the registry grows on demand.
	L := glua.NewState(glua.Options{SkipOpenLibs: true, RegistryMaxSize: 1 << 20, RegistryGrowStep: 1024})
	vm := &machine{L: L, e: e, fnMode: fnMode, ro: map[*glua.LTable]bool{}}
	for _, lib := range []struct {
		name string
		fn   glua.LGFunction
	}{{glua.BaseLibName, glua.OpenBase}, {glua.TabLibName, glua.OpenTable}, {glua.StringLibName, glua.OpenString},
		{glua.MathLibName, glua.OpenMath}, {glua.CoroutineLibName, glua.OpenCoroutine}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(glua.LString(lib.name))
		L.Call(1, 0)
	}
	orig := L.G.Global
	g := L.NewTable()
	for _, name := range luaAllowedBase {
		g.RawSetString(name, orig.RawGetString(name))
	}
	env := L.NewTable()
	vm.globals, vm.env = g, env

	strLib := orig.RawGetString("string").(*glua.LTable)
	strLib.RawSetString("dump", L.NewFunction(luaStringDump))
	g.RawSetString("loadstring", L.NewFunction(luaLoadstring))
	tostr := orig.RawGetString("tostring")
	g.RawSetString("tostring", L.NewFunction(func(L *glua.LState) int {
		// Lua 5.1 prints numbers with "%.14g" (LUAI_NUMFFORMAT).
		if L.GetTop() == 0 {
			L.RaiseError("bad argument #1 to 'tostring' (value expected)")
		}
		if n, ok := L.Get(1).(glua.LNumber); ok {
			L.Push(glua.LString(fmtG14(float64(n))))
			return 1
		}
		L.Insert(tostr, 1)
		L.Call(L.GetTop()-1, 1)
		return 1
	}))
	mathLib := orig.RawGetString("math").(*glua.LTable)
	mathLib.RawSetString("random", L.NewFunction(vm.mathRandom))
	mathLib.RawSetString("randomseed", L.NewFunction(vm.mathRandomseed))

	// Libraries: copied into fresh tables, exposed read-only.
	for _, name := range []string{"string", "table", "math"} {
		g.RawSetString(name, vm.readonly(orig.RawGetString(name).(*glua.LTable)))
	}
	g.RawSetString("cjson", vm.readonly(newCjsonLib(L)))
	g.RawSetString("bit", vm.readonly(newBitLib(L)))
	g.RawSetString("cmsgpack", vm.readonly(newCmsgpackLib(L)))
	g.RawSetString("struct", vm.readonly(newStructLib(L)))
	g.RawSetString("redis", vm.readonly(vm.redisLib()))
	g.RawSetString("pcall", L.NewFunction(vm.luaPcall))
	g.RawSetString("_G", env)

	// Globals: reads fall through to g, whose own metatable errors on a
	// missing name; writes always hit the proxy's __newindex.
	gm := L.NewTable()
	gm.RawSetString("__index", L.NewFunction(func(L *glua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	}))
	L.SetMetatable(g, gm)
	em := L.NewTable()
	em.RawSetString("__index", g)
	em.RawSetString("__newindex", L.NewFunction(readonlyNewIndex))
	em.RawSetString("__metatable", glua.LFalse)
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
	g.RawSetString("setmetatable", L.NewFunction(func(L *glua.LState) int {
		// Redis's read-only tables refuse a new metatable like any write.
		t, ok := L.Get(1).(*glua.LTable)
		if !ok {
			L.RaiseError("bad argument #1 to 'setmetatable' (table expected, got %s)", luaTypeName(L.Get(1)))
		}
		if m := L.Get(2); m != glua.LNil && m.Type() != glua.LTTable {
			L.RaiseError("bad argument #2 to 'setmetatable' (nil or table expected)")
		}
		if vm.ro[t] {
			L.Error(glua.LString(errReadonlyTable), 0)
		}
		L.Insert(setmeta, 1)
		L.Call(L.GetTop()-1, 1)
		return 1
	}))
	g.RawSetString("getmetatable", L.NewFunction(func(L *glua.LState) int {
		// _G's metatable is itself read-only; the library tables have
		// none (their proxies' metatables are an implementation detail).
		if L.GetTop() == 0 {
			L.RaiseError("bad argument #1 to 'getmetatable' (value expected)")
		}
		if t, ok := L.Get(1).(*glua.LTable); ok && vm.ro[t] {
			if t == env {
				L.Push(vm.envMeta)
			} else {
				L.Push(glua.LNil)
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

func readonlyNewIndex(L *glua.LState) int {
	L.RaiseError(errReadonlyTable)
	return 0
}

// readonly returns an empty proxy reading from t whose writes fail; a
// missing name calls onMiss's __index when given.
func (vm *machine) readonly(t *glua.LTable, onMiss ...*glua.LTable) *glua.LTable {
	L := vm.L
	cp := L.NewTable()
	forEach(t, func(k, v glua.LValue) { cp.RawSet(k, v) })
	if len(onMiss) > 0 {
		L.SetMetatable(cp, onMiss[0])
	}
	p := L.NewTable()
	m := L.NewTable()
	m.RawSetString("__index", cp)
	m.RawSetString("__newindex", L.NewFunction(readonlyNewIndex))
	m.RawSetString("__metatable", glua.LFalse)
	L.SetMetatable(p, m)
	vm.ro[p] = true
	return p
}

// compile compiles source into a prototype (no VM needed).
func compile(src, chunk string) (*glua.FunctionProto, error) {
	chunkList, err := parse.Parse(strings.NewReader(src), chunk)
	if err != nil {
		return nil, err
	}
	return glua.Compile(chunkList, chunk)
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

func (vm *machine) redisLib() *glua.LTable {
	L := vm.L
	t := L.NewTable()
	set := func(name string, fn glua.LGFunction) { t.RawSetString(name, L.NewFunction(fn)) }
	set("call", func(L *glua.LState) int { return vm.redisCall(L, true) })
	set("pcall", func(L *glua.LState) int { return vm.redisCall(L, false) })
	set("error_reply", func(L *glua.LState) int { return singleField(L, "err") })
	set("status_reply", func(L *glua.LState) int { return singleField(L, "ok") })
	set("sha1hex", func(L *glua.LState) int {
		if L.GetTop() != 1 {
			raiseRedisError(L, "wrong number of arguments")
		}
		s := L.ToString(1)
		sum := sha1.Sum([]byte(s))
		L.Push(glua.LString(hex.EncodeToString(sum[:])))
		return 1
	})
	set("log", vm.redisLog)
	set("acl_check_cmd", vm.aclCheckCmd)
	set("setresp", func(L *glua.LState) int {
		if !vm.e.running {
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
		vm.e.run.proto = v
		return 0
	})
	set("set_repl", func(L *glua.LState) int {
		if !vm.e.running {
			vm.notAtLoad(L, "set_repl")
			raiseRedisError(L, "redis.set_repl can only be called inside a script invocation")
		}
		if L.GetTop() != 1 {
			raiseRedisError(L, "redis.set_repl() requires two arguments.")
		}
		f := L.ToInt(1)
		if f&^ReplAll != 0 {
			raiseRedisError(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
		}
		vm.e.host.SetRepl(f)
		return 0
	})
	set("replicate_commands", func(L *glua.LState) int { L.Push(glua.LTrue); return 1 })
	if !vm.fnMode {
		// The debugger's functions (eval scripts only, as in Redis).
		set("debug", vm.redisDebug)
		set("breakpoint", vm.redisBreakpoint)
	}
	t.RawSetString("REDIS_VERSION", glua.LString(vm.e.version))
	t.RawSetString("REDIS_VERSION_NUM", glua.LNumber(versionNum(vm.e.version)))
	for name, v := range map[string]int{"LOG_DEBUG": LogDebug, "LOG_VERBOSE": LogVerbose, "LOG_NOTICE": LogNotice,
		"LOG_WARNING": LogWarning, "REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		t.RawSetString(name, glua.LNumber(v))
	}
	return t
}

// raiseRedisError raises a Redis error table (luaPushError + luaError):
// msg without a code gets "ERR".
func raiseRedisError(L *glua.LState, msg string) {
	L.Error(errorTable(L, msg), 0)
}

// errorTable builds {err="CODE msg"} as luaPushErrorBuff does.
func errorTable(L *glua.LState, msg string) *glua.LTable {
	t := L.CreateTable(0, 2)
	t.RawSetString("err", glua.LString(errorWithCode(msg)))
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

func singleField(L *glua.LState, field string) int {
	if L.GetTop() != 1 || L.Get(1).Type() != glua.LTString {
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
	t.RawSetString(field, glua.LString(s))
	L.Push(t)
	return 1
}

func (vm *machine) redisLog(L *glua.LState) int {
	n := L.GetTop()
	if n < 2 {
		raiseRedisError(L, "redis.log() requires two arguments or more.")
	}
	if L.Get(1).Type() != glua.LTNumber {
		raiseRedisError(L, "First argument must be a number (log level).")
	}
	level := L.ToInt(1)
	if level < LogDebug || level > LogWarning {
		raiseRedisError(L, "Invalid debug level.")
	}
	parts := make([]string, 0, n-1)
	for i := 2; i <= n; i++ {
		parts = append(parts, L.ToString(i))
	}
	vm.e.host.Log(level, strings.Join(parts, " "))
	return 0
}

// luaPcall is Redis's pcall: like Lua's, but an error table with an err
// field is returned as that string.
func (vm *machine) luaPcall(L *glua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.ArgError(1, "value expected")
	}
	base := 0
	fn, _ := L.Get(1).(*glua.LFunction)
	err := L.PCall(n-1, glua.MultRet, nil)
	if err != nil {
		obj := glua.LValue(glua.LString(err.Error()))
		if ae, ok := err.(*glua.ApiError); ok {
			obj = ae.Object
		}
		if msg, ok := obj.(glua.LString); ok {
			s := luaErrorText(string(msg))
			// A Go function called by pcall itself raised this: Lua 5.1's
			// luaL_error would name pcall's position (a C function: none),
			// where gopher-lua names the script line calling pcall.
			if fn != nil && fn.IsG {
				if where := L.Where(1); where != "" {
					s = strings.TrimPrefix(s, where+" ")
				}
			}
			obj = glua.LString(s)
		}
		if t, ok := obj.(*glua.LTable); ok {
			if s, ok := t.RawGetString("err").(glua.LString); ok {
				obj = s
			}
		}
		L.Push(glua.LFalse)
		L.Push(obj)
		return 2
	}
	nret := L.GetTop() - base
	L.Insert(glua.LTrue, 1)
	return nret + 1
}

// errHandler is __redis__err__handler: it turns the error into a table
// with err, source and line of the Lua code that raised it.
func (vm *machine) errHandler(L *glua.LState) int {
	e := L.Get(1)
	t, ok := e.(*glua.LTable)
	if !ok {
		t = L.CreateTable(0, 3)
		t.RawSetString("err", glua.LString("ERR "+luaErrorText(glua.LVAsString(e))))
		if e.Type() != glua.LTString && e.Type() != glua.LTNumber {
			t.RawSetString("err", glua.LString("ERR "+e.String()))
		}
	}
	for lvl := 1; lvl < 4; lvl++ {
		dbg, ok := L.GetStack(lvl)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, glua.LNil); err != nil {
			break
		}
		if dbg.What == "G" || dbg.CurrentLine < 0 {
			continue
		}
		src := "@" + dbg.Source
		if inner, ok := strings.CutPrefix(dbg.Source, `[string "`); ok && strings.HasSuffix(inner, `"]`) && !strings.HasSuffix(inner, `..."]`) {
			src = strings.TrimSuffix(inner, `"]`) // loadstring's chunk name
		}
		t.RawSetString("source", glua.LString(src))
		t.RawSetString("line", glua.LNumber(dbg.CurrentLine))
		if msg, ok := e.(glua.LString); ok && lvl == 1 && strings.HasSuffix(string(msg), luaCallErr) {
			if desc := describeFailedCall(L, dbg); desc != "" {
				m := strings.TrimSuffix(string(msg), luaCallErr) + "attempt to call " + desc
				t.RawSetString("err", glua.LString("ERR "+m))
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
func describeFailedCall(L *glua.LState, dbg *glua.Debug) string {
	fv, err := L.GetInfo("f", dbg, glua.LNil)
	f, ok := fv.(*glua.LFunction)
	if err != nil || !ok || f.IsG || f.Proto == nil {
		return ""
	}
	p := f.Proto
	op := func(inst uint32) int { return int(inst >> 26) }
	argA := func(inst uint32) int { return int(inst>>18) & 0xff }
	for pc := len(p.Code) - 1; pc >= 0; pc-- {
		inst := p.Code[pc]
		if pc >= len(p.DbgSourcePositions) || p.DbgSourcePositions[pc] != dbg.CurrentLine ||
			(op(inst) != glua.OP_CALL && op(inst) != glua.OP_TAILCALL) {
			continue
		}
		a := argA(inst)
		name, v := L.GetLocal(dbg, a+1)
		if name == "" || v.Type() == glua.LTFunction || L.GetMetaField(v, "__call") != glua.LNil {
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
			case glua.OP_GETGLOBAL:
				kind = "global"
			case glua.OP_GETTABLEKS, glua.OP_GETTABLE:
				kind = "field"
			case glua.OP_SELF:
				kind = "method"
			case glua.OP_GETUPVAL:
				kind = "upvalue"
			case glua.OP_MOVE:
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

// redisCall implements redis.call (raise) and redis.pcall: the arguments
// become the command's argv, the host runs it, and its reply becomes a
// Lua value (an error reply is raised by redis.call).
func (vm *machine) redisCall(L *glua.LState, raise bool) int {
	e := vm.e
	if !e.running {
		if raise {
			vm.notAtLoad(L, "call")
		} else {
			vm.notAtLoad(L, "pcall")
		}
		raiseRedisError(L, "redis.call/pcall can only be called inside a script invocation")
	}
	n := L.GetTop()
	if n == 0 {
		return callFailed(L, raise, "Please specify at least one argument for this redis lib call")
	}
	argv := e.argv[:0]
	buf := e.argbuf[:0]
	offs := e.offs[:0]
	for i := 1; i <= n; i++ {
		start := len(buf)
		switch v := L.Get(i).(type) {
		case glua.LString:
			buf = append(buf, v...)
		case glua.LNumber:
			buf = resp.AppendDouble(buf, float64(v))
		default:
			return callFailed(L, raise, "Lua redis lib command arguments must be strings or integers")
		}
		offs = append(offs, start, len(buf))
	}
	for i := 0; i < len(offs); i += 2 {
		argv = append(argv, buf[offs[i]:offs[i+1]:offs[i+1]])
	}
	e.argv, e.argbuf, e.offs = argv, buf, offs
	L.SetTop(0)
	d := e.dbg
	if d != nil && d.step {
		d.logCall(argv)
	}
	reply := e.host.Call(argv, e.run.proto)
	if d != nil && d.step {
		if e.host.Refused() {
			d.logRefusal(reply)
		} else {
			d.logReply(reply)
		}
	}
	r := respReader{b: reply}
	v := r.value(L)
	if raise {
		if t, ok := v.(*glua.LTable); ok && len(reply) > 0 && reply[0] == '-' {
			L.Error(t, 0)
		}
	}
	L.Push(v)
	return 1
}

// errNoStatsField marks an error table whose error was already counted in
// the error statistics (by the command that replied with it), so that a
// script returning or raising it does not count it twice. Scripts see it,
// as in Redis.
const errNoStatsField = "ignore_error_stats_update"

// errorCounted reports whether the error table t carries errNoStatsField.
func errorCounted(t *glua.LTable) bool {
	return glua.LVAsBool(t.RawGetString(errNoStatsField))
}

// callFailed fails a redis.call/pcall before it reached the host.
func callFailed(L *glua.LState, raise bool, msg string) int {
	t := errorTable(L, msg)
	if raise {
		L.Error(t, 0)
	}
	L.SetTop(0)
	L.Push(t)
	return 1
}

// notAtLoad raises Redis 7.0's error for a name that a library's body may
// not use while FUNCTION LOAD runs it (the load-time redis table has only
// register_function, log and the constants).
func (vm *machine) notAtLoad(L *glua.LState, name string) {
	if vm.e.loading != nil {
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

func (e *Engine) lrand48() int32 {
	e.rand48 = (e.rand48*rand48Mul + 0xB) & (1<<48 - 1)
	return int32(e.rand48 >> 17)
}

// luaCheckInt is luaL_checkint: a number or a numeric string, truncated.
func luaCheckInt(L *glua.LState, i int) int {
	v := L.Get(i)
	switch n := v.(type) {
	case glua.LNumber:
		return int(int32(int64(n)))
	case glua.LString:
		if f, err := strconv.ParseFloat(strings.TrimSpace(string(n)), 64); err == nil {
			return int(int32(int64(f)))
		}
	}
	L.ArgError(i, "number expected, got "+luaTypeName(v))
	return 0
}

func luaTypeName(v glua.LValue) string {
	if v == glua.LNil {
		return "no value"
	}
	return v.Type().String()
}

// mathRandom is Redis's math.random (Lua 5.1's, over redisLrand48).
func (vm *machine) mathRandom(L *glua.LState) int {
	if !vm.e.running {
		L.RaiseError("math.random can only be called inside a script invocation")
	}
	r := float64(vm.e.lrand48()%rand48Max) / float64(rand48Max)
	switch L.GetTop() {
	case 0:
		L.Push(glua.LNumber(r))
	case 1:
		u := luaCheckInt(L, 1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(glua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := luaCheckInt(L, 1), luaCheckInt(L, 2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(glua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (vm *machine) mathRandomseed(L *glua.LState) int {
	if !vm.e.running {
		L.RaiseError("math.randomseed can only be called inside a script invocation")
	}
	seed := uint32(int32(luaCheckInt(L, 1)))
	vm.e.rand48 = uint64(seed)<<16 | 0x330E
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

// forEach visits t's pairs in the order of next() (the array part,
// then the hash part in insertion order), unlike LTable.ForEach, which
// ranges over Go maps: encodings and replies built from a table must
// not change from one run to the next.
func forEach(t *glua.LTable, cb func(k, v glua.LValue)) {
	for k, v := t.Next(glua.LNil); k != glua.LNil; k, v = t.Next(k) {
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
func luaLoadstring(L *glua.LState) int {
	src := L.CheckString(1)
	name := L.OptString(2, src)
	chunk := luaChunkID(name)
	proto, err := compile(src, chunk)
	if err != nil {
		L.Push(glua.LNil)
		L.Push(glua.LString(compileErrorText(err, chunk, src)))
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
func luaStringDump(L *glua.LState) int {
	fn := L.CheckFunction(1)
	if fn.IsG {
		L.RaiseError("unable to dump given function")
	}
	L.Push(glua.LString("\x1bLuaQ\x00\x01\x04\x08\x04\x08\x00"))
	return 1
}

// aclCheckCmd is redis.acl_check_cmd: whether the script's caller may run
// the command given as arguments.
func (vm *machine) aclCheckCmd(L *glua.LState) int {
	if !vm.e.running {
		vm.notAtLoad(L, "acl_check_cmd")
		raiseRedisError(L, "redis.acl_check_cmd can only be called inside a script invocation")
	}
	n := L.GetTop()
	if n == 0 {
		raiseRedisError(L, "Please specify at least one argument for this redis lib call")
	}
	args := make([][]byte, 0, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case glua.LString:
			args = append(args, []byte(v))
		case glua.LNumber:
			args = append(args, resp.AppendDouble(nil, float64(v)))
		default:
			raiseRedisError(L, "Lua redis lib command arguments must be strings or integers")
		}
	}
	allowed, ok := vm.e.host.ACLCheck(args)
	if !ok {
		raiseRedisError(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	L.SetTop(0)
	L.Push(glua.LBool(allowed))
	return 1
}

// versionNum is REDIS_VERSION_NUM for a "major.minor.patch" version:
// 0x00MMmmpp.
func versionNum(v string) int {
	n := 0
	for i, part := range strings.SplitN(v, ".", 3) {
		x, _ := strconv.Atoi(part)
		n |= (x & 0xff) << (16 - 8*i)
	}
	return n
}
