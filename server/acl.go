package server

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/sluicedb/sluice/acl"
	"github.com/sluicedb/sluice/internal/cmdspec"
	"github.com/sluicedb/sluice/pubsub"
)

// The server's side of ACLs: the ACL command family, the check on the
// dispatch path, AUTH, the ACL log's client info, killing the clients of
// users that change, and the config glue (requirepass, aclfile, the
// "user" directive, acllog-max-len, acl-pubsub-default). Users, rules and
// the check itself are the acl package's.
//
// A client's user is nil until its first command (the default user); a
// user whose only selector allows everything is not Restricted, so the
// dispatch path tests one pointer and one flag and goes on.

var (
	aclOnce  sync.Once
	aclTable *acl.Commands
	aclCmds  []*acl.Command // by command id
)

// aclCommands returns the command table as ACL rules see it: names,
// subcommands, categories (cmdspec's), built from the server's table on
// first use.
func aclCommands() *acl.Commands {
	aclOnce.Do(func() {
		aclCmds = make([]*acl.Command, len(cmdList))
		for _, cmd := range cmdList {
			ac := &acl.Command{Name: cmd.Name, NoAuth: cmd.Flags&cmdspec.NoAuth != 0}
			for _, cat := range cmd.ACL.Names() {
				if i := acl.CategoryIndex(cat); i >= 0 {
					ac.Categories |= 1 << i
				}
			}
			aclCmds[cmd.id] = ac
		}
		var top []*acl.Command
		for _, cmd := range cmdList {
			ac := aclCmds[cmd.id]
			for _, s := range cmd.Subs {
				ac.Subs = append(ac.Subs, aclCmds[s.id])
			}
			if cmd.parent == nil {
				top = append(top, ac)
			}
		}
		aclTable = acl.NewCommands(top)
	})
	return aclTable
}

// aclRequest is what the ACL check needs of a command: the keys and
// channels are found only when the rules can depend on them.
func aclRequest(r *acl.Rules, cmd *Command, args [][]byte) acl.Request {
	req := acl.Request{Cmd: aclCmds[cmd.id], Args: args}
	if r.NeedsKeys() {
		req.Keys = aclKeyRefs(cmd, args)
	}
	if r.NeedsChannels() {
		req.Channels = aclChannelRefs(cmd, args)
	}
	return req
}

// aclCheck checks args against the user's rules.
func aclCheck(u *acl.User, cmd *Command, args [][]byte) (acl.Reason, int) {
	r := u.Rules()
	req := aclRequest(r, cmd, args)
	return r.Check(&req)
}

// ---- permission checks ----

// aclUser returns the client's user (the default user until it
// authenticates as another).
func (c *Client) aclUser() *acl.User {
	if u := c.user.Load(); u != nil {
		return u
	}
	return c.srv.cfg.ACL.Default()
}

// aclPermit is the dispatch-time check for a client whose user is
// restricted (or not yet resolved): it replies NOPERM and returns false
// when the command is denied.
func (c *Client) aclPermit(cmd *Command, args [][]byte) bool {
	u := c.user.Load()
	if u == nil {
		u = c.srv.cfg.ACL.Default()
		c.user.Store(u)
		if !u.Restricted() {
			return true
		}
	}
	if c.tx != nil && cmd.Flags&cmdspec.NoMulti != 0 {
		return true // refused by the MULTI check, as Redis does first
	}
	res, pos := aclCheck(u, cmd, args)
	if res == acl.OK {
		return true
	}
	ctx := acl.Toplevel
	if c.tx != nil {
		ctx = acl.Multi
	}
	c.srv.aclLog(c, u.Name(), res, ctx, cmd, args, pos)
	switch res {
	case acl.DeniedCommand:
		c.rejectCmd(cmd, "NOPERM this user has no permissions to run the '"+cmd.Name+"' command")
	case acl.DeniedKey:
		c.rejectCmd(cmd, "NOPERM this user has no permissions to access one of the keys used as arguments")
	case acl.DeniedChannel:
		c.rejectCmd(cmd, "NOPERM this user has no permissions to access one of the channels used as arguments")
	}
	return false
}

