package lua

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"sort"
	"strings"
	"time"

	glua "github.com/yuin/gopher-lua"

	"github.com/sluicedb/sluice/internal/sdsargs"
)

// Redis 7 functions (functions.c, function_lua.c): libraries loaded with
// FUNCTION LOAD into their own Lua VM, their functions called by FCALL.

// A Library is a loaded function library.
type Library struct {
	Name  string
	Code  string // the whole source, shebang line included
	funcs map[string]*Function
}

// Functions returns the library's functions sorted by name.
func (l *Library) Functions() []*Function {
	out := make([]*Function, 0, len(l.funcs))
	for _, f := range l.funcs {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// A Function is one function a library registered.
type Function struct {
	Name        string
	Description *string // nil when none was given
	Flags       Flags
	fn          *glua.LFunction
	lib         *Library
}

// loadTimeout bounds FUNCTION LOAD's run of a library's body.
const loadTimeout = 500 * time.Millisecond

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

// LoadLibrary compiles and runs a library's code ("#!lua name=NAME" first)
// and links its functions (FUNCTION LOAD, a function in an RDB file); a
// library of the same name is replaced when replace is set. It returns
// the library's name, or Redis's error text (without "ERR ").
func (e *Engine) LoadLibrary(code string, replace bool) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	name, err := e.loadLibrary(code, replace)
	if err != "" {
		return "", errors.New(err)
	}
	return name, nil
}

// loadLibrary is LoadLibrary with e.mu held.
func (e *Engine) loadLibrary(code string, replace bool) (string, string) {
	if e.fnVM == nil {
		e.fnVM = newMachine(e, true)
	}
	if !strings.HasPrefix(code, "#!") {
		return "", "Missing library metadata"
	}
	nl := strings.IndexByte(code, '\n')
	if nl < 0 {
		return "", "Invalid library metadata"
	}
	// The shebang line is split as sdssplitargs does: name="foo" is foo.
	parts, ok := sdsargs.Split(code[:nl])
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
	old := e.libs[name]
	if old != nil && !replace {
		return "", "Library '" + name + "' already exists"
	}
	lib := &Library{Name: name, Code: code, funcs: map[string]*Function{}}
	proto, err := compile(code[nl:], "user_function")
	if err != nil {
		return "", "Error compiling function: " + compileErrorText(err, "user_function", code)
	}
	vm := e.fnVM
	L := vm.L
	fn := L.NewFunctionFromProto(proto)
	fn.Env = vm.env
	e.loading = lib
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
	e.loading = nil
	L.SetTop(0)
	if timedOut {
		return "", "Error registering functions: ERR FUNCTION LOAD timeout"
	}
	if perr != nil {
		msg := perr.Error()
		if ae, ok := perr.(*glua.ApiError); ok {
			msg = "ERR " + glua.LVAsString(ae.Object)
			if t, ok := ae.Object.(*glua.LTable); ok {
				msg = glua.LVAsString(t.RawGetString("err"))
			}
		}
		return "", "Error registering functions: " + msg
	}
	if len(lib.funcs) == 0 {
		return "", "No functions registered"
	}
	for fname := range lib.funcs {
		if f := e.funcs[strings.ToLower(fname)]; f != nil && f.lib != old {
			return "", "Function " + fname + " already exists"
		}
	}
	if old != nil {
		e.unlinkLibrary(old)
	}
	e.libs[name] = lib
	for fname, f := range lib.funcs {
		e.funcs[strings.ToLower(fname)] = f
	}
	return name, ""
}

func (e *Engine) unlinkLibrary(lib *Library) {
	delete(e.libs, lib.Name)
	for fname := range lib.funcs {
		delete(e.funcs, strings.ToLower(fname))
	}
}

// pcallLoad runs the library body on top of L's stack, turning a panic
// out of the VM into an error (as pcallGuarded does for scripts).
func pcallLoad(L *glua.LState) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return L.PCall(0, 0, nil)
}

// DeleteLibrary removes a library and its functions (FUNCTION DELETE);
// it reports false when there is no such library.
func (e *Engine) DeleteLibrary(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	lib := e.libs[name]
	if lib == nil {
		return false
	}
	e.unlinkLibrary(lib)
	return true
}

// FlushLibraries removes every library (FUNCTION FLUSH).
func (e *Engine) FlushLibraries() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.libs = map[string]*Library{}
	e.funcs = map[string]*Function{}
}

// Libraries returns the loaded libraries sorted by name.
func (e *Engine) Libraries() []*Library {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sortedLibs()
}

func (e *Engine) sortedLibs() []*Library {
	out := make([]*Library, 0, len(e.libs))
	for _, l := range e.libs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Function returns the function FCALL names (in any case), or nil.
func (e *Engine) Function(name []byte) *Function {
	e.mu.Lock()
	defer e.mu.Unlock()
	// Function names are looked up ignoring case (functionDictType).
	f := e.funcs[string(name)]
	if f == nil {
		f = e.funcs[strings.ToLower(string(name))]
	}
	return f
}

// Counts returns the number of libraries and of functions.
func (e *Engine) Counts() (libs, funcs int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.libs), len(e.funcs)
}

