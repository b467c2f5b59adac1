package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/lua"
	"github.com/sluicedb/sluice/resp"
)

// The server's side of scripting (EVAL family, SCRIPT, FUNCTION, FCALL;
// the engine is package lua), following Redis 7.0's eval.c and
// script.c: the gates a script and each of its commands pass, the busy
// state of a long script, and the host the engine calls. Scripts run
// with the keyspace exclusively locked (lock_all); their redis.call
// commands go through a connection-less pseudo client with inExec set,
// so they take no locks.

func evalCommand(c *Client, a [][]byte) { evalGenericCommand(c, a, false, false) }

func evalshaCommand(c *Client, a [][]byte) { evalGenericCommand(c, a, true, false) }

func evalRoCommand(c *Client, a [][]byte) { evalGenericCommand(c, a, false, true) }

func evalshaRoCommand(c *Client, a [][]byte) { evalGenericCommand(c, a, true, true) }

func scriptKillCommand(c *Client, _ [][]byte) { scriptKill(c, true) }

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

// scriptRun is the state of the script being executed.
type scriptRun struct {
	caller   *Client
	pc       *Client
	name     string // sha (EVAL) or function name
	eval     bool
	readOnly bool
	wrote    bool
	cmd      []string // the running FCALL's arguments (FUNCTION STATS)
	keys     [][]byte // the keys the caller declared (client tracking)
	// Cluster mode: the slot of the keys used so far (-1: none) and
	// whether keys of other slots are allowed (EVAL without shebang,
	// allow-cross-slot-keys).
	clSlot    int
	crossSlot bool
	repl      int // redis.set_repl: where the script's writes go (lua.ReplAll at its start)
}

// scriptingState is the server's scripting state (the Server embeds it):
// the engine, and the run of the script being executed.
type scriptingState struct {
	eng *lua.Engine
	srv *Server
	mu  sync.Mutex // guards the running pointer for KILL and STATS
	pc  *Client
	run scriptRun
	cur *scriptRun // non-nil while a script runs (VM goroutine)
	// running is the run KILL and STATS see.
	running atomic.Pointer[scriptRun]
	// busySince is the nanotime a script started, 0 when none runs: the
	// dispatcher's only hot-path cost is loading it.
	busySince atomic.Int64
	// debugging is set while a debugging session (ldb.go) runs its
	// script: it holds the server without its loop being stood in for
	// and without other clients told BUSY, as Redis's synchronous
	// session holds its event loop.
	debugging bool
	refused   bool // the last Call's command was refused (Refused)
}

// wireScripting creates the Lua engine, with the scripting state as its
// host.
func (s *Server) wireScripting() {
	s.lua.srv = s
	s.lua.eng = lua.New(&s.lua, Version)
}

// Call runs one redis.call/pcall command of the running script through
// the pseudo client, after the checks Redis's scriptCall makes; a
// refused command gets its error reply (counted in the error and
// rejected-call statistics) instead.
func (st *scriptingState) Call(argv [][]byte, proto int) []byte {
	run := st.cur
	pc := run.pc
	pc.w.Buf = pc.w.Buf[:0]
	pc.w.Proto = proto
	cmd := pc.srv.lookupCommand(argv[0])
	if cmd != nil && cmd.sub != nil {
		if len(argv) >= 2 {
			cmd = cmd.lookupSub(argv[1])
		}
	}
	st.refused = false
	if msg := st.refuseCall(run, cmd, argv); msg != "" {
		if cmd != nil {
			st.srv.stats[pc.slot].cmds[cmd.id].rejected.Add(1)
		}
		pc.w.Error(msg)
		st.refused = true
		return pc.w.Buf
	}
	if cmd.Flags&cmdspec.Write != 0 {
		run.wrote = true
	}
	pc.mark = 0 // time each call on its own, not since the previous one
	pc.call(cmd, argv)
	if pc.blocked {
		pc.blocked = false
		pc.blockedFlag.Store(false)
		pc.blockedCounted.Store(false)
	}
	return pc.w.Buf
}

// Refused reports whether Call refused the last command (lua.Host).
func (st *scriptingState) Refused() bool { return st.refused }

