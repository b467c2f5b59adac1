package server

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedb/sluice/acl"
	"github.com/sluicedb/sluice/resp"
)

// Connection commands: PING ECHO SELECT QUIT RESET HELLO AUTH CLIENT.

func echoCommand(c *Client, args [][]byte) { c.w.Bulk(args[1]) }

func quitCommand(c *Client, args [][]byte) {
	c.w.OK()
	c.closeAfterReply = true
}

func clientIdCommand(c *Client, args [][]byte) { c.w.Int(c.ID) }

func pingCommand(c *Client, args [][]byte) {
	if len(args) > 2 {
		c.w.Error(errArity("ping"))
		return
	}
	if c.inPubSub() && c.w.Proto == 2 {
		// In the RESP2 subscribed context PING replies as a message.
		c.w.Array(2)
		c.w.BulkString("pong")
		if len(args) == 2 {
			c.w.Bulk(args[1])
		} else {
			c.w.BulkString("")
		}
		return
	}
	if len(args) == 2 {
		c.w.Bulk(args[1])
		return
	}
	c.w.Simple("PONG")
}

// inPubSub reports whether the client has subscriptions.
func (c *Client) inPubSub() bool {
	if fn := c.srv.subCounts; fn != nil {
		a, b, s := fn(c)
		return a+b+s > 0
	}
	return false
}

func selectCommand(c *Client, args [][]byte) {
	n, ok := resp.ParseInt(args[1])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if n != int64(int32(n)) {
		c.w.Error("ERR value is out of range, value must between -2147483648 and 2147483647")
		return
	}
	if n != 0 && c.clusterNotAllowed("ERR SELECT is not allowed in cluster mode") {
		return
	}
	if n < 0 || n >= int64(c.srv.ks.NumDBs()) {
		c.w.Error(errDBIndex)
		return
	}
	c.flagsMu.Lock()
	c.dbi = int(n)
	c.flagsMu.Unlock()
	c.w.OK()
}

// resetCommand returns the connection to the state of a new one.
func resetCommand(c *Client, args [][]byte) {
	for _, fn := range c.srv.resetHooks {
		fn(c)
	}
	c.tx = nil
	c.flagsMu.Lock()
	c.dbi = 0
	c.w.Proto = 2
	c.name = ""
	c.noEvict = false
	c.noTouch = false
	c.flagsMu.Unlock()
	c.replyOff = false
	c.replySkip = 0
	c.authed = c.srv.cfg.RequirePass() == ""
	c.implicitAuth = c.authed
	c.user.Store(nil) // the default user
	c.w.Simple("RESET")
}

func authCommand(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.w.Error(errSyntax)
		return
	}
	user, pass := []byte("default"), args[1]
	if len(args) == 2 {
		if c.srv.cfg.ACL.Default().Rules().Nopass() {
			c.w.Error(errNoPassSet)
			return
		}
	} else {
		user, pass = args[1], args[2]
	}
	if !c.authenticate(user, pass, args) {
		c.w.Error(errWrongPass)
		return
	}
	c.w.OK()
}

func helloCommand(c *Client, args [][]byte) {
	var ver int64
	next := 1
	if len(args) >= 2 {
		v, ok := resp.ParseInt(args[1])
		if !ok {
			c.w.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.w.Error("NOPROTO unsupported protocol version")
			return
		}
		ver = v
		next = 2
	}
	for j := next; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "auth") && more >= 2:
			if !c.authenticate(args[j+1], args[j+2], args) {
				c.w.Error(errWrongPass)
				return
			}
			j += 2
		case eq(args[j], "setname") && more >= 1:
			if !c.setName(args[j+1]) {
				return
			}
			j++
		default:
			c.w.Error("ERR Syntax error in HELLO option '" + string(args[j]) + "'")
			return
		}
	}
	if !c.authed {
		c.w.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if ver != 0 {
		c.flagsMu.Lock()
		c.w.Proto = int(ver)
		c.flagsMu.Unlock()
	}
	c.w.Map(7)
	c.w.BulkString("server")
	c.w.BulkString("redis")
	c.w.BulkString("version")
	c.w.BulkString(Version)
	c.w.BulkString("proto")
	c.w.Int(int64(c.w.Proto))
	c.w.BulkString("id")
	c.w.Int(c.ID)
	c.w.BulkString("mode")
	if c.srv.cfg.Get("cluster-enabled") == "yes" {
		c.w.BulkString("cluster")
	} else {
		c.w.BulkString("standalone")
	}
	c.w.BulkString("role")
	c.w.BulkString("master")
	c.w.BulkString("modules")
	c.w.Array(0)
}

