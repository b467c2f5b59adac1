package server

import (
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/store"
)

func init() {
	register(
		&Command{Name: "get", Arity: 2, Flags: []string{"readonly", "fast"}, First: 1, Last: 1, Step: 1, ACL: []string{"read", "string", "fast"}, Group: "string", Since: "1.0.0", Summary: "Returns the string value of a key.", Complexity: "O(1)", Fn: getCommand},
		&Command{Name: "set", Arity: -3, Flags: []string{"write", "denyoom"}, First: 1, Last: 1, Step: 1, ACL: []string{"write", "string", "slow"}, Group: "string", Since: "1.0.0", Summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", Complexity: "O(1)", Fn: setCommand},
	)
}

// getString returns the string entry of key, replying WRONGTYPE (and
// returning ok=false) when the key holds another type. e is nil for a
// missing key.
func (c *Client) getString(key []byte) (e *store.Entry, ok bool) {
	e = c.DB().Lookup(key)
	if e != nil && e.Kind() != store.KindString {
		c.wrongType()
		return nil, false
	}
	return e, true
}

// replyString appends the string value of e as a bulk string.
func (c *Client) replyString(e *store.Entry) {
	if e.IsInt() {
		c.w.BulkInt(e.Int())
		return
	}
	c.w.Bulk(e.Bytes(nil))
}

func getCommand(c *Client, args [][]byte) {
	e, ok := c.getString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.w.Null()
		return
	}
	c.replyString(e)
}

// setFlags are SET's options.
const (
	setNX = 1 << iota
	setXX
	setGet
	setKeepTTL
	setEX
	setPX
	setEXAT
	setPXAT
)

func setCommand(c *Client, args [][]byte) {
	flags := 0
	var expire int64
	var unitMs bool
	var abs bool
	for i := 3; i < len(args); i++ {
		a := args[i]
		next := i+1 < len(args)
		switch {
		case eq(a, "nx") && flags&setXX == 0:
			flags |= setNX
		case eq(a, "xx") && flags&setNX == 0:
			flags |= setXX
		case eq(a, "get"):
			flags |= setGet
		case eq(a, "keepttl") && flags&(setEX|setPX|setEXAT|setPXAT) == 0:
			flags |= setKeepTTL
		case eq(a, "ex") && flags&(setKeepTTL|setPX|setEXAT|setPXAT) == 0 && next:
			flags |= setEX
			i++
			v, ok := resp.ParseInt(args[i])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			expire = v
		case eq(a, "px") && flags&(setKeepTTL|setEX|setEXAT|setPXAT) == 0 && next:
			flags |= setPX
			unitMs = true
			i++
			v, ok := resp.ParseInt(args[i])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			expire = v
		case eq(a, "exat") && flags&(setKeepTTL|setEX|setPX|setPXAT) == 0 && next:
			flags |= setEXAT
			abs = true
			i++
			v, ok := resp.ParseInt(args[i])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			expire = v
		case eq(a, "pxat") && flags&(setKeepTTL|setEX|setPX|setEXAT) == 0 && next:
			flags |= setPXAT
			abs, unitMs = true, true
			i++
			v, ok := resp.ParseInt(args[i])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			expire = v
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	hasExpire := flags&(setEX|setPX|setEXAT|setPXAT) != 0
	var when int64
	if hasExpire {
		var ok bool
		when, ok = expireAt(expire, unitMs, abs)
		if !ok {
			c.w.Error(errInvalidExpire("set"))
			return
		}
	}
	db := c.DB()
	key := args[1]
	old := db.Lookup(key)
	if flags&setGet != 0 {
		if old != nil && old.Kind() != store.KindString {
			c.wrongType()
			return
		}
	}
	if (flags&setNX != 0 && old != nil) || (flags&setXX != 0 && old == nil) {
		if flags&setGet != 0 {
			if old == nil {
				c.w.Null()
			} else {
				c.replyString(old)
			}
		} else {
			c.w.Null()
		}
		return
	}
	if flags&setGet != 0 {
		if old == nil {
			c.w.Null()
		} else {
			c.replyString(old)
		}
	}
	if old != nil && old.Kind() == store.KindString {
		// Overwrite in place: no new entry, no map write.
		keep := flags&setKeepTTL != 0
		old.SetBytes(args[2])
		if !keep && old.Expire() != 0 {
			db.SetExpire(key, old, 0)
		}
		db.Modified(key)
	} else {
		e := store.NewString(args[2])
		db.Set(key, e, flags&setKeepTTL != 0)
		old = e
	}
	if hasExpire {
		db.SetExpire(key, old, when)
		if when <= store.Now() {
			// Already expired (EXAT in the past): the key is gone at once.
			db.Delete(key)
		}
	}
	if flags&setGet == 0 {
		c.w.OK()
	}
	c.notify(NotifyString, "set", key)
	if hasExpire {
		c.notify(NotifyGeneric, "expire", key)
	}
}

// expireAt converts a relative or absolute expire argument to unix ms,
// rejecting non-positive relative times and overflows as Redis does.
func expireAt(v int64, unitMs, abs bool) (int64, bool) {
	if v <= 0 {
		return 0, false
	}
	if !unitMs {
		if v > (1<<63-1)/1000 {
			return 0, false
		}
		v *= 1000
	}
	if !abs {
		now := store.Now()
		if v > 1<<63-1-now {
			return 0, false
		}
		v += now
	}
	return v, true
}