// aclExecPermit re-checks a queued command at EXEC time.
func (c *Client) aclExecPermit(cmd *Command, args [][]byte) bool {
	u := c.aclUser()
	res, pos := aclCheck(u, cmd, args)
	if res == acl.OK {
		return true
	}
	c.srv.aclLog(c, u.Name(), res, acl.Multi, cmd, args, pos)
	reason := "no permission"
	switch res {
	case acl.DeniedCommand:
		reason = "no permission to execute the command or subcommand"
	case acl.DeniedKey:
		reason = "no permission to touch the specified keys"
	case acl.DeniedChannel:
		reason = "no permission to access one of the channels used as arguments"
	}
	c.w.Error("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + reason)
	return false
}

// aclScriptDenied is the check of redis.call from a script run by caller:
// "" when allowed, else the error for the script.
func (c *Client) aclScriptDenied(caller *Client, cmd *Command, args [][]byte) string {
	u := caller.aclUser()
	if !u.Restricted() {
		return ""
	}
	res, pos := aclCheck(u, cmd, args)
	if res == acl.OK {
		return ""
	}
	c.srv.aclLog(caller, u.Name(), res, acl.Lua, cmd, args, pos)
	return "The user executing the script " + res.ErrorMessage()
}

// aclCheckCmd is redis.acl_check_cmd: whether the script's caller may run
// args; ok is false when the command does not exist.
func (c *Client) aclCheckCmd(caller *Client, args [][]byte) (allowed, ok bool) {
	cmd := c.srv.lookupCommand(args[0])
	if cmd != nil && cmd.sub != nil && len(args) >= 2 {
		cmd = cmd.lookupSub(args[1])
	}
	if cmd == nil {
		return false, false
	}
	if caller == nil {
		return true, true
	}
	res, _ := aclCheck(caller.aclUser(), cmd, args)
	return res == acl.OK, true
}

// aclSortAllowed is SORT's check for BY and GET patterns: they need read
// access to every key.
func (c *Client) aclSortAllowed(args [][]byte) bool {
	if c.cur == nil {
		return true
	}
	u := c.aclUser()
	if !u.Restricted() {
		return true
	}
	r := u.Rules()
	req := aclRequest(r, c.cur, args)
	return r.UnrestrictedKeys(&req, acl.Read)
}

// ---- authentication ----

// authenticate is ACLAuthenticateUser: on success the client is logged in
// as the user; a failure is logged in the ACL log.
func (c *Client) authenticate(user, pass []byte, args [][]byte) bool {
	if u := c.srv.cfg.ACL.Authenticate(user, pass); u != nil {
		c.authed = true
		c.implicitAuth = false
		c.p.AuthRequired = false
		c.user.Store(u)
		return true
	}
	ctx := acl.Toplevel
	if c.tx != nil {
		ctx = acl.Multi
	}
	c.srv.aclLogEntry(c, string(user), acl.DeniedAuth, ctx, string(args[0]), c.cur, c.curArgs)
	return false
}

// ---- ACL LOG ----

// aclLog logs a denied command of real (the script's caller for a
// script's call).
func (s *Server) aclLog(real *Client, username string, res acl.Reason, ctx acl.Context, cmd *Command, args [][]byte, pos int) {
	obj := cmd.Name
	if res == acl.DeniedKey || res == acl.DeniedChannel {
		obj = string(args[pos])
	}
	s.aclLogEntry(real, username, res, ctx, obj, cmd, args)
}

func (s *Server) aclLogEntry(real *Client, username string, res acl.Reason, ctx acl.Context, obj string, cmd *Command, args [][]byte) {
	cur := real.cur
	if cur == nil {
		cur = cmd
	}
	cinfo := string(real.appendClientInfo(nil, real, cur, args))
	maxLen, _ := strconv.ParseInt(s.cfg.Get("acllog-max-len"), 10, 64)
	s.cfg.ACL.AddLog(acl.LogEntry{Reason: res, Context: ctx, Object: obj, Username: username, Time: time.Now().UnixMilli(), ClientInfo: cinfo}, maxLen)
}

// ---- killing clients ----

// aclUsersChanged is the acl store's OnChange: the connections of deleted
// users close, and those of a user that lost channels when subscribed to
// one. The client that made the change (the origin) closes after its
// reply.
func (s *Server) aclUsersChanged(ch acl.Change) {
	self, _ := ch.Origin.(*Client)
	if len(ch.Deleted) > 0 {
		gone := map[*acl.User]bool{}
		for _, u := range ch.Deleted {
			gone[u] = true
		}
		s.killUserClients(self, gone)
	}
	if ch.User != nil {
		s.killPubsubClients(self, ch.User, ch.Channels)
	}
}

// killUserClients closes the connections authenticated as users. self,
// when among them, is closed after its reply.
func (s *Server) killUserClients(self *Client, users map[*acl.User]bool) {
	for _, t := range s.clientsSnapshot() {
		if !users[t.aclUser()] {
			continue
		}
		t.authed = t == self && t.authed
		if t == self {
			t.closeAfterReply = true
		} else {
			t.aclKilled.Store(true)
			t.killNow()
		}
	}
}

// killPubsubClients is the end of ACLKillPubsubClientsIfNeeded: u's
// subscribers to channels its rules no longer allow are disconnected.
func (s *Server) killPubsubClients(self *Client, u *acl.User, allowed *acl.Channels) {
	// The registry says who subscribes to what (a client's own maps
	// belong to its goroutine).
	kill := map[*Client]bool{}
	s.pubsub.Each(func(t *Client, k pubsub.Kind, name string) {
		if !kill[t] && t.aclUser() == u && !allowed.Allows([]byte(name), k == pubsub.Pattern) {
			kill[t] = true
		}
	})
	for t := range kill {
		if t == self {
			t.closeAfterReply = true
			continue
		}
		t.aclKilled.Store(true)
		t.killNow()
	}
}

// ---- the ACL command ----

func aclWhoamiCommand(c *Client, args [][]byte) { c.w.BulkString(c.aclUser().Name()) }

func aclSetuserCommand(c *Client, args [][]byte) {
	ops := make([]string, 0, len(args)-3)
	for _, a := range args[3:] {
		ops = append(ops, string(a))
	}
	if err := c.srv.cfg.ACL.SetUser(string(args[2]), ops, c); err != nil {
		c.w.Error("ERR " + err.Error())
		return
	}
	c.w.OK()
}

func aclDeluserCommand(c *Client, args [][]byte) {
	names := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		names = append(names, string(a))
	}
	n, err := c.srv.cfg.ACL.DeleteUsers(names, c)
	if err != nil {
		c.w.Error("ERR " + err.Error())
		return
	}
	c.w.Int(int64(n))
}

