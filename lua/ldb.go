package lua

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"

	"github.com/sluicedb/sluice/internal/sdsargs"
)

// The Lua debugger (LDB) of Redis 7.0's eval.c, for a synchronous session
// (SCRIPT DEBUG SYNC): the EVAL of a client in debug mode runs its script
// step by step, the client driving it with the debugger's commands (step,
// continue, list, print, break, eval, redis, trace, maxlen, abort) over
// its own connection, which the session reads and writes directly while
// the script holds the server, as Redis does.
//
// Lua 5.1 calls a line hook; gopher-lua has none. So a debugged script is
// compiled from its syntax tree with a call to the debugger inserted
// before each statement, and at the end of each loop's body (where Lua
// goes back to the loop's line), at the statement's line.

// ldbHookName is the global the inserted calls name: no Lua identifier.
const ldbHookName = "\x00ldb"

// ldbMaxBreakpoints is LDB_BREAKPOINTS_MAX; ldbMaxLen is
// LDB_MAX_LEN_DEFAULT.
const (
	ldbMaxBreakpoints = 64
	ldbMaxLen         = 256
)

// debugger is a debugging session's state (Redis's struct ldbState).
type debugger struct {
	conn       io.ReadWriter
	src        []string // the script's lines
	logs       []string
	step       bool // stop at the next line
	luabp      bool // redis.breakpoint() was called
	bp         []int
	line       int // the line being run
	maxlen     int
	maxlenHint bool
	cbuf       []byte
	limit      time.Duration // stop a script running this long without a stop
	since      time.Time
}

// OpenDebug starts a debugging session for the EVAL of body, whose
// client's connection conn the session reads and writes directly; limit
// is the time after which a script that runs without stopping is stopped
// ("timeout reached, infinite loop?"). The next StartEval runs its script
// under the debugger. CloseDebug ends the session.
func (e *Engine) OpenDebug(body []byte, conn io.ReadWriter, limit time.Duration) {
	src := strings.TrimRight(string(body), "\r\n")
	e.dbg = &debugger{conn: conn, src: strings.Split(src, "\n"), step: true, maxlen: ldbMaxLen, limit: limit}
}

// CloseDebug ends the session OpenDebug started: the client is sent the
// logs left and the <endsession> mark (its EVAL's reply comes after).
func (e *Engine) CloseDebug() {
	d := e.dbg
	if d == nil {
		return
	}
	d.log("<endsession>")
	d.send()
	e.dbg = nil
}

// debugFunction compiles the session's script with the debugger's calls,
// as the function StartEval runs.
func (e *Engine) debugFunction(vm *machine) (*glua.LFunction, error) {
	body := strings.Join(e.dbg.src, "\n")
	_, shebang, _ := parseShebang(body)
	chunk, err := parse.Parse(strings.NewReader(body[shebang:]), "user_script")
	if err != nil {
		return nil, err
	}
	proto, err := glua.Compile(instrumentBlock(chunk), "user_script")
	if err != nil {
		return nil, err
	}
	if vm.globals.RawGetString(ldbHookName) == glua.LNil {
		vm.globals.RawSetString(ldbHookName, vm.L.NewFunction(vm.ldbHook))
	}
	fn := vm.L.NewFunctionFromProto(proto)
	fn.Env = vm.env
	return fn, nil
}

// ---- instrumentation ----

func hookStmt(line int) ast.Stmt {
	id := &ast.IdentExpr{Value: ldbHookName}
	id.SetLine(line)
	n := &ast.NumberExpr{Value: strconv.Itoa(line)}
	n.SetLine(line)
	call := &ast.FuncCallExpr{Func: id, Args: []ast.Expr{n}}
	call.SetLine(line)
	call.SetLastLine(line)
	st := &ast.FuncCallStmt{Expr: call}
	st.SetLine(line)
	st.SetLastLine(line)
	return st
}

// instrumentBlock returns stmts with a debugger call before each.
func instrumentBlock(stmts []ast.Stmt) []ast.Stmt {
	out := make([]ast.Stmt, 0, 2*len(stmts))
	for _, s := range stmts {
		instrumentStmt(s)
		out = append(out, hookStmt(firstLine(s)), s)
	}
	return out
}

