package server

import (
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

// subs is a client's subscriptions. Only the client's own goroutine
// changes the maps; counts are atomic for CLIENT LIST from elsewhere.
type subs struct {
	channels, patterns, shard map[string]struct{}
	nch, npat, nshard         atomic.Int32
}

func (s *subs) total() int { return int(s.nch.Load() + s.npat.Load() + s.nshard.Load()) }

// pubsubRegistry maps channels and patterns to their subscribers.
type pubsubRegistry struct {
	mu       sync.RWMutex
	channels map[string]map[*Client]struct{}
	patterns map[string]map[*Client]struct{}
	shard    map[string]map[*Client]struct{}
	size     atomic.Int64 // total subscriptions, for the fast path
}

func (r *pubsubRegistry) empty() bool { return r.size.Load() == 0 }

func addSub(m *map[string]map[*Client]struct{}, name string, c *Client) bool {
	if *m == nil {
		*m = map[string]map[*Client]struct{}{}
	}
	set := (*m)[name]
	if set == nil {
		set = map[*Client]struct{}{}
		(*m)[name] = set
	}
	if _, ok := set[c]; ok {
		return false
	}
	set[c] = struct{}{}
	return true
}

func delSub(m map[string]map[*Client]struct{}, name string, c *Client) {
	if set := m[name]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(m, name)
		}
	}
}

// unsubscribeAll drops every subscription of a closing client.
func (r *pubsubRegistry) unsubscribeAll(c *Client) {
	if c.ps.total() == 0 {
		return
	}
	r.mu.Lock()
	for ch := range c.ps.channels {
		delSub(r.channels, ch, c)
		r.size.Add(-1)
	}
	for p := range c.ps.patterns {
		delSub(r.patterns, p, c)
		r.size.Add(-1)
	}
	for ch := range c.ps.shard {
		delSub(r.shard, ch, c)
		r.size.Add(-1)
	}
	c.ps.channels, c.ps.patterns, c.ps.shard = nil, nil, nil
	r.mu.Unlock()
	c.ps.nch.Store(0)
	c.ps.npat.Store(0)
	c.ps.nshard.Store(0)
	c.pubsubMem.Store(0)
}

type subKind struct {
	name   string // reply kind: "subscribe", "psubscribe", ...
	mine   func(c *Client) *map[string]struct{}
	reg    func(r *pubsubRegistry) *map[string]map[*Client]struct{}
	count  func(c *Client) *atomic.Int32
	shards bool // count only shard subscriptions in replies
}

var (
	kindChannel = subKind{"subscribe", func(c *Client) *map[string]struct{} { return &c.ps.channels },
		func(r *pubsubRegistry) *map[string]map[*Client]struct{} { return &r.channels },
		func(c *Client) *atomic.Int32 { return &c.ps.nch }, false}
	kindPattern = subKind{"psubscribe", func(c *Client) *map[string]struct{} { return &c.ps.patterns },
		func(r *pubsubRegistry) *map[string]map[*Client]struct{} { return &r.patterns },
		func(c *Client) *atomic.Int32 { return &c.ps.npat }, false}
	kindShard = subKind{"ssubscribe", func(c *Client) *map[string]struct{} { return &c.ps.shard },
		func(r *pubsubRegistry) *map[string]map[*Client]struct{} { return &r.shard },
		func(c *Client) *atomic.Int32 { return &c.ps.nshard }, true}
)

func (c *Client) subCount(k subKind) int64 {
	if k.shards {
		return int64(c.ps.nshard.Load())
	}
	return int64(c.ps.nch.Load() + c.ps.npat.Load())
}

func (c *Client) subscribe(k subKind, names [][]byte) {
	r := &c.srv.pubsub
	c.pushed = true // Redis sends subscription pushes even with CLIENT REPLY OFF
	for _, n := range names {
		name := string(n)
		mine := k.mine(c)
		// The registry lock also guards the client's own maps: the
		// cluster unsubscribes clients from a slot's shard channels.
		r.mu.Lock()
		if *mine == nil {
			*mine = map[string]struct{}{}
		}
		if _, ok := (*mine)[name]; !ok {
			(*mine)[name] = struct{}{}
			k.count(c).Add(1)
			c.pubsubMem.Add(store.AllocSize(len(name)) + subCost)
			addSub(k.reg(r), name, c)
			r.size.Add(1)
		}
		r.mu.Unlock()
		c.w.Push(3)
		c.w.BulkString(k.name)
		c.w.Bulk(n)
		c.w.Int(c.subCount(k))
	}
}

func (c *Client) unsubscribe(k subKind, names [][]byte) {
	r := &c.srv.pubsub
	kind := map[string]string{"subscribe": "unsubscribe", "psubscribe": "punsubscribe", "ssubscribe": "sunsubscribe"}[k.name]
	c.pushed = true
	mine := k.mine(c)
	if len(names) == 0 {
		r.mu.RLock()
		all := make([]string, 0, len(*mine))
		for n := range *mine {
			all = append(all, n)
		}
		r.mu.RUnlock()
		if len(all) == 0 {
			c.w.Push(3)
			c.w.BulkString(kind)
			c.w.Null()
			c.w.Int(c.subCount(k))
			return
		}
		for _, n := range all {
			names = append(names, []byte(n))
		}
	}
	for _, n := range names {
		name := string(n)
		r.mu.Lock()
		if _, ok := (*mine)[name]; ok {
			delete(*mine, name)
			k.count(c).Add(-1)
			c.pubsubMem.Add(-(store.AllocSize(len(name)) + subCost))
			delSub(*k.reg(r), name, c)
			r.size.Add(-1)
		}
		r.mu.Unlock()
		c.w.Push(3)
		c.w.BulkString(kind)
		c.w.Bulk(n)
		c.w.Int(c.subCount(k))
	}
}

