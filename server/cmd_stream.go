package server

import (
	"encoding/binary"
	"github.com/sluicedb/sluice/config"
	"math"
	"strconv"

	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// Streams: XADD, XRANGE, XREAD, consumer groups... (Redis's t_stream.c).

func init() {
	prev := objectEncodingOf
	objectEncodingOf = func(e *store.Entry) string {
		if e.Kind() == store.KindStream {
			return "stream"
		}
		return prev(e)
	}
	objectDupers[store.KindStream] = func(e *store.Entry) *store.Entry { return store.NewStreamEntry(e.AsStream().Dup()) }
	objectSizers[store.KindStream] = func(e *store.Entry, samples int64) int64 { return e.AsStream().MemUsage() }
}

const (
	errStreamID      = "ERR Invalid stream ID specified as stream command argument"
	errXGroupNoKey   = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	xreadDefaultWait = 1000 // XREAD_BLOCKED_DEFAULT_COUNT
)

func (c *Client) streamIDArg(b []byte, missingSeq uint64, strict bool) (store.StreamID, bool) {
	id, ok := store.ParseStreamID(b, missingSeq, strict, nil)
	if !ok {
		c.w.Error(errStreamID)
	}
	return id, ok
}

// intervalID parses a range bound: "(" makes it exclusive.
func (c *Client) intervalID(b []byte, missingSeq uint64) (store.StreamID, bool, bool) {
	if len(b) > 1 && b[0] == '(' {
		id, ok := c.streamIDArg(b[1:], missingSeq, true)
		return id, true, ok
	}
	id, ok := c.streamIDArg(b, missingSeq, false)
	return id, false, ok
}

func writeStreamID(w *resp.Writer, id store.StreamID) {
	var tmp [44]byte
	w.Bulk(id.AppendTo(tmp[:0]))
}

// writeStreamEntry writes [id, [field, value, ...]].
func writeStreamEntry(w *resp.Writer, e store.StreamEntry) {
	w.Array(2)
	writeStreamID(w, e.ID())
	w.Array(e.NumFields() * 2)
	e.Fields(func(f, v []byte) {
		w.Bulk(f)
		w.Bulk(v)
	})
}

// lookupStream returns the stream at key (nil when missing), replying
// WRONGTYPE and returning ok=false for another type.
func (c *Client) lookupStream(key []byte) (*store.Stream, bool) {
	e, ok := lookupKind(&c.w, c.DB(), key, store.KindStream)
	if e == nil {
		return nil, ok
	}
	return e.AsStream(), true
}

// lookupGroup returns the stream at key and its consumer group named name
// (g nil when either is missing); ok is false after a WRONGTYPE reply.
func (c *Client) lookupGroup(key, name []byte) (s *store.Stream, g *store.StreamGroup, ok bool) {
	if s, ok = c.lookupStream(key); s != nil {
		g = s.Group(name)
	}
	return s, g, ok
}

// replyNoGroup is XPENDING's, XCLAIM's and XAUTOCLAIM's error for a
// missing key or group.
func (c *Client) replyNoGroup(key, name []byte) {
	c.w.Error("-NOGROUP No such key '" + string(key) + "' or consumer group '" + string(name) + "'")
}

func (c *Client) streamNodeLimits() (int64, int64) { return streamNodeLimits(c.srv.cfg) }

// streamNodeLimits returns stream-node-max-entries and -bytes.
func streamNodeLimits(cfg *Config) (int64, int64) {
	ent, err := strconv.ParseInt(cfg.Get("stream-node-max-entries"), 10, 64)
	if err != nil {
		ent = 100
	}
	by, err := strconv.ParseInt(cfg.Get("stream-node-max-bytes"), 10, 64)
	if err != nil {
		by = 4096
	}
	return ent, by
}

// trimArgs are the parsed options of XADD and XTRIM.
type trimArgs struct {
	store.TrimArgs
	strategy   int // 0 none, 1 maxlen, 2 minid
	id         store.StreamID
	idGiven    bool
	seqGiven   bool
	noMkstream bool
}

// parseAddTrim is streamParseAddOrTrimArgsOrReply: it returns the
// position of XADD's ID argument, or -1 after replying with an error.
func (c *Client) parseAddTrim(args [][]byte, xadd bool, a *trimArgs) int {
	i := 2
	limitGiven := false
loop:
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			break loop
		case eq(opt, "maxlen") && more > 0, eq(opt, "minid") && more > 0:
			if a.strategy != 0 {
				c.w.Error("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
				return -1
			}
			a.Approx = false
			next := args[i+1]
			if more >= 2 && len(next) == 1 && next[0] == '~' {
				a.Approx = true
				i++
			} else if more >= 2 && len(next) == 1 && next[0] == '=' {
				i++
			}
			if eq(opt, "maxlen") {
				v, ok := c.intArg(args[i+1])
				if !ok {
					return -1
				}
				if v < 0 {
					c.w.Error("ERR The MAXLEN argument must be >= 0.")
					return -1
				}
				a.MaxLen = v
				a.strategy = 1
			} else {
				id, ok := c.streamIDArg(args[i+1], 0, true)
				if !ok {
					return -1
				}
				a.MinID = id
				a.ByID = true
				a.strategy = 2
			}
			i++
		case eq(opt, "limit") && more > 0:
			v, ok := c.intArg(args[i+1])
			if !ok {
				return -1
			}
			if v < 0 {
				c.w.Error("ERR The LIMIT argument must be >= 0.")
				return -1
			}
			a.Limit = v
			limitGiven = true
			i++
		case xadd && eq(opt, "nomkstream"):
			a.noMkstream = true
		case xadd:
			id, ok := store.ParseStreamID(opt, 0, true, &a.seqGiven)
			if !ok {
				c.w.Error(errStreamID)
				return -1
			}
			a.id, a.idGiven = id, true
			break loop
		default:
			c.w.Error(errSyntax)
			return -1
		}
	}
	if a.Limit != 0 && a.strategy == 0 {
		c.w.Error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
		return -1
	}
	if !xadd && a.strategy == 0 {
		c.w.Error("ERR syntax error, XTRIM must be called with a trimming strategy")
		return -1
	}
	if c.replMaster {
		// The master's stream and the AOF carry trims made exact ("="
		// with the threshold reached), LIMIT kept: obeyed without one,
		// as Redis's mustObeyClient.
		a.Limit = 0
	} else if limitGiven {
		if !a.Approx {
			c.w.Error("ERR syntax error, LIMIT cannot be used without the special ~ option")
			return -1
		}
	} else if a.Approx {
		ent, _ := c.streamNodeLimits()
		a.Limit = 100 * ent
		if a.Limit <= 0 {
			a.Limit = 10000
		}
		if a.Limit > 1000000 {
			a.Limit = 1000000
		}
	} else {
		a.Limit = 0
	}
	return i
}

