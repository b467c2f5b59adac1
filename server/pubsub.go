package server

import (
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/pubsub"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// The registry of channels, patterns and shard channels is package
// pubsub's (a client's own subscriptions are its c.ps); here are the
// handlers, the framing and delivery of messages, and the output limits
// a subscriber is held to.

// subReplies are the kinds of (un)subscribe replies, by pubsub.Kind.
var subReplies = [...]struct{ sub, unsub string }{
	pubsub.Channel: {"subscribe", "unsubscribe"},
	pubsub.Pattern: {"psubscribe", "punsubscribe"},
	pubsub.Shard:   {"ssubscribe", "sunsubscribe"},
}

// unsubscribeAll drops every subscription of a closing client.
func (c *Client) unsubscribeAll() {
	if c.ps.Total() == 0 {
		return
	}
	c.srv.pubsub.UnsubscribeAll(c, &c.ps)
	c.pubsubMem.Store(0)
}

func (c *Client) subscribe(k pubsub.Kind, names [][]byte) {
	r := &c.srv.pubsub
	c.pushed = true // Redis sends subscription pushes even with CLIENT REPLY OFF
	for _, n := range names {
		if r.Subscribe(c, &c.ps, k, string(n)) {
			c.pubsubMem.Add(store.AllocSize(len(n)) + subCost)
		}
		c.w.Push(3)
		c.w.BulkString(subReplies[k].sub)
		c.w.Bulk(n)
		c.w.Int(c.ps.Count(k))
	}
}

func (c *Client) unsubscribe(k pubsub.Kind, names [][]byte) {
	r := &c.srv.pubsub
	kind := subReplies[k].unsub
	c.pushed = true
	if len(names) == 0 {
		all := r.Names(&c.ps, k)
		if len(all) == 0 {
			c.w.Push(3)
			c.w.BulkString(kind)
			c.w.Null()
			c.w.Int(c.ps.Count(k))
			return
		}
		for _, n := range all {
			names = append(names, []byte(n))
		}
	}
	for _, n := range names {
		if r.Unsubscribe(c, &c.ps, k, string(n)) {
			c.pubsubMem.Add(-(store.AllocSize(len(n)) + subCost))
		}
		c.w.Push(3)
		c.w.BulkString(kind)
		c.w.Bulk(n)
		c.w.Int(c.ps.Count(k))
	}
}

func subscribeCommand(c *Client, args [][]byte)    { c.subscribe(pubsub.Channel, args[1:]) }
func psubscribeCommand(c *Client, args [][]byte)   { c.subscribe(pubsub.Pattern, args[1:]) }
func ssubscribeCommand(c *Client, args [][]byte)   { c.subscribe(pubsub.Shard, args[1:]) }
func unsubscribeCommand(c *Client, args [][]byte)  { c.unsubscribe(pubsub.Channel, args[1:]) }
func punsubscribeCommand(c *Client, args [][]byte) { c.unsubscribe(pubsub.Pattern, args[1:]) }
func sunsubscribeCommand(c *Client, args [][]byte) { c.unsubscribe(pubsub.Shard, args[1:]) }

func publishCommand(c *Client, args [][]byte) {
	c.w.Int(int64(c.srv.publish(c, args[1], args[2], false)))
	if cl := c.srv.cluster; cl != nil {
		cl.Publish(args[1], args[2], false) // to every node over the bus
	}
}

func spublishCommand(c *Client, args [][]byte) {
	c.w.Int(int64(c.srv.publish(c, args[1], args[2], true)))
	if cl := c.srv.cluster; cl != nil {
		cl.Publish(args[1], args[2], true) // to the nodes of this shard
	}
}

// unsubscribeShardAsync unsubscribes c, from another goroutine, from
// shard channels of a slot its shard no longer serves, sending it the
// sunsubscribe messages.
func (c *Client) unsubscribeShardAsync(chans []string) {
	w := resp.Writer{Proto: c.w.Proto}
	for _, ch := range chans {
		if !c.srv.pubsub.Unsubscribe(c, &c.ps, pubsub.Shard, ch) {
			continue
		}
		w.Push(3)
		w.BulkString("sunsubscribe")
		w.BulkString(ch)
		w.Int(c.ps.Count(pubsub.Shard))
	}
	if len(w.Buf) > 0 {
		c.deliver(w.Buf)
	}
}

// publish delivers msg to channel's subscribers and the matching pattern
// subscribers, and returns how many received it. A message to the
// publishing client itself goes straight into its reply stream, so it
// keeps its place before the command's own reply.
func (s *Server) publish(from *Client, channel, msg []byte, shard bool) int {
	r := &s.pubsub
	if r.Empty() {
		return 0
	}
	var enc [2][]byte // encoded message per protocol (RESP2, RESP3)
	encode := func(proto int, kind string, pattern []byte) []byte {
		// One allocation of the message's final size (header, kind,
		// pattern, channel and payload with their length prefixes).
		w := resp.Writer{Proto: proto, Buf: make([]byte, 0, len(pattern)+len(channel)+len(msg)+64)}
		pushMessage(&w, kind, pattern, channel, msg)
		return w.Buf
	}
	return r.Publish(channel, shard, func(c *Client, k pubsub.Kind, pat string) {
		var b []byte
		switch k {
		case pubsub.Shard:
			b = encode(c.w.Proto, "smessage", nil)
		case pubsub.Pattern:
			b = encode(c.w.Proto, "pmessage", []byte(pat))
		default:
			i := 0
			if c.w.Proto == 3 {
				i = 1
			}
			if enc[i] == nil {
				enc[i] = encode(c.w.Proto, "message", nil)
			}
			b = enc[i]
		}
		if c == from {
			from.w.Raw(b)
			return
		}
		c.deliverPubSub(b)
	})
}

// deliverPubSub queues a message for a subscriber. Past the
// client-output-buffer-limit the client is closed and the message dropped,
// so a slow subscriber slows nobody else.
func (c *Client) deliverPubSub(b []byte) {
	if c.closeASAP.Load() {
		return
	}
	c.amu.Lock()
	size := int64(len(c.async)) + c.outLen.Load() + int64(len(b))
	if c.outputOverLimit(size) {
		c.async = nil
		c.asyncLen.Store(0)
		c.amu.Unlock()
		c.srv.Logf("Client id=%d closed for overcoming of output buffer limits.", c.ID)
		c.kill()
		return
	}
	first := len(c.async) == 0
	c.async = append(c.async, b...)
	c.asyncLen.Store(int64(len(c.async)))
	c.amu.Unlock()
	c.asyncGrew()
	if first && c.signal != nil {
		c.signal()
	}
}

// outputMem is the client's output not yet written to its socket (CLIENT
// LIST omem): replies its driver holds, and pushed messages (pub/sub,
// invalidations) queued for it.
func (c *Client) outputMem() int64 {
	c.amu.Lock()
	n := int64(len(c.async))
	c.amu.Unlock()
	return n + c.outLen.Load()
}

// outputOverLimit applies client-output-buffer-limit to a client's
// pending output: the pubsub class for subscribed clients, the normal
// class otherwise. Over the hard limit, or over the soft limit for longer
// than its seconds, the client must be closed.
func (c *Client) outputOverLimit(size int64) bool {
	if !c.overOutputLimit(size) {
		return false
	}
	if size >= bigOutput {
		releaseMemorySoon()
	}
	return true
}

// bigOutput is the output buffer size from which closing a client over
// its limit hands the memory back to the OS at once.
const bigOutput = 4 << 20

var releasing atomic.Bool

// releaseMemorySoon runs debug.FreeOSMemory shortly after a client with a
// huge output buffer was closed (once its driver has dropped the buffer),
// and a few more times over the next seconds for what the traffic that
// overflowed it (a publisher's flood, say) leaves behind as it settles; at
// most one such series at a time. Without it an idle server keeps the
// freed buffer resident: no allocation means no GC cycle, and the
// scavenger returns memory only after one (measured: a subscriber closed
// at 32 MB left sluice-server at 110 MB RSS for minutes; redis-server's
// jemalloc gives it back in about 10 s).
func releaseMemorySoon() {
	if !releasing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		// Once a second while the traffic settles, then twice more: a dozen
		// forced collections after a rare event (a client closed over a
		// multi-megabyte output limit).
		time.Sleep(200 * time.Millisecond)
		for i := 0; i < 10; i++ {
			debug.FreeOSMemory()
			time.Sleep(time.Second)
		}
		for _, d := range []time.Duration{5 * time.Second, 15 * time.Second} {
			time.Sleep(d)
			debug.FreeOSMemory()
		}
		releasing.Store(false)
	}()
}

