package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/store"
)

// ACL users and permissions, as Redis 7.0 has them.
//
// A user's rules are an immutable snapshot (aclRules) swapped atomically:
// ACL SETUSER builds a new one and publishes it, so the permission check
// reads them without a lock. A user whose only selector allows every
// command, key and channel is "open": the dispatch path tests that single
// flag and goes on; everything else here runs only for restricted users.

func init() {
	sub := func(name string, arity int, flags []string, fn func(*Client, [][]byte)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, Group: "server", Since: "6.0.0", Fn: fn}
	}
	adm := []string{"admin", "noscript", "loading", "stale", "sentinel"}
	plain := []string{"noscript", "loading", "stale", "sentinel"}
	register(&Command{Name: "acl", Arity: -2, Flags: []string{"sentinel"}, Group: "server", Since: "6.0.0",
		Summary: "A container for Access List Control commands ", Complexity: "Depends on subcommand.",
		Subs: []*Command{
			sub("cat", -2, plain, aclCatCmd),
			sub("deluser", -3, adm, aclDeluserCmd),
			sub("dryrun", -4, adm, aclDryrunCmd),
			sub("genpass", -2, plain, aclGenpassCmd),
			sub("getuser", 3, adm, aclGetuserCmd),
			sub("help", 2, []string{"loading", "stale", "sentinel"}, aclHelpCmd),
			sub("list", 2, adm, func(c *Client, a [][]byte) { aclListCmd(c, a, false) }),
			sub("load", 2, adm, aclLoadCmd),
			sub("log", -2, adm, aclLogCmd),
			sub("save", 2, adm, aclSaveCmd),
			sub("setuser", -3, adm, aclSetuserCmd),
			sub("users", 2, adm, func(c *Client, a [][]byte) { aclListCmd(c, a, true) }),
			sub("whoami", 2, plain, aclWhoamiCmd),
		}})
	for _, s := range commands["acl"].Subs {
		if d := redisDoc(s.Name); d != nil {
			s.Summary, s.Complexity, s.Since = d.Summary, d.Complexity, d.Since
		}
	}
}

// Results of a permission check (Redis's ACL_* values: the larger wins
// when selectors disagree).
const (
	aclOK            = 0
	aclDeniedCmd     = 1
	aclDeniedKey     = 2
	aclDeniedAuth    = 3
	aclDeniedChannel = 4
)

// Contexts of ACL LOG entries.
const (
	aclCtxToplevel = iota
	aclCtxMulti
	aclCtxLua
)

// User flags, in the order ACL LIST and GETUSER show them.
const (
	uflagEnabled = 1 << iota
	uflagDisabled
	uflagNopass
	uflagSkipSanitize
	uflagSanitize
)

var userFlagNames = []struct {
	name string
	flag int
}{{"on", uflagEnabled}, {"off", uflagDisabled}, {"nopass", uflagNopass}, {"skip-sanitize-payload", uflagSkipSanitize}, {"sanitize-payload", uflagSanitize}}

// Selector flags.
const (
	selRoot = 1 << iota
	selAllKeys
	selAllChannels
	selAllCommands
)

// Key pattern permissions.
const (
	aclRead  = 1
	aclWrite = 2
	aclAll   = aclRead | aclWrite
)

type aclKeyPattern struct {
	pat   string
	perms int
}

// aclSelector is one set of permissions: a user has a root selector and
// any number of added ones; a command runs if any selector allows it.
type aclSelector struct {
	flags     int
	allowed   []uint64         // by command id; the last bit: "future commands" (+@all)
	firstArgs map[int][]string // allowed first arguments of otherwise denied commands
	keys      []aclKeyPattern
	channels  []string
}

type aclRules struct {
	flags     int
	passwords []string // SHA-256 hex
	selectors []*aclSelector
}

type aclUser struct {
	name       string
	restricted atomic.Bool // not open: the dispatch check must look
	rules      atomic.Pointer[aclRules]
	deleted    atomic.Bool
}

func (u *aclUser) get() *aclRules { return u.rules.Load() }

func (u *aclUser) set(r *aclRules) {
	u.rules.Store(r)
	root := r.selectors[0]
	open := len(r.selectors) == 1 && root.flags&(selAllKeys|selAllChannels|selAllCommands) == selAllKeys|selAllChannels|selAllCommands
	u.restricted.Store(!open || u.deleted.Load())
}

type aclLogEntry struct {
	count    int64
	reason   int
	context  int
	object   string
	username string
	ctime    int64 // unix ms
	cinfo    string
}

// aclState is one server's users and ACL log. It lives in the server's
// Config, which requirepass and the "user" directive reach before the
// server exists.
type aclState struct {
	cfg          *Config
	mu           sync.Mutex
	users        map[string]*aclUser
	def          *aclUser
	log          []*aclLogEntry // newest first
	pending      [][]string     // "user" directives of the config, loaded at start
	authRequired atomic.Bool    // the default user has a password or is off
}

func newACLState(cfg *Config) *aclState {
	a := &aclState{cfg: cfg, users: map[string]*aclUser{}}
	a.def = a.createUser("default")
	a.def.set(a.defaultRules())
	a.users["default"] = a.def
	return a
}

// defaultRules are the default user's: on nopass ~* &* +@all.
func (a *aclState) defaultRules() *aclRules {
	r := a.newRules()
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		a.setUser(r, op)
	}
	return r
}

func (a *aclState) createUser(name string) *aclUser {
	u := &aclUser{name: name}
	u.set(a.newRules())
	return u
}

func (a *aclState) newRules() *aclRules {
	return &aclRules{flags: uflagDisabled, selectors: []*aclSelector{a.newSelector(selRoot)}}
}

func (a *aclState) pubsubDefault() int {
	if a.cfg == nil {
		return 0
	}
	// Read directly: Get would make an initialization cycle through
	// requirepass's setter.
	a.cfg.mu.RLock()
	v := a.cfg.vals["acl-pubsub-default"]
	a.cfg.mu.RUnlock()
	if v == "allchannels" {
		return selAllChannels
	}
	return 0
}

func (a *aclState) newSelector(flags int) *aclSelector {
	aclInit()
	return &aclSelector{flags: flags | a.pubsubDefault(), allowed: make([]uint64, aclWords)}
}

func (a *aclState) updateAuthRequired() {
	r := a.def.get()
	a.authRequired.Store(r.flags&uflagNopass == 0 || r.flags&uflagDisabled != 0)
}

// user returns the user named name, or nil.
func (a *aclState) user(name string) *aclUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[name]
}

