package repl

import (
	"bytes"
	"strconv"
	"strings"
)

// What a command that ran replicates as: most write commands go to the
// replicas and the AOF as they came (Verbatim), the others rewritten as
// Redis rewrites them, so that a replica, or a reload, does exactly what
// the master did (Rewrite). The server decides whether a command changed
// anything and feeds the result to the effects stream.

// eq reports whether b is s, ignoring case.
func eq(b []byte, s string) bool { return len(b) == len(s) && strings.EqualFold(string(b), s) }

// Verbatim reports whether the command name, run with nargs arguments
// (its name included), replicates as it came (Rewrite's default case:
// no rewrite, no allocation).
func Verbatim(name string, nargs int) bool {
	switch name {
	case "set":
		return nargs == 3
	case "expire", "pexpire", "expireat", "pexpireat", "setex", "psetex", "getex", "restore", "restore-asking", "migrate", "getset",
		"incrbyfloat", "hincrbyfloat", "spop", "blpop", "brpop", "blmpop", "bzpopmin",
		"bzpopmax", "bzmpop", "blmove", "brpoplpush", "eval", "evalsha", "fcall":
		return false
	}
	return true
}

// Dataset is what Rewrite reads of the dataset after the command ran.
type Dataset interface {
	// Expire returns key's expiry (unix ms, 0: none); false when the key
	// is gone.
	Expire(key []byte) (int64, bool)
	// Gone returns the command's keys that are gone (MIGRATE's).
	Gone() [][]byte
	// Del is DEL, or UNLINK when the lazyfree directive named is on.
	Del(lazyDirective string) []byte
}

// Rewrite returns the commands that replicate the command name, which ran
// with args and replied reply (Redis's rewriteClientCommandVector and
// alsoPropagate cases): relative expiries as absolute ones, SPOP as SREM,
// INCRBYFLOAT as SET, blocking pops as their plain forms...; nil when
// nothing is replicated.
func Rewrite(name string, args [][]byte, reply []byte, d Dataset) [][][]byte {
	ms := func(n int64) []byte { return strconv.AppendInt(nil, n, 10) }
	expireOf := d.Expire
	switch name {
	case "expire", "pexpire", "expireat", "pexpireat":
		key := args[1]
		exp, ok := expireOf(key)
		if !ok {
			return [][][]byte{{d.Del("lazyfree-lazy-expire"), key}}
		}
		if exp == 0 {
			return [][][]byte{args}
		}
		out := [][]byte{[]byte("PEXPIREAT"), key, ms(exp)}
		return [][][]byte{append(out, args[3:]...)}
	case "setex", "psetex":
		key := args[1]
		if exp, ok := expireOf(key); ok && exp != 0 {
			return [][][]byte{{[]byte("SET"), key, args[3], []byte("PXAT"), ms(exp)}}
		}
		return [][][]byte{args}
	case "getset":
		return [][][]byte{{[]byte("SET"), args[1], args[2]}}
	case "set":
		// With an expiry (EX, PX, EXAT or PXAT): SET key value PXAT ms,
		// the other options dropped; with GET and no expiry: without GET
		// (Redis's setGenericCommand).
		expire, get := false, false
		for i := 3; i < len(args); i++ {
			switch {
			case eq(args[i], "ex") || eq(args[i], "px") || eq(args[i], "exat") || eq(args[i], "pxat"):
				expire = true
				i++
			case eq(args[i], "get"):
				get = true
			}
		}
		key := args[1]
		if expire {
			if exp, ok := expireOf(key); ok && exp != 0 {
				return [][][]byte{{[]byte("SET"), key, args[2], []byte("PXAT"), ms(exp)}}
			} else if !ok {
				return [][][]byte{{d.Del("lazyfree-lazy-expire"), key}}
			}
		}
		if get {
			out := [][]byte{args[0], key, args[2]}
			for _, a := range args[3:] {
				if !eq(a, "get") {
					out = append(out, a)
				}
			}
			return [][][]byte{out}
		}
		return [][][]byte{args}
	case "migrate":
		// The keys MIGRATE moved away are gone here: replicas and the AOF
		// get their DEL, never the MIGRATE itself (Redis's migrateCommand),
		// which a replica or a reload would run against the target again.
		gone := d.Gone()
		if len(gone) == 0 {
			return nil
		}
		return [][][]byte{append([][]byte{[]byte("DEL")}, gone...)}
	case "restore", "restore-asking":
		// A relative TTL as an absolute one: the same arguments with the
		// TTL replaced and ABSTTL added (Redis's restoreCommand).
		if len(args) < 4 || eq(args[2], "0") {
			return [][][]byte{args}
		}
		for _, a := range args[4:] {
			if eq(a, "absttl") {
				return [][][]byte{args}
			}
		}
		exp, ok := expireOf(args[1])
		if !ok || exp == 0 {
			return [][][]byte{args}
		}
		out := append([][]byte{}, args...)
		out[2] = ms(exp)
		return [][][]byte{append(out, []byte("ABSTTL"))}
	case "getex":
		key := args[1]
		exp, ok := expireOf(key)
		switch {
		case !ok:
			return [][][]byte{{d.Del("lazyfree-lazy-expire"), key}}
		case exp != 0:
			return [][][]byte{{[]byte("PEXPIREAT"), key, ms(exp)}}
		default:
			return [][][]byte{{[]byte("PERSIST"), key}}
		}
	case "incrbyfloat":
		if v, ok := replyBulk(reply); ok {
			return [][][]byte{{[]byte("SET"), args[1], v, []byte("KEEPTTL")}}
		}
	case "hincrbyfloat":
		if v, ok := replyBulk(reply); ok {
			return [][][]byte{{[]byte("HSET"), args[1], args[2], v}}
		}
	case "spop":
		key := args[1]
		var members [][]byte
		if len(args) == 2 {
			if v, ok := replyBulk(reply); ok {
				members = [][]byte{v}
			}
		} else if v, ok := parseReply(reply); ok {
			if arr, ok := v.([]any); ok {
				for _, x := range arr {
					if b, ok := x.([]byte); ok {
						members = append(members, b)
					}
				}
			}
		}
		if len(members) == 0 {
			return nil
		}
		if len(args) > 2 {
			if _, ok := expireOf(key); !ok {
				return [][][]byte{{d.Del("lazyfree-lazy-server-del"), key}}
			}
		}
		var ops [][][]byte
		for len(members) > 0 {
			n := min(len(members), 1024)
			op := [][]byte{[]byte("SREM"), key}
			ops = append(ops, append(op, members[:n]...))
			members = members[n:]
		}
		return ops
	case "blpop", "brpop", "blmpop", "bzpopmin", "bzpopmax", "bzmpop", "blmove", "brpoplpush":
		return BlockingAsPlain(name, args, reply)
	case "eval", "evalsha", "fcall":
		return nil
	}
	return [][][]byte{args}
}