func (c *Client) overOutputLimit(size int64) bool {
	// What fits in Redis's per-client reply buffer is not counted, only
	// what overflows it into the reply list (getClientOutputBufferMemoryUsage).
	size = c.countedOutput(size)
	cfg := c.srv.cfg
	hard, soft, secs := cfg.OutLimitHard.Load(), cfg.OutLimitSoft.Load(), cfg.OutLimitSecs.Load()
	if c.ps.Total() > 0 {
		hard, soft, secs = cfg.PubLimitHard.Load(), cfg.PubLimitSoft.Load(), cfg.PubLimitSecs.Load()
	}
	if hard > 0 && size > hard {
		return true
	}
	if soft > 0 && size > soft {
		now := time.Now().UnixMilli()
		since := c.softSince.Load()
		if since == 0 {
			c.softSince.CompareAndSwap(0, now)
			return false
		}
		return now-since > secs*1000
	}
	c.softSince.Store(0)
	return false
}

func pubsubChannelsCommand(c *Client, args [][]byte) { c.listChannels(args, pubsub.Channel) }
func pubsubShardchannelsCommand(c *Client, args [][]byte) {
	c.listChannels(args, pubsub.Shard)
}

func (c *Client) listChannels(args [][]byte, k pubsub.Kind) {
	if len(args) > 3 {
		c.w.Error(errArity(strings.ReplaceAll(string(args[0]), " ", "|")))
		return
	}
	out := c.srv.pubsub.Channels(k, args[2:]...)
	c.w.Array(len(out))
	for _, ch := range out {
		c.w.BulkString(ch)
	}
}