// registerFunction is redis.register_function.
func (vm *machine) registerFunction(L *glua.LState) int {
	lib := vm.e.loading
	if lib == nil {
		raiseRedisError(L, "redis.register_function can only be called on FUNCTION LOAD command")
	}
	var name string
	var desc *string
	var cb *glua.LFunction
	var flags Flags
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*glua.LTable)
		if !ok {
			raiseRedisError(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var errText string
		forEach(t, func(k, v glua.LValue) {
			if errText != "" {
				return
			}
			ks, ok := k.(glua.LString)
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
				f, ok := v.(*glua.LFunction)
				if !ok {
					errText = "callback argument given to redis.register_function must be a function"
					return
				}
				cb = f
			case "flags":
				ft, ok := v.(*glua.LTable)
				if !ok {
					errText = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				for i := 1; ; i++ {
					fv := ft.RawGetInt(i)
					if fv == glua.LNil {
						break
					}
					found := false
					if s, ok := fv.(glua.LString); ok {
						for _, d := range flagNames {
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
		if name == "" {
			raiseRedisError(L, "redis.register_function must get a function name argument")
		}
		if cb == nil {
			raiseRedisError(L, "redis.register_function must get a callback argument")
		}
	case 2:
		s, ok := L.Get(1).(glua.LString)
		if !ok {
			if n, isNum := L.Get(1).(glua.LNumber); isNum {
				s, ok = glua.LString(n.String()), true
			}
		}
		if !ok {
			raiseRedisError(L, "first argument to redis.register_function must be a string")
		}
		f, ok := L.Get(2).(*glua.LFunction)
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
	lib.funcs[name] = &Function{Name: name, Description: desc, Flags: flags, fn: cb, lib: lib}
	return 0
}

// luaStringish is lua_isstring + lua_tostring: strings and numbers.
func luaStringish(v glua.LValue) (glua.LString, bool) {
	switch v := v.(type) {
	case glua.LString:
		return v, true
	case glua.LNumber:
		return glua.LString(v.String()), true
	}
	return "", false
}

// FUNCTION DUMP payload (Sluice's own format, not Redis's RDB one):
//
//	"SLFN" | uint32 count | count × (uint32 len | library code) | uint16 version(1) | uint64 crc64(ECMA) of all before
//
// Libraries are re-created from their code (the name is in the shebang).
var crcTable = crc64.MakeTable(crc64.ECMA)

// Dump serializes every library for FUNCTION DUMP.
func (e *Engine) Dump() []byte {
	b := []byte("SLFN")
	libs := e.Libraries()
	b = binary.BigEndian.AppendUint32(b, uint32(len(libs)))
	for _, l := range libs {
		b = binary.BigEndian.AppendUint32(b, uint32(len(l.Code)))
		b = append(b, l.Code...)
	}
	b = binary.BigEndian.AppendUint16(b, 1)
	return binary.BigEndian.AppendUint64(b, crc64.Checksum(b, crcTable))
}

func decodeDump(b []byte) ([]string, bool) {
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

// RestorePolicy is what FUNCTION RESTORE does with the libraries already
// loaded.
type RestorePolicy int

const (
	// RestoreAppend adds the payload's libraries; a name taken fails.
	RestoreAppend RestorePolicy = iota
	// RestoreReplace adds them, replacing libraries of the same name.
	RestoreReplace
	// RestoreFlush deletes every library first.
	RestoreFlush
)

// Restore loads the libraries of a Dump payload by policy, all or none
// (FUNCTION RESTORE). The error is Redis's text, without "ERR ".
func (e *Engine) Restore(payload []byte, policy RestorePolicy) error {
	codes, ok := decodeDump(payload)
	if !ok {
		return errors.New("DUMP payload version or checksum are wrong")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	saveLibs, saveFuncs := e.libs, e.funcs
	// Load into a fresh context, then join (as libraryJoin does).
	e.libs, e.funcs = map[string]*Library{}, map[string]*Function{}
	order := make([]string, 0, len(codes)) // the payload's order, so the first clash reported is stable
	for _, code := range codes {
		name, err := e.loadLibrary(code, false)
		if err != "" {
			e.libs, e.funcs = saveLibs, saveFuncs
			return errors.New(err)
		}
		order = append(order, name)
	}
	newLibs := e.libs
	e.libs, e.funcs = saveLibs, saveFuncs
	old := e.libs
	if policy == RestoreFlush {
		old = map[string]*Library{}
	}
	for _, name := range order {
		if old[name] != nil && policy != RestoreReplace {
			return errors.New("Library " + name + " already exists")
		}
	}
	libs, funcs := map[string]*Library{}, map[string]*Function{}
	for k, v := range old {
		if newLibs[k] == nil {
			libs[k] = v
			for fk, fv := range v.funcs {
				funcs[strings.ToLower(fk)] = fv
			}
		}
	}
	for _, k := range order {
		v := newLibs[k]
		for fk, fv := range v.funcs {
			if funcs[strings.ToLower(fk)] != nil {
				return errors.New("Function " + fk + " already exists")
			}
			funcs[strings.ToLower(fk)] = fv
		}
		libs[k] = v
	}
	e.libs, e.funcs = libs, funcs
	return nil
}