func xaddCommand(c *Client, args [][]byte) {
	var a trimArgs
	idpos := c.parseAddTrim(args, true, &a)
	if idpos < 0 {
		return
	}
	fieldPos := idpos + 1
	if n := len(args) - fieldPos; n < 2 || n%2 == 1 {
		c.w.Error(errArity("xadd"))
		return
	}
	if a.idGiven && a.seqGiven && a.id.IsZero() {
		c.w.Error("ERR The ID specified in XADD must be greater than 0-0")
		return
	}
	key := args[1]
	db := c.DB()
	s, ok := c.lookupStream(key)
	if !ok {
		return
	}
	if s == nil {
		if a.noMkstream {
			c.w.Null()
			return
		}
		s = store.NewStream()
		db.Add(key, store.NewStreamEntry(s))
		c.notify(config.NotifyNew, "new", key)
	}
	if s.LastID == store.MaxStreamID {
		c.w.Error("ERR The stream has exhausted the last possible ID, unable to add more items")
		return
	}
	var id store.StreamID
	switch {
	case !a.idGiven:
		now := uint64(c.srv.ks.Now())
		if now > s.LastID.Ms {
			id = store.StreamID{Ms: now}
		} else {
			id, _ = s.LastID.Incr()
		}
	case a.seqGiven:
		id = a.id
	default:
		if s.LastID.Ms == a.id.Ms {
			if s.LastID.Seq == math.MaxUint64 {
				c.w.Error("ERR The ID specified in XADD is equal or smaller than the target stream top item")
				return
			}
			id = store.StreamID{Ms: a.id.Ms, Seq: s.LastID.Seq + 1}
		} else {
			id = a.id
		}
	}
	if id.Cmp(s.LastID) <= 0 {
		c.w.Error("ERR The ID specified in XADD is equal or smaller than the target stream top item")
		return
	}
	tot := 0
	for _, b := range args[fieldPos:] {
		tot += len(b)
	}
	if tot > store.StreamListpackMaxSize {
		c.w.Error("ERR Elements are too large to be stored")
		return
	}
	ent, by := c.streamNodeLimits()
	s.Append(id, args[fieldPos:], ent, by)
	writeStreamID(&c.w, id)
	db.Modified(key)
	c.notify(config.NotifyStream, "xadd", key)
	if a.strategy != 0 {
		if s.Trim(a.TrimArgs) > 0 {
			c.notify(config.NotifyStream, "xtrim", key)
		}
	}
	c.signalReady(key)
}

func xrangeCommand(c *Client, args [][]byte)    { xrangeGeneric(c, args, false) }
func xrevrangeCommand(c *Client, args [][]byte) { xrangeGeneric(c, args, true) }

func xrangeGeneric(c *Client, args [][]byte, rev bool) {
	startArg, endArg := args[2], args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, ex, ok := c.intervalID(startArg, 0)
	if !ok {
		return
	}
	if ex {
		if start, ok = start.Incr(); !ok {
			c.w.Error("ERR invalid start ID for the interval")
			return
		}
	}
	end, ex, ok := c.intervalID(endArg, math.MaxUint64)
	if !ok {
		return
	}
	if ex {
		if end, ok = end.Decr(); !ok {
			c.w.Error("ERR invalid end ID for the interval")
			return
		}
	}
	count := int64(-1)
	for j := 4; j < len(args); j++ {
		if eq(args[j], "count") && j+1 < len(args) {
			v, ok := c.intArg(args[j+1])
			if !ok {
				return
			}
			count = max(v, 0)
			j++
		} else {
			c.w.Error(errSyntax)
			return
		}
	}
	s, ok := c.lookupStream(args[1])
	if !ok {
		return
	}
	if s == nil {
		c.w.Array(0)
		return
	}
	if count == 0 {
		c.w.NullArray()
		return
	}
	if count == -1 {
		count = 0
	}
	replyRange(&c.w, s, start, end, count, rev)
}

// replyRange writes the entries of [start, end] (at most count, 0: all).
func replyRange(w *resp.Writer, s *store.Stream, start, end store.StreamID, count int64, rev bool) {
	var ents []store.StreamEntry
	s.Range(start, end, rev, func(e store.StreamEntry) bool {
		ents = append(ents, e)
		return count == 0 || int64(len(ents)) < count
	})
	w.Array(len(ents))
	for _, e := range ents {
		writeStreamEntry(w, e)
	}
}

func xlenCommand(c *Client, args [][]byte) {
	s, ok := c.lookupStream(args[1])
	if !ok {
		return
	}
	if s == nil {
		c.w.Int(0)
		return
	}
	c.w.Int(int64(s.Len()))
}