// refuseCall returns the error for a command (nil when unknown) that the
// script may not run, or "".
func (st *scriptingState) refuseCall(run *scriptRun, cmd *Command, argv [][]byte) string {
	srv := st.srv
	if cmd == nil {
		return "ERR Unknown Redis command called from script"
	}
	if !cmd.checkArity(len(argv)) {
		return "ERR Wrong number of args calling Redis command from script"
	}
	if cmd.Flags&cmdspec.NoScript != 0 && !srv.denyScriptsOff.Load() {
		return "ERR This Redis command is not allowed from script"
	}
	if run.caller != nil {
		if msg := run.pc.aclScriptDenied(run.caller, cmd, argv); msg != "" {
			return "ERR " + msg
		}
	}
	if run.readOnly && cmd.Flags&(cmdspec.Write|cmdspec.MayReplicate) != 0 {
		return "ERR Write commands are not allowed from read-only scripts."
	}
	if cmd.Flags&cmdspec.DenyOOM != 0 && !run.wrote && run.caller != nil && run.caller.preOOM &&
		!run.caller.scriptAllowOOM && srv.cfg.MaxMemory.Load() != 0 {
		// Over maxmemory when the script began, and no write yet
		// (scriptVerifyOOM).
		return errOOM
	}
	// scriptVerifyWriteCommandAllow: a script that wrote already is not
	// failed on the server's state (it could not be undone).
	if cmd.Flags&cmdspec.Write != 0 && !run.wrote {
		if run.caller != nil && srv.readOnlyReplicaFor(run.caller) {
			return "READONLY You can't write against a read only replica."
		}
		if srv.gate.Load()&gateDisk != 0 && (run.caller == nil || !run.caller.replMaster) {
			if msg := srv.pe.WriteDenied(); msg != "" {
				return msg
			}
		}
		if srv.replicasMissing() {
			return errNoReplicas
		}
	}
	if srv.cluster != nil {
		if msg := run.pc.clusterScriptCheck(run.caller, cmd, argv, &run.clSlot, run.crossSlot); msg != "" {
			return msg
		}
	}
	if cmd.Flags&cmdspec.Stale == 0 && srv.runningStale() {
		// An allow-stale script on a stale replica (scriptVerifyAllowStale).
		return "ERR Can not execute the command on a stale replica"
	}
	return ""
}

// Log writes a redis.log line.
// SetRepl is redis.set_repl (lua.Host): the running script's later
// writes go to the AOF, the replicas, both or neither (Client.pend).
func (st *scriptingState) SetRepl(flags int) { st.run.repl = flags }

func (st *scriptingState) Log(level int, msg string) {
	st.srv.LogAt(level-lua.LogDebug+LogDebug, "%s", msg)
}

// ACLCheck is redis.acl_check_cmd for the script's caller.
func (st *scriptingState) ACLCheck(argv [][]byte) (allowed, ok bool) {
	run := st.cur
	return run.pc.aclCheckCmd(run.caller, argv)
}

// evalKeysArgs parses EVAL's and FCALL's numkeys (args[2]) and returns
// the keys and the arguments after them, or false once it replied with
// the error; badNumkeys is the error for a numkeys that is no integer.
func evalKeysArgs(c *Client, args [][]byte, badNumkeys string) (keys, argv [][]byte, ok bool) {
	numkeys, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error(badNumkeys)
		return nil, nil, false
	}
	if numkeys > int64(len(args)-3) {
		c.w.Error("ERR Number of keys can't be greater than number of args")
		return nil, nil, false
	} else if numkeys < 0 {
		c.w.Error("ERR Number of keys can't be negative")
		return nil, nil, false
	}
	return args[3 : 3+numkeys], args[3+numkeys:], true
}

func evalGenericCommand(c *Client, args [][]byte, evalsha, ro bool) {
	// Scripts are skip_monitor: they feed monitors themselves, before the
	// commands they run, as Redis's evalGenericCommand.
	c.srv.feedMonitors(c, c.dbi, args, false)
	if c.ldb != ldbOff {
		if evalsha {
			if len(args[1]) != 40 {
				c.w.Error(errNoScript)
			} else {
				c.w.Error("ERR Please use EVAL instead of EVALSHA for debugging")
			}
			return
		}
		c.srv.lua.debugEval(c, args, ro)
		return
	}
	evalScript(c, args, evalsha, ro)
}

// evalScript runs EVAL or EVALSHA (args).
func evalScript(c *Client, args [][]byte, evalsha, ro bool) {
	st := &c.srv.lua
	keys, argv, ok := evalKeysArgs(c, args, errNotInt)
	if !ok {
		return
	}
	var sc *lua.Script
	if evalsha {
		if sc = st.eng.Script(args[1]); sc == nil {
			c.w.Error(errNoScript)
			return
		}
	} else {
		var err error
		if sc, err = st.eng.LoadScript(args[1]); err != nil {
			c.w.Error("ERR " + err.Error())
			return
		}
	}
	if !st.checkFlags(c, sc.Flags, ro) {
		return
	}
	readOnly := ro || (sc.Flags&lua.Compat == 0 && sc.Flags&lua.NoWrites != 0)
	st.eng.StartEval(sc, keys, argv)
	st.run.keys = keys
	st.execute(c, sc.SHA, true, readOnly)
}

const errNoScript = "NOSCRIPT No matching script. Please use EVAL."

