package lua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	glua "github.com/yuin/gopher-lua"

	"github.com/sluicedb/sluice/resp"
)

// Host is what the engine needs from the server its scripts run in.
type Host interface {
	// Call runs argv (the command's name first) for redis.call or
	// redis.pcall of the running script and returns its reply, in RESP2
	// or RESP3 as proto says, valid until the next Call. A command the
	// server refuses to run from the script (unknown, noscript, denied by
	// the ACL or by the script's flags, out of memory) is answered with an
	// error reply like any other. Error replies must already be counted
	// in the server's error statistics: the engine never counts them.
	Call(argv [][]byte, proto int) []byte
	// Refused reports whether the last Call's reply is a refusal (the
	// command did not run): the debugger logs those as errors.
	Refused() bool
	// Log writes a redis.log line at level (LogDebug to LogWarning).
	Log(level int, msg string)
	// ACLCheck is redis.acl_check_cmd: whether the script's caller may
	// run argv; ok is false when argv names no command.
	ACLCheck(argv [][]byte) (allowed, ok bool)
	// SetRepl is redis.set_repl: where the script's writes from now on
	// go, ReplAOF, ReplReplica, both (ReplAll, each run's start) or
	// neither.
	SetRepl(flags int)
}

// redis.set_repl's flags (redis.REPL_AOF, REPL_REPLICA, REPL_ALL).
const (
	ReplAOF     = 1
	ReplReplica = 2
	ReplAll     = ReplAOF | ReplReplica
)

// Flags are a script's or function's flags (the shebang's flags=...,
// register_function's flags table).
type Flags int

// The flags Redis 7.0 knows, and Compat for a script without a shebang
// (EVAL's compatibility mode: no flag applies, its commands are checked
// one by one).
const (
	NoWrites Flags = 1 << iota
	AllowOOM
	AllowStale
	NoCluster
	AllowCrossSlot
	Compat
)

var flagNames = []struct {
	name string
	flag Flags
}{{"no-writes", NoWrites}, {"allow-oom", AllowOOM}, {"allow-stale", AllowStale}, {"no-cluster", NoCluster},
	{"allow-cross-slot-keys", AllowCrossSlot}}

// Names lists the flags set in f by their Redis names, in Redis's order.
func (f Flags) Names() []string {
	var out []string
	for _, d := range flagNames {
		if f&d.flag != 0 {
			out = append(out, d.name)
		}
	}
	return out
}

// Engine is the scripting engine of one server: the EVAL script cache and
// its Lua VM, the function libraries and theirs, and the one script run
// at a time. Scripts are started, run and answered by StartEval or
// StartFunction, Run and Reply, one at a time. The script cache, Kill and
// the library lookups may be used from any goroutine; LoadLibrary and
// Restore run a library's code on the functions' VM, so never while a
// function runs (the server runs both under its exclusive keyspace lock).
type Engine struct {
	host    Host
	version string

	mu      sync.Mutex // guards scripts, libs and funcs
	scripts map[string]*Script
	libs    map[string]*Library
	funcs   map[string]*Function // by lower-cased name
	loading *Library             // the library FUNCTION LOAD is running (register_function's target)
	evalVM  *machine             // created on first use
	fnVM    *machine
	// rand48 is the state of the scripts' math.random (Redis's
	// redisLrand48, shared by EVAL and functions, never reseeded
	// implicitly).
	rand48 uint64

	// running is true while a script runs (its redis.call, math.random
	// and the like work only then).
	running bool
	run     struct {
		vm    *machine
		name  string // the script's SHA1 or the function's name
		nargs int
		proto int // redis.setresp
		err   error
	}
	// The argv of redis.call, reused from call to call.
	argv   [][]byte
	argbuf []byte
	offs   []int

	killMu sync.Mutex
	armed  *machine // the VM of the started run, until it ends (Kill's target)
	killed bool

	dbg *debugger // the debugging session (ldb.go), nil when none
}

// New returns an engine whose scripts reach the server through host;
// version is what they see as redis.REDIS_VERSION ("7.0.15").
func New(host Host, version string) *Engine {
	return &Engine{host: host, version: version, rand48: rand48Init, scripts: map[string]*Script{},
		libs: map[string]*Library{}, funcs: map[string]*Function{}}
}

// A Script is an EVAL script in the cache.
type Script struct {
	SHA   string // lower-case hex SHA1 of the body
	Flags Flags
	proto *glua.FunctionProto
	fn    *glua.LFunction // bound to the eval VM, created on first run
}

// ParseShebang returns the flags of a script's "#!lua flags=..." first
// line, Compat when it has none, and Redis's error for a bad one.
func ParseShebang(body string) (Flags, error) {
	f, _, err := parseShebang(body)
	return f, err
}

// parseShebang extracts the flags of a "#!lua flags=..." first line and
// the body's shebang length (kept newline: line numbers stay right).
func parseShebang(body string) (flags Flags, shebangLen int, err error) {
	if !strings.HasPrefix(body, "#!") {
		return Compat, 0, nil
	}
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return 0, 0, errors.New("Invalid script shebang")
	}
	parts := strings.Fields(body[:nl])
	if len(parts) == 0 {
		return 0, 0, errors.New("Invalid engine in script shebang")
	}
	if parts[0] != "#!lua" {
		return 0, 0, errors.New("Unexpected engine in script shebang: " + parts[0])
	}
	for _, p := range parts[1:] {
		if !strings.HasPrefix(p, "flags=") {
			return 0, 0, errors.New("Unknown lua shebang option: " + p)
		}
		v := p[6:]
		if v == "" {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			found := false
			for _, d := range flagNames {
				if d.name == f {
					flags |= d.flag
					found = true
				}
			}
			if !found {
				return 0, 0, errors.New("Unexpected flag in script shebang: " + f)
			}
		}
	}
	return flags, nl, nil
}

