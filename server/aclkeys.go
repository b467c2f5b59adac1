package server

import (
	"sync"

	"github.com/sluicedb/sluice/acl"
	"github.com/sluicedb/sluice/internal/cmdspec"
)

// The keys and channels of a command as the ACL check needs them: each
// key with the access the command needs (from Redis's key specs, through
// cmdspec's key extraction), each channel it publishes or subscribes to.
// The acl package does not parse commands; these functions do it for it.

// aclKeyRefs returns the keys of args for the ACL check, as Redis's
// getKeysFromCommandWithSpecs finds them.
func aclKeyRefs(cmd *Command, args [][]byte) []acl.KeyRef {
	if !cmd.HasKeys() {
		return nil
	}
	var buf [8]cmdspec.Key
	keys := cmd.Keys(args, buf[:0], cmdspec.Declared)
	if len(keys) == 0 {
		return nil
	}
	refs := make([]acl.KeyRef, len(keys))
	for i, k := range keys {
		refs[i] = acl.KeyRef{Pos: int(k.Pos), Need: keyPermsNeeded(k.Flags)}
	}
	return refs
}

// aclChannelRefs returns the channels args publishes or subscribes to.
func aclChannelRefs(cmd *Command, args [][]byte) []acl.ChannelRef {
	info := &aclChannelInfos()[cmd.id]
	if info.chans&(chanPublish|chanSubscribe) == 0 {
		return nil
	}
	end := len(args)
	if info.chanOne && end > 2 {
		end = 2
	}
	var out []acl.ChannelRef
	for i := 1; i < end; i++ {
		out = append(out, acl.ChannelRef{Pos: i, Pattern: info.chans&chanPattern != 0})
	}
	return out
}

// aclChannelInfo is what aclChannelRefs knows of a command (Redis's
// commands_with_channels).
type aclChannelInfo struct {
	chans   int // channel flags (chanSubscribe...), 0: none
	chanOne bool
}

const (
	chanSubscribe = 1 << iota
	chanUnsubscribe
	chanPublish
	chanPattern
)

var (
	aclChannelOnce     sync.Once
	aclChannelInfoList []aclChannelInfo // by command id
)

// aclChannelInfos returns the channel information of every command, built
// from the command table on first use.
func aclChannelInfos() []aclChannelInfo {
	aclChannelOnce.Do(func() {
		aclChannelInfoList = make([]aclChannelInfo, len(cmdList))
		for _, cmd := range cmdList {
			info := &aclChannelInfoList[cmd.id]
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
	return aclChannelInfoList
}

// keyPermsNeeded is the access a key with these key-spec flags needs.
func keyPermsNeeded(flags cmdspec.KeyFlags) acl.Perm {
	var p acl.Perm
	if flags&cmdspec.KeyAccess != 0 {
		p |= acl.Read
	}
	if flags&(cmdspec.KeyInsert|cmdspec.KeyDelete|cmdspec.KeyUpdate) != 0 {
		p |= acl.Write
	}
	return p
}