// firstLine is the line of a statement's first instruction, where Lua's
// line hook sees it start: a statement that begins by making a closure
// (local function f ... end, function f ... end) starts at the closure's
// end.
func firstLine(s ast.Stmt) int {
	switch s := s.(type) {
	case *ast.LocalAssignStmt:
		if len(s.Exprs) > 0 {
			if f, ok := s.Exprs[0].(*ast.FunctionExpr); ok {
				return f.LastLine()
			}
		}
	case *ast.FuncDefStmt:
		if _, ok := s.Name.Func.(*ast.IdentExpr); ok && s.Name.Receiver == nil {
			return s.Func.LastLine()
		}
	}
	return s.Line()
}

// loopBody instruments a loop's body and ends it with a call at the
// loop's line, unless it ends with return or break.
func loopBody(line int, stmts []ast.Stmt) []ast.Stmt {
	out := instrumentBlock(stmts)
	if n := len(stmts); n > 0 {
		switch stmts[n-1].(type) {
		case *ast.ReturnStmt, *ast.BreakStmt:
			return out
		}
	}
	return append(out, hookStmt(line))
}

func instrumentStmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		instrumentExprs(s.Lhs)
		instrumentExprs(s.Rhs)
	case *ast.LocalAssignStmt:
		instrumentExprs(s.Exprs)
	case *ast.FuncCallStmt:
		instrumentExpr(s.Expr)
	case *ast.DoBlockStmt:
		s.Stmts = instrumentBlock(s.Stmts)
	case *ast.WhileStmt:
		instrumentExpr(s.Condition)
		s.Stmts = loopBody(s.Line(), s.Stmts)
	case *ast.RepeatStmt:
		instrumentExpr(s.Condition)
		s.Stmts = loopBody(s.Line(), s.Stmts)
	case *ast.IfStmt:
		instrumentExpr(s.Condition)
		s.Then = instrumentBlock(s.Then)
		s.Else = instrumentBlock(s.Else)
	case *ast.NumberForStmt:
		instrumentExprs([]ast.Expr{s.Init, s.Limit, s.Step})
		s.Stmts = loopBody(s.Line(), s.Stmts)
	case *ast.GenericForStmt:
		instrumentExprs(s.Exprs)
		s.Stmts = loopBody(s.Line(), s.Stmts)
	case *ast.FuncDefStmt:
		instrumentExpr(s.Func)
	case *ast.ReturnStmt:
		instrumentExprs(s.Exprs)
	}
}

func instrumentExprs(es []ast.Expr) {
	for _, x := range es {
		instrumentExpr(x)
	}
}

// instrumentExpr instruments the bodies of the functions defined in x.
func instrumentExpr(x ast.Expr) {
	switch x := x.(type) {
	case *ast.FunctionExpr:
		x.Stmts = instrumentBlock(x.Stmts)
	case *ast.AttrGetExpr:
		instrumentExprs([]ast.Expr{x.Object, x.Key})
	case *ast.TableExpr:
		for _, f := range x.Fields {
			instrumentExprs([]ast.Expr{f.Key, f.Value})
		}
	case *ast.FuncCallExpr:
		instrumentExprs([]ast.Expr{x.Func, x.Receiver})
		instrumentExprs(x.Args)
	case *ast.LogicalOpExpr:
		instrumentExprs([]ast.Expr{x.Lhs, x.Rhs})
	case *ast.RelationalOpExpr:
		instrumentExprs([]ast.Expr{x.Lhs, x.Rhs})
	case *ast.StringConcatOpExpr:
		instrumentExprs([]ast.Expr{x.Lhs, x.Rhs})
	case *ast.ArithmeticOpExpr:
		instrumentExprs([]ast.Expr{x.Lhs, x.Rhs})
	case *ast.UnaryMinusOpExpr:
		instrumentExpr(x.Expr)
	case *ast.UnaryNotOpExpr:
		instrumentExpr(x.Expr)
	case *ast.UnaryLenOpExpr:
		instrumentExpr(x.Expr)
	}
}