func (a *aclState) sortedUsers() []*aclUser {
	a.mu.Lock()
	out := make([]*aclUser, 0, len(a.users))
	for _, u := range a.users {
		out = append(out, u)
	}
	a.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// setRequirePass is requirepass: it sets the default user's only
// password, or makes it nopass when empty.
func (a *aclState) setRequirePass(pass string) {
	a.mu.Lock()
	r := a.def.get().clone()
	a.setUser(r, "resetpass")
	if pass != "" {
		a.setUser(r, ">"+pass)
	} else {
		a.setUser(r, "nopass")
	}
	a.def.set(r)
	a.updateAuthRequired()
	a.mu.Unlock()
}

// ---- the command table, as ACLs see it ----

type aclKeySpec struct {
	flags                  int // keyspec flags (ks*)
	bsType                 int // 1 index, 2 keyword, 0 unknown
	index                  int
	keyword                string
	startFrom              int
	fkType                 int // 1 range, 2 keynum, 0 unknown
	lastKey, keyStep, lim  int
	keyNumIdx, firstKey, _ int
}

const (
	ksRO = 1 << iota
	ksRW
	ksOW
	ksRM
	ksAccess
	ksUpdate
	ksInsert
	ksDelete
	ksNotKey
	ksIncomplete
	ksVariable
)

var keySpecFlagBits = map[string]int{"RO": ksRO, "RW": ksRW, "OW": ksOW, "RM": ksRM, "access": ksAccess, "update": ksUpdate, "insert": ksInsert, "delete": ksDelete, "not_key": ksNotKey, "incomplete": ksIncomplete, "variable_flags": ksVariable}

type aclCmdInfo struct {
	cats     uint32
	specs    []aclKeySpec
	useSpecs bool // key specs are complete enough to be used first
	hasKeys  bool
	chans    int // channel flags (chanSubscribe...), 0: none
	chanOne  bool
}

const (
	chanSubscribe = 1 << iota
	chanUnsubscribe
	chanPublish
	chanPattern
)

var (
	aclOnce   sync.Once
	aclInfos  []aclCmdInfo
	aclWords  int
	aclFuture int        // the "future commands" bit
	aclOrder  []*Command // top-level commands by name, each followed by its subcommands
)

func aclCatIndex(name string) int {
	for i, c := range aclCategories {
		if strings.EqualFold(c, name) {
			return i
		}
	}
	return -1
}

func aclInit() {
	aclOnce.Do(func() {
		aclInfos = make([]aclCmdInfo, len(cmdList))
		aclFuture = len(cmdList)
		aclWords = aclFuture/64 + 1
		for _, cmd := range sortedCommands() {
			aclOrder = append(aclOrder, cmd)
			if len(cmd.Subs) > 0 {
				aclOrder = append(aclOrder, sortedSubs(cmd)...)
			}
		}
		for _, cmd := range cmdList {
			info := &aclInfos[cmd.id]
			doc := redisDoc(cmd.Name)
			for _, cat := range cmd.aclCats(doc) {
				if i := aclCatIndex(cat); i >= 0 {
					info.cats |= 1 << i
				}
			}
			varFlags := false
			for _, ks := range keySpecsOf(cmd, doc) {
				var s aclKeySpec
				for _, f := range ks.Flags {
					s.flags |= keySpecFlagBits[f]
				}
				if s.flags&ksVariable != 0 {
					varFlags = true
				}
				switch ks.BS.Type {
				case "index":
					s.bsType, s.index = 1, ks.BS.Index
				case "keyword":
					s.bsType, s.keyword, s.startFrom = 2, ks.BS.Keyword, ks.BS.StartFrom
				}
				switch ks.FK.Type {
				case "range":
					s.fkType, s.lastKey, s.keyStep, s.lim = 1, ks.FK.A, ks.FK.B, ks.FK.C
				case "keynum":
					s.fkType, s.keyNumIdx, s.firstKey, s.keyStep = 2, ks.FK.A, ks.FK.B, ks.FK.C
				}
				info.specs = append(info.specs, s)
			}
			info.useSpecs = len(info.specs) > 0 && !varFlags
			info.hasKeys = len(info.specs) > 0 || cmd.Keys != nil
			switch cmd.Name {
			case "subscribe", "ssubscribe":
				info.chans = chanSubscribe
			case "unsubscribe", "sunsubscribe":
				info.chans = chanUnsubscribe
			case "psubscribe":
				info.chans = chanPattern | chanSubscribe
			case "punsubscribe":
				info.chans = chanPattern | chanUnsubscribe
			case "publish", "spublish":
				info.chans, info.chanOne = chanPublish, true
			}
		}
	})
}

// aclLookup finds a command by "name" or "name|sub" (Redis's
// ACLLookupCommand): nil when there is none.
func aclLookup(name string) *Command {
	name = strings.ToLower(name)
	parts := strings.Split(name, "|")
	if len(parts) > 2 {
		return nil
	}
	cmd := commands[parts[0]]
	if cmd == nil {
		return nil
	}
	if len(parts) == 2 {
		if cmd.sub == nil {
			return nil
		}
		return cmd.sub[parts[1]]
	}
	return cmd
}

// ---- selectors ----

func (s *aclSelector) clone() *aclSelector {
	n := &aclSelector{flags: s.flags, allowed: append([]uint64(nil), s.allowed...)}
	n.keys = append(n.keys, s.keys...)
	n.channels = append(n.channels, s.channels...)
	if s.firstArgs != nil {
		n.firstArgs = map[int][]string{}
		for k, v := range s.firstArgs {
			n.firstArgs[k] = append([]string(nil), v...)
		}
	}
	return n
}

func (r *aclRules) clone() *aclRules {
	n := &aclRules{flags: r.flags, passwords: append([]string(nil), r.passwords...)}
	for _, s := range r.selectors {
		n.selectors = append(n.selectors, s.clone())
	}
	return n
}

func (s *aclSelector) bit(id int) bool { return s.allowed[id/64]&(1<<(id%64)) != 0 }

func (s *aclSelector) setBit(id int, v bool) {
	if v {
		s.allowed[id/64] |= 1 << (id % 64)
	} else {
		s.allowed[id/64] &^= 1 << (id % 64)
		s.flags &^= selAllCommands
	}
}

// changePerm allows or denies a command, and a container's subcommands.
func (s *aclSelector) changePerm(cmd *Command, allow bool) {
	s.setBit(cmd.id, allow)
	delete(s.firstArgs, cmd.id)
	for _, sub := range cmd.Subs {
		s.setBit(sub.id, allow)
	}
}

func (s *aclSelector) setCategory(cat int, allow bool) {
	for _, cmd := range aclOrder {
		if aclInfos[cmd.id].cats&(1<<cat) != 0 {
			s.changePerm(cmd, allow)
		}
	}
}

func (s *aclSelector) countCategory(cat int) (on, off int) {
	for _, cmd := range aclOrder {
		if aclInfos[cmd.id].cats&(1<<cat) != 0 {
			if s.bit(cmd.id) {
				on++
			} else {
				off++
			}
		}
	}
	return
}

// Errors of ACL SETUSER rules (Redis's errno values).
const (
	aclErrSyntax = iota + 1
	aclErrUnknown
	aclErrKeysAfterAll
	aclErrChannelsAfterAll
	aclErrNoPass
	aclErrBadHash
	aclErrDuplicate
	aclErrFirstArgSub
)

func aclErrorText(e int) string {
	switch e {
	case aclErrUnknown:
		return "Unknown command or category name in ACL"
	case aclErrSyntax:
		return "Syntax error"
	case aclErrKeysAfterAll:
		return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	case aclErrChannelsAfterAll:
		return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	case aclErrNoPass:
		return "The password you are trying to remove from the user does not exist"
	case aclErrBadHash:
		return "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	case aclErrDuplicate:
		return "Duplicate user found. A user can only be defined once in config files"
	case aclErrFirstArgSub:
		return "Allowing first-arg of a subcommand is not supported"
	}
	return "Wrong format"
}

func hasSpaces(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

// setSelector applies one selector rule (Redis's ACLSetSelector); it
// returns 0 or an aclErr* code.
func (s *aclSelector) apply(op string) int {
	switch {
	case strings.EqualFold(op, "allkeys") || op == "~*":
		s.flags |= selAllKeys
		s.keys = nil
	case strings.EqualFold(op, "resetkeys"):
		s.flags &^= selAllKeys
		s.keys = nil
	case strings.EqualFold(op, "allchannels") || op == "&*":
		s.flags |= selAllChannels
		s.channels = nil
	case strings.EqualFold(op, "resetchannels"):
		s.flags &^= selAllChannels
		s.channels = nil
	case strings.EqualFold(op, "allcommands") || strings.EqualFold(op, "+@all"):
		for i := range s.allowed {
			s.allowed[i] = ^uint64(0)
		}
		s.flags |= selAllCommands
		s.firstArgs = nil
	case strings.EqualFold(op, "nocommands") || strings.EqualFold(op, "-@all"):
		clear(s.allowed)
		s.flags &^= selAllCommands
		s.firstArgs = nil
	case op[0] == '~' || op[0] == '%':
		if s.flags&selAllKeys != 0 {
			return aclErrKeysAfterAll
		}
		perms, off := 0, 1
		if op[0] == '%' {
			for ; off < len(op); off++ {
				ch := op[off]
				if (ch == 'R' || ch == 'r') && perms&aclRead == 0 {
					perms |= aclRead
				} else if (ch == 'W' || ch == 'w') && perms&aclWrite == 0 {
					perms |= aclWrite
				} else if ch == '~' {
					off++
					break
				} else {
					return aclErrSyntax
				}
			}
			if perms == 0 {
				return aclErrSyntax
			}
		} else {
			perms = aclAll
		}
		pat := op[off:]
		if hasSpaces(pat) {
			return aclErrSyntax
		}
		found := false
		for i := range s.keys {
			if s.keys[i].pat == pat {
				s.keys[i].perms |= perms
				found = true
			}
		}
		if !found {
			s.keys = append(s.keys, aclKeyPattern{pat, perms})
		}
		s.flags &^= selAllKeys
	case op[0] == '&':
		if s.flags&selAllChannels != 0 {
			return aclErrChannelsAfterAll
		}
		pat := op[1:]
		if hasSpaces(pat) {
			return aclErrSyntax
		}
		found := false
		for _, c := range s.channels {
			if c == pat {
				found = true
			}
		}
		if !found {
			s.channels = append(s.channels, pat)
		}
		s.flags &^= selAllChannels
	case op[0] == '+' && (len(op) < 2 || op[1] != '@'):
		name := op[1:]
		i := strings.LastIndexByte(name, '|')
		if i < 0 {
			cmd := aclLookup(name)
			if cmd == nil {
				return aclErrUnknown
			}
			s.changePerm(cmd, true)
			return 0
		}
		base, arg := name[:i], name[i+1:]
		cmd := aclLookup(base)
		if cmd == nil {
			return aclErrUnknown
		}
		if cmd.parent != nil {
			return aclErrFirstArgSub
		}
		if arg == "" {
			return aclErrSyntax
		}
		if cmd.sub != nil {
			sub := aclLookup(name)
			if sub == nil {
				return aclErrUnknown
			}
			s.changePerm(sub, true)
			return 0
		}
		if s.firstArgs == nil {
			s.firstArgs = map[int][]string{}
		}
		for _, a := range s.firstArgs[cmd.id] {
			if strings.EqualFold(a, arg) {
				return 0
			}
		}
		s.firstArgs[cmd.id] = append(s.firstArgs[cmd.id], arg)
	case op[0] == '-' && (len(op) < 2 || op[1] != '@'):
		cmd := aclLookup(op[1:])
		if cmd == nil {
			return aclErrUnknown
		}
		s.changePerm(cmd, false)
	case (op[0] == '+' || op[0] == '-') && op[1] == '@':
		cat := aclCatIndex(op[2:])
		if cat < 0 {
			return aclErrUnknown
		}
		s.setCategory(cat, op[0] == '+')
	default:
		return aclErrSyntax
	}
	return 0
}

func hashPassword(p string) string {
	h := sha256.Sum256([]byte(p))
	return hex.EncodeToString(h[:])
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < 'a' || c > 'f') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// setUser applies one rule to r (Redis's ACLSetUser): 0 or an aclErr*.
func (a *aclState) setUser(r *aclRules, op string) int {
	if op == "" {
		return 0
	}
	switch {
	case strings.EqualFold(op, "on"):
		r.flags = r.flags&^uflagDisabled | uflagEnabled
	case strings.EqualFold(op, "off"):
		r.flags = r.flags&^uflagEnabled | uflagDisabled
	case strings.EqualFold(op, "skip-sanitize-payload"):
		r.flags = r.flags&^uflagSanitize | uflagSkipSanitize
	case strings.EqualFold(op, "sanitize-payload"):
		r.flags = r.flags&^uflagSkipSanitize | uflagSanitize
	case strings.EqualFold(op, "nopass"):
		r.flags |= uflagNopass
		r.passwords = nil
	case strings.EqualFold(op, "resetpass"):
		r.flags &^= uflagNopass
		r.passwords = nil
	case op[0] == '>' || op[0] == '#':
		var h string
		if op[0] == '>' {
			h = hashPassword(op[1:])
		} else {
			if !validHash(op[1:]) {
				return aclErrBadHash
			}
			h = op[1:]
		}
		found := false
		for _, p := range r.passwords {
			if p == h {
				found = true
			}
		}
		if !found {
			r.passwords = append(r.passwords, h)
		}
		r.flags &^= uflagNopass
	case op[0] == '<' || op[0] == '!':
		var h string
		if op[0] == '<' {
			h = hashPassword(op[1:])
		} else {
			if !validHash(op[1:]) {
				return aclErrBadHash
			}
			h = op[1:]
		}
		for i, p := range r.passwords {
			if p == h {
				r.passwords = append(r.passwords[:i:i], r.passwords[i+1:]...)
				return 0
			}
		}
		return aclErrNoPass
	case op[0] == '(' && op[len(op)-1] == ')':
		s := a.newSelector(0)
		words, ok := splitConfigArgs(op[1 : len(op)-1])
		if !ok {
			return aclErrSyntax
		}
		for _, w := range words {
			if w == "" {
				continue
			}
			if e := s.apply(w); e != 0 {
				return e
			}
		}
		r.selectors = append(r.selectors, s)
	case strings.EqualFold(op, "clearselectors"):
		r.selectors = r.selectors[:1]
	case strings.EqualFold(op, "reset"):
		a.setUser(r, "resetpass")
		r.selectors[0].apply("resetkeys")
		r.selectors[0].apply("resetchannels")
		if a.pubsubDefault() != 0 {
			r.selectors[0].apply("allchannels")
		}
		a.setUser(r, "off")
		a.setUser(r, "sanitize-payload")
		r.selectors = r.selectors[:1]
		r.selectors[0].apply("-@all")
	default:
		return r.selectors[0].apply(op)
	}
	return 0
}

// mergeSelectorArgs joins selectors spread over several arguments
// ("(+get" "~k)"); ok is false for an unmatched parenthesis (bad: its
// first argument).
func mergeSelectorArgs(args []string) (out []string, bad string, ok bool) {
	open := -1
	var sel string
	for j, op := range args {
		if open < 0 && len(op) > 0 && op[0] == '(' && op[len(op)-1] != ')' {
			sel, open = op, j
			continue
		}
		if open >= 0 {
			sel += " " + op
			if len(op) > 0 && op[len(op)-1] == ')' {
				open = -1
				out = append(out, sel)
			}
			continue
		}
		out = append(out, op)
	}
	if open >= 0 {
		return nil, args[open], false
	}
	return out, "", true
}

// setUserRules applies ACL SETUSER's rules to the user named name
// (created when missing), all or nothing. It returns "" or the error.
func (a *aclState) setUserRules(srv *Server, self *Client, name string, ops []string) string {
	merged, bad, ok := mergeSelectorArgs(ops)
	if !ok {
		return "Unmatched parenthesis in acl selector starting at '" + bad + "'."
	}
	a.mu.Lock()
	u := a.users[name]
	var r *aclRules
	if u != nil {
		r = u.get().clone()
	} else {
		r = a.newRules()
	}
	for _, op := range merged {
		if e := a.setUser(r, op); e != 0 {
			a.mu.Unlock()
			return "Error in ACL SETUSER modifier '" + op + "': " + aclErrorText(e)
		}
	}
	var old *aclRules
	if u == nil {
		u = &aclUser{name: name}
		a.users[name] = u
	} else {
		old = u.get()
	}
	u.set(r)
	if u == a.def {
		a.updateAuthRequired()
	}
	a.mu.Unlock()
	if old != nil && srv != nil {
		srv.killPubsubIfNeeded(self, u, old, r)
	}
	return ""
}

// ---- describing users ----

func (s *aclSelector) describeCommands() string {
	var b strings.Builder
	additive := !s.bit(aclFuture)
	fake := &aclSelector{allowed: make([]uint64, aclWords)}
	if additive {
		b.WriteString("-@all ")
		fake.apply("-@all")
	} else {
		b.WriteString("+@all ")
		fake.apply("+@all")
	}
	temp := &aclSelector{allowed: append([]uint64(nil), s.allowed...)}
	applied := make([]bool, len(aclCategories))
	for {
		best, minDiff, maxSame := -1, int(^uint(0)>>1), 0
		for j := range aclCategories {
			if applied[j] {
				continue
			}
			on, off := temp.countCategory(j)
			diff, same := off, on
			if !additive {
				diff, same = on, off
			}
			if same > diff && (diff < minDiff || diff == minDiff && same > maxSame) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		fake.setCategory(best, additive)
		temp.setCategory(best, !additive)
		if additive {
			b.WriteString("+@")
		} else {
			b.WriteString("-@")
		}
		b.WriteString(aclCategories[best])
		b.WriteByte(' ')
		applied[best] = true
	}
	var single func(cmds []*Command)
	single = func(cmds []*Command) {
		for _, cmd := range cmds {
			ub, fb := s.bit(cmd.id), fake.bit(cmd.id)
			if ub != fb {
				if ub {
					b.WriteByte('+')
				} else {
					b.WriteByte('-')
				}
				b.WriteString(cmd.Name)
				b.WriteByte(' ')
				fake.changePerm(cmd, ub)
			}
			if len(cmd.Subs) > 0 {
				single(sortedSubs(cmd))
			}
			if !ub {
				for _, arg := range s.firstArgs[cmd.id] {
					b.WriteString("+" + cmd.Name + "|" + arg + " ")
				}
			}
		}
	}
	single(sortedCommands())
	out := b.String()
	return out[:len(out)-1]
}

func (k aclKeyPattern) String() string {
	switch k.perms {
	case aclRead:
		return "%R~" + k.pat
	case aclWrite:
		return "%W~" + k.pat
	}
	return "~" + k.pat
}

func (s *aclSelector) describe() string {
	var b strings.Builder
	if s.flags&selAllKeys != 0 {
		b.WriteString("~* ")
	} else {
		for _, k := range s.keys {
			b.WriteString(k.String())
			b.WriteByte(' ')
		}
	}
	if s.flags&selAllChannels != 0 {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range s.channels {
			b.WriteString("&" + c + " ")
		}
	}
	b.WriteString(s.describeCommands())
	return b.String()
}

func (r *aclRules) describe() string {
	var b strings.Builder
	for _, f := range userFlagNames {
		if r.flags&f.flag != 0 {
			b.WriteString(f.name)
			b.WriteByte(' ')
		}
	}
	for _, p := range r.passwords {
		b.WriteString("#" + p + " ")
	}
	for i, s := range r.selectors {
		if i == 0 {
			b.WriteString(s.describe())
		} else {
			b.WriteString(" (" + s.describe() + ")")
		}
	}
	return b.String()
}

// ---- permission checks ----

type aclKeyRef struct{ pos, flags int }

// aclKeys returns the keys of a command with their key-spec flags, as
// Redis's getKeysFromCommandWithSpecs does.
func aclKeys(cmd *Command, args [][]byte) []aclKeyRef {
	info := &aclInfos[cmd.id]
	if info.useSpecs {
		if refs, ok := keysFromSpecs(cmd, info.specs, args); ok {
			return refs
		}
	}
	switch cmd.Name {
	case "set":
		fl := ksOW | ksUpdate
		for _, a := range args[3:] {
			if eq(a, "get") {
				fl = ksRW | ksAccess | ksUpdate
				break
			}
		}
		return []aclKeyRef{{1, fl}}
	case "bitfield":
		ro := true
		for i := 2; i < len(args); i++ {
			rem := len(args) - i - 1
			switch {
			case eq(args[i], "get") && rem >= 2:
				i += 2
				continue
			case (eq(args[i], "set") || eq(args[i], "incrby")) && rem >= 3:
				ro = false
			case eq(args[i], "overflow") && rem >= 1:
				i++
				continue
			default:
				ro = false
			}
			break
		}
		if ro {
			return []aclKeyRef{{1, ksRO | ksAccess}}
		}
		return []aclKeyRef{{1, ksRW | ksAccess | ksUpdate}}
	case "sort", "sort_ro":
		refs := []aclKeyRef{{1, ksRO | ksAccess}}
		if cmd.Name == "sort_ro" {
			return refs
		}
		store := -1
		for i := 2; i < len(args); i++ {
			switch {
			case eq(args[i], "limit"):
				i += 2
			case eq(args[i], "get"), eq(args[i], "by"):
				i++
			case eq(args[i], "store") && i+1 < len(args):
				store = i + 1
			}
		}
		if store > 0 {
			refs = append(refs, aclKeyRef{store, ksOW | ksUpdate})
		}
		return refs
	case "migrate":
		first, num := 3, 1
		if len(args) > 6 {
		scan:
			for i := 6; i < len(args); i++ {
				switch {
				case eq(args[i], "keys"):
					if len(args[3]) > 0 {
						num = 0
					} else {
						first = i + 1
						num = len(args) - first
					}
					break scan
				case eq(args[i], "auth"):
					i++
				case eq(args[i], "auth2"):
					i += 2
				}
			}
		}
		var refs []aclKeyRef
		for i := 0; i < num; i++ {
			refs = append(refs, aclKeyRef{first + i, ksRW | ksAccess | ksDelete})
		}
		return refs
	}
	if cmd.Keys == nil {
		return nil
	}
	var pos []int
	func() {
		defer func() {
			if recover() != nil {
				pos = nil
			}
		}()
		pos = cmd.Keys(args)
	}()
	refs := make([]aclKeyRef, 0, len(pos))
	for _, p := range pos {
		if p > 0 && p < len(args) {
			refs = append(refs, aclKeyRef{p, 0})
		}
	}
	return refs
}

// keysFromSpecs is Redis's getKeysUsingKeySpecs; ok is false when a spec
// cannot be used (incomplete, or the arguments do not fit it).
func keysFromSpecs(cmd *Command, specs []aclKeySpec, args [][]byte) ([]aclKeyRef, bool) {
	argc := len(args)
	var refs []aclKeyRef
	for _, s := range specs {
		if s.flags&ksNotKey != 0 {
			continue
		}
		first := 0
		switch s.bsType {
		case 1:
			first = s.index
		case 2:
			start, end := s.startFrom, 1
			if start > 0 {
				end = argc - 1
			} else {
				start = argc + start
			}
			for i := start; i != end; {
				if i >= argc || i < 1 {
					break
				}
				if strings.EqualFold(string(args[i]), s.keyword) {
					first = i + 1
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue
			}
		default:
			return nil, false
		}
		var last, step int
		switch s.fkType {
		case 1:
			step = s.keyStep
			if s.lastKey >= 0 {
				last = first + s.lastKey
			} else if s.lim == 0 {
				last = argc + s.lastKey
			} else {
				last = first + ((argc-first)/s.lim + s.lastKey)
			}
		case 2:
			step = s.keyStep
			if first+s.keyNumIdx >= argc {
				return nil, false
			}
			n, err := strconv.ParseInt(string(args[first+s.keyNumIdx]), 10, 64)
			if err != nil || n < 0 || n > int64(argc) {
				return nil, false
			}
			first += s.firstKey
			last = first + int(n) - 1
		default:
			return nil, false
		}
		if last >= argc || last < first || first >= argc || step <= 0 {
			return nil, false
		}
		for i := first; i <= last; i += step {
			refs = append(refs, aclKeyRef{i, s.flags})
		}
		if s.flags&ksIncomplete != 0 {
			return nil, false
		}
	}
	return refs, true
}

func keyPermsNeeded(flags int) int {
	p := 0
	if flags&ksAccess != 0 {
		p |= aclRead
	}
	if flags&(ksInsert|ksDelete|ksUpdate) != 0 {
		p |= aclWrite
	}
	return p
}

func (s *aclSelector) checkKey(key []byte, flags int) bool {
	if s.flags&selAllKeys != 0 {
		return true
	}
	need := keyPermsNeeded(flags)
	for _, k := range s.keys {
		if k.perms&need != need {
			continue
		}
		if store.MatchString([]byte(k.pat), string(key), false) {
			return true
		}
	}
	return false
}

func channelAllowed(list []string, ch []byte, isPattern bool) bool {
	for _, p := range list {
		if isPattern && p == string(ch) || !isPattern && store.MatchString([]byte(p), string(ch), false) {
			return true
		}
	}
	return false
}

// checkCmd is ACLSelectorCheckCmd: keys is computed once and shared
// between selectors.
func (s *aclSelector) checkCmd(cmd *Command, args [][]byte, keys *[]aclKeyRef, keysDone *bool) (int, int) {
	if s.flags&selAllCommands == 0 && cmd.flags&flagNoAuth == 0 && !s.bit(cmd.id) {
		fa := s.firstArgs[cmd.id]
		if len(args) < 2 || fa == nil {
			return aclDeniedCmd, 0
		}
		idx := 1
		if cmd.parent != nil {
			idx = 2
		}
		ok := false
		for _, a := range fa {
			if idx < len(args) && strings.EqualFold(a, string(args[idx])) {
				ok = true
				break
			}
		}
		if !ok {
			return aclDeniedCmd, 0
		}
	}
	info := &aclInfos[cmd.id]
	if s.flags&selAllKeys == 0 && info.hasKeys {
		if !*keysDone {
			*keys = aclKeys(cmd, args)
			*keysDone = true
		}
		for _, k := range *keys {
			if !s.checkKey(args[k.pos], k.flags) {
				return aclDeniedKey, k.pos
			}
		}
	}
	if s.flags&selAllChannels == 0 && info.chans&(chanPublish|chanSubscribe) != 0 {
		end := len(args)
		if info.chanOne && end > 2 {
			end = 2
		}
		for i := 1; i < end; i++ {
			if !channelAllowed(s.channels, args[i], info.chans&chanPattern != 0) {
				return aclDeniedChannel, i
			}
		}
	}
	return aclOK, 0
}

// check is ACLCheckAllUserCommandPerm: aclOK, or the reason and the
// position of the key or channel at fault.
func (r *aclRules) check(cmd *Command, args [][]byte) (int, int) {
	aclInit()
	var keys []aclKeyRef
	done := false
	res, last := aclDeniedCmd, 0
	for _, s := range r.selectors {
		got, pos := s.checkCmd(cmd, args, &keys, &done)
		if got == aclOK {
			return aclOK, 0
		}
		if got > res || got == res && pos > last {
			res, last = got, pos
		}
	}
	return res, last
}

// unrestrictedKeys is ACLUserCheckCmdWithUnrestrictedKeyAccess: whether a
// selector allows the command and every key for the access in flags.
func (r *aclRules) unrestrictedKeys(cmd *Command, args [][]byte, flags int) bool {
	aclInit()
	var keys []aclKeyRef
	done := false
	need := keyPermsNeeded(flags)
	for _, s := range r.selectors {
		if got, _ := s.checkCmd(cmd, args, &keys, &done); got != aclOK {
			continue
		}
		if s.flags&selAllKeys != 0 {
			return true
		}
		for _, k := range s.keys {
			if k.perms&need == need && k.pat == "*" {
				return true
			}
		}
	}
	return false
}

// aclUser returns the client's user (the default user until it
// authenticates as another).
func (c *Client) aclUser() *aclUser {
	if u := c.user.Load(); u != nil {
		return u
	}
	return c.srv.cfg.acl.def
}

// aclPermit is the dispatch-time check for a client whose user is not
// open (or not yet resolved): it replies NOPERM and returns false when
// the command is denied.
func (c *Client) aclPermit(cmd *Command, args [][]byte) bool {
	u := c.user.Load()
	if u == nil {
		u = c.srv.cfg.acl.def
		c.user.Store(u)
		if !u.restricted.Load() {
			return true
		}
	}
	if c.tx != nil && cmd.flags&flagNoMulti != 0 {
		return true // refused by the MULTI check, as Redis does first
	}
	res, pos := u.get().check(cmd, args)
	if res == aclOK {
		return true
	}
	ctx := aclCtxToplevel
	if c.tx != nil {
		ctx = aclCtxMulti
	}
	c.srv.aclLog(c, c, u.name, res, ctx, cmd, args, pos)
	switch res {
	case aclDeniedCmd:
		c.rejectCmd(cmd, "NOPERM this user has no permissions to run the '"+cmd.Name+"' command")
	case aclDeniedKey:
		c.rejectCmd(cmd, "NOPERM this user has no permissions to access one of the keys used as arguments")
	case aclDeniedChannel:
		c.rejectCmd(cmd, "NOPERM this user has no permissions to access one of the channels used as arguments")
	}
	return false
}

// aclExecPermit re-checks a queued command at EXEC time.
func (c *Client) aclExecPermit(cmd *Command, args [][]byte) bool {
	u := c.aclUser()
	res, pos := u.get().check(cmd, args)
	if res == aclOK {
		return true
	}
	c.srv.aclLog(c, c, u.name, res, aclCtxMulti, cmd, args, pos)
	reason := "no permission"
	switch res {
	case aclDeniedCmd:
		reason = "no permission to execute the command or subcommand"
	case aclDeniedKey:
		reason = "no permission to touch the specified keys"
	case aclDeniedChannel:
		reason = "no permission to access one of the channels used as arguments"
	}
	c.w.Error("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + reason)
	return false
}

// aclScriptDenied is the check of redis.call from a script run by caller:
// "" when allowed, else the error for the script.
func (c *Client) aclScriptDenied(caller *Client, cmd *Command, args [][]byte) string {
	u := caller.aclUser()
	if !u.restricted.Load() {
		return ""
	}
	res, pos := u.get().check(cmd, args)
	if res == aclOK {
		return ""
	}
	c.srv.aclLog(c, caller, u.name, res, aclCtxLua, cmd, args, pos)
	return "The user executing the script " + aclErrorMessage(res)
}

func aclErrorMessage(res int) string {
	switch res {
	case aclDeniedCmd:
		return "can't run this command or subcommand"
	case aclDeniedKey:
		return "can't access at least one of the keys mentioned in the command arguments"
	case aclDeniedChannel:
		return "can't publish to the channel mentioned in the command"
	}
	return "lacking the permissions for the command"
}

// aclCheckCmd is redis.acl_check_cmd: whether the script's caller may run
// args; ok is false when the command does not exist.
func (c *Client) aclCheckCmd(caller *Client, args [][]byte) (allowed, ok bool) {
	cmd := lookupCommand(args[0])
	if cmd != nil && cmd.sub != nil && len(args) >= 2 {
		cmd = cmd.lookupSub(args[1])
	}
	if cmd == nil {
		return false, false
	}
	if caller == nil {
		return true, true
	}
	res, _ := caller.aclUser().get().check(cmd, args)
	return res == aclOK, true
}

// aclSortAllowed is SORT's check for BY and GET patterns.
func (c *Client) aclSortAllowed(args [][]byte) bool {
	if c.cur == nil {
		return true
	}
	return c.aclSortUnrestricted(c.cur, args)
}

// aclSortUnrestricted reports whether the client may use SORT's BY and
// GET patterns: it needs read access to every key.
func (c *Client) aclSortUnrestricted(cmd *Command, args [][]byte) bool {
	u := c.aclUser()
	if !u.restricted.Load() {
		return true
	}
	return u.get().unrestrictedKeys(cmd, args, ksAccess)
}

// ---- authentication ----

// checkCredentials is ACLCheckUserCredentials: the user when user/pass
// are valid, else nil.
func (a *aclState) checkCredentials(user, pass []byte) *aclUser {
	u := a.user(string(user))
	if u == nil {
		return nil
	}
	r := u.get()
	if r.flags&uflagDisabled != 0 {
		return nil
	}
	if r.flags&uflagNopass != 0 {
		return u
	}
	h := hashPassword(string(pass))
	for _, p := range r.passwords {
		if subtleEq(p, h) {
			return u
		}
	}
	return nil
}

func subtleEq(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	var d byte
	for i := 0; i < len(a); i++ {
		d |= a[i] ^ b[i]
	}
	return d == 0
}

// authenticate is ACLAuthenticateUser: on success the client is logged in
// as the user; a failure is logged in the ACL log.
func (c *Client) authenticate(user, pass []byte, args [][]byte) bool {
	a := c.srv.cfg.acl
	if u := a.checkCredentials(user, pass); u != nil {
		c.authed = true
		c.p.AuthRequired = false
		c.user.Store(u)
		return true
	}
	ctx := aclCtxToplevel
	if c.tx != nil {
		ctx = aclCtxMulti
	}
	c.srv.aclLogEntry(c, string(user), aclDeniedAuth, ctx, string(args[0]))
	return false
}

// ---- ACL LOG ----

func (s *Server) aclLog(c, real *Client, username string, res, ctx int, cmd *Command, args [][]byte, pos int) {
	obj := cmd.Name
	if res == aclDeniedKey || res == aclDeniedChannel {
		obj = string(args[pos])
	}
	s.aclLogEntryFor(real, username, res, ctx, obj, cmd, args)
}

func (s *Server) aclLogEntry(c *Client, username string, res, ctx int, obj string) {
	s.aclLogEntryFor(c, username, res, ctx, obj, c.cur, c.curArgs)
}

func (s *Server) aclLogEntryFor(real *Client, username string, res, ctx int, obj string, cmd *Command, args [][]byte) {
	cur := real.cur
	if cur == nil {
		cur = cmd
	}
	cinfo := string(real.appendClientInfo(nil, real, cur, argvLen(args)))
	now := time.Now().UnixMilli()
	a := s.cfg.acl
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, e := range a.log {
		if i >= 10 {
			break
		}
		d := now - e.ctime
		if d < 0 {
			d = -d
		}
		if e.reason == res && e.context == ctx && d <= 60000 && e.object == obj && e.username == username {
			copy(a.log[1:i+1], a.log[:i])
			a.log[0] = e
			e.cinfo, e.ctime = cinfo, now
			e.count++
			return
		}
	}
	a.log = append([]*aclLogEntry{{count: 1, reason: res, context: ctx, object: obj, username: username, ctime: now, cinfo: cinfo}}, a.log...)
	max, _ := strconv.ParseInt(s.cfg.Get("acllog-max-len"), 10, 64)
	if int64(len(a.log)) > max {
		a.log = a.log[:max]
	}
}

// ---- killing clients ----

// killUserClients closes the connections authenticated as u (a deleted
// or replaced user). self, when among them, is closed after its reply.
func (s *Server) killUserClients(self *Client, users map[*aclUser]bool) {
	for _, t := range s.clientsSnapshot() {
		if !users[t.aclUser()] {
			continue
		}
		t.authed = t == self && t.authed
		if t == self {
			t.closeAfterReply = true
		} else {
			t.aclKilled.Store(true)
			t.kill()
		}
	}
}

// killPubsubIfNeeded is ACLKillPubsubClientsIfNeeded: when u's channel
// permissions shrank, its subscribers to channels no longer allowed are
// disconnected.
func (s *Server) killPubsubIfNeeded(self *Client, u *aclUser, old, nw *aclRules) {
	var upcoming []string
	for _, sel := range nw.selectors {
		if sel.flags&selAllChannels != 0 {
			return
		}
		upcoming = append(upcoming, sel.channels...)
	}
	match := true
outer:
	for _, sel := range old.selectors {
		if sel.flags&selAllChannels != 0 {
			match = false
			break
		}
		for _, ch := range sel.channels {
			found := false
			for _, up := range upcoming {
				if up == ch {
					found = true
					break
				}
			}
			if !found {
				match = false
				break outer
			}
		}
	}
	if match {
		return
	}
	// The registry says who subscribes to what (a client's own maps
	// belong to its goroutine).
	kill := map[*Client]bool{}
	r := &s.pubsub
	r.mu.RLock()
	scan := func(m map[string]map[*Client]struct{}, pattern bool) {
		for name, set := range m {
			for t := range set {
				if kill[t] || t.aclUser() != u {
					continue
				}
				if !channelAllowed(upcoming, []byte(name), pattern) {
					kill[t] = true
				}
			}
		}
	}
	scan(r.patterns, true)
	scan(r.channels, false)
	scan(r.shard, false)
	r.mu.RUnlock()
	for t := range kill {
		if t == self {
			t.closeAfterReply = true
			continue
		}
		t.aclKilled.Store(true)
		t.kill()
	}
}

// ---- the ACL command ----

func aclWhoamiCmd(c *Client, args [][]byte) { c.w.BulkString(c.aclUser().name) }

func aclSetuserCmd(c *Client, args [][]byte) {
	name := string(args[2])
	if hasSpaces(name) {
		c.w.Error("ERR Usernames can't contain spaces or null characters")
		return
	}
	ops := make([]string, 0, len(args)-3)
	for _, a := range args[3:] {
		ops = append(ops, string(a))
	}
	if err := c.srv.cfg.acl.setUserRules(c.srv, c, name, ops); err != "" {
		c.w.Error("ERR " + err)
		return
	}
	c.w.OK()
}

func aclDeluserCmd(c *Client, args [][]byte) {
	for _, a := range args[2:] {
		if string(a) == "default" {
			c.w.Error("ERR The 'default' user cannot be removed")
			return
		}
	}
	a := c.srv.cfg.acl
	gone := map[*aclUser]bool{}
	a.mu.Lock()
	for _, n := range args[2:] {
		if u := a.users[string(n)]; u != nil {
			delete(a.users, string(n))
			u.deleted.Store(true)
			dead := a.newRules()
			u.set(dead)
			gone[u] = true
		}
	}
	a.mu.Unlock()
	if len(gone) > 0 {
		c.srv.killUserClients(c, gone)
	}
	c.w.Int(int64(len(gone)))
}

func (c *Client) replySelector(s *aclSelector) {
	c.w.BulkString("commands")
	c.w.BulkString(s.describeCommands())
	c.w.BulkString("keys")
	if s.flags&selAllKeys != 0 {
		c.w.BulkString("~*")
	} else {
		parts := make([]string, len(s.keys))
		for i, k := range s.keys {
			parts[i] = k.String()
		}
		c.w.BulkString(strings.Join(parts, " "))
	}
	c.w.BulkString("channels")
	if s.flags&selAllChannels != 0 {
		c.w.BulkString("&*")
	} else {
		parts := make([]string, len(s.channels))
		for i, ch := range s.channels {
			parts[i] = "&" + ch
		}
		c.w.BulkString(strings.Join(parts, " "))
	}
}

func aclGetuserCmd(c *Client, args [][]byte) {
	u := c.srv.cfg.acl.user(string(args[2]))
	if u == nil {
		c.w.Null()
		return
	}
	aclInit()
	r := u.get()
	c.w.Map(6)
	c.w.BulkString("flags")
	var flags []string
	for _, f := range userFlagNames {
		if r.flags&f.flag != 0 {
			flags = append(flags, f.name)
		}
	}
	c.w.Set(len(flags))
	for _, f := range flags {
		c.w.BulkString(f)
	}
	c.w.BulkString("passwords")
	c.w.Array(len(r.passwords))
	for _, p := range r.passwords {
		c.w.BulkString(p)
	}
	c.replySelector(r.selectors[0])
	c.w.BulkString("selectors")
	c.w.Array(len(r.selectors) - 1)
	for _, s := range r.selectors[1:] {
		c.w.Map(3)
		c.replySelector(s)
	}
}

func aclListCmd(c *Client, args [][]byte, names bool) {
	aclInit()
	users := c.srv.cfg.acl.sortedUsers()
	c.w.Array(len(users))
	for _, u := range users {
		if names {
			c.w.BulkString(u.name)
		} else {
			c.w.BulkString("user " + u.name + " " + u.get().describe())
		}
	}
}

func aclCatCmd(c *Client, args [][]byte) {
	aclInit()
	switch len(args) {
	case 2:
		c.w.Array(len(aclCategories))
		for _, cat := range aclCategories {
			c.w.BulkString(cat)
		}
	case 3:
		cat := aclCatIndex(string(args[2]))
		if cat < 0 {
			c.w.Error("ERR Unknown category '" + trunc(string(args[2]), 128) + "'")
			return
		}
		var names []string
		for _, cmd := range aclOrder {
			if aclInfos[cmd.id].cats&(1<<cat) != 0 {
				names = append(names, cmd.Name)
			}
		}
		c.w.Array(len(names))
		for _, n := range names {
			c.w.BulkString(n)
		}
	default:
		c.subcommandSyntaxError(args)
	}
}

func aclGenpassCmd(c *Client, args [][]byte) {
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
	chars := (bits + 3) / 4
	b := make([]byte, (chars+1)/2)
	rand.Read(b)
	c.w.BulkString(hex.EncodeToString(b)[:chars])
}

func aclLogCmd(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.subcommandSyntaxError(args)
		return
	}
	a := c.srv.cfg.acl
	count := int64(10)
	if len(args) == 3 {
		if eq(args[2], "reset") {
			a.mu.Lock()
			a.log = nil
			a.mu.Unlock()
			c.w.OK()
			return
		}
		n, ok := c.intArg(args[2])
		if !ok {
			return
		}
		count = max(n, 0)
	}
	a.mu.Lock()
	entries := append([]*aclLogEntry(nil), a.log...)
	copies := make([]aclLogEntry, len(entries))
	for i, e := range entries {
		copies[i] = *e
	}
	a.mu.Unlock()
	if count > int64(len(copies)) {
		count = int64(len(copies))
	}
	now := time.Now().UnixMilli()
	c.w.Array(int(count))
	for _, e := range copies[:count] {
		c.w.Map(7)
		c.w.BulkString("count")
		c.w.Int(e.count)
		c.w.BulkString("reason")
		c.w.BulkString([]string{"unknown", "command", "key", "auth", "channel"}[e.reason])
		c.w.BulkString("context")
		c.w.BulkString([]string{"toplevel", "multi", "lua"}[e.context])
		c.w.BulkString("object")
		c.w.BulkString(e.object)
		c.w.BulkString("username")
		c.w.BulkString(e.username)
		c.w.BulkString("age-seconds")
		c.w.Double(float64(now-e.ctime) / 1000)
		c.w.BulkString("client-info")
		c.w.BulkString(e.cinfo)
	}
}

func aclDryrunCmd(c *Client, args [][]byte) {
	u := c.srv.cfg.acl.user(string(args[2]))
	if u == nil {
		c.w.Error("ERR User '" + cstr(args[2]) + "' not found")
		return
	}
	cargs := args[3:]
	cmd := lookupCommand(cargs[0])
	if cmd != nil && cmd.sub != nil && len(cargs) >= 2 {
		cmd = cmd.lookupSub(cargs[1])
	}
	if cmd == nil {
		c.w.Error("ERR Command '" + cstr(args[3]) + "' not found")
		return
	}
	if (cmd.Arity > 0 && cmd.Arity != len(cargs)) || len(cargs) < -cmd.Arity {
		c.w.Error("ERR wrong number of arguments for '" + cmd.Name + "' command")
		return
	}
	res, pos := u.get().check(cmd, cargs)
	switch res {
	case aclOK:
		c.w.OK()
	case aclDeniedCmd:
		c.w.BulkString("This user has no permissions to run the '" + cmd.Name + "' command")
	case aclDeniedKey:
		c.w.BulkString("This user has no permissions to access the '" + string(cargs[pos]) + "' key")
	case aclDeniedChannel:
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

func aclHelpCmd(c *Client, args [][]byte) { c.replyHelp(args[0], aclHelp) }

const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

func aclLoadCmd(c *Client, args [][]byte) {
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

func aclSaveCmd(c *Client, args [][]byte) {
	file := c.srv.cfg.Get("aclfile")
	if file == "" {
		c.w.Error(errNoACLFile)
		return
	}
	var b strings.Builder
	for _, u := range c.srv.cfg.acl.sortedUsers() {
		b.WriteString("user " + u.name + " " + u.get().describe() + "\n")
	}
	tmp := fmt.Sprintf("%s.tmp-%d-%d", file, os.Getpid(), time.Now().UnixMilli())
	err := os.WriteFile(tmp, []byte(b.String()), 0644)
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
	aclInit()
	a := s.cfg.acl
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Sprintf("Error loading ACLs, opening file '%s': %s", file, strerror(err))
	}
	var errs strings.Builder
	users := map[string]*aclUser{}
	a.mu.Lock()
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Split(line, " ")
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", file, i+1)
			continue
		}
		if hasSpaces(argv[1]) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", file, i+1, argv[1])
			continue
		}
		if users[argv[1]] != nil {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", argv[1], i+1)
			continue
		}
		u := &aclUser{name: argv[1]}
		r := a.newRules()
		users[argv[1]] = u
		merged, _, ok := mergeSelectorArgs(argv[2:])
		if !ok {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", file, i+1)
		}
		syntax := false
		for _, op := range merged {
			op = strings.Trim(op, "\t\r\n")
			if e := a.setUser(r, op); e != 0 {
				if e == aclErrUnknown {
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", file, i+1, op, aclErrorText(e))
				} else if !syntax {
					fmt.Fprintf(&errs, "%s:%d: %s. ", file, i+1, aclErrorText(e))
					syntax = true
				}
			}
		}
		u.set(r)
	}
	if errs.Len() > 0 {
		a.mu.Unlock()
		return errs.String() + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	}
	if nd := users["default"]; nd != nil {
		a.def.set(nd.get())
	} else {
		a.def.set(a.defaultRules())
	}
	users["default"] = a.def
	old := a.users
	a.users = users
	a.updateAuthRequired()
	gone := map[*aclUser]bool{}
	for n, u := range old {
		if n != "default" {
			u.deleted.Store(true)
			u.set(a.newRules())
			gone[u] = true
		}
	}
	a.mu.Unlock()
	if len(gone) > 0 {
		s.killUserClients(self, gone)
	}
	return ""
}

// ---- configuration ----

// aclAppendUser is the "user" config directive: the rules are checked
// now and applied when the server starts.
func (cfg *Config) aclAppendUser(vals []string) error {
	a := cfg.acl
	for _, p := range a.pending {
		if p[0] == vals[0] {
			return fmt.Errorf("Error in user declaration '%s': %s", vals[0], aclErrorText(aclErrDuplicate))
		}
	}
	merged, bad, ok := mergeSelectorArgs(vals[1:])
	if !ok {
		return fmt.Errorf("Error in user declaration '%s': %s", bad, aclErrorText(0))
	}
	r := a.newRules()
	for _, op := range merged {
		if e := a.setUser(r, op); e != 0 && e != aclErrUnknown {
			return fmt.Errorf("Error in user declaration '%s': %s", op, aclErrorText(e))
		}
	}
	a.pending = append(a.pending, append([]string{vals[0]}, merged...))
	return nil
}

// wireACL loads the users of the config file's "user" directives and of
// aclfile, as Redis does once it starts.
func (s *Server) wireACL() {
	a := s.cfg.acl
	file := s.cfg.Get("aclfile")
	if len(a.pending) > 0 && file != "" {
		s.Warnf("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.")
	}
	a.mu.Lock()
	for _, p := range a.pending {
		name := p[0]
		if hasSpaces(name) {
			s.Warnf("Spaces not allowed in ACL usernames")
			continue
		}
		u := a.users[name]
		var r *aclRules
		if u == nil {
			u = &aclUser{name: name}
			a.users[name] = u
			r = a.newRules()
		} else {
			r = u.get().clone()
			a.setUser(r, "reset")
		}
		for _, op := range p[1:] {
			if e := a.setUser(r, op); e != 0 {
				s.Warnf("Error loading ACL rule '%s' for the user named '%s': %s", op, name, aclErrorText(e))
			}
		}
		u.set(r)
	}
	a.pending = nil
	a.updateAuthRequired()
	a.mu.Unlock()
	if file != "" {
		if err := s.aclLoadFile(nil, file); err != "" {
			s.Warnf("Aborting Redis startup because of ACL errors: %s", err)
		}
	}
}