func (c *Client) replySelector(s acl.SelectorInfo) {
	c.w.BulkString("commands")
	c.w.BulkString(s.Commands)
	c.w.BulkString("keys")
	c.w.BulkString(s.Keys)
	c.w.BulkString("channels")
	c.w.BulkString(s.Channels)
}

func aclGetuserCommand(c *Client, args [][]byte) {
	u := c.srv.cfg.ACL.User(string(args[2]))
	if u == nil {
		c.w.Null()
		return
	}
	info := u.Rules().Info()
	c.w.Map(6)
	c.w.BulkString("flags")
	c.w.Set(len(info.Flags))
	for _, f := range info.Flags {
		c.w.BulkString(f)
	}
	c.w.BulkString("passwords")
	c.w.Array(len(info.Passwords))
	for _, p := range info.Passwords {
		c.w.BulkString(p)
	}
	c.replySelector(info.SelectorInfo)
	c.w.BulkString("selectors")
	c.w.Array(len(info.Selectors))
	for _, s := range info.Selectors {
		c.w.Map(3)
		c.replySelector(s)
	}
}

func aclListCommand(c *Client, args [][]byte)  { aclListGeneric(c, args, false) }
func aclUsersCommand(c *Client, args [][]byte) { aclListGeneric(c, args, true) }

func aclListGeneric(c *Client, args [][]byte, names bool) {
	users := c.srv.cfg.ACL.Users()
	c.w.Array(len(users))
	for _, u := range users {
		if names {
			c.w.BulkString(u.Name())
		} else {
			c.w.BulkString("user " + u.Name() + " " + u.Rules().Describe())
		}
	}
}

func aclCatCommand(c *Client, args [][]byte) {
	switch len(args) {
	case 2:
		cats := acl.Categories()
		c.w.Array(len(cats))
		for _, cat := range cats {
			c.w.BulkString(cat)
		}
	case 3:
		cat := acl.CategoryIndex(string(args[2]))
		if cat < 0 {
			c.w.Error("ERR Unknown category '" + trunc(string(args[2]), 128) + "'")
			return
		}
		names := c.srv.cfg.ACL.Commands().InCategory(cat)
		c.w.Array(len(names))
		for _, n := range names {
			c.w.BulkString(n)
		}
	default:
		c.subcommandSyntaxError(args)
	}
}

func aclGenpassCommand(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.subcommandSyntaxError(args)
		return
	}
	bits := int64(256)
	if len(args) == 3 {
		n, ok := c.intArg(args[2])
		if !ok {
			return
		}
		bits = n
	}
	if bits <= 0 || bits > 4096 {
		c.w.Error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
		return
	}
	c.w.BulkString(acl.GeneratePassword(int(bits)))
}