// ---- the session ----

// ldbHook is the call before each statement (luaLdbLineHook): it stops
// when stepping, at a breakpoint, after redis.breakpoint() or when the
// script ran past the limit, and then runs the debugger's commands.
func (vm *machine) ldbHook(L *glua.LState) int {
	d := vm.e.dbg
	if d == nil {
		return 0
	}
	d.line = L.ToInt(1)
	bp := d.isBreakpoint(d.line) || d.luabp
	timeout := false
	if !d.step && !bp {
		if d.limit <= 0 || time.Since(d.since) < d.limit {
			return 0
		}
		timeout = true
	}
	reason := "step over"
	switch {
	case d.luabp:
		reason = "redis.breakpoint() called"
	case bp:
		reason = "break point"
	case timeout:
		reason = "timeout reached, infinite loop?"
	}
	d.step, d.luabp = false, false
	d.log(fmt.Sprintf("* Stopped at %d, stop reason = %s", d.line, reason))
	d.logSourceLine(d.line)
	d.send()
	if !vm.ldbRepl(L) && timeout {
		// The client is gone: without a way to stop it the script would
		// hold the server for good.
		raiseRedisError(L, "timeout during Lua debugging with client closing connection")
	}
	d.since = time.Now()
	return 0
}

func (d *debugger) log(s string) { d.logs = append(d.logs, s) }

// logMax logs s cut to maxlen (ldbLogWithMaxLen), with the hint the
// first time.
func (d *debugger) logMax(s string) {
	trimmed := false
	if d.maxlen > 0 && len(s) > d.maxlen {
		s = s[:d.maxlen] + " ..."
		trimmed = true
	}
	d.log(s)
	if trimmed && !d.maxlenHint {
		d.maxlenHint = true
		d.log("<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.")
	}
}

// send writes the logs to the client as an array of simple strings
// (newlines in them become spaces) and empties them (ldbSendLogs).
func (d *debugger) send() {
	out := []byte("*" + strconv.Itoa(len(d.logs)) + "\r\n")
	for _, l := range d.logs {
		out = append(out, '+')
		out = append(out, strings.NewReplacer("\r", " ", "\n", " ").Replace(l)...)
		out = append(out, "\r\n"...)
	}
	d.logs = d.logs[:0]
	// A failed write shows as the next read's error, which ends the
	// session's input.
	d.conn.Write(out)
}

func (d *debugger) sourceLine(n int) string {
	if n < 1 || n > len(d.src) {
		return "<out of range source code line>"
	}
	return d.src[n-1]
}

func (d *debugger) isBreakpoint(n int) bool {
	for _, b := range d.bp {
		if b == n {
			return true
		}
	}
	return false
}

func (d *debugger) logSourceLine(n int) {
	prefix := "   "
	bp, cur := d.isBreakpoint(n), d.line == n
	switch {
	case cur && bp:
		prefix = "->#"
	case cur:
		prefix = "-> "
	case bp:
		prefix = "  #"
	}
	d.log(fmt.Sprintf("%s%-3d %s", prefix, n, d.sourceLine(n)))
}