// groupRead serves XREADGROUP for one stream: new entries after start
// (delivered to consumer, added to the PEL unless noack), at most count.
func groupRead(c *Client, w *resp.Writer, s *store.Stream, g *store.StreamGroup, cons *store.StreamConsumer, start store.StreamID, count int64, noack bool) {
	var ents []store.StreamEntry
	s.Range(start, store.MaxStreamID, false, func(e store.StreamEntry) bool {
		ents = append(ents, e)
		return count == 0 || int64(len(ents)) < count
	})
	now := c.srv.ks.Now()
	w.Array(len(ents))
	for _, e := range ents {
		id := e.ID()
		if g.LastID.Less(id) {
			s.Delivered(g, id)
		}
		writeStreamEntry(w, e)
		if !noack {
			if nk := g.Pending(id); nk != nil {
				g.Assign(nk, cons)
				nk.DeliveryTime = now
				nk.DeliveryCount = 1
			} else {
				g.AddPending(&store.StreamNACK{ID: id, DeliveryTime: now, DeliveryCount: 1, Consumer: cons})
			}
		}
	}
}

// historyRead serves XREADGROUP with an explicit ID: the consumer's own
// pending entries from start.
func historyRead(w *resp.Writer, s *store.Stream, cons *store.StreamConsumer, start store.StreamID, count, now int64) {
	pel := cons.PEL()
	i := cons.PELFrom(start)
	n := len(pel) - i
	if count > 0 && int64(n) > count {
		n = int(count)
	}
	w.Array(n)
	for _, nk := range pel[i : i+n] {
		if e, ok := s.Get(nk.ID); ok {
			writeStreamEntry(w, e)
			nk.DeliveryTime = now
			nk.DeliveryCount++
		} else {
			w.Array(2)
			writeStreamID(w, nk.ID)
			w.NullArray()
		}
	}
}

// consumerFor looks up (refreshing its seen time) or creates a consumer.
func (c *Client) consumerFor(g *store.StreamGroup, name, key []byte) *store.StreamConsumer {
	now := c.srv.ks.Now()
	if cons := g.Consumer(name); cons != nil {
		cons.SeenTime = now
		return cons
	}
	cons := g.CreateConsumer(name, now)
	c.notify(config.NotifyStream, "xgroup-createconsumer", key)
	return cons
}