func aclLogCommand(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.subcommandSyntaxError(args)
		return
	}
	a := c.srv.cfg.ACL
	count := int64(10)
	if len(args) == 3 {
		if eq(args[2], "reset") {
			a.ResetLog()
			c.w.OK()
			return
		}
		n, ok := c.intArg(args[2])
		if !ok {
			return
		}
		count = max(n, 0)
	}
	entries := a.Log(int(min(count, 1<<31)))
	now := time.Now().UnixMilli()
	c.w.Array(len(entries))
	for _, e := range entries {
		c.w.Map(7)
		c.w.BulkString("count")
		c.w.Int(e.Count)
		c.w.BulkString("reason")
		c.w.BulkString(e.Reason.String())
		c.w.BulkString("context")
		c.w.BulkString(e.Context.String())
		c.w.BulkString("object")
		c.w.BulkString(e.Object)
		c.w.BulkString("username")
		c.w.BulkString(e.Username)
		c.w.BulkString("age-seconds")
		c.w.Double(float64(now-e.Time) / 1000)
		c.w.BulkString("client-info")
		c.w.BulkString(e.ClientInfo)
	}
}

func aclDryrunCommand(c *Client, args [][]byte) {
	u := c.srv.cfg.ACL.User(string(args[2]))
	if u == nil {
		c.w.Error("ERR User '" + cstr(args[2]) + "' not found")
		return
	}
	cargs := args[3:]
	cmd := c.srv.lookupCommand(cargs[0])
	if cmd != nil && cmd.sub != nil && len(cargs) >= 2 {
		cmd = cmd.lookupSub(cargs[1])
	}
	if cmd == nil {
		c.w.Error("ERR Command '" + cstr(args[3]) + "' not found")
		return
	}
	if !cmd.checkArity(len(cargs)) {
		c.w.Error("ERR wrong number of arguments for '" + cmd.Name + "' command")
		return
	}
	res, pos := aclCheck(u, cmd, cargs)
	switch res {
	case acl.OK:
		c.w.OK()
	case acl.DeniedCommand:
		c.w.BulkString("This user has no permissions to run the '" + cmd.Name + "' command")
	case acl.DeniedKey:
		c.w.BulkString("This user has no permissions to access the '" + string(cargs[pos]) + "' key")
	case acl.DeniedChannel:
		c.w.BulkString("This user has no permissions to access the '" + string(cargs[pos]) + "' channel")
	}
}

var aclHelp = []string{
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
}

func aclHelpCommand(c *Client, args [][]byte) { c.replyHelp(args[0], aclHelp) }

const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

func aclLoadCommand(c *Client, args [][]byte) {
	file := c.srv.cfg.Get("aclfile")
	if file == "" {
		c.w.Error(errNoACLFile)
		return
	}
	if err := c.srv.aclLoadFile(c, file); err != "" {
		c.w.Error("ERR " + err)
		return
	}
	c.w.OK()
}

func aclSaveCommand(c *Client, args [][]byte) {
	file := c.srv.cfg.Get("aclfile")
	if file == "" {
		c.w.Error(errNoACLFile)
		return
	}
	tmp := fmt.Sprintf("%s.tmp-%d-%d", file, os.Getpid(), time.Now().UnixMilli())
	err := os.WriteFile(tmp, c.srv.cfg.ACL.Marshal(), 0644)
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		os.Remove(tmp)
		c.srv.Warnf("Writing ACL file for ACL SAVE: %v", err)
		c.w.Error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
		return
	}
	c.w.OK()
}

// aclLoadFile is ACLLoadFromFile: all users of the file replace the
// current ones, or nothing changes. It returns "" or the errors found.
func (s *Server) aclLoadFile(self *Client, file string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Sprintf("Error loading ACLs, opening file '%s': %s", file, strerror(err))
	}
	if err := s.cfg.ACL.Load(file, data, self); err != nil {
		return err.Error()
	}
	return ""
}

// ---- configuration ----

// wireACL registers the server for changes of users and loads the users
// of the config file's "user" directives and of aclfile, as Redis does
// once it starts.
func (s *Server) wireACL() {
	a := s.cfg.ACL
	a.OnChange(s.aclUsersChanged)
	file := s.cfg.Get("aclfile")
	if a.HasConfigUsers() && file != "" {
		s.Warnf("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.")
	}
	for _, w := range a.ApplyConfigUsers() {
		s.Warnf("%s", w)
	}
	if file != "" {
		if err := s.aclLoadFile(nil, file); err != "" {
			s.Warnf("Aborting Redis startup because of ACL errors: %s", err)
		}
	}
}
