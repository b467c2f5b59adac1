package server

import (
	"strconv"
	"strings"
	"sync"

	"github.com/sluicedb/sluice/acl"
)

// The keys and channels of a command as the ACL check needs them: each
// key with the access the command needs (from Redis's key specs), each
// channel it publishes or subscribes to. The acl package does not parse
// commands; these functions do it for it (see keyPositions for the keys
// dispatch locks).

// aclKeyRefs returns the keys of args for the ACL check.
func aclKeyRefs(cmd *Command, args [][]byte) []acl.KeyRef {
	if !aclKeyInfos()[cmd.id].hasKeys {
		return nil
	}
	return aclKeys(cmd, args)
}

// aclChannelRefs returns the channels args publishes or subscribes to.
func aclChannelRefs(cmd *Command, args [][]byte) []acl.ChannelRef {
	info := &aclKeyInfos()[cmd.id]
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

// aclKeyInfo is what aclKeyRefs and aclChannelRefs know of a command.
type aclKeyInfo struct {
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
	aclKeyOnce     sync.Once
	aclKeyInfoList []aclKeyInfo // by command id
)

// aclKeyInfos returns the key and channel information of every command,
// built from the command table on first use.
func aclKeyInfos() []aclKeyInfo {
	aclKeyOnce.Do(func() {
		aclKeyInfoList = make([]aclKeyInfo, len(cmdList))
		for _, cmd := range cmdList {
			info := &aclKeyInfoList[cmd.id]
			doc := redisDoc(cmd.Name)
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
	return aclKeyInfoList
}

// keyRef is a key at pos with these key-spec flags.
func keyRef(pos, flags int) acl.KeyRef { return acl.KeyRef{Pos: pos, Need: keyPermsNeeded(flags)} }

// aclKeys returns the keys of a command with their key-spec flags, as
// Redis's getKeysFromCommandWithSpecs does.
func aclKeys(cmd *Command, args [][]byte) []acl.KeyRef {
	info := &aclKeyInfos()[cmd.id]
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
		return []acl.KeyRef{keyRef(1, fl)}
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
			return []acl.KeyRef{keyRef(1, ksRO|ksAccess)}
		}
		return []acl.KeyRef{keyRef(1, ksRW|ksAccess|ksUpdate)}
	case "sort", "sort_ro":
		refs := []acl.KeyRef{keyRef(1, ksRO|ksAccess)}
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
			refs = append(refs, keyRef(store, ksOW|ksUpdate))
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
		var refs []acl.KeyRef
		for i := 0; i < num; i++ {
			refs = append(refs, keyRef(first+i, ksRW|ksAccess|ksDelete))
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
	refs := make([]acl.KeyRef, 0, len(pos))
	for _, p := range pos {
		if p > 0 && p < len(args) {
			refs = append(refs, keyRef(p, 0))
		}
	}
	return refs
}

// keysFromSpecs is Redis's getKeysUsingKeySpecs; ok is false when a spec
// cannot be used (incomplete, or the arguments do not fit it).
func keysFromSpecs(cmd *Command, specs []aclKeySpec, args [][]byte) ([]acl.KeyRef, bool) {
	argc := len(args)
	var refs []acl.KeyRef
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
			refs = append(refs, keyRef(i, s.flags))
		}
		if s.flags&ksIncomplete != 0 {
			return nil, false
		}
	}
	return refs, true
}

// keyPermsNeeded is the access a key with these key-spec flags needs.
func keyPermsNeeded(flags int) acl.Perm {
	var p acl.Perm
	if flags&ksAccess != 0 {
		p |= acl.Read
	}
	if flags&(ksInsert|ksDelete|ksUpdate) != 0 {
		p |= acl.Write
	}
	return p
}