// validName reports whether a client name or library field may be shown
// in CLIENT LIST: printable ASCII without spaces.
func validName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// setName sets the connection name, replying with Redis's error (and
// returning false) when it has spaces or special characters.
func (c *Client) setName(b []byte) bool {
	if !validName(b) {
		c.w.Error("ERR Client names cannot contain spaces, newlines or special characters.")
		return false
	}
	c.flagsMu.Lock()
	c.name = string(b)
	c.flagsMu.Unlock()
	return true
}

func clientSetnameCommand(c *Client, args [][]byte) {
	if c.setName(args[2]) {
		c.w.OK()
	}
}

func clientGetnameCommand(c *Client, args [][]byte) {
	if c.name == "" {
		c.w.Null()
		return
	}
	c.w.BulkString(c.name)
}

// clientSetinfoCommand is CLIENT SETINFO as Redis 7.2 has it (go-redis,
// redis-py and Lettuce send it on connect, so it is served although
// 7.0 answers it with an unknown-subcommand error, which clients ignore).
func clientSetinfoCommand(c *Client, args [][]byte) {
	attr, val := args[2], args[3]
	var dst *string
	switch {
	case eq(attr, "lib-name"):
		dst = &c.libName
	case eq(attr, "lib-ver"):
		dst = &c.libVer
	default:
		c.w.Error("ERR Unrecognized option '" + string(attr) + "'")
		return
	}
	if !validName(val) {
		c.w.Error("ERR " + strings.ToUpper(string(attr)) + " cannot contain spaces, newlines or special characters.")
		return
	}
	c.flagsMu.Lock()
	*dst = string(val)
	c.flagsMu.Unlock()
	c.w.OK()
}

var clientHelp = []string{
	"CACHING (YES|NO)",
	"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
	"GETREDIR",
	"    Return the client ID we are redirecting to when tracking is enabled.",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"UNPAUSE",
	"    Stop the current client pause, resuming traffic.",
	"PAUSE <timeout> [WRITE|ALL]",
	"    Suspend all, or just write, clients for <timeout> milliseconds.",
	"REPLY (ON|OFF|SKIP)",
	"    Control the replies sent to the current connection.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"UNBLOCK <clientid> [TIMEOUT|ERROR]",
	"    Unblock the specified blocked client.",
	"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
	"         [OPTIN] [OPTOUT] [NOLOOP]",
	"    Control server assisted client side caching.",
	"TRACKINGINFO",
	"    Report tracking status for the current connection.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
}

func clientHelpCommand(c *Client, args [][]byte) { c.replyHelp(args[0], clientHelp) }

// replyHelp writes a HELP reply as Redis's addReplyHelp does.
func (c *Client) replyHelp(cmd []byte, lines []string) {
	c.w.Array(len(lines) + 3)
	c.w.Simple(strings.ToUpper(string(cmd)) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.w.Simple(l)
	}
	c.w.Simple("HELP")
	c.w.Simple("    Prints this help.")
}

// subcommandSyntaxError is Redis's reply to a bad subcommand or arguments.
func (c *Client) subcommandSyntaxError(args [][]byte) {
	c.w.Error("ERR unknown subcommand or wrong number of arguments for '" + trunc(string(args[1]), 128) + "'. Try " + strings.ToUpper(string(args[0])) + " HELP.")
}

func clientReplyCommand(c *Client, args [][]byte) {
	switch {
	case eq(args[2], "on"):
		c.replyOff = false
		c.replySkip = 0
		c.w.OK()
	case eq(args[2], "off"):
		c.replyOff = true
	case eq(args[2], "skip"):
		if !c.replyOff {
			c.replySkip = 2
		}
	default:
		c.w.Error(errSyntax)
	}
}

func onOff(c *Client, arg []byte, dst *bool) {
	switch {
	case eq(arg, "on"):
		c.flagsMu.Lock()
		*dst = true
		c.flagsMu.Unlock()
		c.w.OK()
	case eq(arg, "off"):
		c.flagsMu.Lock()
		*dst = false
		c.flagsMu.Unlock()
		c.w.OK()
	default:
		c.w.Error(errSyntax)
	}
}

func clientNoEvictCommand(c *Client, args [][]byte) { onOff(c, args[2], &c.noEvict) }
func clientNoTouchCommand(c *Client, args [][]byte) { onOff(c, args[2], &c.noTouch) }