// checkFlags applies scriptPrepareForRun's flag checks.
func (st *scriptingState) checkFlags(c *Client, flags lua.Flags, ro bool) bool {
	c.scriptAllowOOM = flags&(lua.Compat|lua.AllowOOM) == lua.AllowOOM
	st.run.clSlot, st.run.crossSlot = c.clSlot, flags&(lua.Compat|lua.AllowCrossSlot) != 0
	stale := c.srv.runningStale()
	if flags&lua.Compat != 0 {
		if stale {
			c.w.Error("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")
			return false
		}
		return true
	}
	if flags&lua.NoCluster != 0 && c.srv.cluster != nil {
		c.w.Error("ERR Can not run script on cluster, 'no-cluster' flag is set.")
		return false
	}
	if stale && flags&lua.AllowStale == 0 {
		// Redis's processCommand refuses it first: without allow-stale,
		// the script's command has no stale flag (getCommandFlags).
		c.w.Error("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")
		return false
	}
	if flags&lua.NoWrites == 0 && ro {
		c.w.Error("ERR Can not execute a script with write flag using *_ro command.")
		return false
	}
	if flags&lua.NoWrites == 0 && c.srv.readOnlyReplicaFor(c) {
		// A script that may write counts as a write command (Redis's
		// eval/fcall getkeys flags), refused by processCommand's
		// read-only replica check before it runs.
		c.w.Error("READONLY You can't write against a read only replica.")
		return false
	}
	if flags&lua.NoWrites == 0 && !c.replMaster && c.srv.gate.Load()&gateDisk != 0 {
		if msg := c.srv.pe.ScriptDenied(); msg != "" {
			c.w.Error(msg)
			return false
		}
	}
	if flags&lua.NoWrites == 0 && c.srv.replicasMissing() {
		c.w.Error(errNoReplicas)
		return false
	}
	if flags&(lua.NoWrites|lua.AllowOOM) == 0 && c.srv.cfg.Get("maxmemory") != "0" && c.preOOM {
		c.w.Error("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'")
		return false
	}
	return true
}

// execute runs the script the engine has started for c and writes its
// reply or error to c, the loop held (busy) past busy-reply-threshold.
func (st *scriptingState) execute(c *Client, name string, eval, readOnly bool) {
	if st.pc == nil {
		st.pc = &Client{srv: st.srv, fd: -1, authed: true, addr: "", inExec: true, fromScript: true}
		st.pc.w.OnError = st.srv.countError
	}
	pc := st.pc
	pc.user.Store(c.user.Load()) // the caller's ACL user
	pc.slot = c.slot
	pc.dbi = c.dbi
	run := &st.run
	run.caller, run.pc, run.name, run.eval, run.readOnly, run.wrote = c, pc, name, eval, readOnly, false
	run.repl = lua.ReplAll
	st.cur = run
	st.running.Store(run)
	threshold := time.Duration(st.srv.cfg.BusyThreshold.Load()) * time.Millisecond
	if st.debugging {
		threshold = 0
	} else {
		st.busySince.Store(nanotime())
	}
	func() {
		defer st.srv.ks.HoldNow()() // the script sees its keys' expiry as at its start
		st.srv.whileHeld(c, threshold, st.eng.Run)
	}()
	st.busySince.Store(0)
	st.mu.Lock()
	st.running.Store(nil)
	st.mu.Unlock()
	st.cur = nil
	run.keys = nil
	st.eng.Reply(&c.w)
}

func scriptLoadCommand(c *Client, args [][]byte) {
	sc, err := c.srv.lua.eng.LoadScript(args[2])
	if err != nil {
		c.w.Error("ERR " + err.Error())
		return
	}
	c.w.BulkString(sc.SHA)
}

func scriptExistsCommand(c *Client, args [][]byte) {
	eng := c.srv.lua.eng
	c.w.Array(len(args) - 2)
	for _, a := range args[2:] {
		if eng.Script(a) != nil {
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
	c.srv.lua.eng.FlushScripts()
	c.w.OK()
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
	st := &c.srv.lua
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
	st.eng.Kill()
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
	th := srv.cfg.BusyThreshold.Load()
	if th <= 0 || nanotime()-since < th*1e6 {
		return false
	}
	if cmd.Flags&cmdspec.AllowBusy != 0 || (cmd.parent != nil && cmd.parent.Flags&cmdspec.AllowBusy != 0) {
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
	if st.running.Load() != nil {
		st.eng.Kill()
	}
}

// cachedScripts is the number of scripts in the EVAL cache (INFO memory).
func (s *Server) cachedScripts() int { return s.lua.eng.NumScripts() }

// slowScriptCheck logs a script that runs past busy-reply-threshold, once
// per run, as Redis's scriptInterrupt does (the server's cron calls it).
func (s *Server) slowScriptCheck() {
	st := &s.lua
	since := st.busySince.Load()
	threshold := s.cfg.BusyThreshold.Load()
	if since == 0 || since == s.slowLogged || threshold <= 0 {
		return
	}
	elapsed := (nanotime() - since) / 1e6
	if elapsed < threshold {
		return
	}
	st.mu.Lock()
	run := st.running.Load()
	name, eval := "", true
	if run != nil {
		name, eval = run.name, run.eval
	}
	st.mu.Unlock()
	if run == nil {
		return
	}
	s.slowLogged = since
	kill := "FUNCTION KILL"
	if eval {
		kill = "SCRIPT KILL"
	}
	s.Warnf("Slow script detected: still in execution after %d milliseconds. You can try killing the script using the %s command. Script name is: %s.", elapsed, kill, name)
}
