package lua_test

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/lua"
	"github.com/sluicedb/sluice/resp"
)

// mapHost runs redis.call's commands over in-memory maps: a few of
// Redis's string, hash, set and sorted-set commands with their real
// replies in RESP2 and RESP3, enough for scripts to see every reply type
// they convert. It is a small command executor, not a server: the
// commands it does not know get the error a server gives a script for an
// unknown command.
type mapHost struct {
	strs   map[string]string
	hashes map[string]*hash
	sets   map[string]map[int64]bool
	zsets  map[string]map[string]float64
	w      resp.Writer
	logs   []string
	// errs counts the error replies the host gave (a server counts them
	// in its error statistics).
	errs int
	// repl is what redis.set_repl last set.
	repl []int
}

type hash struct {
	fields []string // in insertion order, as a small Redis hash replies
	vals   map[string]string
}

func newMapHost() *mapHost {
	return &mapHost{strs: map[string]string{}, hashes: map[string]*hash{}, sets: map[string]map[int64]bool{},
		zsets: map[string]map[string]float64{}}
}

const errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

func (h *mapHost) exists(k string) bool {
	_, s := h.strs[k]
	_, hh := h.hashes[k]
	_, st := h.sets[k]
	_, z := h.zsets[k]
	return s || hh || st || z
}

func (h *mapHost) del(k string) bool {
	ok := h.exists(k)
	delete(h.strs, k)
	delete(h.hashes, k)
	delete(h.sets, k)
	delete(h.zsets, k)
	return ok
}

func (h *mapHost) Refused() bool { return false }

func (h *mapHost) Call(argv [][]byte, proto int) []byte {
	w := &h.w
	w.Buf, w.Proto = w.Buf[:0], proto
	w.OnError = func(string) { h.errs++ }
	args := make([]string, len(argv))
	for i, a := range argv {
		args[i] = string(a)
	}
	name := strings.ToLower(args[0])
	arity := map[string]int{"ping": -1, "echo": 2, "set": 3, "get": 2, "del": -2, "incr": 2, "hset": -4,
		"hgetall": 2, "sadd": -3, "smembers": 2, "zadd": 4, "zscore": 3, "debug": -2}
	n, ok := arity[name]
	switch {
	case !ok:
		w.Error("ERR Unknown Redis command called from script")
		return w.Buf
	case n > 0 && len(args) != n, n < 0 && len(args) < -n:
		w.Error("ERR Wrong number of args calling Redis command from script")
		return w.Buf
	}
	switch name {
	case "ping":
		w.Simple("PONG")
	case "echo":
		w.BulkString(args[1])
	case "set":
		h.del(args[1])
		h.strs[args[1]] = args[2]
		w.OK()
	case "get":
		if v, ok := h.strs[args[1]]; ok {
			w.BulkString(v)
		} else if h.exists(args[1]) {
			w.Error(errWrongType)
		} else {
			w.Null()
		}
	case "del":
		n := 0
		for _, k := range args[1:] {
			if h.del(k) {
				n++
			}
		}
		w.Int(int64(n))
	case "incr":
		v, ok := h.strs[args[1]]
		if !ok && h.exists(args[1]) {
			w.Error(errWrongType)
			break
		}
		if !ok {
			v = "0"
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			w.Error("ERR value is not an integer or out of range")
			break
		}
		h.strs[args[1]] = strconv.FormatInt(n+1, 10)
		w.Int(n + 1)
	case "hset":
		if len(args)%2 != 0 {
			w.Error("ERR wrong number of arguments for 'hset' command")
			break
		}
		hh := h.hashes[args[1]]
		if hh == nil {
			if h.exists(args[1]) {
				w.Error(errWrongType)
				break
			}
			hh = &hash{vals: map[string]string{}}
			h.hashes[args[1]] = hh
		}
		added := 0
		for i := 2; i < len(args); i += 2 {
			if _, ok := hh.vals[args[i]]; !ok {
				hh.fields = append(hh.fields, args[i])
				added++
			}
			hh.vals[args[i]] = args[i+1]
		}
		w.Int(int64(added))
	case "hgetall":
		hh := h.hashes[args[1]]
		if hh == nil {
			w.Map(0)
			break
		}
		w.Map(len(hh.fields))
		for _, f := range hh.fields {
			w.BulkString(f)
			w.BulkString(hh.vals[f])
		}
	case "sadd":
		// Integer members only: Redis keeps them in an intset, sorted.
		s := h.sets[args[1]]
		if s == nil {
			s = map[int64]bool{}
			h.sets[args[1]] = s
		}
		added := 0
		for _, m := range args[2:] {
			n, err := strconv.ParseInt(m, 10, 64)
			if err != nil {
				w.Error("ERR this test host keeps integer set members only")
				return w.Buf
			}
			if !s[n] {
				s[n] = true
				added++
			}
		}
		w.Int(int64(added))
	case "smembers":
		var ms []int64
		for m := range h.sets[args[1]] {
			ms = append(ms, m)
		}
		sort.Slice(ms, func(i, j int) bool { return ms[i] < ms[j] })
		w.Set(len(ms))
		for _, m := range ms {
			w.BulkString(strconv.FormatInt(m, 10))
		}
	case "zadd":
		f, err := strconv.ParseFloat(args[2], 64)
		if err != nil {
			w.Error("ERR value is not a valid float")
			break
		}
		z := h.zsets[args[1]]
		if z == nil {
			z = map[string]float64{}
			h.zsets[args[1]] = z
		}
		_, had := z[args[3]]
		z[args[3]] = f
		if had {
			w.Int(0)
		} else {
			w.Int(1)
		}
	case "zscore":
		if f, ok := h.zsets[args[1]][args[2]]; ok {
			w.Double(f)
		} else {
			w.Null()
		}
	case "debug":
		if len(args) != 3 || !strings.EqualFold(args[1], "protocol") {
			w.Error("ERR this test host knows DEBUG PROTOCOL only")
			break
		}
		debugProtocol(w, strings.ToLower(args[2]))
	}
	return w.Buf
}