// clientPauseCommand is CLIENT PAUSE timeout [WRITE|ALL] (see pause.go).
func clientPauseCommand(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.subcommandSyntaxError(args)
		return
	}
	typ := pauseAll
	if len(args) == 4 {
		switch {
		case eq(args[3], "write"):
			typ = pauseWrite
		case eq(args[3], "all"):
		default:
			c.w.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	ms, ok := c.parseTimeoutMs(args[2])
	if !ok {
		return
	}
	end := int64(0) // 0: already over (Redis adds the time only to a positive timeout)
	if ms > 0 {
		end = wallMs() + ms
		if end < ms {
			end = math.MaxInt64
		}
	}
	c.srv.pauseClients(typ, end)
	c.w.OK()
}

func clientUnpauseCommand(c *Client, args [][]byte) {
	c.srv.unpauseClients()
	c.w.OK()
}

func clientUnblockCommand(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.subcommandSyntaxError(args)
		return
	}
	withErr := false
	if len(args) == 4 {
		switch {
		case eq(args[3], "timeout"):
		case eq(args[3], "error"):
			withErr = true
		default:
			c.w.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := c.intArg(args[2])
	if !ok {
		return
	}
	target := c.srv.clientByID(id)
	if target != nil && target.blockedFlag.Load() && c.srv.unblockHook != nil && c.srv.unblockHook(target, withErr) {
		c.w.Int(1)
		return
	}
	c.w.Int(0)
}

// clientTrackingCommand accepts TRACKING OFF; server assisted client side
// caching is not implemented, so TRACKING ON is refused.
// clientByID returns the connected client with the given id, or nil.
func (s *Server) clientByID(id int64) *Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[id]
}

// clientsSnapshot returns the connected clients ordered by id.
func (s *Server) clientsSnapshot() []*Client {
	s.mu.Lock()
	out := make([]*Client, 0, len(s.clients))
	for _, c := range s.clients {
		out = append(out, c)
	}
	s.mu.Unlock()
	sortClients(out)
	return out
}

func sortClients(cs []*Client) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].ID < cs[j-1].ID; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// Client types, as CLIENT LIST TYPE and CLIENT KILL TYPE name them.
const (
	clientNormal = iota
	clientSlave
	clientPubSub
	clientMaster
)

func clientTypeByName(b []byte) int {
	switch {
	case eq(b, "normal"):
		return clientNormal
	case eq(b, "slave"), eq(b, "replica"):
		return clientSlave
	case eq(b, "pubsub"):
		return clientPubSub
	case eq(b, "master"):
		return clientMaster
	}
	return -1
}

func (c *Client) clientType() int {
	switch {
	case c.replMaster:
		return clientMaster
	case c.replicaOut.Load() || c.replica.Load() != nil:
		return clientSlave
	case c.inPubSub():
		return clientPubSub
	}
	return clientNormal
}

// infoLine is the client as CLIENT LIST shows it, for log lines
// (catClientInfoString).
func (c *Client) infoLine() string {
	return string(c.appendClientInfo(nil, c, nil, c.curArgs))
}

