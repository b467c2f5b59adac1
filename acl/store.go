package acl

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/sdsargs"
)

// Store is one server's users and ACL log.
type Store struct {
	cmds         *Commands
	allChannels  func() bool
	mu           sync.Mutex
	users        map[string]*User
	def          *User
	pending      [][]string // "user" directives of the config file, applied at start
	authRequired atomic.Bool
	onChange     func(Change)

	logMu sync.Mutex
	log   []*LogEntry // newest first
}

// NewStore returns a store with the default user (on nopass ~* &* +@all)
// for the commands of cmds. allChannels, when not nil, tells whether new
// users start with all channels (acl-pubsub-default allchannels).
func NewStore(cmds *Commands, allChannels func() bool) *Store {
	st := &Store{cmds: cmds, allChannels: allChannels, users: map[string]*User{}}
	st.def = &User{name: "default"}
	st.def.set(st.defaultRules())
	st.users["default"] = st.def
	return st
}

// A Change is what a change of users means for their connections, as the
// Store reports it to its OnChange callback.
type Change struct {
	Origin any // what the caller of the method that made the change passed (the server: its client)

	// Deleted users (ACL DELUSER, or ACL LOAD replacing them): their
	// connections must close.
	Deleted []*User

	// User, when set, lost channels (ACL SETUSER): its subscriptions that
	// Channels does not allow must end with their connections.
	User     *User
	Channels *Channels
}

// OnChange registers fn, called after a change of users that concerns
// their connections, outside the Store's locks.
func (st *Store) OnChange(fn func(Change)) { st.onChange = fn }

func (st *Store) notify(ch Change) {
	if st.onChange != nil {
		st.onChange(ch)
	}
}

// Commands returns the command table the store's rules name.
func (st *Store) Commands() *Commands { return st.cmds }

func (st *Store) pubsubDefault() int {
	if st.allChannels != nil && st.allChannels() {
		return selAllChannels
	}
	return 0
}

func (st *Store) newSelector(flags int) *selector {
	return &selector{flags: flags | st.pubsubDefault(), allowed: make([]uint64, st.cmds.words)}
}

func (st *Store) newRules() *Rules {
	return &Rules{cmds: st.cmds, flags: uflagDisabled, selectors: []*selector{st.newSelector(selRoot)}}
}

// defaultRules are the default user's: on nopass ~* &* +@all.
func (st *Store) defaultRules() *Rules {
	r := st.newRules()
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		st.apply(r, op)
	}
	return r
}

func (st *Store) updateAuthRequired() {
	r := st.def.Rules()
	st.authRequired.Store(r.flags&uflagNopass == 0 || r.flags&uflagDisabled != 0)
}

// AuthRequired reports whether new connections must authenticate: the
// default user has a password or is off.
func (st *Store) AuthRequired() bool { return st.authRequired.Load() }

// Default returns the default user.
func (st *Store) Default() *User { return st.def }

// User returns the user named name, or nil.
func (st *Store) User(name string) *User {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.users[name]
}