func pubsubNumsubCommand(c *Client, args [][]byte)      { c.numsub(args, pubsub.Channel) }
func pubsubShardnumsubCommand(c *Client, args [][]byte) { c.numsub(args, pubsub.Shard) }

func (c *Client) numsub(args [][]byte, k pubsub.Kind) {
	counts := c.srv.pubsub.NumSub(k, args[2:])
	// Redis 7.0 replies with a flat array in RESP3 too (not a map).
	c.w.Array(2 * (len(args) - 2))
	for i, ch := range args[2:] {
		c.w.Bulk(ch)
		c.w.Int(int64(counts[i]))
	}
}

func pubsubNumpatCommand(c *Client, args [][]byte) {
	_, n, _ := c.srv.pubsub.Counts()
	c.w.Int(int64(n))
}

func pubsubHelpCommand(c *Client, args [][]byte) {
	c.replyHelp([]byte("PUBSUB"), []string{
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
	})
}

// pubsubAllowed is the RESP2 subscribed-context rule: only the
// subscribe family, PING, QUIT and RESET may run.
func pubsubAllowed(c *Client, cmd *Command, args [][]byte) bool {
	if c.w.Proto == 3 || c.ps.Total() == 0 {
		return true
	}
	name := cmd.Name
	if cmd.parent != nil {
		name = cmd.parent.Name
	}
	switch name {
	case "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe", "psubscribe", "punsubscribe", "quit", "reset":
		return true
	case "ping":
		// PING in a subscribed RESP2 context replies as a message.
		if len(args) > 2 {
			return true // arity error path
		}
		c.w.Array(2)
		c.w.BulkString("pong")
		if len(args) == 2 {
			c.w.Bulk(args[1])
		} else {
			c.w.BulkString("")
		}
		return false
	}
	c.reject("ERR Can't execute '" + cmd.Name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	return false
}

func (s *Server) wirePubSub() {
	s.preCall = pubsubAllowed
	s.subCounts = func(c *Client) (int, int, int) { return c.ps.Counts() }
	s.pubsubCounts = s.pubsub.Counts
	// RESET leaves every subscription (and, in multi.go, MULTI and WATCH).
	s.OnReset(func(c *Client) { c.unsubscribeAll() })
	s.ks.OnExpired = func(db *store.DB, key []byte) { s.notifyExpired(db.ID, key) }
	s.wireACL() // users of the config file and aclfile (acl.go)
}