// list logs the source around line around (all of it for 0), context
// lines each side.
func (d *debugger) list(around, context int) {
	for j := 1; j <= len(d.src); j++ {
		if around != 0 && abs(around-j) > context {
			continue
		}
		d.logSourceLine(j)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// errLdbProtocol is what a malformed debugger command raises.
const errLdbProtocol = "protocol error"

// parseCommand takes a command from the input (ldbReplParseCommand, as
// forgiving): nil without error when more input is needed. Whatever
// follows a command in the input is dropped, as in Redis.
func (d *debugger) parseCommand() ([]string, error) {
	b := d.cbuf
	if len(b) == 0 {
		return nil, nil
	}
	i := bytes.IndexByte(b, '*')
	if i < 0 {
		return nil, fmt.Errorf(errLdbProtocol)
	}
	p := b[i+1:]
	end := bytes.Index(p, []byte("\r\n"))
	if end < 0 {
		return nil, nil
	}
	argc, _ := strconv.Atoi(string(p[:end]))
	if argc <= 0 || argc > 1024 {
		return nil, fmt.Errorf(errLdbProtocol)
	}
	p = p[end+2:]
	argv := make([]string, 0, argc)
	for len(argv) < argc {
		if len(p) == 0 {
			return nil, nil
		}
		if p[0] != '$' {
			return nil, fmt.Errorf(errLdbProtocol)
		}
		end := bytes.Index(p, []byte("\r\n"))
		if end < 0 {
			return nil, nil
		}
		n, _ := strconv.Atoi(string(p[1:end]))
		if n <= 0 || n > 1024 {
			return nil, fmt.Errorf(errLdbProtocol)
		}
		p = p[end+2:]
		if len(p) < n+2 {
			return nil, nil
		}
		argv = append(argv, string(p[:n]))
		if p[n] != '\r' || p[n+1] != '\n' {
			return nil, fmt.Errorf(errLdbProtocol)
		}
		p = p[n+2:]
	}
	d.cbuf = d.cbuf[:0]
	return argv, nil
}

// ldbRepl reads and runs debugger commands until one returns to the
// script (step, continue). It reports false when the client is gone:
// the script then runs to its end without stopping.
func (vm *machine) ldbRepl(L *glua.LState) bool {
	d := vm.e.dbg
	for {
		var argv []string
		for {
			var err error
			if argv, err = d.parseCommand(); err != nil {
				raiseRedisError(L, err.Error())
			} else if argv != nil {
				break
			}
			var buf [1024]byte
			n, _ := d.conn.Read(buf[:])
			if n <= 0 {
				d.step = false
				d.bp = nil
				return false
			}
			d.cbuf = append(d.cbuf, buf[:n]...)
			if len(d.cbuf) > 1<<20 {
				d.cbuf = nil
				raiseRedisError(L, "max client buffer reached")
			}
		}
		switch cmd := strings.ToLower(argv[0]); {
		case cmd == "h" || cmd == "help":
			for _, l := range ldbHelp {
				d.log(l)
			}
		case cmd == "s" || cmd == "step" || cmd == "n" || cmd == "next":
			d.step = true
			return true
		case cmd == "c" || cmd == "continue":
			return true
		case cmd == "t" || cmd == "trace":
			vm.ldbTrace(L)
		case cmd == "m" || cmd == "maxlen":
			d.maxlenCmd(argv)
		case cmd == "b" || cmd == "break":
			d.breakCmd(argv)
		case cmd == "e" || cmd == "eval":
			vm.ldbEval(L, argv)
		case cmd == "a" || cmd == "abort":
			raiseRedisError(L, "script aborted for user request")
		case len(argv) > 1 && (cmd == "r" || cmd == "redis"):
			vm.ldbRedis(L, argv)
		case cmd == "p" || cmd == "print":
			if len(argv) == 2 {
				vm.ldbPrint(L, argv[1])
			} else {
				vm.ldbPrintAll(L)
			}
		case cmd == "l" || cmd == "list":
			around, ctx := d.line, 5
			if len(argv) > 1 {
				if n := atoi(argv[1]); n > 0 {
					around = n
				}
			}
			if len(argv) > 2 {
				ctx = atoi(argv[2])
			}
			d.list(around, ctx)
		case cmd == "w" || cmd == "whole":
			d.list(1, 1000000)
		default:
			d.log("<error> Unknown Redis Lua debugger command or wrong number of arguments.")
		}
		d.send()
	}
}

// atoi is C's atoi: the leading digits, 0 for none.
func atoi(s string) int {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	j := i
	if j < len(s) && (s[j] == '-' || s[j] == '+') {
		j++
	}
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	n, _ := strconv.Atoi(s[i:j])
	return n
}

var ldbHelp = []string{
	"Redis Lua debugger help:",
	"[h]elp               Show this help.",
	"[s]tep               Run current line and stop again.",
	"[n]ext               Alias for step.",
	"[c]ontinue           Run till next breakpoint.",
	"[l]ist               List source code around current line.",
	"[l]ist [line]        List source code around [line].",
	"                     line = 0 means: current position.",
	"[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
	"                     to show before/after [line].",
	"[w]hole              List all source code. Alias for 'list 1 1000000'.",
	"[p]rint              Show all the local variables.",
	"[p]rint <var>        Show the value of the specified variable.",
	"                     Can also show global vars KEYS and ARGV.",
	"[b]reak              Show all breakpoints.",
	"[b]reak <line>       Add a breakpoint to the specified line.",
	"[b]reak -<line>      Remove breakpoint from the specified line.",
	"[b]reak 0            Remove all breakpoints.",
	"[t]race              Show a backtrace.",
	"[e]val <code>        Execute some Lua code (in a different callframe).",
	"[r]edis <cmd>        Execute a Redis command.",
	"[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
	"                     Specifying zero as <len> means unlimited.",
	"[a]bort              Stop the execution of the script. In sync",
	"                     mode dataset changes will be retained.",
	"",
	"Debugger functions you can call from Lua scripts:",
	"redis.debug()        Produce logs in the debugger console.",
	"redis.breakpoint()   Stop execution like if there was a breakpoint in the",
	"                     next line of code.",
}

func (d *debugger) maxlenCmd(argv []string) {
	if len(argv) == 2 {
		n := atoi(argv[1])
		d.maxlenHint = true
		if n != 0 && n <= 60 {
			n = 60
		}
		d.maxlen = n
	}
	if d.maxlen != 0 {
		d.log(fmt.Sprintf("<value> replies are truncated at %d bytes.", d.maxlen))
	} else {
		d.log("<value> replies are unlimited.")
	}
}

func (d *debugger) breakCmd(argv []string) {
	if len(argv) == 1 {
		if len(d.bp) == 0 {
			d.log("No breakpoints set. Use 'b <line>' to add one.")
			return
		}
		d.log(fmt.Sprintf("%d breakpoints set:", len(d.bp)))
		for _, b := range d.bp {
			d.logSourceLine(b)
		}
		return
	}
	for _, arg := range argv[1:] {
		line, err := strconv.ParseInt(arg, 10, 64)
		switch {
		case err != nil:
			d.log("Invalid argument:'" + arg + "'")
		case line == 0:
			d.bp = nil
			d.log("All breakpoints removed.")
		case line > 0:
			switch {
			case len(d.bp) == ldbMaxBreakpoints:
				d.log("Too many breakpoints set.")
			case line <= int64(len(d.src)) && !d.isBreakpoint(int(line)):
				d.bp = append(d.bp, int(line))
				d.list(int(line), 1)
			default:
				d.log("Wrong line number.")
			}
		default:
			removed := false
			for i, b := range d.bp {
				if int64(b) == -line {
					d.bp = append(d.bp[:i], d.bp[i+1:]...)
					removed = true
					break
				}
			}
			if removed {
				d.log("Breakpoint removed.")
			} else {
				d.log("No breakpoint in the specified line.")
			}
		}
	}
}

// userFrames calls fn for each frame of the script's own code, innermost
// first.
func userFrames(L *glua.LState, fn func(level int, dbg *glua.Debug) bool) {
	for lvl := 0; ; lvl++ {
		dbg, ok := L.GetStack(lvl)
		if !ok {
			return
		}
		if _, err := L.GetInfo("Snl", dbg, glua.LNil); err != nil {
			return
		}
		if dbg.What == "G" || !strings.Contains(dbg.Source, "user_script") {
			continue
		}
		if !fn(lvl, dbg) {
			return
		}
	}
}

// ldbPrint logs the value of the local variable name, looked up from the
// current frame outwards, or of KEYS or ARGV.
func (vm *machine) ldbPrint(L *glua.LState, name string) {
	d := vm.e.dbg
	found := false
	userFrames(L, func(_ int, dbg *glua.Debug) bool {
		for i := 1; ; i++ {
			n, v := L.GetLocal(dbg, i)
			if n == "" {
				return true
			}
			if n == name {
				d.logMax("<value> " + ldbRepr(v, 0))
				found = true
				return false
			}
		}
	})
	if found {
		return
	}
	if name == "ARGV" || name == "KEYS" {
		d.logMax("<value> " + ldbRepr(vm.globals.RawGetString(name), 0))
	} else {
		d.log("No such variable.")
	}
}

// ldbPrintAll logs the local variables of the current frame.
func (vm *machine) ldbPrintAll(L *glua.LState) {
	d := vm.e.dbg
	vars := 0
	userFrames(L, func(_ int, dbg *glua.Debug) bool {
		for i := 1; ; i++ {
			n, v := L.GetLocal(dbg, i)
			if n == "" {
				return false
			}
			if !strings.Contains(n, "(*temporary)") {
				d.logMax("<value> " + n + " = " + ldbRepr(v, 0))
				vars++
			}
		}
	})
	if vars == 0 {
		d.log("No local variables in the current context.")
	}
}

func (vm *machine) ldbTrace(L *glua.LState) {
	d := vm.e.dbg
	first := true
	userFrames(L, func(_ int, dbg *glua.Debug) bool {
		name := dbg.Name
		if dbg.What == "main" || name == "" {
			name = "top level"
		}
		where := "From"
		if first {
			where = "In"
		}
		first = false
		d.log(where + " " + name + ":")
		d.logSourceLine(dbg.CurrentLine)
		return true
	})
	if first {
		d.log("<error> Can't retrieve Lua stack.")
	}
}

// ldbEval runs code, as an expression if it compiles as one, and logs
// its value or error.
func (vm *machine) ldbEval(L *glua.LState, argv []string) {
	d := vm.e.dbg
	code := strings.Join(argv[1:], " ")
	fn, err := L.Load(strings.NewReader("return "+code), "ldb_eval")
	if err != nil {
		if fn, err = L.Load(strings.NewReader(code), "ldb_eval"); err != nil {
			d.log("<error> " + err.Error())
			return
		}
	}
	fn.Env = vm.env
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		msg := err.Error()
		if ae, ok := err.(*glua.ApiError); ok {
			msg = glua.LVAsString(ae.Object)
			if t, ok := ae.Object.(*glua.LTable); ok {
				msg = glua.LVAsString(t.RawGetString("err"))
			}
		}
		d.log("<error> " + msg)
		return
	}
	v := L.Get(-1)
	L.Pop(1)
	d.logMax("<retval> " + ldbRepr(v, 0))
}

// ldbRedis runs a command through redis.call, logged as when stepping.
func (vm *machine) ldbRedis(L *glua.LState, argv []string) {
	d := vm.e.dbg
	top := L.GetTop()
	L.Push(L.GetField(vm.globals.RawGetString("redis"), "call"))
	for _, a := range argv[1:] {
		L.Push(glua.LString(a))
	}
	d.step = true
	L.PCall(len(argv)-1, 1, nil)
	d.step = false
	L.SetTop(top)
}

// logCall logs a redis.call of the script while stepping.
func (d *debugger) logCall(argv [][]byte) {
	var b strings.Builder
	b.WriteString("<redis>")
	for j, a := range argv {
		if j == 10 {
			fmt.Fprintf(&b, " ... (%d more)", len(argv)-j-1)
			break
		}
		b.WriteByte(' ')
		b.Write(a)
	}
	d.log(b.String())
}

// logReply logs a command's reply, readable (ldbLogRedisReply).
func (d *debugger) logReply(reply []byte) {
	var b []byte
	b, _ = respToHuman(append(b, "<reply> "...), reply)
	d.logMax(string(b))
}

// logRefusal logs the error reply of a command refused before it ran,
// as Redis logs its script checks' errors: the text alone for those that
// have no code of their own ("ERR" is added later), the whole reply line
// for those that have.
func (d *debugger) logRefusal(reply []byte) {
	msg := strings.TrimSuffix(string(reply), "\r\n")
	if rest, ok := strings.CutPrefix(msg, "-ERR "); ok {
		msg = rest
	} else {
		msg += "\r\n"
	}
	d.log("<error> " + msg)
}

// redisDebug is redis.debug(...): it logs its arguments in a session.
func (vm *machine) redisDebug(L *glua.LState) int {
	d := vm.e.dbg
	if d == nil {
		return 0
	}
	parts := make([]string, L.GetTop())
	for i := range parts {
		parts[i] = ldbRepr(L.Get(i+1), 0)
	}
	d.log(fmt.Sprintf("<debug> line %d: ", d.line) + strings.Join(parts, ", "))
	return 0
}

// redisBreakpoint is redis.breakpoint(): in a session it stops at the
// next line and returns true.
func (vm *machine) redisBreakpoint(L *glua.LState) int {
	if d := vm.e.dbg; d != nil {
		d.luabp = true
		L.Push(glua.LTrue)
	} else {
		L.Push(glua.LFalse)
	}
	return 1
}

// ldbRepr is a value as the debugger shows it (ldbCatStackValueRec).
func ldbRepr(v glua.LValue, level int) string {
	if level == 10 { // LDB_MAX_VALUES_DEPTH: LUA_MINSTACK/2
		return "<max recursion level reached! Nested table?>"
	}
	level++
	switch v := v.(type) {
	case glua.LString:
		return string(sdsargs.AppendRepr(nil, []byte(v)))
	case glua.LBool:
		if v {
			return "true"
		}
		return "false"
	case glua.LNumber:
		return fmtG(float64(v), 6)
	case *glua.LNilType:
		return "nil"
	case *glua.LTable:
		var arr, full []string
		isArray := true
		expected := 1
		v.ForEach(func(k, val glua.LValue) {
			if n, ok := k.(glua.LNumber); !ok || float64(n) != float64(expected) {
				isArray = false
			}
			arr = append(arr, ldbRepr(val, level))
			full = append(full, "["+ldbRepr(k, level)+"]="+ldbRepr(val, level))
			expected++
		})
		if isArray {
			return "{" + strings.Join(arr, "; ") + "}"
		}
		return "{" + strings.Join(full, "; ") + "}"
	case *glua.LFunction:
		return fmt.Sprintf("\"function@%p\"", v)
	case *glua.LUserData:
		return fmt.Sprintf("\"userdata@%p\"", v)
	case *glua.LState:
		return fmt.Sprintf("\"thread@%p\"", v)
	}
	return "\"<unknown-lua-type>\""
}

// respToHuman appends the reply at the start of r in the debugger's
// readable form (ldbRedisProtocolToHuman) and returns the rest of r.
func respToHuman(o, r []byte) ([]byte, []byte) {
	if len(r) == 0 {
		return o, r
	}
	end := bytes.Index(r, []byte("\r\n"))
	if end < 0 {
		return append(o, r...), nil
	}
	line, rest := r[1:end], r[end+2:]
	count := func() int { n, _ := strconv.Atoi(string(line)); return n }
	switch r[0] {
	case ':', '(':
		return append(o, line...), rest
	case '$', '=', '!':
		n := count()
		if n < 0 {
			return append(o, "NULL"...), rest
		}
		if n+2 > len(rest) {
			return sdsargs.AppendRepr(o, rest), nil
		}
		return sdsargs.AppendRepr(o, rest[:n]), rest[n+2:]
	case '+', '-':
		return sdsargs.AppendRepr(o, r[:end]), rest
	case '*', '~', '>':
		n := count()
		if r[0] == '*' && n < 0 {
			return append(o, "NULL"...), rest
		}
		open, close := "[", "]"
		if r[0] == '~' {
			open, close = "~(", ")"
		}
		o = append(o, open...)
		for j := 0; j < n; j++ {
			o, rest = respToHuman(o, rest)
			if j != n-1 {
				o = append(o, ',')
			}
		}
		return append(o, close...), rest
	case '%', '|':
		n := count()
		o = append(o, '{')
		for j := 0; j < n; j++ {
			o, rest = respToHuman(o, rest)
			o = append(o, " => "...)
			o, rest = respToHuman(o, rest)
			if j != n-1 {
				o = append(o, ',')
			}
		}
		return append(o, '}'), rest
	case '_':
		return append(o, "(null)"...), rest
	case '#':
		if len(line) > 0 && line[0] == 't' {
			return append(o, "#true"...), rest
		}
		return append(o, "#false"...), rest
	case ',':
		return append(append(o, "(double) "...), line...), rest
	}
	return o, rest
}
