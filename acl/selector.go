package acl

import (
	"strings"

	"github.com/sluicedb/sluice/store"
)

// Selector flags.
const (
	selRoot = 1 << iota
	selAllKeys
	selAllChannels
	selAllCommands
)

// Perm is the access a command needs to a key, and a key pattern grants.
type Perm uint8

const (
	Read      Perm = 1 << iota // the command reads the key's value
	Write                      // the command inserts, updates or deletes
	ReadWrite = Read | Write
)

type keyPattern struct {
	pat   string
	perms Perm
}

func (k keyPattern) String() string {
	switch k.perms {
	case Read:
		return "%R~" + k.pat
	case Write:
		return "%W~" + k.pat
	}
	return "~" + k.pat
}

// selector is one set of permissions: a user has a root selector and any
// number of added ones; a command runs if any selector allows it.
type selector struct {
	flags     int
	allowed   []uint64         // by command id; the last bit: "future commands" (+@all)
	firstArgs map[int][]string // allowed first arguments of otherwise denied commands
	keys      []keyPattern
	channels  []string
}

func (s *selector) clone() *selector {
	n := &selector{flags: s.flags, allowed: append([]uint64(nil), s.allowed...)}
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

func (s *selector) bit(id int) bool { return s.allowed[id/64]&(1<<(id%64)) != 0 }

func (s *selector) setBit(id int, v bool) {
	if v {
		s.allowed[id/64] |= 1 << (id % 64)
	} else {
		s.allowed[id/64] &^= 1 << (id % 64)
		s.flags &^= selAllCommands
	}
}

// changePerm allows or denies a command, and a container's subcommands.
func (s *selector) changePerm(cmd *Command, allow bool) {
	s.setBit(cmd.id, allow)
	delete(s.firstArgs, cmd.id)
	for _, sub := range cmd.Subs {
		s.setBit(sub.id, allow)
	}
}

func (s *selector) setCategory(t *Commands, cat int, allow bool) {
	for _, cmd := range t.order {
		if cmd.Categories&(1<<cat) != 0 {
			s.changePerm(cmd, allow)
		}
	}
}

func (s *selector) countCategory(t *Commands, cat int) (on, off int) {
	for _, cmd := range t.order {
		if cmd.Categories&(1<<cat) != 0 {
			if s.bit(cmd.id) {
				on++
			} else {
				off++
			}
		}
	}
	return
}

// Errors of rules (Redis's errno values for ACLSetUser).
type errCode int

const (
	errSyntax errCode = iota + 1
	errUnknown
	errKeysAfterAll
	errChannelsAfterAll
	errNoPass
	errBadHash
	errDuplicate
	errFirstArgSub
	errWrongFormat
)

func (e errCode) Error() string {
	switch e {
	case errUnknown:
		return "Unknown command or category name in ACL"
	case errSyntax:
		return "Syntax error"
	case errKeysAfterAll:
		return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	case errChannelsAfterAll:
		return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	case errNoPass:
		return "The password you are trying to remove from the user does not exist"
	case errBadHash:
		return "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	case errDuplicate:
		return "Duplicate user found. A user can only be defined once in config files"
	case errFirstArgSub:
		return "Allowing first-arg of a subcommand is not supported"
	}
	return "Wrong format"
}

// hasSpaces reports whether s holds a blank or a NUL, which user names
// and patterns may not.
func hasSpaces(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

// apply applies one selector rule (Redis's ACLSetSelector); it returns 0
// or the error's code.
func (s *selector) apply(t *Commands, op string) errCode {
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
			return errKeysAfterAll
		}
		var perms Perm
		off := 1
		if op[0] == '%' {
			for ; off < len(op); off++ {
				ch := op[off]
				if (ch == 'R' || ch == 'r') && perms&Read == 0 {
					perms |= Read
				} else if (ch == 'W' || ch == 'w') && perms&Write == 0 {
					perms |= Write
				} else if ch == '~' {
					off++
					break
				} else {
					return errSyntax
				}
			}
			if perms == 0 {
				return errSyntax
			}
		} else {
			perms = ReadWrite
		}
		pat := op[off:]
		if hasSpaces(pat) {
			return errSyntax
		}
		found := false
		for i := range s.keys {
			if s.keys[i].pat == pat {
				s.keys[i].perms |= perms
				found = true
			}
		}
		if !found {
			s.keys = append(s.keys, keyPattern{pat, perms})
		}
		s.flags &^= selAllKeys
	case op[0] == '&':
		if s.flags&selAllChannels != 0 {
			return errChannelsAfterAll
		}
		pat := op[1:]
		if hasSpaces(pat) {
			return errSyntax
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
			cmd := t.Lookup(name)
			if cmd == nil {
				return errUnknown
			}
			s.changePerm(cmd, true)
			return 0
		}
		base, arg := name[:i], name[i+1:]
		cmd := t.Lookup(base)
		if cmd == nil {
			return errUnknown
		}
		if cmd.parent != nil {
			return errFirstArgSub
		}
		if arg == "" {
			return errSyntax
		}
		if cmd.sub != nil {
			sub := t.Lookup(name)
			if sub == nil {
				return errUnknown
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
		cmd := t.Lookup(op[1:])
		if cmd == nil {
			return errUnknown
		}
		s.changePerm(cmd, false)
	case (op[0] == '+' || op[0] == '-') && op[1] == '@':
		cat := CategoryIndex(op[2:])
		if cat < 0 {
			return errUnknown
		}
		s.setCategory(t, cat, op[0] == '+')
	default:
		return errSyntax
	}
	return 0
}

// ---- describing a selector ----

// describeCommands is ACLDescribeSelectorCommandRules: the shortest run of
// category rules, then single commands, that rebuilds the selector's
// command bitmap.
func (s *selector) describeCommands(t *Commands) string {
	var b strings.Builder
	additive := !s.bit(t.n)
	fake := &selector{allowed: make([]uint64, t.words)}
	if additive {
		b.WriteString("-@all ")
		fake.apply(t, "-@all")
	} else {
		b.WriteString("+@all ")
		fake.apply(t, "+@all")
	}
	temp := &selector{allowed: append([]uint64(nil), s.allowed...)}
	applied := make([]bool, len(categories))
	for {
		best, minDiff, maxSame := -1, int(^uint(0)>>1), 0
		for j := range categories {
			if applied[j] {
				continue
			}
			on, off := temp.countCategory(t, j)
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
		fake.setCategory(t, best, additive)
		temp.setCategory(t, best, !additive)
		if additive {
			b.WriteString("+@")
		} else {
			b.WriteString("-@")
		}
		b.WriteString(categories[best])
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
				single(cmd.Subs)
			}
			if !ub {
				for _, arg := range s.firstArgs[cmd.id] {
					b.WriteString("+" + cmd.Name + "|" + arg + " ")
				}
			}
		}
	}
	single(t.sorted)
	out := b.String()
	return out[:len(out)-1]
}

func (s *selector) describeKeys() string {
	if s.flags&selAllKeys != 0 {
		return "~*"
	}
	parts := make([]string, len(s.keys))
	for i, k := range s.keys {
		parts[i] = k.String()
	}
	return strings.Join(parts, " ")
}

func (s *selector) describeChannels() string {
	if s.flags&selAllChannels != 0 {
		return "&*"
	}
	parts := make([]string, len(s.channels))
	for i, ch := range s.channels {
		parts[i] = "&" + ch
	}
	return strings.Join(parts, " ")
}

// describe is the selector as ACL LIST shows it.
func (s *selector) describe(t *Commands) string {
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
	b.WriteString(s.describeCommands(t))
	return b.String()
}

// ---- checking a command ----

func (s *selector) checkKey(key []byte, need Perm) bool {
	if s.flags&selAllKeys != 0 {
		return true
	}
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

// check is ACLSelectorCheckCmd.
func (s *selector) check(req *Request) (Reason, int) {
	cmd, args := req.Cmd, req.Args
	if s.flags&selAllCommands == 0 && !cmd.NoAuth && !s.bit(cmd.id) {
		fa := s.firstArgs[cmd.id]
		if len(args) < 2 || fa == nil {
			return DeniedCommand, 0
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
			return DeniedCommand, 0
		}
	}
	if s.flags&selAllKeys == 0 {
		for _, k := range req.Keys {
			if !s.checkKey(args[k.Pos], k.Need) {
				return DeniedKey, k.Pos
			}
		}
	}
	if s.flags&selAllChannels == 0 {
		for _, ch := range req.Channels {
			if !channelAllowed(s.channels, args[ch.Pos], ch.Pattern) {
				return DeniedChannel, ch.Pos
			}
		}
	}
	return OK, 0
}
