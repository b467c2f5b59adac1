package lua

import (
	"math"
	"strconv"
	"strings"

	glua "github.com/yuin/gopher-lua"

	"github.com/sluicedb/sluice/resp"
)

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

func (r *respReader) value(L *glua.LState) glua.LValue {
	if r.off >= len(r.b) {
		return glua.LNil
	}
	t := r.b[r.off]
	r.off++
	l := r.line()
	switch t {
	case '+':
		tb := L.CreateTable(0, 1)
		tb.RawSetString("ok", glua.LString(l))
		return tb
	case '-':
		tb := L.CreateTable(0, 2)
		tb.RawSetString("err", glua.LString(l))
		tb.RawSetString(errNoStatsField, glua.LTrue) // the command counted it
		return tb
	case ':':
		n, _ := strconv.ParseInt(string(l), 10, 64)
		return glua.LNumber(n)
	case '$', '=':
		n, _ := strconv.Atoi(string(l))
		if n < 0 {
			return glua.LFalse
		}
		s := r.b[r.off : r.off+n]
		r.off += n + 2
		if t == '=' {
			tb := L.CreateTable(0, 1)
			v := L.CreateTable(0, 2)
			v.RawSetString("format", glua.LString(s[:3]))
			v.RawSetString("string", glua.LString(s[4:]))
			tb.RawSetString("verbatim_string", v)
			return tb
		}
		return glua.LString(s)
	case '*', '~', '%', '>':
		n, _ := strconv.Atoi(string(l))
		if n < 0 {
			return glua.LFalse
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
				m.RawSet(r.value(L), glua.LTrue)
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
		return glua.LNil
	case '#':
		return glua.LBool(len(l) > 0 && l[0] == 't')
	case ',':
		f, _ := strconv.ParseFloat(string(l), 64)
		switch string(l) {
		case "inf":
			f = math.Inf(1)
		case "-inf":
			f = math.Inf(-1)
		}
		tb := L.CreateTable(0, 1)
		tb.RawSetString("double", glua.LNumber(f))
		return tb
	case '(':
		tb := L.CreateTable(0, 1)
		tb.RawSetString("big_number", glua.LString(l))
		return tb
	case '|':
		// An attribute: not shown to scripts, its reply follows it.
		n, _ := strconv.Atoi(string(l))
		for i := 0; i < 2*n; i++ {
			r.value(L)
		}
		return r.value(L)
	}
	return glua.LNil
}

// writeReply converts a script's return value into the caller's reply
// (luaReplyToRedisReply); resp3 is the script's redis.setresp state.
func writeReply(w *resp.Writer, v glua.LValue, resp3 bool, depth int) {
	switch v := v.(type) {
	case glua.LString:
		w.BulkString(string(v))
	case glua.LBool:
		if !resp3 {
			if v {
				w.Int(1)
			} else {
				w.Null()
			}
		} else {
			w.Bool(bool(v))
		}
	case glua.LNumber:
		w.Int(luaToInt(v))
	case *glua.LTable:
		if depth > 1000 {
			w.Error("ERR reached lua stack limit")
			return
		}
		if e, ok := v.RawGetString("err").(glua.LString); ok {
			if errorCounted(v) {
				errorNoStats(w, string(e))
			} else {
				w.Error(string(e))
			}
			return
		}
		if s, ok := v.RawGetString("ok").(glua.LString); ok {
			w.Simple(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))
			return
		}
		if d, ok := v.RawGetString("double").(glua.LNumber); ok {
			w.Double(float64(d))
			return
		}
		if s, ok := v.RawGetString("big_number").(glua.LString); ok {
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
		if vt, ok := v.RawGetString("verbatim_string").(*glua.LTable); ok {
			f, ok1 := vt.RawGetString("format").(glua.LString)
			s, ok2 := vt.RawGetString("string").(glua.LString)
			if ok1 && ok2 {
				w.Verbatim(string(f), string(s))
				return
			}
		}
		if m, ok := v.RawGetString("map").(*glua.LTable); ok {
			n := 0
			forEach(m, func(_, _ glua.LValue) { n++ })
			w.Map(n)
			forEach(m, func(k, val glua.LValue) {
				writeReply(w, k, resp3, depth+1)
				writeReply(w, val, resp3, depth+1)
			})
			return
		}
		if m, ok := v.RawGetString("set").(*glua.LTable); ok {
			n := 0
			forEach(m, func(_, _ glua.LValue) { n++ })
			w.Set(n)
			forEach(m, func(k, _ glua.LValue) { writeReply(w, k, resp3, depth+1) })
			return
		}
		n := 0
		for v.RawGetInt(n+1) != glua.LNil {
			n++
		}
		w.Array(n)
		for i := 1; i <= n; i++ {
			writeReply(w, v.RawGetInt(i), resp3, depth+1)
		}
	default:
		w.Null()
	}
}

func luaToInt(v glua.LNumber) int64 {
	f := float64(v)
	if math.IsNaN(f) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return math.MinInt64
	}
	return int64(f)
}

// writeScriptError writes the error a script ended with (obj is what
// the error handler made of it) as Redis's luaCallFunction does: the
// error, then " script: NAME, on SOURCE:LINE." where the raise is known.
func writeScriptError(w *resp.Writer, obj glua.LValue, name string, killed bool) {
	t, ok := obj.(*glua.LTable)
	if !ok {
		w.Error("ERR Error running script " + name + ", " + trunc(glua.LVAsString(obj), 100))
		return
	}
	msg := glua.LVAsString(t.RawGetString("err"))
	if killed {
		msg = "ERR Script killed by user with SCRIPT KILL..."
	}
	src, line := t.RawGetString("source"), t.RawGetString("line")
	if src != glua.LNil && line != glua.LNil {
		msg += " script: " + name + ", on " + glua.LVAsString(src) + ":" + glua.LVAsString(line) + "."
	}
	if !killed && errorCounted(t) {
		errorNoStats(w, msg)
		return
	}
	w.Error(msg)
}

// errorNoStats writes an error reply that the error statistics already
// counted (w's OnError hook does not see it).
func errorNoStats(w *resp.Writer, msg string) {
	hook := w.OnError
	w.OnError = nil
	w.Error(msg)
	w.OnError = hook
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