// Users returns the users by name.
func (st *Store) Users() []*User {
	st.mu.Lock()
	out := make([]*User, 0, len(st.users))
	for _, u := range st.users {
		out = append(out, u)
	}
	st.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// SetRequirePass is requirepass: it sets the default user's only
// password, or makes it nopass when empty.
func (st *Store) SetRequirePass(pass string) {
	st.mu.Lock()
	r := st.def.Rules().clone()
	st.apply(r, "resetpass")
	if pass != "" {
		st.apply(r, ">"+pass)
	} else {
		st.apply(r, "nopass")
	}
	st.def.set(r)
	st.updateAuthRequired()
	st.mu.Unlock()
}

// Authenticate is ACLCheckUserCredentials: the user when name and pass
// are valid and the user is on, else nil.
func (st *Store) Authenticate(name, pass []byte) *User {
	u := st.User(string(name))
	if u == nil {
		return nil
	}
	r := u.Rules()
	if r.flags&uflagDisabled != 0 {
		return nil
	}
	if r.flags&uflagNopass != 0 || r.matchPassword(pass) {
		return u
	}
	return nil
}

// apply applies one rule to r (Redis's ACLSetUser): 0 or the error's
// code.
func (st *Store) apply(r *Rules, op string) errCode {
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
			h = HashPassword(op[1:])
		} else {
			if !validHash(op[1:]) {
				return errBadHash
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
			h = HashPassword(op[1:])
		} else {
			if !validHash(op[1:]) {
				return errBadHash
			}
			h = op[1:]
		}
		for i, p := range r.passwords {
			if p == h {
				r.passwords = append(r.passwords[:i:i], r.passwords[i+1:]...)
				return 0
			}
		}
		return errNoPass
	case op[0] == '(' && op[len(op)-1] == ')':
		s := st.newSelector(0)
		words, ok := sdsargs.Split(op[1 : len(op)-1])
		if !ok {
			return errSyntax
		}
		for _, w := range words {
			if w == "" {
				continue
			}
			if e := s.apply(r.cmds, w); e != 0 {
				return e
			}
		}
		r.selectors = append(r.selectors, s)
	case strings.EqualFold(op, "clearselectors"):
		r.selectors = r.selectors[:1]
	case strings.EqualFold(op, "reset"):
		st.apply(r, "resetpass")
		r.selectors[0].apply(r.cmds, "resetkeys")
		r.selectors[0].apply(r.cmds, "resetchannels")
		if st.pubsubDefault() != 0 {
			r.selectors[0].apply(r.cmds, "allchannels")
		}
		st.apply(r, "off")
		st.apply(r, "sanitize-payload")
		r.selectors = r.selectors[:1]
		r.selectors[0].apply(r.cmds, "-@all")
	default:
		return r.selectors[0].apply(r.cmds, op)
	}
	return 0
}

// SetUser is ACL SETUSER: it applies the rules to the user named name
// (created when missing), all or nothing. A user that loses channels is
// reported to OnChange with origin.
func (st *Store) SetUser(name string, ops []string, origin any) error {
	if hasSpaces(name) {
		return errors.New("Usernames can't contain spaces or null characters")
	}
	merged, bad, ok := mergeSelectorArgs(ops)
	if !ok {
		return errors.New("Unmatched parenthesis in acl selector starting at '" + bad + "'.")
	}
	st.mu.Lock()
	u := st.users[name]
	var r *Rules
	if u != nil {
		r = u.Rules().clone()
	} else {
		r = st.newRules()
	}
	for _, op := range merged {
		if e := st.apply(r, op); e != 0 {
			st.mu.Unlock()
			return errors.New("Error in ACL SETUSER modifier '" + op + "': " + e.Error())
		}
	}
	var old *Rules
	if u == nil {
		u = &User{name: name}
		st.users[name] = u
	} else {
		old = u.Rules()
	}
	u.set(r)
	if u == st.def {
		st.updateAuthRequired()
	}
	st.mu.Unlock()
	if old != nil {
		if ch := revokedChannels(old, r); ch != nil {
			st.notify(Change{Origin: origin, User: u, Channels: ch})
		}
	}
	return nil
}

// DeleteUsers is ACL DELUSER: it returns how many of the users existed.
// The deleted users are reported to OnChange with origin.
func (st *Store) DeleteUsers(names []string, origin any) (int, error) {
	for _, n := range names {
		if n == "default" {
			return 0, errors.New("The 'default' user cannot be removed")
		}
	}
	var gone []*User
	st.mu.Lock()
	for _, n := range names {
		if u := st.users[n]; u != nil {
			delete(st.users, n)
			st.retire(u)
			gone = append(gone, u)
		}
	}
	st.mu.Unlock()
	if len(gone) > 0 {
		st.notify(Change{Origin: origin, Deleted: gone})
	}
	return len(gone), nil
}

// retire makes a deleted user deny everything: a connection still using
// it is denied until it closes.
func (st *Store) retire(u *User) {
	u.deleted.Store(true)
	u.set(st.newRules())
}