func xreadCommand(c *Client, args [][]byte) {
	timeout := int64(-1)
	var count int64
	streamsArg, nstreams := 0, 0
	noack := false
	xreadgroup := len(args[0]) == 10
	var groupName, consumerName []byte
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		o := args[i]
		switch {
		case eq(o, "block") && more > 0:
			if c.fromScript {
				c.w.Error("ERR " + string(args[0]) + " command is not allowed with BLOCK option from scripts")
				return
			}
			i++
			ms, ok := c.parseTimeoutMs(args[i])
			if !ok {
				return
			}
			timeout = ms
		case eq(o, "count") && more > 0:
			i++
			v, ok := c.intArg(args[i])
			if !ok {
				return
			}
			count = max(v, 0)
		case eq(o, "streams") && more > 0:
			streamsArg = i + 1
			nstreams = len(args) - streamsArg
			if nstreams%2 != 0 {
				c.w.Error("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
				return
			}
			nstreams /= 2
			i = len(args)
		case eq(o, "group") && more >= 2:
			if !xreadgroup {
				c.w.Error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
				return
			}
			groupName, consumerName = args[i+1], args[i+2]
			i += 2
		case eq(o, "noack"):
			if !xreadgroup {
				c.w.Error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
				return
			}
			noack = true
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	if streamsArg == 0 {
		c.w.Error(errSyntax)
		return
	}
	if xreadgroup && groupName == nil {
		c.w.Error("ERR Missing GROUP option for XREADGROUP")
		return
	}
	db := c.DB()
	ids := make([]store.StreamID, nstreams)
	groups := make([]*store.StreamGroup, nstreams)
	for i := streamsArg + nstreams; i < len(args); i++ {
		idx := i - streamsArg - nstreams
		key := args[i-nstreams]
		s, ok := c.lookupStream(key)
		if !ok {
			return
		}
		if groupName != nil {
			var g *store.StreamGroup
			if s != nil {
				g = s.Group(groupName)
			}
			if g == nil {
				c.w.Error("-NOGROUP No such key '" + string(key) + "' or consumer group '" + string(groupName) + "' in XREADGROUP with GROUP option")
				return
			}
			groups[idx] = g
		}
		a := args[i]
		if len(a) == 1 && a[0] == '$' {
			if xreadgroup {
				c.w.Error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
				return
			}
			if s != nil {
				ids[idx] = s.LastID
			}
			continue
		}
		if len(a) == 1 && a[0] == '>' {
			if !xreadgroup {
				c.w.Error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
				return
			}
			ids[idx] = store.MaxStreamID
			continue
		}
		id, ok := c.streamIDArg(a, 0, true)
		if !ok {
			return
		}
		ids[idx] = id
	}

	// Serve synchronously what can be served; the reply's length is only
	// known at the end, so the per-stream replies go to a scratch writer.
	sub := resp.Writer{Proto: c.w.Proto}
	served := 0
	for i := 0; i < nstreams; i++ {
		key := args[streamsArg+i]
		s, _ := c.lookupStream(key)
		if s == nil {
			continue
		}
		gt := ids[i]
		sync, history := false, false
		if groups[i] != nil {
			if gt != store.MaxStreamID {
				sync, history = true, true
			} else if s.Len() > 0 {
				if groups[i].LastID.Less(s.LastValidID()) {
					sync = true
					gt = groups[i].LastID
				}
			}
		} else if s.Len() > 0 && gt.Less(s.LastValidID()) {
			sync = true
		}
		if !sync {
			continue
		}
		served++
		start, _ := gt.Incr()
		if sub.Proto != 3 {
			sub.Array(2)
		}
		sub.Bulk(key)
		if groups[i] != nil {
			cons := c.consumerFor(groups[i], consumerName, key)
			if history {
				historyRead(&sub, s, cons, start, count, c.srv.ks.Now())
			} else {
				groupRead(c, &sub, s, groups[i], cons, start, count, noack)
			}
			db.Modified(key)
		} else {
			replyRange(&sub, s, start, store.MaxStreamID, count, false)
		}
	}
	if served > 0 {
		if c.w.Proto == 3 {
			c.w.Map(served)
		} else {
			c.w.Array(served)
		}
		c.w.Raw(sub.Buf)
		return
	}
	if timeout == -1 || !c.canBlock() {
		c.w.NullArray()
		return
	}
	deadline := int64(0)
	if timeout > 0 {
		deadline = wallMs() + timeout
	}
	keys := copyArgs(args[streamsArg : streamsArg+nstreams])
	gts := make(map[string]store.StreamID, nstreams)
	for i, k := range keys {
		if _, dup := gts[string(k)]; !dup {
			gts[string(k)] = ids[i]
		}
	}
	if count == 0 {
		count = xreadDefaultWait
	}
	var gname, cname []byte
	if groupName != nil {
		gname = append([]byte(nil), groupName...)
		cname = append([]byte(nil), consumerName...)
	}
	c.blockOn(keys, blockStream, deadline, func(w *resp.Writer, db *store.DB, key []byte) serveResult {
		e := db.Lookup(key)
		if e == nil || e.Kind() != store.KindStream {
			if gname != nil {
				w.Error("-UNBLOCKED the stream key no longer exists")
				return serveDone
			}
			return serveSkip
		}
		s := e.AsStream()
		gt := gts[string(key)]
		var g *store.StreamGroup
		if gname != nil {
			if g = s.Group(gname); g == nil {
				w.Error("-NOGROUP the consumer group this client was blocked on no longer exists")
				return serveDone
			}
			gt = g.LastID
		}
		if !gt.Less(s.LastID) {
			return serveSkip
		}
		start, _ := gt.Incr()
		if w.Proto == 3 {
			w.Map(1)
		} else {
			w.Array(1)
			w.Array(2)
		}
		w.Bulk(key)
		if g != nil {
			cons := c.consumerForDB(g, cname, key, db)
			groupRead(c, w, s, g, cons, start, count, noack)
			db.Modified(key)
		} else {
			replyRange(w, s, start, store.MaxStreamID, count, false)
		}
		return serveDone
	})
}

// consumerForDB is consumerFor for a blocked client served later (its
// notifications go to the database it blocked in).
func (c *Client) consumerForDB(g *store.StreamGroup, name, key []byte, db *store.DB) *store.StreamConsumer {
	now := c.srv.ks.Now()
	if cons := g.Consumer(name); cons != nil {
		cons.SeenTime = now
		return cons
	}
	cons := g.CreateConsumer(name, now)
	if flags := c.srv.cfg.NotifyFlags.Load(); flags&config.NotifyStream != 0 {
		c.srv.notifyDB(c, db.ID, config.NotifyStream, flags, "xgroup-createconsumer", key)
	}
	return cons
}

// streamIDArgs parses a list of entry IDs (XDEL, XACK); on a bad one the
// error is sent.
func (c *Client) streamIDArgs(args [][]byte) ([]store.StreamID, bool) {
	ids := make([]store.StreamID, 0, len(args))
	for _, a := range args {
		id, ok := c.streamIDArg(a, 0, true)
		if !ok {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

func xdelCommand(c *Client, args [][]byte) {
	s, ok := c.lookupStream(args[1])
	if !ok {
		return
	}
	if s == nil {
		c.w.Int(0)
		return
	}
	ids, ok := c.streamIDArgs(args[2:])
	if !ok {
		return
	}
	deleted := 0
	first := false
	for _, id := range ids {
		if s.Delete(id) {
			if id == s.FirstID {
				first = true
			}
			if s.MaxDeletedID.Less(id) {
				s.MaxDeletedID = id
			}
			deleted++
		}
	}
	if deleted > 0 {
		if s.Len() == 0 {
			s.FirstID = store.StreamID{}
		} else if first {
			s.UpdateFirstID()
		}
		c.DB().Modified(args[1])
		c.notify(config.NotifyStream, "xdel", args[1])
	}
	c.w.Int(int64(deleted))
}

func xtrimCommand(c *Client, args [][]byte) {
	var a trimArgs
	if c.parseAddTrim(args, false, &a) < 0 {
		return
	}
	s, ok := c.lookupStream(args[1])
	if !ok {
		return
	}
	if s == nil {
		c.w.Int(0)
		return
	}
	deleted := s.Trim(a.TrimArgs)
	if deleted > 0 {
		c.notify(config.NotifyStream, "xtrim", args[1])
		c.DB().Modified(args[1])
	}
	c.w.Int(deleted)
}

func xsetidCommand(c *Client, args [][]byte) {
	id, ok := c.streamIDArg(args[2], 0, true)
	if !ok {
		return
	}
	entriesAdded := int64(-1)
	var maxDel store.StreamID
	for i := 3; i < len(args); {
		more := len(args) - 1 - i
		switch {
		case eq(args[i], "entriesadded") && more > 0:
			v, ok := c.intArg(args[i+1])
			if !ok {
				return
			}
			if v < 0 {
				c.w.Error("ERR entries_added must be positive")
				return
			}
			entriesAdded = v
			i += 2
		case eq(args[i], "maxdeletedid") && more > 0:
			v, ok := c.streamIDArg(args[i+1], 0, true)
			if !ok {
				return
			}
			if id.Less(v) {
				c.w.Error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
			maxDel = v
			i += 2
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	s, ok := c.lookupStream(args[1])
	if !ok {
		return
	}
	if s == nil {
		c.w.Error("ERR no such key")
		return
	}
	if s.Len() > 0 {
		if id.Less(s.LastValidID()) {
			c.w.Error("ERR The ID specified in XSETID is smaller than the target stream top item")
			return
		}
		if entriesAdded != -1 && s.Len() > uint64(entriesAdded) {
			c.w.Error("ERR The entries_added specified in XSETID is smaller than the target stream length")
			return
		}
	}
	s.LastID = id
	if entriesAdded != -1 {
		s.EntriesAdded = uint64(entriesAdded)
	}
	if !maxDel.IsZero() {
		s.MaxDeletedID = maxDel
	}
	c.w.OK()
	c.DB().Modified(args[1])
	c.notify(config.NotifyStream, "xsetid", args[1])
}

var xgroupHelp = []string{
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
}

func xgroupCommand(c *Client, args [][]byte) {
	opt := args[1]
	mkstream := false
	entriesRead := int64(-1)
	var s *store.Stream
	var g *store.StreamGroup
	var grp []byte
	db := c.DB()
	if len(args) >= 4 {
		create, setid := eq(opt, "create"), eq(opt, "setid")
		for i := 5; i < len(args); {
			switch {
			case create && eq(args[i], "mkstream"):
				mkstream = true
				i++
			case (create || setid) && eq(args[i], "entriesread") && i+1 < len(args):
				v, ok := c.intArg(args[i+1])
				if !ok {
					return
				}
				if v < 0 && v != -1 {
					c.w.Error("ERR value for ENTRIESREAD must be positive or -1")
					return
				}
				entriesRead = v
				i += 2
			default:
				c.subcommandSyntaxError(args)
				return
			}
		}
		var ok bool
		if s, ok = c.lookupStream(args[2]); !ok {
			return
		}
		grp = args[3]
	}
	if len(args) >= 4 && !mkstream {
		if s == nil {
			c.w.Error(errXGroupNoKey)
			return
		}
		if g = s.Group(grp); g == nil && (eq(opt, "setid") || eq(opt, "createconsumer") || eq(opt, "delconsumer")) {
			c.w.Error("-NOGROUP No such consumer group '" + string(grp) + "' for key name '" + string(args[2]) + "'")
			return
		}
	}
	key := args[min(2, len(args)-1)]
	switch {
	case len(args) == 2 && eq(opt, "help"):
		c.replyHelp(args[0], xgroupHelp)
	case eq(opt, "create") && len(args) >= 5 && len(args) <= 8:
		var id store.StreamID
		if len(args[4]) == 1 && args[4][0] == '$' {
			if s != nil {
				id = s.LastID
			}
		} else {
			var ok bool
			if id, ok = c.streamIDArg(args[4], 0, true); !ok {
				return
			}
		}
		if s == nil {
			s = store.NewStream()
			db.Add(key, store.NewStreamEntry(s))
			c.notify(config.NotifyNew, "new", key)
		}
		if s.CreateGroup(grp, id, entriesRead) == nil {
			c.w.Error("-BUSYGROUP Consumer Group name already exists")
			return
		}
		c.w.OK()
		db.Modified(key)
		c.notify(config.NotifyStream, "xgroup-create", key)
	case eq(opt, "setid") && (len(args) == 5 || len(args) == 7):
		var id store.StreamID
		if len(args[4]) == 1 && args[4][0] == '$' {
			id = s.LastID
		} else {
			var ok bool
			if id, ok = c.streamIDArg(args[4], 0, false); !ok {
				return
			}
		}
		g.LastID = id
		g.EntriesRead = entriesRead
		c.w.OK()
		db.Modified(key)
		c.notify(config.NotifyStream, "xgroup-setid", key)
	case eq(opt, "destroy") && len(args) == 4:
		if g == nil {
			c.w.Int(0)
			return
		}
		s.DestroyGroup(grp)
		c.w.Int(1)
		db.Modified(key)
		c.notify(config.NotifyStream, "xgroup-destroy", key)
		c.signalReady(key)
	case eq(opt, "createconsumer") && len(args) == 5:
		if g.CreateConsumer(args[4], c.srv.ks.Now()) == nil {
			c.w.Int(0)
			return
		}
		c.w.Int(1)
		db.Modified(key)
		c.notify(config.NotifyStream, "xgroup-createconsumer", key)
	case eq(opt, "delconsumer") && len(args) == 5:
		pending := 0
		if cons := g.Consumer(args[4]); cons != nil {
			pending = g.DeleteConsumer(cons)
			db.Modified(key)
			c.notify(config.NotifyStream, "xgroup-delconsumer", key)
		}
		c.w.Int(int64(pending))
	default:
		c.subcommandSyntaxError(args)
	}
}

func xackCommand(c *Client, args [][]byte) {
	_, g, ok := c.lookupGroup(args[1], args[2])
	if !ok {
		return
	}
	if g == nil {
		c.w.Int(0)
		return
	}
	ids, ok := c.streamIDArgs(args[3:])
	if !ok {
		return
	}
	acked := 0
	for _, id := range ids {
		if g.Ack(id) {
			acked++
		}
	}
	if acked > 0 {
		c.DB().Modified(args[1])
	}
	c.w.Int(int64(acked))
}

func xpendingCommand(c *Client, args [][]byte) {
	justInfo := len(args) == 3
	var start, end store.StreamID
	var count, minIdle int64
	var consumerName []byte
	if len(args) != 3 && (len(args) < 6 || len(args) > 9) {
		c.w.Error(errSyntax)
		return
	}
	if len(args) >= 6 {
		startIdx := 3
		if eq(args[3], "idle") {
			v, ok := c.intArg(args[4])
			if !ok {
				return
			}
			minIdle = v
			if len(args) < 8 {
				c.w.Error(errSyntax)
				return
			}
			startIdx += 2
		}
		v, ok := c.intArg(args[startIdx+2])
		if !ok {
			return
		}
		count = max(v, 0)
		var ex bool
		if start, ex, ok = c.intervalID(args[startIdx], 0); !ok {
			return
		}
		if ex {
			if start, ok = start.Incr(); !ok {
				c.w.Error("ERR invalid start ID for the interval")
				return
			}
		}
		if end, ex, ok = c.intervalID(args[startIdx+1], math.MaxUint64); !ok {
			return
		}
		if ex {
			if end, ok = end.Decr(); !ok {
				c.w.Error("ERR invalid end ID for the interval")
				return
			}
		}
		if startIdx+3 < len(args) {
			consumerName = args[startIdx+3]
		}
	}
	_, g, ok := c.lookupGroup(args[1], args[2])
	if !ok {
		return
	}
	if g == nil {
		c.replyNoGroup(args[1], args[2])
		return
	}
	if justInfo {
		pel := g.PEL()
		c.w.Array(4)
		c.w.Int(int64(len(pel)))
		if len(pel) == 0 {
			c.w.Null()
			c.w.Null()
			c.w.NullArray()
			return
		}
		writeStreamID(&c.w, pel[0].ID)
		writeStreamID(&c.w, pel[len(pel)-1].ID)
		n := 0
		for _, cons := range g.Consumers() {
			if len(cons.PEL()) > 0 {
				n++
			}
		}
		c.w.Array(n)
		for _, cons := range g.Consumers() {
			if len(cons.PEL()) == 0 {
				continue
			}
			c.w.Array(2)
			c.w.BulkString(cons.Name)
			c.w.BulkInt(int64(len(cons.PEL())))
		}
		return
	}
	var pel []*store.StreamNACK
	var from int
	if consumerName != nil {
		cons := g.Consumer(consumerName)
		if cons == nil {
			c.w.Array(0)
			return
		}
		pel, from = cons.PEL(), cons.PELFrom(start)
	} else {
		pel, from = g.PEL(), g.PELFrom(start)
	}
	now := c.srv.ks.Now()
	var out []*store.StreamNACK
	for i := from; count > 0 && i < len(pel) && !end.Less(pel[i].ID); i++ {
		nk := pel[i]
		if minIdle != 0 && now-nk.DeliveryTime < minIdle {
			continue
		}
		out = append(out, nk)
		count--
	}
	c.w.Array(len(out))
	for _, nk := range out {
		c.w.Array(4)
		writeStreamID(&c.w, nk.ID)
		c.w.BulkString(nk.Consumer.Name)
		c.w.Int(max(now-nk.DeliveryTime, 0))
		c.w.Int(int64(nk.DeliveryCount))
	}
}

func (c *Client) intArgMsg(b []byte, msg string) (int64, bool) {
	v, ok := resp.ParseInt(b)
	if !ok {
		c.w.Error("ERR " + msg)
	}
	return v, ok
}

func xclaimCommand(c *Client, args [][]byte) {
	s, g, ok := c.lookupGroup(args[1], args[2])
	if !ok {
		return
	}
	if g == nil {
		c.replyNoGroup(args[1], args[2])
		return
	}
	minIdle, ok := c.intArgMsg(args[4], "Invalid min-idle-time argument for XCLAIM")
	if !ok {
		return
	}
	minIdle = max(minIdle, 0)
	var ids []store.StreamID
	j := 5
	for ; j < len(args); j++ {
		id, ok := store.ParseStreamID(args[j], 0, true, nil)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	now := c.srv.ks.Now()
	retry := int64(-1)
	deliveryTime := int64(-1)
	force, justID := false, false
	var lastID store.StreamID
	for ; j < len(args); j++ {
		more := len(args) - 1 - j
		opt := args[j]
		switch {
		case eq(opt, "force"):
			force = true
		case eq(opt, "justid"):
			justID = true
		case eq(opt, "idle") && more > 0:
			j++
			v, ok := c.intArgMsg(args[j], "Invalid IDLE option argument for XCLAIM")
			if !ok {
				return
			}
			deliveryTime = now - v
		case eq(opt, "time") && more > 0:
			j++
			v, ok := c.intArgMsg(args[j], "Invalid TIME option argument for XCLAIM")
			if !ok {
				return
			}
			deliveryTime = v
		case eq(opt, "retrycount") && more > 0:
			j++
			v, ok := c.intArgMsg(args[j], "Invalid RETRYCOUNT option argument for XCLAIM")
			if !ok {
				return
			}
			retry = v
		case eq(opt, "lastid") && more > 0:
			j++
			v, ok := c.streamIDArg(args[j], 0, true)
			if !ok {
				return
			}
			lastID = v
		default:
			c.w.Error("ERR Unrecognized XCLAIM option '" + string(opt) + "'")
			return
		}
	}
	key := args[1]
	dirty := false
	if g.LastID.Less(lastID) {
		g.LastID = lastID
		dirty = true
	}
	if deliveryTime != -1 {
		if deliveryTime < 0 || deliveryTime > now {
			deliveryTime = now
		}
	} else {
		deliveryTime = now
	}
	var cons *store.StreamConsumer
	sub := resp.Writer{Proto: c.w.Proto}
	n := 0
	for _, id := range ids {
		nk := g.Pending(id)
		e, exists := s.Get(id)
		if !exists {
			if nk != nil {
				g.Ack(id)
				dirty = true
			}
			continue
		}
		if force && nk == nil {
			nk = &store.StreamNACK{ID: id, DeliveryTime: now, DeliveryCount: 1}
			g.AddPending(nk)
		}
		if nk == nil {
			continue
		}
		if nk.Consumer != nil && minIdle != 0 && now-nk.DeliveryTime < minIdle {
			continue
		}
		if cons == nil {
			cons = c.consumerFor(g, args[3], key)
		}
		nk.DeliveryTime = deliveryTime
		if retry >= 0 {
			nk.DeliveryCount = uint64(retry)
		} else if !justID {
			nk.DeliveryCount++
		}
		g.Assign(nk, cons)
		if justID {
			writeStreamID(&sub, id)
		} else {
			writeStreamEntry(&sub, e)
		}
		n++
		dirty = true
	}
	if dirty || cons != nil {
		c.DB().Modified(key)
	}
	c.w.Array(n)
	c.w.Raw(sub.Buf)
}

func xautoclaimCommand(c *Client, args [][]byte) {
	minIdle, ok := c.intArgMsg(args[4], "Invalid min-idle-time argument for XAUTOCLAIM")
	if !ok {
		return
	}
	minIdle = max(minIdle, 0)
	start, ex, ok := c.intervalID(args[5], 0)
	if !ok {
		return
	}
	if ex {
		if start, ok = start.Incr(); !ok {
			c.w.Error("ERR invalid start ID for the interval")
			return
		}
	}
	count := int64(100)
	justID := false
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "count") && more > 0:
			v, ok := resp.ParseInt(args[j+1])
			if !ok || v < 1 || v > math.MaxInt64/16 {
				c.w.Error("ERR COUNT must be > 0")
				return
			}
			count = v
			j++
		case eq(args[j], "justid"):
			justID = true
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	s, g, ok := c.lookupGroup(args[1], args[2])
	if !ok {
		return
	}
	if g == nil {
		c.replyNoGroup(args[1], args[2])
		return
	}
	key := args[1]
	attempts := count * 10
	now := c.srv.ks.Now()
	var cons *store.StreamConsumer
	var deleted []store.StreamID
	sub := resp.Writer{Proto: c.w.Proto}
	n := 0
	dirty := false
	pos := start
	var next *store.StreamNACK
	for {
		pel := g.PEL()
		i := g.PELFrom(pos)
		if i >= len(pel) {
			next = nil
			break
		}
		nk := pel[i]
		if attempts == 0 || count == 0 {
			next = nk
			break
		}
		attempts--
		id := nk.ID
		pos, _ = id.Incr()
		e, exists := s.Get(id)
		if !exists {
			g.Ack(id)
			dirty = true
			deleted = append(deleted, id)
			count--
			continue
		}
		if minIdle != 0 && now-nk.DeliveryTime < minIdle {
			continue
		}
		if cons == nil {
			cons = c.consumerFor(g, args[3], key)
		}
		nk.DeliveryTime = now
		if !justID {
			nk.DeliveryCount++
		}
		g.Assign(nk, cons)
		if justID {
			writeStreamID(&sub, id)
		} else {
			writeStreamEntry(&sub, e)
		}
		n++
		count--
		dirty = true
		if pos.IsZero() { // wrapped past the greatest ID
			break
		}
	}
	if dirty || cons != nil {
		c.DB().Modified(key)
	}
	c.w.Array(3)
	if next != nil {
		writeStreamID(&c.w, next.ID)
	} else {
		writeStreamID(&c.w, store.StreamID{})
	}
	c.w.Array(n)
	c.w.Raw(sub.Buf)
	c.w.Array(len(deleted))
	for _, id := range deleted {
		writeStreamID(&c.w, id)
	}
}

var xinfoHelp = []string{
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
}

func xinfoCommand(c *Client, args [][]byte) {
	if eq(args[1], "help") {
		if len(args) != 2 {
			c.subcommandSyntaxError(args)
			return
		}
		c.replyHelp(args[0], xinfoHelp)
		return
	} else if len(args) < 3 {
		c.subcommandSyntaxError(args)
		return
	}
	key := args[2]
	s, ok := c.lookupStream(key)
	if !ok {
		return
	}
	if s == nil {
		c.w.Error("ERR no such key")
		return
	}
	switch {
	case eq(args[1], "consumers") && len(args) == 4:
		g := s.Group(args[3])
		if g == nil {
			c.w.Error("-NOGROUP No such consumer group '" + string(args[3]) + "' for key name '" + string(key) + "'")
			return
		}
		now := c.srv.ks.Now()
		c.w.Array(len(g.Consumers()))
		for _, cons := range g.Consumers() {
			c.w.Map(3)
			c.w.BulkString("name")
			c.w.BulkString(cons.Name)
			c.w.BulkString("pending")
			c.w.Int(int64(len(cons.PEL())))
			c.w.BulkString("idle")
			c.w.Int(max(now-cons.SeenTime, 0))
		}
	case eq(args[1], "groups") && len(args) == 3:
		c.w.Array(len(s.Groups()))
		for _, g := range s.Groups() {
			c.w.Map(6)
			c.w.BulkString("name")
			c.w.BulkString(g.Name)
			c.w.BulkString("consumers")
			c.w.Int(int64(len(g.Consumers())))
			c.w.BulkString("pending")
			c.w.Int(int64(len(g.PEL())))
			c.w.BulkString("last-delivered-id")
			writeStreamID(&c.w, g.LastID)
			c.w.BulkString("entries-read")
			if g.EntriesRead != -1 {
				c.w.Int(g.EntriesRead)
			} else {
				c.w.Null()
			}
			c.w.BulkString("lag")
			writeLag(&c.w, s, g)
		}
	case eq(args[1], "stream"):
		xinfoStream(c, s, args)
	default:
		c.subcommandSyntaxError(args)
	}
}

func writeLag(w *resp.Writer, s *store.Stream, g *store.StreamGroup) {
	if lag, ok := s.Lag(g); ok {
		w.Int(lag)
	} else {
		w.Null()
	}
}

// raxNodes computes the node count of Redis's radix tree holding the
// stream's nodes under their 16-byte big-endian master IDs (XINFO
// radix-tree-nodes): a compressed node for each run of bytes all keys
// below it share, a branching node where they part, and a node for each
// key.
func raxNodes(s *store.Stream) int64 {
	var keys [][16]byte
	s.Nodes(func(v store.StreamNodeView) {
		var k [16]byte
		binary.BigEndian.PutUint64(k[:], v.Master.Ms)
		binary.BigEndian.PutUint64(k[8:], v.Master.Seq)
		keys = append(keys, k)
	})
	if len(keys) == 0 {
		return 1
	}
	var count func(ks [][16]byte, d int) int64
	count = func(ks [][16]byte, d int) int64 {
		if d == 16 {
			return 1
		}
		first, last := ks[0], ks[len(ks)-1] // sorted: the common prefix is theirs
		l := d
		for l < 16 && first[l] == last[l] {
			l++
		}
		if l > d {
			return 1 + count(ks, l)
		}
		n := int64(1)
		for i := 0; i < len(ks); {
			j := i
			for j < len(ks) && ks[j][d] == ks[i][d] {
				j++
			}
			n += count(ks[i:j], d+1)
			i = j
		}
		return n
	}
	return count(keys, 0)
}

func xinfoStream(c *Client, s *store.Stream, args [][]byte) {
	opts := args[3:]
	full := false
	count := int64(10)
	if len(opts) > 0 {
		if len(opts) != 1 && len(opts) != 3 {
			c.subcommandSyntaxError(args)
			return
		}
		if !eq(opts[0], "full") {
			c.subcommandSyntaxError(args)
			return
		}
		if len(opts) == 3 {
			if !eq(opts[1], "count") {
				c.subcommandSyntaxError(args)
				return
			}
			v, ok := c.intArg(opts[2])
			if !ok {
				return
			}
			if v < 0 {
				v = 10
			}
			count = v
		}
		full = true
	}
	w := &c.w
	if full {
		w.Map(9)
	} else {
		w.Map(10)
	}
	w.BulkString("length")
	w.Int(int64(s.Len()))
	w.BulkString("radix-tree-keys")
	w.Int(int64(s.NumNodes()))
	w.BulkString("radix-tree-nodes")
	w.Int(raxNodes(s))
	w.BulkString("last-generated-id")
	writeStreamID(w, s.LastID)
	w.BulkString("max-deleted-entry-id")
	writeStreamID(w, s.MaxDeletedID)
	w.BulkString("entries-added")
	w.Int(int64(s.EntriesAdded))
	w.BulkString("recorded-first-entry-id")
	writeStreamID(w, s.FirstID)
	if !full {
		w.BulkString("groups")
		w.Int(int64(len(s.Groups())))
		for _, rev := range []bool{false, true} {
			if rev {
				w.BulkString("last-entry")
			} else {
				w.BulkString("first-entry")
			}
			found := false
			s.Range(store.StreamID{}, store.MaxStreamID, rev, func(e store.StreamEntry) bool {
				writeStreamEntry(w, e)
				found = true
				return false
			})
			if !found {
				w.Null()
			}
		}
		return
	}
	w.BulkString("entries")
	replyRange(w, s, store.StreamID{}, store.MaxStreamID, count, false)
	w.BulkString("groups")
	w.Array(len(s.Groups()))
	for _, g := range s.Groups() {
		w.Map(7)
		w.BulkString("name")
		w.BulkString(g.Name)
		w.BulkString("last-delivered-id")
		writeStreamID(w, g.LastID)
		w.BulkString("entries-read")
		if g.EntriesRead != -1 {
			w.Int(g.EntriesRead)
		} else {
			w.Null()
		}
		w.BulkString("lag")
		writeLag(w, s, g)
		w.BulkString("pel-count")
		w.Int(int64(len(g.PEL())))
		w.BulkString("pending")
		pel := g.PEL()
		if count != 0 && int64(len(pel)) > count {
			pel = pel[:count]
		}
		w.Array(len(pel))
		for _, nk := range pel {
			w.Array(4)
			writeStreamID(w, nk.ID)
			w.BulkString(nk.Consumer.Name)
			w.Int(nk.DeliveryTime)
			w.Int(int64(nk.DeliveryCount))
		}
		w.BulkString("consumers")
		w.Array(len(g.Consumers()))
		for _, cons := range g.Consumers() {
			w.Map(4)
			w.BulkString("name")
			w.BulkString(cons.Name)
			w.BulkString("seen-time")
			w.Int(cons.SeenTime)
			w.BulkString("pel-count")
			w.Int(int64(len(cons.PEL())))
			w.BulkString("pending")
			cp := cons.PEL()
			if count != 0 && int64(len(cp)) > count {
				cp = cp[:count]
			}
			w.Array(len(cp))
			for _, nk := range cp {
				w.Array(3)
				writeStreamID(w, nk.ID)
				w.Int(nk.DeliveryTime)
				w.Int(int64(nk.DeliveryCount))
			}
		}
	}
}