// debugProtocol is DEBUG PROTOCOL, Redis's command that replies with each
// RESP type (the only one whose reply carries a RESP3 attribute).
func debugProtocol(w *resp.Writer, typ string) {
	switch typ {
	case "string":
		w.BulkString("Hello World")
	case "integer":
		w.Int(12345)
	case "double":
		w.Double(3.141)
	case "bignum":
		if w.Proto == 3 {
			w.Buf = append(w.Buf, "(1234567999999999999999999999999999999\r\n"...)
		} else {
			w.BulkString("1234567999999999999999999999999999999")
		}
	case "null":
		w.Null()
	case "array", "set":
		if typ == "set" {
			w.Set(3)
		} else {
			w.Array(3)
		}
		for j := 0; j < 3; j++ {
			w.Int(int64(j))
		}
	case "map":
		w.Map(3)
		for j := 0; j < 3; j++ {
			w.Int(int64(j))
			w.Bool(j == 1)
		}
	case "attrib":
		if w.Proto == 3 {
			w.Buf = append(w.Buf, "|1\r\n"...)
			w.BulkString("key-popularity")
			w.Array(2)
			w.BulkString("key:123")
			w.Int(90)
		}
		w.BulkString("Some real reply following the attribute")
	case "true", "false":
		w.Bool(typ == "true")
	case "verbatim":
		w.Verbatim("txt", "This is a verbatim\nstring")
	default:
		w.Error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
	}
}

func (h *mapHost) SetRepl(flags int) { h.repl = append(h.repl, flags) }

func (h *mapHost) Log(level int, msg string) {
	h.logs = append(h.logs, strconv.Itoa(level)+" "+msg)
}

func (h *mapHost) ACLCheck(argv [][]byte) (allowed, ok bool) {
	// The caller is Redis's default user: every command is allowed.
	switch strings.ToLower(string(argv[0])) {
	case "get", "set", "ping", "flushall", "debug":
		return true, true
	}
	return false, false
}

// eval runs script as EVAL does on a fresh engine and returns the raw
// reply, written for a client of protocol proto.
func eval(t *testing.T, e *lua.Engine, script string, keys, args []string, proto int) string {
	t.Helper()
	var w resp.Writer
	w.Proto = proto
	sc, err := e.LoadScript([]byte(script))
	if err != nil {
		w.Error("ERR " + err.Error())
		return string(w.Buf)
	}
	e.StartEval(sc, bytesOf(keys), bytesOf(args))
	e.Run()
	e.Reply(&w)
	return string(w.Buf)
}

func bytesOf(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
