package server

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/sluicedb/sluice/resp"
)

// Lua scripting (EVAL family, SCRIPT) on gopher-lua, following Redis
// 7.0's eval.c/script_lua.c/script.c. Scripts run with the keyspace
// exclusively locked (lock_all); their redis.call commands go through a
// connection-less pseudo client with inExec set, so they take no locks.

func init() {
	evalKeys := func(args [][]byte) []int { return numkeysPositions(args, 2, 3) }
	register(
		&Command{Name: "eval", Arity: -3, Flags: []string{"noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale", "lock_all"}, Keys: evalKeys, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "2.6.0", Summary: "Execute a Lua script server side", Complexity: "Depends on the script that is executed.", Fn: func(c *Client, a [][]byte) { evalCommand(c, a, false, false) }},
		&Command{Name: "evalsha", Arity: -3, Flags: []string{"noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale", "lock_all"}, Keys: evalKeys, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "2.6.0", Summary: "Execute a Lua script server side", Complexity: "Depends on the script that is executed.", Fn: func(c *Client, a [][]byte) { evalCommand(c, a, true, false) }},
		&Command{Name: "eval_ro", Arity: -3, Flags: []string{"noscript", "skip_monitor", "no_mandatory_keys", "stale", "readonly", "lock_all"}, Keys: evalKeys, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Execute a read-only Lua script server side", Complexity: "Depends on the script that is executed.", Fn: func(c *Client, a [][]byte) { evalCommand(c, a, false, true) }},
		&Command{Name: "evalsha_ro", Arity: -3, Flags: []string{"noscript", "skip_monitor", "no_mandatory_keys", "stale", "readonly", "lock_all"}, Keys: evalKeys, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "7.0.0", Summary: "Execute a read-only Lua script server side", Complexity: "Depends on the script that is executed.", Fn: func(c *Client, a [][]byte) { evalCommand(c, a, true, true) }},
		&Command{Name: "script", Arity: -2, ACL: []string{"slow"}, Group: "scripting", Since: "2.6.0", Summary: "A container for Lua scripts management commands", Complexity: "Depends on subcommand.", Subs: []*Command{
			{Name: "load", Arity: 3, Flags: []string{"noscript", "stale"}, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "2.6.0", Summary: "Load the specified Lua script into the script cache.", Complexity: "O(N) with N being the length in bytes of the script body.", Fn: scriptLoadCommand},
			{Name: "exists", Arity: -3, Flags: []string{"noscript"}, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "2.6.0", Summary: "Check existence of scripts in the script cache.", Complexity: "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).", Fn: scriptExistsCommand},
			{Name: "flush", Arity: -2, Flags: []string{"noscript"}, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "2.6.0", Summary: "Remove all the scripts from the script cache.", Complexity: "O(N) with N being the number of scripts in cache", Fn: scriptFlushCommand},
			{Name: "kill", Arity: 2, Flags: []string{"noscript", "allow_busy"}, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "2.6.0", Summary: "Kill the script currently in execution.", Complexity: "O(1)", Fn: func(c *Client, _ [][]byte) { scriptKill(c, true) }},
			{Name: "debug", Arity: 3, Flags: []string{"noscript"}, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "3.2.0", Summary: "Set the debug mode for executed scripts.", Complexity: "O(1)", Fn: scriptDebugCommand},
			{Name: "help", Arity: 2, Flags: []string{"loading", "stale"}, ACL: []string{"slow", "scripting"}, Group: "scripting", Since: "5.0.0", Summary: "Show helpful text about the different subcommands", Complexity: "O(1)", Fn: scriptHelpCommand},
		}},
	)
}

// numkeysPositions returns the key positions of a "numkeys key... arg..."
// command: numkeys at index ni, keys from index first.
func numkeysPositions(args [][]byte, ni, first int) []int {
	if len(args) <= ni {
		return nil
	}
	n, ok := parseIntArg(args[ni])
	if !ok || n <= 0 || int(n) > len(args)-first {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		out[i] = first + i
	}
	return out
}

func parseIntArg(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// Script flags (shebang flags=...).
const (
	sfNoWrites = 1 << iota
	sfAllowOOM
	sfAllowStale
	sfNoCluster
	sfAllowCrossSlot
	sfCompat // no shebang: EVAL compatibility mode
)

var scriptFlagNames = []struct {
	name string
	flag int
}{{"no-writes", sfNoWrites}, {"allow-oom", sfAllowOOM}, {"allow-stale", sfAllowStale}, {"no-cluster", sfNoCluster}, {"allow-cross-slot-keys", sfAllowCrossSlot}}

// evalScript is a cached EVAL script.
type evalScript struct {
	sha   string
	body  string
	flags int
	proto *lua.FunctionProto
	fn    *lua.LFunction // bound to the eval VM, created on first run
}

// scriptRun is the state of the script being executed.
type scriptRun struct {
	caller   *Client
	pc       *Client
	name     string // sha (EVAL) or function name
	eval     bool
	readOnly bool
	wrote    bool
	killed   atomic.Bool
	argv     [][]byte
	argbuf   []byte
	offs     []int
	cmd      []string // the running FCALL's arguments (FUNCTION STATS)
	keys     [][]byte // the keys the caller declared (client tracking)
}

// scriptingState is the server's scripting engine state (the Server
// embeds it; the zero value is ready, VMs are created on first use).
type scriptingState struct {
	mu      sync.Mutex // guards scripts, libraries and the run pointer for KILL/STATS
	scripts map[string]*evalScript
	srv     *Server
	evalVM  *luaVM
	fnVM    *luaVM
	pc      *Client
	run     scriptRun
	cur     *scriptRun // non-nil while a script runs (VM goroutine)
	running atomic.Pointer[scriptRun]
	// busySince is the nanotime a script started, 0 when none runs: the
	// dispatcher's only hot-path cost is loading it.
	busySince atomic.Int64
	fn        functionsState
	// rand48 is the state of the scripts' math.random (Redis's
	// redisLrand48, shared by EVAL and functions, never reseeded
	// implicitly).
	rand48 uint64
}

func (s *Server) scripting() *scriptingState {
	st := &s.lua
	st.mu.Lock()
	if st.srv == nil {
		st.srv = s
		st.rand48 = rand48Init
		st.scripts = map[string]*evalScript{}
		st.fn.libs = map[string]*luaLibrary{}
		st.fn.funcs = map[string]*luaFunction{}
	}
	st.mu.Unlock()
	return st
}

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// parseShebang extracts the flags of a "#!lua flags=..." first line and
// the body's shebang length (kept newline: line numbers stay right).
func parseShebang(body string) (flags int, shebangLen int, err string) {
	if !strings.HasPrefix(body, "#!") {
		return sfCompat, 0, ""
	}
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return 0, 0, "Invalid script shebang"
	}
	parts := strings.Fields(body[:nl])
	if len(parts) == 0 {
		return 0, 0, "Invalid engine in script shebang"
	}
	if parts[0] != "#!lua" {
		return 0, 0, "Unexpected engine in script shebang: " + parts[0]
	}
	for _, p := range parts[1:] {
		if !strings.HasPrefix(p, "flags=") {
			return 0, 0, "Unknown lua shebang option: " + p
		}
		v := p[6:]
		if v == "" {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			found := false
			for _, d := range scriptFlagNames {
				if d.name == f {
					flags |= d.flag
					found = true
				}
			}
			if !found {
				return 0, 0, "Unexpected flag in script shebang: " + f
			}
		}
	}
	return flags, nl, ""
}

// createScript compiles and caches body, replying with the error on
// failure.
func (st *scriptingState) createScript(c *Client, body []byte) (string, *evalScript) {
	sha := sha1Hex(body)
	st.mu.Lock()
	sc := st.scripts[sha]
	st.mu.Unlock()
	if sc != nil {
		return sha, sc
	}
	src := string(body)
	flags, shebang, errText := parseShebang(src)
	if errText != "" {
		c.w.Error("ERR " + errText)
		return "", nil
	}
	proto, err := compileLua(src[shebang:], "user_script")
	if err != nil {
		c.w.Error("ERR Error compiling script (new function): " + compileErrorText(err, "user_script", src))
		return "", nil
	}
	sc = &evalScript{sha: sha, body: src, flags: flags, proto: proto}
	st.mu.Lock()
	if old := st.scripts[sha]; old != nil {
		sc = old
	} else {
		st.scripts[sha] = sc
	}
	st.mu.Unlock()
	return sha, sc
}

func evalCommand(c *Client, args [][]byte, evalsha, ro bool) {
	// Scripts are skip_monitor: they feed monitors themselves, before the
	// commands they run, as Redis's evalCommand.
	c.srv.feedMonitors(c, c.dbi, args, false)
	st := c.srv.scripting()
	numkeys, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if numkeys > int64(len(args)-3) {
		c.w.Error("ERR Number of keys can't be greater than number of args")
		return
	} else if numkeys < 0 {
		c.w.Error("ERR Number of keys can't be negative")
		return
	}
	var sha string
	var sc *evalScript
	if evalsha {
		if len(args[1]) != 40 {
			c.w.Error(errNoScript)
			return
		}
		var tmp [40]byte
		for i, b := range args[1] {
			if b >= 'A' && b <= 'Z' {
				b += 'a' - 'A'
			}
			tmp[i] = b
		}
		st.mu.Lock()
		sc = st.scripts[string(tmp[:])]
		st.mu.Unlock()
		if sc == nil {
			c.w.Error(errNoScript)
			return
		}
		sha = sc.sha
	} else {
		if sha, sc = st.createScript(c, args[1]); sc == nil {
			return
		}
	}
	if !st.checkFlags(c, sc.flags, ro) {
		return
	}
	if st.evalVM == nil {
		st.evalVM = newLuaVM(st, false)
	}
	vm := st.evalVM
	if sc.fn == nil {
		sc.fn = vm.L.NewFunctionFromProto(sc.proto)
		sc.fn.Env = vm.env
	}
	L := vm.L
	keys := args[3 : 3+numkeys]
	argv := args[3+numkeys:]
	vm.globals.RawSetString("KEYS", stringsTable(L, keys))
	vm.globals.RawSetString("ARGV", stringsTable(L, argv))
	readOnly := ro || (sc.flags&sfCompat == 0 && sc.flags&sfNoWrites != 0)
	L.Push(sc.fn)
	st.run.keys = keys
	st.execute(c, vm, sha, true, readOnly, 0)
}

const errNoScript = "NOSCRIPT No matching script. Please use EVAL."

// checkFlags applies scriptPrepareForRun's flag checks.
func (st *scriptingState) checkFlags(c *Client, flags int, ro bool) bool {
	c.scriptAllowOOM = flags&(sfCompat|sfAllowOOM) == sfAllowOOM
	if flags&sfCompat != 0 {
		return true
	}
	if flags&sfNoWrites == 0 && ro {
		c.w.Error("ERR Can not execute a script with write flag using *_ro command.")
		return false
	}
	if flags&sfNoWrites == 0 && c.srv.readOnlyReplicaFor(c) {
		// A script that may write counts as a write command (Redis's
		// eval/fcall getkeys flags), refused by processCommand's
		// read-only replica check before it runs.
		c.w.Error("READONLY You can't write against a read only replica.")
		return false
	}
	if flags&sfNoWrites == 0 && c.srv.replicasMissing() {
		c.w.Error(errNoReplicas)
		return false
	}
	if flags&(sfNoWrites|sfAllowOOM) == 0 && c.srv.cfg.Get("maxmemory") != "0" && c.preOOM {
		c.w.Error("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'")
		return false
	}
	return true
}

func stringsTable(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, a := range items {
		t.RawSetInt(i+1, lua.LString(a))
	}
	return t
}

// execute calls the function on top of the VM's stack (with nargs
// arguments after it) and writes its reply or error to c.
func (st *scriptingState) execute(c *Client, vm *luaVM, name string, eval, readOnly bool, nargs int) {
	if st.pc == nil {
		st.pc = &Client{srv: st.srv, fd: -1, authed: true, addr: "", inExec: true, fromScript: true}
		st.pc.w.OnError = st.srv.countError
	}
	pc := st.pc
	pc.user.Store(c.user.Load()) // the caller's ACL user
	pc.slot = c.slot
	pc.dbi = c.dbi
	pc.w.Proto = 2
	run := &st.run
	run.caller, run.pc, run.name, run.eval, run.readOnly, run.wrote = c, pc, name, eval, readOnly, false
	run.killed.Store(false)
	st.cur = run
	st.running.Store(run)
	st.busySince.Store(nanotime())
	L := vm.L
	var err error
	threshold := time.Duration(st.srv.cfg.busyThreshold.Load()) * time.Millisecond
	st.srv.whileHeld(c, threshold, func() { err = pcallGuarded(L, nargs, vm.handler) })
	st.busySince.Store(0)
	st.mu.Lock()
	st.running.Store(nil)
	st.mu.Unlock()
	st.cur = nil
	run.keys = nil
	if run.killed.Load() {
		// A kill cancels the VM's context: replace it for the next run.
		vm.cancel()
		vm.ctx, vm.cancel = context.WithCancel(context.Background())
		L.SetContext(vm.ctx)
	}
	if err != nil {
		var obj lua.LValue = lua.LString(err.Error())
		if ae, ok := err.(*lua.ApiError); ok {
			obj = ae.Object
		}
		writeScriptError(c, obj, name, run.killed.Load())
		L.SetTop(0)
		return
	}
	v := L.Get(-1)
	L.SetTop(0)
	writeLuaReply(c, v, pc.w.Proto == 3, 0)
}

func writeScriptError(c *Client, obj lua.LValue, name string, killed bool) {
	t, ok := obj.(*lua.LTable)
	if !ok {
		c.w.Error("ERR Error running script " + name + ", " + trunc(lua.LVAsString(obj), 100))
		return
	}
	msg := lua.LVAsString(t.RawGetString("err"))
	if killed {
		msg = "ERR Script killed by user with SCRIPT KILL..."
	}
	src, line := t.RawGetString("source"), t.RawGetString("line")
	if src != lua.LNil && line != lua.LNil {
		msg += " script: " + name + ", on " + lua.LVAsString(src) + ":" + lua.LVAsString(line) + "."
	}
	if !killed && errorCounted(t) {
		c.errorNoStats(msg)
		return
	}
	c.w.Error(msg)
}

func scriptLoadCommand(c *Client, args [][]byte) {
	sha, sc := c.srv.scripting().createScript(c, args[2])
	if sc != nil {
		c.w.BulkString(sha)
	}
}

func scriptExistsCommand(c *Client, args [][]byte) {
	st := c.srv.scripting()
	c.w.Array(len(args) - 2)
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, a := range args[2:] {
		if st.scripts[strings.ToLower(string(a))] != nil {
			c.w.Int(1)
		} else {
			c.w.Int(0)
		}
	}
}

func scriptFlushCommand(c *Client, args [][]byte) {
	if len(args) > 3 || (len(args) == 3 && !eq(args[2], "sync") && !eq(args[2], "async")) {
		c.w.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	st := c.srv.scripting()
	st.mu.Lock()
	st.scripts = map[string]*evalScript{}
	st.mu.Unlock()
	c.w.OK()
}

func scriptDebugCommand(c *Client, args [][]byte) {
	switch {
	case eq(args[2], "no"):
		c.w.OK()
	case eq(args[2], "yes"), eq(args[2], "sync"):
		c.w.Error("ERR SCRIPT DEBUG is not supported by Sluice")
	default:
		c.w.Error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
	}
}

func scriptHelpCommand(c *Client, args [][]byte) {
	lines := []string{
		"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"DEBUG (YES|SYNC|NO)",
		"    Set the debug mode for subsequent scripts executed.",
		"EXISTS <sha1> [<sha1> ...]",
		"    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]",
		"    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.",
		"    * SYNC: Synchronously flush the scripts cache.",
		"KILL",
		"    Kill the currently executing Lua script.",
		"LOAD <script>",
		"    Load a script into the scripts cache without executing it.",
		"HELP",
		"    Prints this help.",
	}
	c.w.Array(len(lines))
	for _, l := range lines {
		c.w.Simple(l)
	}
}

// scriptKill implements SCRIPT KILL (eval) and FUNCTION KILL. It takes no
// keyspace lock: the script holds it.
func scriptKill(c *Client, eval bool) {
	st := c.srv.scripting()
	st.mu.Lock()
	defer st.mu.Unlock()
	run := st.running.Load()
	if run == nil {
		c.w.Error("NOTBUSY No scripts in execution right now.")
		return
	}
	if run.wrote {
		c.w.Error("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
		return
	}
	if eval && !run.eval {
		c.w.Error(errBusyFunction)
		return
	}
	if !eval && run.eval {
		c.w.Error(errBusyScript)
		return
	}
	run.killed.Store(true)
	if run.eval {
		st.evalVM.cancel()
	} else {
		st.fnVM.cancel()
	}
	c.w.OK()
}

const (
	errBusyScript   = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errBusyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
)

// busyText is the BUSY error for the script or function running now.
func (s *Server) busyText() string {
	if run := s.lua.running.Load(); run != nil && !run.eval {
		return errBusyFunction
	}
	return errBusyScript
}

// busyReject is called by the dispatcher when a script has been running
// since `since` (nanotime): past busy-reply-threshold, commands other
// than the allow_busy ones get BUSY instead of waiting for the lock.
func (c *Client) busyReject(cmd *Command, since int64) bool {
	srv := c.srv
	th := srv.cfg.busyThreshold.Load()
	if th <= 0 || nanotime()-since < th*1e6 {
		return false
	}
	if hasFlag(cmd, "allow_busy") || (cmd.parent != nil && hasFlag(cmd.parent, "allow_busy")) {
		return false
	}
	run := srv.lua.running.Load()
	if run == nil || run.caller == c {
		return false
	}
	if cmd.Name == "shutdown" {
		return false
	}
	if run.eval {
		c.rejectCmd(cmd, errBusyScript)
	} else {
		c.rejectCmd(cmd, errBusyFunction)
	}
	return true
}

// abortScripts stops a running script or function whatever it did, for
// SHUTDOWN (NOSAVE): the server is going away, so even a script that
// wrote is not waited for.
func (s *Server) abortScripts() {
	st := &s.lua
	st.mu.Lock()
	defer st.mu.Unlock()
	run := st.running.Load()
	if run == nil {
		return
	}
	run.killed.Store(true)
	if run.eval && st.evalVM != nil {
		st.evalVM.cancel()
	} else if !run.eval && st.fnVM != nil {
		st.fnVM.cancel()
	}
}

// pcallGuarded is L.PCall, with a last guard: gopher-lua can panic past
// PCall (a registry overflow inside the error handler, say); that must
// become this script's error, not a crash of the whole server.
func pcallGuarded(L *lua.LState, nargs int, handler *lua.LFunction) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
			L.SetTop(0)
		}
	}()
	return L.PCall(nargs, 1, handler)
}

// cachedScripts is the number of scripts in the EVAL cache (INFO memory).
func (s *Server) cachedScripts() int {
	st := &s.lua
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.scripts)
}

// aclCheckCmd is redis.acl_check_cmd: whether the script's caller may run
// the command given as arguments.
func (vm *luaVM) aclCheckCmd(L *lua.LState) int {
	run := vm.st.cur
	if run == nil {
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
		case lua.LString:
			args = append(args, []byte(v))
		case lua.LNumber:
			args = append(args, resp.AppendDouble(nil, float64(v)))
		default:
			raiseRedisError(L, "Lua redis lib command arguments must be strings or integers")
		}
	}
	allowed, ok := run.pc.aclCheckCmd(run.caller, args)
	if !ok {
		raiseRedisError(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	L.SetTop(0)
	L.Push(lua.LBool(allowed))
	return 1
}