// appendClientInfo appends the CLIENT LIST line of t (without the newline)
// as seen by c. cur is the command c is running and args its arguments
// (shown as t's cmd and argv-mem when t is c itself).
func (c *Client) appendClientInfo(b []byte, t *Client, cur *Command, args [][]byte) []byte {
	self := t == c
	t.flagsMu.Lock()
	name, libName, libVer, db, proto, noEvict := t.name, t.libName, t.libVer, t.dbi, t.w.Proto, t.noEvict
	t.flagsMu.Unlock()
	var sub, psub, ssub int
	if fn := c.srv.subCounts; fn != nil {
		sub, psub, ssub = fn(t)
	}
	now := time.Now()
	flags := make([]byte, 0, 8)
	if t.replica.Load() != nil {
		flags = append(flags, 'S')
	}
	if t.replMaster {
		flags = append(flags, 'M')
	}
	if t.srv.monitors.has(t) {
		flags = append(flags, 'O')
	}
	if sub+psub+ssub > 0 {
		flags = append(flags, 'P')
	}
	// The transaction: its own as it is now (during EXEC, the one it
	// runs), another's as of the end of its last batch (txView).
	multi := -1
	tv := t.txView.Load()
	if self {
		t.refreshOwnMemory()
		tv = t.txView.Load()
	}
	if tv != 0 {
		flags = append(flags, 'x')
		multi = int(tv) - 1
	}
	if t.blockedFlag.Load() {
		flags = append(flags, 'b')
	}
	flags = c.srv.tracking.AppendListFlags(t.trk.Load(), flags)
	if t.watch.Dirty() {
		flags = append(flags, 'd') // a watched key changed: EXEC will fail (CLIENT_DIRTY_CAS)
	}
	if t.closeASAP.Load() {
		flags = append(flags, 'A')
	}
	if t.unixSock {
		flags = append(flags, 'U')
	}
	if noEvict {
		flags = append(flags, 'e')
	}
	if len(flags) == 0 {
		flags = append(flags, 'N')
	}
	cmdName := "NULL"
	if self && t.execTx != nil {
		cmdName = "exec" // Redis shows the command the client sent
	} else if self && cur != nil {
		cmdName = cur.Name
	} else if lc := t.lastCmd.Load(); lc != nil {
		cmdName = lc.Name
	}
	qbuf := t.qbufLen.Load()
	if self {
		// Redis's query buffer still holds the batch being executed,
		// this command included.
		qbuf = int64(t.batchLen)
	}
	// argv-mem: the arguments of the command running, or of the one a
	// client is blocked in; tot-mem adds a pointer for each.
	// (Inside EXEC, Redis's argv-mem is still EXEC's own: 4.)
	argvMem, cost := argvLen(args), argvCost(args)
	if !self {
		argvMem, cost = t.blockedArgv.Load(), t.blockedArgvCost.Load()
	} else if t.execTx != nil {
		argvMem, cost = 4, 4+8
	}
	qbufFree := max(0, t.qbufCap.Load()-qbuf)
	b = append(b, "id="...)
	b = strconv.AppendInt(b, t.ID, 10)
	b = append(b, " addr="...)
	b = append(b, t.addrString()...)
	b = append(b, " laddr="...)
	b = append(b, t.laddrString()...)
	b = append(b, " fd="...)
	b = strconv.AppendInt(b, int64(t.fd), 10)
	b = append(b, " name="...)
	b = append(b, name...)
	b = append(b, " age="...)
	b = strconv.AppendInt(b, int64(now.Sub(t.created)/time.Second), 10)
	b = append(b, " idle="...)
	b = strconv.AppendInt(b, (now.UnixMilli()-t.lastIO.Load())/1000, 10)
	b = append(b, " flags="...)
	b = append(b, flags...)
	b = append(b, " db="...)
	b = strconv.AppendInt(b, int64(db), 10)
	b = append(b, " sub="...)
	b = strconv.AppendInt(b, int64(sub), 10)
	b = append(b, " psub="...)
	b = strconv.AppendInt(b, int64(psub), 10)
	b = append(b, " ssub="...)
	b = strconv.AppendInt(b, int64(ssub), 10)
	b = append(b, " multi="...)
	b = strconv.AppendInt(b, int64(multi), 10)
	b = append(b, " qbuf="...)
	b = strconv.AppendInt(b, qbuf, 10)
	b = append(b, " qbuf-free="...)
	b = strconv.AppendInt(b, qbufFree, 10)
	b = append(b, " argv-mem="...)
	b = strconv.AppendInt(b, argvMem, 10)
	omem := t.outputMemory()
	if rc := t.replica.Load(); rc != nil {
		omem += rc.OutputMem() // the replication buffer it still has to send
	}
	b = append(b, " multi-mem="...)
	b = strconv.AppendInt(b, t.multiMemA.Load(), 10)
	obl, oll := t.replyBlocks(t.outputBytes())
	b = append(b, " rbs="...)
	b = strconv.AppendInt(b, t.replyBufLen(), 10)
	b = append(b, " rbp="...)
	b = strconv.AppendInt(b, t.replyPeak(), 10)
	b = append(b, " obl="...)
	b = strconv.AppendInt(b, obl, 10)
	b = append(b, " oll="...)
	b = strconv.AppendInt(b, oll, 10)
	b = append(b, " omem="...)
	b = strconv.AppendInt(b, omem, 10)
	b = append(b, " tot-mem="...)
	b = strconv.AppendInt(b, t.memUsage()+cost, 10)
	b = append(b, " events=r cmd="...)
	b = append(b, cmdName...)
	b = append(b, " user="...)
	b = append(b, t.aclUser().Name()...)
	b = append(b, " redir="...)
	b = strconv.AppendInt(b, c.srv.trackingRedir(t), 10)
	b = append(b, " resp="...)
	b = strconv.AppendInt(b, int64(proto), 10)
	b = append(b, " lib-name="...)
	b = append(b, libName...)
	b = append(b, " lib-ver="...)
	b = append(b, libVer...)
	return b
}

func argvLen(args [][]byte) int64 {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return int64(n)
}

