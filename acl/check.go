package acl

// A Request is one command as the permission check sees it. The server
// fills it: the ACL engine does not parse commands, so Keys and Channels
// say which arguments are keys and channels.
type Request struct {
	Cmd      *Command
	Args     [][]byte // the command's arguments, its name first
	Keys     []KeyRef
	Channels []ChannelRef // those the command publishes or subscribes to
}

// KeyRef is a key among a request's arguments.
type KeyRef struct {
	Pos  int  // index in Args
	Need Perm // the access the command needs; 0: any key pattern allows it
}

// ChannelRef is a channel among a request's arguments.
type ChannelRef struct {
	Pos     int  // index in Args
	Pattern bool // a pattern subscription: it must equal a channel rule
}

// Reason is the result of a permission check: OK, or why the command is
// denied (Redis's ACL_DENIED_* values: the larger wins when selectors
// disagree).
type Reason int

const (
	OK Reason = iota
	DeniedCommand
	DeniedKey
	DeniedAuth
	DeniedChannel
)

// String is the reason as ACL LOG shows it.
func (r Reason) String() string {
	switch r {
	case DeniedCommand:
		return "command"
	case DeniedKey:
		return "key"
	case DeniedAuth:
		return "auth"
	case DeniedChannel:
		return "channel"
	}
	return "unknown"
}

// ErrorMessage is the reason as a script sees it, after "The user
// executing the script " (Redis's getAclErrorMessage).
func (r Reason) ErrorMessage() string {
	switch r {
	case DeniedCommand:
		return "can't run this command or subcommand"
	case DeniedKey:
		return "can't access at least one of the keys mentioned in the command arguments"
	case DeniedChannel:
		return "can't publish to the channel mentioned in the command"
	}
	return "lacking the permissions for the command"
}

// Check is ACLCheckAllUserCommandPerm: OK, or the reason the command is
// denied and the position in req.Args of the key or channel at fault.
func (r *Rules) Check(req *Request) (Reason, int) {
	res, last := DeniedCommand, 0
	for _, s := range r.selectors {
		got, pos := s.check(req)
		if got == OK {
			return OK, 0
		}
		if got > res || got == res && pos > last {
			res, last = got, pos
		}
	}
	return res, last
}

// NeedsKeys reports whether a check can depend on a request's Keys: the
// server computes them only then.
func (r *Rules) NeedsKeys() bool {
	for _, s := range r.selectors {
		if s.flags&selAllKeys == 0 {
			return true
		}
	}
	return false
}

// NeedsChannels reports whether a check can depend on a request's
// Channels.
func (r *Rules) NeedsChannels() bool {
	for _, s := range r.selectors {
		if s.flags&selAllChannels == 0 {
			return true
		}
	}
	return false
}

// UnrestrictedKeys is ACLUserCheckCmdWithUnrestrictedKeyAccess: whether a
// selector allows the request and every key for the access need (SORT's
// BY and GET patterns need read access to all keys).
func (r *Rules) UnrestrictedKeys(req *Request, need Perm) bool {
	for _, s := range r.selectors {
		if got, _ := s.check(req); got != OK {
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
