package acl

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
	"sync/atomic"
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

// Rules are a user's flags, passwords and selectors. A user's Rules are
// never changed once published: a change builds new ones, so a check
// reads them without a lock.
type Rules struct {
	cmds      *Commands
	flags     int
	passwords []string // SHA-256 hex
	selectors []*selector
}

// User is a named user and its current Rules.
type User struct {
	name       string
	restricted atomic.Bool // not open: a check must look
	rules      atomic.Pointer[Rules]
	deleted    atomic.Bool
}

// Name returns the user's name.
func (u *User) Name() string { return u.name }

// Rules returns the user's current rules.
func (u *User) Rules() *Rules { return u.rules.Load() }

// Restricted reports whether a command may be denied: false for a user
// whose only selector allows every command, key and channel (the default
// user), so that the dispatch path tests one flag.
func (u *User) Restricted() bool { return u.restricted.Load() }

func (u *User) set(r *Rules) {
	u.rules.Store(r)
	root := r.selectors[0]
	all := selAllKeys | selAllChannels | selAllCommands
	open := len(r.selectors) == 1 && root.flags&all == all
	u.restricted.Store(!open || u.deleted.Load())
}

func (r *Rules) clone() *Rules {
	n := &Rules{cmds: r.cmds, flags: r.flags, passwords: append([]string(nil), r.passwords...)}
	for _, s := range r.selectors {
		n.selectors = append(n.selectors, s.clone())
	}
	return n
}

// Nopass reports whether the user takes any password.
func (r *Rules) Nopass() bool { return r.flags&uflagNopass != 0 }

// SkipSanitize reports the skip-sanitize-payload flag: RESTORE does not
// sanitize this user's payloads deeply under sanitize-dump-payload clients.
func (r *Rules) SkipSanitize() bool { return r.flags&uflagSkipSanitize != 0 }

// HashPassword returns the SHA-256 hex of a password, as rules and the
// aclfile store it.
func HashPassword(p string) string {
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

// matchPassword reports whether pass is one of the user's passwords, in
// time that does not depend on where they differ.
func (r *Rules) matchPassword(pass []byte) bool {
	h := HashPassword(string(pass))
	for _, p := range r.passwords {
		if subtle.ConstantTimeCompare([]byte(p), []byte(h)) == 1 {
			return true
		}
	}
	return false
}

// GeneratePassword returns a random password of bits bits in hex (ACL
// GENPASS): (bits+3)/4 characters.
func GeneratePassword(bits int) string {
	chars := (bits + 3) / 4
	b := make([]byte, (chars+1)/2)
	rand.Read(b)
	return hex.EncodeToString(b)[:chars]
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

// ---- describing users ----

// Describe returns the rules as ACL LIST and the aclfile write them
// (after "user NAME ").
func (r *Rules) Describe() string {
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
			b.WriteString(s.describe(r.cmds))
		} else {
			b.WriteString(" (" + s.describe(r.cmds) + ")")
		}
	}
	return b.String()
}

// SelectorInfo is a selector as ACL GETUSER shows it.
type SelectorInfo struct {
	Commands string // "-@all +get"
	Keys     string // "~k* %R~r*"
	Channels string // "&news:*"
}

// UserInfo is a user as ACL GETUSER shows it: the root selector's fields
// beside the user's, and the other selectors.
type UserInfo struct {
	Flags     []string
	Passwords []string // SHA-256 hex
	SelectorInfo
	Selectors []SelectorInfo
}

// Info returns the rules as ACL GETUSER shows them.
func (r *Rules) Info() UserInfo {
	var u UserInfo
	for _, f := range userFlagNames {
		if r.flags&f.flag != 0 {
			u.Flags = append(u.Flags, f.name)
		}
	}
	u.Passwords = append([]string(nil), r.passwords...)
	info := func(s *selector) SelectorInfo {
		return SelectorInfo{Commands: s.describeCommands(r.cmds), Keys: s.describeKeys(), Channels: s.describeChannels()}
	}
	u.SelectorInfo = info(r.selectors[0])
	u.Selectors = []SelectorInfo{}
	for _, s := range r.selectors[1:] {
		u.Selectors = append(u.Selectors, info(s))
	}
	return u
}

// ---- channel permissions that shrink ----

// Channels is the union of the channel rules of a user's selectors.
type Channels struct{ pats []string }

// Allows reports whether a subscription to ch (a pattern subscription
// when pattern) is allowed.
func (c *Channels) Allows(ch []byte, pattern bool) bool {
	return channelAllowed(c.pats, ch, pattern)
}

// revokedChannels is what ACLKillPubsubClientsIfNeeded compares: when the
// channels of nw do not include all of old's, it returns the channels of
// nw, against which the user's subscriptions must be checked.
func revokedChannels(old, nw *Rules) *Channels {
	var upcoming []string
	for _, sel := range nw.selectors {
		if sel.flags&selAllChannels != 0 {
			return nil
		}
		upcoming = append(upcoming, sel.channels...)
	}
	for _, sel := range old.selectors {
		if sel.flags&selAllChannels != 0 {
			return &Channels{upcoming}
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
				return &Channels{upcoming}
			}
		}
	}
	return nil
}