func subscribeCommand(c *Client, args [][]byte)    { c.subscribe(kindChannel, args[1:]) }
func psubscribeCommand(c *Client, args [][]byte)   { c.subscribe(kindPattern, args[1:]) }
func ssubscribeCommand(c *Client, args [][]byte)   { c.subscribe(kindShard, args[1:]) }
func unsubscribeCommand(c *Client, args [][]byte)  { c.unsubscribe(kindChannel, args[1:]) }
func punsubscribeCommand(c *Client, args [][]byte) { c.unsubscribe(kindPattern, args[1:]) }
func sunsubscribeCommand(c *Client, args [][]byte) { c.unsubscribe(kindShard, args[1:]) }

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
	r := &c.srv.pubsub
	w := resp.Writer{Proto: c.w.Proto}
	r.mu.Lock()
	for _, ch := range chans {
		if _, ok := c.ps.shard[ch]; !ok {
			continue
		}
		delete(c.ps.shard, ch)
		c.ps.nshard.Add(-1)
		delSub(r.shard, ch, c)
		r.size.Add(-1)
		w.Push(3)
		w.BulkString("sunsubscribe")
		w.BulkString(ch)
		w.Int(int64(c.ps.nshard.Load()))
	}
	r.mu.Unlock()
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
	if r.empty() {
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
	send := func(c *Client, b []byte) {
		if c == from {
			from.w.Raw(b)
			return
		}
		c.deliverPubSub(b)
	}
	n := 0
	r.mu.RLock()
	defer r.mu.RUnlock()
	if shard {
		for c := range r.shard[string(channel)] {
			send(c, encode(c.w.Proto, "smessage", nil))
			n++
		}
		return n
	}
	for c := range r.channels[string(channel)] {
		i := 0
		if c.w.Proto == 3 {
			i = 1
		}
		if enc[i] == nil {
			enc[i] = encode(c.w.Proto, "message", nil)
		}
		send(c, enc[i])
		n++
	}
	if len(r.patterns) == 0 {
		return n
	}
	for pat, set := range r.patterns {
		if !store.Match([]byte(pat), channel, false) {
			continue
		}
		for c := range set {
			send(c, encode(c.w.Proto, "pmessage", []byte(pat)))
			n++
		}
	}
	return n
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
	cfg := c.srv.cfg
	hard, soft, secs := cfg.OutLimitHard.Load(), cfg.OutLimitSoft.Load(), cfg.OutLimitSecs.Load()
	if c.ps.total() > 0 {
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

func pubsubChannelsCommand(c *Client, args [][]byte) { c.listChannels(args, false) }
func pubsubShardchannelsCommand(c *Client, args [][]byte) {
	c.listChannels(args, true)
}

func (c *Client) listChannels(args [][]byte, shard bool) {
	if len(args) > 3 {
		c.w.Error(errArity(strings.ReplaceAll(string(args[0]), " ", "|")))
		return
	}
	r := &c.srv.pubsub
	r.mu.RLock()
	m := r.channels
	if shard {
		m = r.shard
	}
	var out []string
	for ch := range m {
		if len(args) == 3 && !store.Match(args[2], []byte(ch), false) {
			continue
		}
		out = append(out, ch)
	}
	r.mu.RUnlock()
	sort.Strings(out)
	c.w.Array(len(out))
	for _, ch := range out {
		c.w.BulkString(ch)
	}
}

func pubsubNumsubCommand(c *Client, args [][]byte)      { c.numsub(args, false) }
func pubsubShardnumsubCommand(c *Client, args [][]byte) { c.numsub(args, true) }

func (c *Client) numsub(args [][]byte, shard bool) {
	r := &c.srv.pubsub
	r.mu.RLock()
	defer r.mu.RUnlock()
	m := r.channels
	if shard {
		m = r.shard
	}
	// Redis 7.0 replies with a flat array in RESP3 too (not a map).
	c.w.Array(2 * (len(args) - 2))
	for _, ch := range args[2:] {
		c.w.Bulk(ch)
		c.w.Int(int64(len(m[string(ch)])))
	}
}

func pubsubNumpatCommand(c *Client, args [][]byte) {
	r := &c.srv.pubsub
	r.mu.RLock()
	n := len(r.patterns)
	r.mu.RUnlock()
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
	if c.w.Proto == 3 || c.ps.total() == 0 {
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
	s.subCounts = func(c *Client) (int, int, int) {
		return int(c.ps.nch.Load()), int(c.ps.npat.Load()), int(c.ps.nshard.Load())
	}
	s.pubsubCounts = func() (int, int, int) {
		s.pubsub.mu.RLock()
		defer s.pubsub.mu.RUnlock()
		return len(s.pubsub.channels), len(s.pubsub.patterns), len(s.pubsub.shard)
	}
	// RESET leaves every subscription (and, in multi.go, MULTI and WATCH).
	s.OnReset(func(c *Client) { s.pubsub.unsubscribeAll(c) })
	s.ks.OnExpired = func(db *store.DB, key []byte) { s.notifyExpired(db.ID, key) }
	s.wireACL() // users of the config file and aclfile (acl.go)
}
