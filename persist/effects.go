package persist

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/store"
)

// The effects stream's rules: a write that changed the dataset reaches
// the AOF and the replicas as the commands that redo what it did, which
// are not always the command as it came (Redis's propagate() with
// rewriteClientCommandVector and alsoPropagate). Relative expiries become
// absolute ones (PEXPIREAT, SET ... PXAT, RESTORE ... ABSTTL) and a key
// they already expired becomes DEL (or UNLINK); SPOP becomes SREM of the
// members it popped; INCRBYFLOAT and HINCRBYFLOAT become SET and HSET of
// their result; GETDEL becomes DEL (or UNLINK); blocking pops become their
// plain forms, as LMPOP and ZMPOP are (LPOP/RPOP, ZPOPMIN/ZPOPMAX with the
// count popped); MIGRATE becomes the DEL of the keys it moved. The server decides what changed, and
// feeds the result to the AOF (Engine.Feed) and its replicas.

// Rewrite returns the commands that redo what the write name (with args)
// did (Redis's rewriteClientCommandVector and alsoPropagate cases), for
// a write Verbatim says is not emitted as it came. db is the command's
// database after it ran, keys the positions of its keys, reply what it
// replied; config reads a directive (lazyfree-lazy-expire and
// lazyfree-lazy-server-del pick UNLINK over DEL). Nil: nothing to emit.
func Rewrite(db *store.DB, name string, args [][]byte, keys []cmdspec.Key, reply []byte, config func(name string) string) [][][]byte {
	ms := func(n int64) []byte { return strconv.AppendInt(nil, n, 10) }
	delOrUnlink := func(directive string) []byte {
		if config(directive) == "yes" {
			return []byte("UNLINK")
		}
		return []byte("DEL")
	}
	// The key as the command left it, even when its expiry has passed
	// since (a SET ... PX 1 whose millisecond ran out before this): the
	// write is emitted as it happened, as Redis emits it inside the
	// command, and the expiry's DEL follows it.
	expireOf := func(key []byte) (int64, bool) {
		e := db.PeekRaw(key)
		if e == nil {
			return 0, false
		}
		return db.ExpireOf(key, e), true
	}
	switch name {
	case "expire", "pexpire", "expireat", "pexpireat":
		key := args[1]
		exp, ok := expireOf(key)
		if !ok {
			return [][][]byte{{delOrUnlink("lazyfree-lazy-expire"), key}}
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
	case "getdel":
		return [][][]byte{{delOrUnlink("lazyfree-lazy-user-del"), args[1]}}
	case "set":
		// With an expiry (EX, PX, EXAT or PXAT): SET key value PXAT ms,
		// the other options dropped; with GET and no expiry: without GET
		// (Redis's setGenericCommand).
		expire, get := false, false
		for i := 3; i < len(args); i++ {
			switch {
			case eqArg(args[i], "ex") || eqArg(args[i], "px") || eqArg(args[i], "exat") || eqArg(args[i], "pxat"):
				expire = true
				i++
			case eqArg(args[i], "get"):
				get = true
			}
		}
		key := args[1]
		if expire {
			if exp, ok := expireOf(key); ok && exp != 0 {
				return [][][]byte{{[]byte("SET"), key, args[2], []byte("PXAT"), ms(exp)}}
			} else if !ok {
				return [][][]byte{{delOrUnlink("lazyfree-lazy-expire"), key}}
			}
		}
		if get {
			out := [][]byte{args[0], key, args[2]}
			for _, a := range args[3:] {
				if !eqArg(a, "get") {
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
		out := [][]byte{[]byte("DEL")}
		for _, k := range keys {
			if db.Peek(args[k.Pos]) == nil {
				out = append(out, args[k.Pos])
			}
		}
		if len(out) == 1 {
			return nil
		}
		return [][][]byte{out}
	case "restore", "restore-asking":
		// A relative TTL as an absolute one: the same arguments with the
		// TTL replaced and ABSTTL added (Redis's restoreCommand).
		if len(args) < 4 || eqArg(args[2], "0") {
			return [][][]byte{args}
		}
		for _, a := range args[4:] {
			if eqArg(a, "absttl") {
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
			return [][][]byte{{delOrUnlink("lazyfree-lazy-expire"), key}}
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
		if len(args) > 2 && db.Peek(key) == nil {
			return [][][]byte{{delOrUnlink("lazyfree-lazy-server-del"), key}}
		}
		var ops [][][]byte
		for len(members) > 0 {
			n := min(len(members), 1024)
			op := [][]byte{[]byte("SREM"), key}
			ops = append(ops, append(op, members[:n]...))
			members = members[n:]
		}
		return ops
	case "blpop", "brpop", "blmpop", "bzpopmin", "bzpopmax", "bzmpop", "blmove", "brpoplpush", "lmpop", "zmpop":
		return BlockingAsPlain(name, args, reply)
	case "xadd", "xtrim":
		return xaddTrimEffects(db, name == "xadd", args, reply)
	case "eval", "evalsha", "fcall":
		return nil
	}
	return [][][]byte{args}
}

// XReadGroupEffects is what XREADGROUP did, as Redis propagates it
// (streamPropagateXCLAIM, streamPropagateGroupID,
// streamPropagateConsumerCreation): each entry newly delivered to the
// consumer as XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n FORCE
// JUSTID LASTID id, from the group's pending entry; with NOACK, XGROUP
// CREATECONSUMER when the read created the consumer (created reports it
// per key; nil: never), then the group's new last ID as XGROUP SETID ...
// ENTRIESREAD. Reads of a consumer's history, and reads that delivered
// nothing, emit nothing: XREADGROUP itself never reaches the AOF or the
// replicas.
func XReadGroupEffects(db *store.DB, args [][]byte, reply []byte, created func(key []byte) bool) [][][]byte {
	group, consumer, noack, streams := XReadGroupArgs(args)
	if group == nil || streams < 0 {
		return nil
	}
	n := (len(args) - streams) / 2
	v, ok := parseReply(reply)
	arr, isArr := v.([]any)
	if !ok || !isArr {
		return nil
	}
	// The reply: [[key, entries]...], or a map key -> entries in RESP3.
	var keys [][]byte
	var entries [][]any
	if len(reply) > 0 && reply[0] == '%' {
		for i := 0; i+1 < len(arr); i += 2 {
			k, _ := arr[i].([]byte)
			e, _ := arr[i+1].([]any)
			keys, entries = append(keys, k), append(entries, e)
		}
	} else {
		for _, x := range arr {
			if p, _ := x.([]any); len(p) == 2 {
				k, _ := p[0].([]byte)
				e, _ := p[1].([]any)
				keys, entries = append(keys, k), append(entries, e)
			}
		}
	}
	ms := func(n int64) []byte { return strconv.AppendInt(nil, n, 10) }
	var ops [][][]byte
	for i, key := range keys {
		var idArg []byte
		for j := 0; j < n; j++ {
			if bytes.Equal(args[streams+j], key) {
				idArg = args[streams+n+j]
				break
			}
		}
		if len(idArg) != 1 || idArg[0] != '>' || len(entries[i]) == 0 {
			continue
		}
		e := db.PeekRaw(key)
		if e == nil || e.Kind() != store.KindStream {
			continue
		}
		g := e.AsStream().Group(group)
		if g == nil {
			continue
		}
		if noack {
			if created != nil && created(key) {
				ops = append(ops, [][]byte{[]byte("XGROUP"), []byte("CREATECONSUMER"), key, group, consumer})
			}
			ops = append(ops, [][]byte{[]byte("XGROUP"), []byte("SETID"), key, group, g.LastID.AppendTo(nil), []byte("ENTRIESREAD"), ms(g.EntriesRead)})
			continue
		}
		for _, x := range entries[i] {
			p, _ := x.([]any)
			if len(p) == 0 {
				continue
			}
			idb, _ := p[0].([]byte)
			id, ok := store.ParseStreamID(idb, 0, true, nil)
			if !ok {
				continue
			}
			nk := g.Pending(id)
			if nk == nil || nk.Consumer == nil {
				continue
			}
			ops = append(ops, [][]byte{[]byte("XCLAIM"), key, group, []byte(nk.Consumer.Name), []byte("0"), idb,
				[]byte("TIME"), ms(nk.DeliveryTime), []byte("RETRYCOUNT"), strconv.AppendUint(nil, nk.DeliveryCount, 10),
				[]byte("FORCE"), []byte("JUSTID"), []byte("LASTID"), idb})
		}
	}
	return ops
}

// BlockingAsPlain is a blocking pop (name, with args) emitted as the plain
// command that did what it did, from its reply: LPOP, ZPOPMAX, LMOVE...
// Nil: the reply shows nothing popped.
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
	// dirArg is the direction word (LEFT/RIGHT, MIN/MAX) after the keys:
	// a if it is not b.
	dirArg := func(a, b string) string {
		i := 1 // [B]LMPOP / [B]ZMPOP [timeout] numkeys key... where
		if name == "blmpop" || name == "bzmpop" {
			i = 2
		}
		if i < len(args) {
			if n, err := strconv.Atoi(string(args[i])); err == nil && n >= 0 && i+1+n < len(args) && eqArg(args[i+1+n], b) {
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
	case "blmpop", "lmpop":
		cmd := "LPOP"
		if dirArg("left", "right") == "right" {
			cmd = "RPOP"
		}
		return [][][]byte{{[]byte(cmd), key, count()}}
	case "bzmpop", "zmpop":
		cmd := "ZPOPMIN"
		if dirArg("min", "max") == "max" {
			cmd = "ZPOPMAX"
		}
		return [][][]byte{{[]byte(cmd), key, count()}}
	}
	return nil
}

// Verbatim reports whether the write name (with args) is emitted as it
// came, with no rewriting (Rewrite's default case): most writes are, and
// cost no allocation. XREADGROUP never is: XReadGroupEffects, which needs
// to know the consumers it created, says what it did.
func Verbatim(name string, args [][]byte) bool {
	switch name {
	case "set":
		return len(args) == 3
	case "expire", "pexpire", "expireat", "pexpireat", "setex", "psetex", "getex", "restore", "restore-asking", "migrate", "getset", "getdel",
		"incrbyfloat", "hincrbyfloat", "spop", "blpop", "brpop", "blmpop", "lmpop", "zmpop", "bzpopmin",
		"bzpopmax", "bzmpop", "blmove", "brpoplpush", "eval", "evalsha", "fcall", "xreadgroup":
		return false
	case "xadd", "xtrim":
		approx, genID, _, _, _, _ := parseXAddTrim(name == "xadd", args)
		return !approx && !genID
	}
	return true
}

// xaddTrimEffects is XADD or XTRIM as Redis propagates them: an
// approximate trim ("~", with or without LIMIT) made exact, "=" and the
// threshold the stream ended at (its length for MAXLEN, its first ID for
// MINID), so that replicas and the AOF trim what the command did; and
// XADD's generated ID ("*", "ms-*") as the one it got (its reply).
func xaddTrimEffects(db *store.DB, xadd bool, args [][]byte, reply []byte) [][][]byte {
	approx, genID, op, th, idPos, minid := parseXAddTrim(xadd, args)
	if !approx && !genID {
		return [][][]byte{args}
	}
	out := append([][]byte(nil), args...)
	if approx {
		if e := db.PeekRaw(args[1]); e != nil && e.Kind() == store.KindStream {
			st := e.AsStream()
			out[op] = []byte("=")
			if minid {
				out[th] = st.FirstEntryID().AppendTo(nil)
			} else {
				out[th] = strconv.AppendUint(nil, st.Len(), 10)
			}
		}
	}
	if genID {
		if id, ok := replyBulk(reply); ok {
			out[idPos] = id
		}
	}
	return [][][]byte{out}
}

// parseXAddTrim finds in XADD's or XTRIM's arguments the trim's operator
// (op, -1: none) and threshold (th), XADD's ID (idPos), whether the trim
// is MINID, and whether the trim is approximate ("~") or the ID generated
// ("*", "ms-*"): what propagation rewrites.
func parseXAddTrim(xadd bool, args [][]byte) (approx, genID bool, op, th, idPos int, minid bool) {
	op, th, idPos = -1, -1, -1
	for i := 2; i < len(args); i++ {
		switch {
		case xadd && eqArg(args[i], "nomkstream"):
		case eqArg(args[i], "maxlen") || eqArg(args[i], "minid"):
			minid = eqArg(args[i], "minid")
			if i+1 < len(args) && (string(args[i+1]) == "~" || string(args[i+1]) == "=") {
				i++
				op = i
			}
			th = i + 1
			i++
		case eqArg(args[i], "limit"):
			i++
		default:
			if xadd {
				idPos = i
			}
			i = len(args)
		}
	}
	approx = op >= 0 && string(args[op]) == "~" && th < len(args)
	genID = idPos >= 0 && (string(args[idPos]) == "*" || bytes.HasSuffix(args[idPos], []byte("-*")))
	return approx, genID, op, th, idPos, minid
}

// XReadGroupArgs reads XREADGROUP's arguments: the group and consumer,
// NOACK, and where the stream keys begin (-1: no STREAMS).
func XReadGroupArgs(args [][]byte) (group, consumer []byte, noack bool, streams int) {
	streams = -1
	for i := 1; i < len(args) && streams < 0; i++ {
		switch {
		case eqArg(args[i], "group") && i+2 < len(args):
			group, consumer = args[i+1], args[i+2]
			i += 2
		case eqArg(args[i], "count") || eqArg(args[i], "block"):
			i++
		case eqArg(args[i], "noack"):
			noack = true
		case eqArg(args[i], "streams"):
			streams = i + 1
		}
	}
	return group, consumer, noack, streams
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

// eqArg compares an argument with a lower-case word as the server's
// argument parsing does (strings.EqualFold, Unicode folding included).
func eqArg(b []byte, s string) bool { return len(b) == len(s) && strings.EqualFold(string(b), s) }