// ---- the aclfile ----

// Marshal returns the users as ACL SAVE writes the aclfile.
func (st *Store) Marshal() []byte {
	var b strings.Builder
	for _, u := range st.Users() {
		b.WriteString("user " + u.name + " " + u.Rules().Describe() + "\n")
	}
	return []byte(b.String())
}

// Load is ACLLoadFromFile on the contents of file: all users of data
// replace the current ones, or nothing changes and the error lists what
// is wrong. Users that are gone are reported to OnChange with origin.
func (st *Store) Load(file string, data []byte, origin any) error {
	var errs strings.Builder
	users := map[string]*User{}
	st.mu.Lock()
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
		u := &User{name: argv[1]}
		r := st.newRules()
		users[argv[1]] = u
		merged, _, ok := mergeSelectorArgs(argv[2:])
		if !ok {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", file, i+1)
		}
		syntax := false
		for _, op := range merged {
			op = strings.Trim(op, "\t\r\n")
			if e := st.apply(r, op); e != 0 {
				if e == errUnknown {
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", file, i+1, op, e)
				} else if !syntax {
					fmt.Fprintf(&errs, "%s:%d: %s. ", file, i+1, e)
					syntax = true
				}
			}
		}
		u.set(r)
	}
	if errs.Len() > 0 {
		st.mu.Unlock()
		return errors.New(errs.String() + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
	}
	if nd := users["default"]; nd != nil {
		st.def.set(nd.Rules())
	} else {
		st.def.set(st.defaultRules())
	}
	users["default"] = st.def
	old := st.users
	st.users = users
	st.updateAuthRequired()
	var gone []*User
	for n, u := range old {
		if n != "default" {
			st.retire(u)
			gone = append(gone, u)
		}
	}
	st.mu.Unlock()
	if len(gone) > 0 {
		st.notify(Change{Origin: origin, Deleted: gone})
	}
	return nil
}

// ---- "user" directives of the config file ----

// AddConfigUser is the "user" directive of the config file (vals: the
// name, then rules): the rules are checked now and applied by
// ApplyConfigUsers.
func (st *Store) AddConfigUser(vals []string) error {
	for _, p := range st.pending {
		if p[0] == vals[0] {
			return fmt.Errorf("Error in user declaration '%s': %s", vals[0], errDuplicate)
		}
	}
	merged, bad, ok := mergeSelectorArgs(vals[1:])
	if !ok {
		return fmt.Errorf("Error in user declaration '%s': %s", bad, errWrongFormat)
	}
	r := st.newRules()
	for _, op := range merged {
		if e := st.apply(r, op); e != 0 && e != errUnknown {
			return fmt.Errorf("Error in user declaration '%s': %s", op, e)
		}
	}
	st.pending = append(st.pending, append([]string{vals[0]}, merged...))
	return nil
}

// HasConfigUsers reports whether "user" directives wait for
// ApplyConfigUsers.
func (st *Store) HasConfigUsers() bool { return len(st.pending) > 0 }

// ApplyConfigUsers creates the users of the config file's "user"
// directives, as Redis does once it starts. It returns warnings for the
// rules it could not apply.
func (st *Store) ApplyConfigUsers() (warnings []string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, p := range st.pending {
		name := p[0]
		if hasSpaces(name) {
			warnings = append(warnings, "Spaces not allowed in ACL usernames")
			continue
		}
		u := st.users[name]
		var r *Rules
		if u == nil {
			u = &User{name: name}
			st.users[name] = u
			r = st.newRules()
		} else {
			r = u.Rules().clone()
			st.apply(r, "reset")
		}
		for _, op := range p[1:] {
			if e := st.apply(r, op); e != 0 {
				warnings = append(warnings, fmt.Sprintf("Error loading ACL rule '%s' for the user named '%s': %s", op, name, e))
			}
		}
		u.set(r)
	}
	st.pending = nil
	st.updateAuthRequired()
	return warnings
}