// argvCost is Redis's count of a command's arguments in a client's memory
// (argv_len_sum plus a pointer each): CLIENT LIST's tot-mem part for them,
// and a queued command's part of multi-mem.
func argvCost(args [][]byte) int64 { return argvLen(args) + 8*int64(len(args)) }

// addrString is the peer address as Redis shows it ("ip:port", or
// "path:0" for unix sockets).
func (c *Client) addrString() string {
	if c.unixSock {
		return c.laddrString()
	}
	return c.addr
}

func (c *Client) laddrString() string {
	if c.unixSock {
		path := c.laddr
		if path == "" || path == "@" {
			path = c.srv.cfg.Get("unixsocket")
		}
		return path + ":0"
	}
	return c.laddr
}

func clientInfoCommand(c *Client, args [][]byte) {
	b := c.appendClientInfo(nil, c, commands["client"].sub["info"], args)
	b = append(b, '\n')
	c.w.Verbatim("txt", string(b))
}

func clientListCommand(c *Client, args [][]byte) {
	self := commands["client"].sub["list"]
	typ := -1
	var ids []*Client
	byID := false
	switch {
	case len(args) == 2:
	case len(args) == 4 && eq(args[2], "type"):
		if typ = clientTypeByName(args[3]); typ < 0 {
			c.w.Error("ERR Unknown client type '" + string(args[3]) + "'")
			return
		}
	case len(args) > 3 && eq(args[2], "id"):
		byID = true
		for _, a := range args[3:] {
			id, ok := resp.ParseInt(a)
			if !ok {
				c.w.Error("ERR Invalid client ID")
				return
			}
			if t := c.srv.clientByID(id); t != nil {
				ids = append(ids, t)
			}
		}
	default:
		c.w.Error(errSyntax)
		return
	}
	if !byID {
		ids = c.srv.clientsSnapshot()
	}
	var b []byte
	for _, t := range ids {
		if typ >= 0 && t.clientType() != typ || t.aclKilled.Load() || t.evicted.Load() {
			continue
		}
		b = c.appendClientInfo(b, t, self, args)
		b = append(b, '\n')
	}
	c.w.Verbatim("txt", string(b))
}

func clientKillCommand(c *Client, args [][]byte) {
	var addr, laddr []byte
	typ := -1
	var id int64
	skipme := true
	var user *acl.User
	if len(args) == 3 {
		addr = args[2]
		skipme = false
	} else {
		for i := 2; i < len(args); i += 2 {
			if i+1 >= len(args) {
				c.w.Error(errSyntax)
				return
			}
			opt, val := args[i], args[i+1]
			switch {
			case eq(opt, "id"):
				n, ok := resp.ParseInt(val)
				if !ok || n < 1 {
					c.w.Error("ERR client-id should be greater than 0")
					return
				}
				id = n
			case eq(opt, "type"):
				if typ = clientTypeByName(val); typ < 0 {
					c.w.Error("ERR Unknown client type '" + string(val) + "'")
					return
				}
			case eq(opt, "addr"):
				addr = val
			case eq(opt, "laddr"):
				laddr = val
			case eq(opt, "user"):
				if user = c.srv.cfg.ACL.User(string(val)); user == nil {
					c.w.Error("ERR No such user '" + string(val) + "'")
					return
				}
			case eq(opt, "skipme"):
				switch {
				case eq(val, "yes"):
					skipme = true
				case eq(val, "no"):
					skipme = false
				default:
					c.w.Error(errSyntax)
					return
				}
			default:
				c.w.Error(errSyntax)
				return
			}
		}
	}
	killed := 0
	closeSelf := false
	for _, t := range c.srv.clientsSnapshot() {
		if addr != nil && t.addrString() != string(addr) {
			continue
		}
		if laddr != nil && t.laddrString() != string(laddr) {
			continue
		}
		if typ >= 0 && t.clientType() != typ {
			continue
		}
		if id != 0 && t.ID != id {
			continue
		}
		if user != nil && t.aclUser() != user {
			continue
		}
		if t == c && skipme {
			continue
		}
		if t == c {
			closeSelf = true
		} else {
			t.killNow()
		}
		killed++
	}
	if len(args) == 3 && killed == 0 {
		killed = c.srv.killMasterLink(string(addr))
	}
	if len(args) == 3 {
		if killed == 0 {
			c.w.Error("ERR No such client")
		} else {
			c.w.OK()
		}
	} else {
		c.w.Int(int64(killed))
	}
	if closeSelf {
		c.closeAfterReply = true
	}
}