// LoadScript compiles body into the script cache (SCRIPT LOAD, EVAL) and
// returns it; a script already cached is returned as it is. The error is
// Redis's text, without its "ERR " code.
func (e *Engine) LoadScript(body []byte) (*Script, error) {
	sum := sha1.Sum(body)
	sha := hex.EncodeToString(sum[:])
	e.mu.Lock()
	sc := e.scripts[sha]
	e.mu.Unlock()
	if sc != nil {
		return sc, nil
	}
	src := string(body)
	flags, shebang, err := parseShebang(src)
	if err != nil {
		return nil, err
	}
	proto, err := compile(src[shebang:], "user_script")
	if err != nil {
		return nil, errors.New("Error compiling script (new function): " + compileErrorText(err, "user_script", src))
	}
	sc = &Script{SHA: sha, Flags: flags, proto: proto}
	e.mu.Lock()
	if old := e.scripts[sha]; old != nil {
		sc = old
	} else {
		e.scripts[sha] = sc
	}
	e.mu.Unlock()
	return sc, nil
}

// Script returns the cached script of a SHA1 in hex, in either case, or
// nil.
func (e *Engine) Script(sha []byte) *Script {
	if len(sha) != 40 {
		return nil
	}
	var tmp [40]byte
	for i, b := range sha {
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		tmp[i] = b
	}
	e.mu.Lock()
	sc := e.scripts[string(tmp[:])]
	e.mu.Unlock()
	return sc
}

// FlushScripts empties the script cache (SCRIPT FLUSH).
func (e *Engine) FlushScripts() {
	e.mu.Lock()
	e.scripts = map[string]*Script{}
	e.mu.Unlock()
}

// NumScripts is the number of cached scripts.
func (e *Engine) NumScripts() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.scripts)
}

// StartEval readies script s to run with its KEYS and ARGV. From here
// until Run returns, Kill stops it.
func (e *Engine) StartEval(s *Script, keys, args [][]byte) {
	if e.evalVM == nil {
		e.evalVM = newMachine(e, false)
	}
	vm := e.evalVM
	if s.fn == nil {
		s.fn = vm.L.NewFunctionFromProto(s.proto)
		s.fn.Env = vm.env
	}
	fn := s.fn
	if e.dbg != nil {
		// The debugger's build of the script; the cached one compiled,
		// so this one does.
		if dfn, err := e.debugFunction(vm); err == nil {
			fn = dfn
			e.dbg.since = time.Now()
		}
	}
	L := vm.L
	vm.globals.RawSetString("KEYS", stringsTable(L, keys))
	vm.globals.RawSetString("ARGV", stringsTable(L, args))
	L.Push(fn)
	e.start(vm, s.SHA, 0)
}

// StartFunction readies function f to run with its keys and arguments
// (the callback's two tables).
func (e *Engine) StartFunction(f *Function, keys, args [][]byte) {
	L := e.fnVM.L
	L.Push(f.fn)
	L.Push(stringsTable(L, keys))
	L.Push(stringsTable(L, args))
	e.start(e.fnVM, f.Name, 2)
}

func (e *Engine) start(vm *machine, name string, nargs int) {
	r := &e.run
	r.vm, r.name, r.nargs, r.proto, r.err = vm, name, nargs, 2, nil
	e.killMu.Lock()
	e.armed, e.killed = vm, false
	e.killMu.Unlock()
}

func stringsTable(L *glua.LState, items [][]byte) *glua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, a := range items {
		t.RawSetInt(i+1, glua.LString(a))
	}
	return t
}

// Run runs the started script to its end, its error or its kill.
func (e *Engine) Run() {
	r := &e.run
	vm := r.vm
	e.running = true
	r.err = pcallGuarded(vm.L, r.nargs, vm.handler)
	e.running = false
	e.killMu.Lock()
	e.armed = nil
	killed := e.killed
	e.killMu.Unlock()
	if killed {
		// A kill cancels the VM's context: replace it for the next run.
		vm.cancel()
		vm.ctx, vm.cancel = context.WithCancel(context.Background())
		vm.L.SetContext(vm.ctx)
	}
}

// Reply writes the reply of the script Run ran to w: its return value
// converted (luaReplyToRedisReply), or its error as Redis words it.
func (e *Engine) Reply(w *resp.Writer) {
	r := &e.run
	L := r.vm.L
	if r.err != nil {
		var obj glua.LValue = glua.LString(r.err.Error())
		if ae, ok := r.err.(*glua.ApiError); ok {
			obj = ae.Object
		}
		e.killMu.Lock()
		killed := e.killed
		e.killMu.Unlock()
		writeScriptError(w, obj, r.name, killed)
		L.SetTop(0)
		return
	}
	v := L.Get(-1)
	L.SetTop(0)
	writeReply(w, v, r.proto == 3, 0)
}

// Kill stops the started or running script (SCRIPT KILL, FUNCTION KILL,
// SHUTDOWN): it ends with Redis's "Script killed by user" error. It does
// nothing when no script is started.
func (e *Engine) Kill() {
	e.killMu.Lock()
	defer e.killMu.Unlock()
	if e.armed != nil {
		e.killed = true
		e.armed.cancel()
	}
}

// pcallGuarded is L.PCall, with a last guard: gopher-lua can panic past
// PCall (a registry overflow inside the error handler, say); that must
// become this script's error, not a crash of the whole server.
func pcallGuarded(L *glua.LState, nargs int, handler *glua.LFunction) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
			L.SetTop(0)
		}
	}()
	return L.PCall(nargs, 1, handler)
}