// BlockingAsPlain is a blocking pop replicated as the plain command that
// did what it did, from its reply.
func BlockingAsPlain(name string, args [][]byte, reply []byte) [][][]byte {
	switch name {
	case "blmove":
		return [][][]byte{{[]byte("LMOVE"), args[1], args[2], args[3], args[4]}}
	case "brpoplpush":
		return [][][]byte{{[]byte("RPOPLPUSH"), args[1], args[2]}}
	}
	v, ok := parseReply(reply)
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 {
		return nil
	}
	key, ok := arr[0].([]byte)
	if !ok {
		return nil
	}
	count := func() []byte {
		if inner, ok := arr[1].([]any); ok {
			return strconv.AppendInt(nil, int64(len(inner)), 10)
		}
		return []byte("1")
	}
	dirArg := func(a, b string) string {
		for _, x := range args {
			if eq(x, b) {
				return b
			}
		}
		return a
	}
	switch name {
	case "blpop":
		return [][][]byte{{[]byte("LPOP"), key}}
	case "brpop":
		return [][][]byte{{[]byte("RPOP"), key}}
	case "bzpopmin":
		return [][][]byte{{[]byte("ZPOPMIN"), key}}
	case "bzpopmax":
		return [][][]byte{{[]byte("ZPOPMAX"), key}}
	case "blmpop":
		cmd := "LPOP"
		if dirArg("left", "right") == "right" {
			cmd = "RPOP"
		}
		return [][][]byte{{[]byte(cmd), key, count()}}
	case "bzmpop":
		cmd := "ZPOPMIN"
		if dirArg("min", "max") == "max" {
			cmd = "ZPOPMAX"
		}
		return [][][]byte{{[]byte(cmd), key, count()}}
	}
	return nil
}

// replyBulk returns the value of a bulk string reply.
func replyBulk(b []byte) ([]byte, bool) {
	v, ok := parseReply(b)
	if !ok {
		return nil, false
	}
	bs, ok := v.([]byte)
	return bs, ok
}

// parseReply decodes one RESP2/RESP3 reply: []byte for strings, []any for
// aggregates, int64, nil.
func parseReply(b []byte) (any, bool) {
	v, _, ok := parseReplyAt(b)
	return v, ok
}

func parseReplyAt(b []byte) (any, []byte, bool) {
	nl := bytes.Index(b, []byte("\r\n"))
	if len(b) == 0 || nl < 0 {
		return nil, nil, false
	}
	line, rest := b[1:nl], b[nl+2:]
	switch b[0] {
	case '+', '-', ',', '(', '#':
		return line, rest, true
	case ':':
		n, _ := strconv.ParseInt(string(line), 10, 64)
		return n, rest, true
	case '_':
		return nil, rest, true
	case '$', '=':
		n, err := strconv.Atoi(string(line))
		if err != nil {
			return nil, nil, false
		}
		if n < 0 {
			return nil, rest, true
		}
		if len(rest) < n+2 {
			return nil, nil, false
		}
		return rest[:n], rest[n+2:], true
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line))
		if err != nil {
			return nil, nil, false
		}
		if n < 0 {
			return nil, rest, true
		}
		if b[0] == '%' || b[0] == '|' {
			n *= 2
		}
		arr := make([]any, 0, n)
		for i := 0; i < n; i++ {
			var v any
			var ok bool
			v, rest, ok = parseReplyAt(rest)
			if !ok {
				return nil, nil, false
			}
			arr = append(arr, v)
		}
		return arr, rest, true
	}
	return nil, nil, false
}
