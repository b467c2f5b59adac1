package cmdspec

import (
	"math"

	"github.com/sluicedb/sluice/resp"
)

// Key is a key argument of a command: its position in the arguments
// (args[0] is the command name) and the flags of the key spec that
// declares it (0 where a key procedure gives none).
type Key struct {
	Pos   int32
	Flags KeyFlags
}

// Search chooses how Keys finds a command's keys, as Redis has two ways.
type Search uint8

const (
	// Access finds the keys the command will touch, as Redis's
	// getKeysFromCommand: the command's key procedure where Redis has one
	// (it parses the command's own syntax), else the legacy key range
	// (First, Last, Step), which covers every key of the commands without
	// one; Spec.RangeKeys says which). Dispatch locks these keys;
	// replication, tracking and cluster slots read them. The flags are the
	// procedure's, or 0 (SET's and BITFIELD's procedures, which only
	// refine flags, are left to the range).
	Access Search = 0
	// Declared prefers the key specs and their flags, and falls back on
	// the key procedure when a spec cannot be used (Redis's
	// getKeysFromCommandWithSpecs): ACL key permissions and COMMAND
	// GETKEYS[ANDFLAGS] use it.
	Declared Search = 1
	// IncludeNotKeys (with either) also returns the arguments that key
	// specs mark not_key (the shard channels of SPUBLISH, SSUBSCRIBE and
	// SUNSUBSCRIBE), which cluster slots hash like keys.
	IncludeNotKeys Search = 2
)

// HasKeys reports whether the command may have key arguments (Redis's
// doesCommandHaveKeys).
func (s *Spec) HasKeys() bool {
	if s.GetKeys != NoGetKeys {
		return true
	}
	for i := range s.KeySpecs {
		if s.KeySpecs[i].Flags&KeyNotKey == 0 {
			return true
		}
	}
	return false
}

// Keys appends to dst the keys of the command called with args (args[0]
// its name), found as search says, and returns the extended slice. It
// never fails: arguments that do not fit the command's syntax give fewer
// keys (often none), and the command itself then replies with its error.
// It does not allocate when dst has room.
func (s *Spec) Keys(args [][]byte, dst []Key, search Search) []Key {
	if search&Declared == 0 {
		if !s.RangeKeys && (search&IncludeNotKeys == 0 || s.GetKeys != NoGetKeys || s.Step == 0) {
			if s.GetKeys != NoGetKeys {
				return s.GetKeys.keys(args, dst)
			}
			return dst
		}
		// The legacy range (Redis's getKeysUsingLegacyRangeSpec).
		last := s.Last
		if last < 0 {
			last += len(args)
		}
		if last >= len(args) {
			return dst // too few arguments: the command replies with its error
		}
		for i := s.First; i <= last; i += s.Step {
			dst = append(dst, Key{Pos: int32(i)})
		}
		return dst
	}
	if s.specsUsable() {
		if out, ok := s.keysFromSpecs(args, dst, search&IncludeNotKeys != 0); ok {
			return out
		}
	}
	if s.GetKeys != NoGetKeys {
		return s.GetKeys.keys(args, dst)
	}
	return dst
}

// specsUsable reports whether the key specs name keys and carry reliable
// flags (Redis prefers them then).
func (s *Spec) specsUsable() bool {
	hasKey := false
	for i := range s.KeySpecs {
		f := s.KeySpecs[i].Flags
		if f&KeyVariableFlags != 0 {
			return false
		}
		if f&KeyNotKey == 0 {
			hasKey = true
		}
	}
	return hasKey
}

// keysFromSpecs is Redis's getKeysUsingKeySpecs: ok is false when a spec
// cannot be used (unknown, incomplete, or the arguments do not fit it).
func (s *Spec) keysFromSpecs(args [][]byte, dst []Key, notKeys bool) ([]Key, bool) {
	argc := len(args)
	start := len(dst)
	for j := range s.KeySpecs {
		ks := &s.KeySpecs[j]
		if ks.Flags&KeyNotKey != 0 && !notKeys {
			continue
		}
		first := 0
		switch ks.Begin {
		case BeginIndex:
			first = ks.Index
		case BeginKeyword:
			from, end := ks.StartFrom, 1
			if from > 0 {
				end = argc - 1
			} else {
				from += argc
			}
			for i := from; i != end; {
				if i >= argc || i < 1 {
					break
				}
				if equalFold(args[i], ks.Keyword) {
					first = i + 1
					break
				}
				if from <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue // keyword not found
			}
		default:
			return dst[:start], false
		}
		var last, step int
		switch ks.Find {
		case FindRange:
			step = ks.KeyStep
			switch {
			case ks.LastKey >= 0:
				last = first + ks.LastKey
			case ks.Limit == 0:
				last = argc + ks.LastKey
			default:
				last = first + (argc-first)/ks.Limit + ks.LastKey
			}
		case FindKeynum:
			step = ks.KeyStep
			if first+ks.KeyNumIdx >= argc {
				return dst[:start], false
			}
			n, ok := resp.ParseInt(args[first+ks.KeyNumIdx])
			if !ok || n < 0 || n > int64(argc) {
				return dst[:start], false
			}
			first += ks.FirstKey
			last = first + int(n) - 1
		default:
			return dst[:start], false
		}
		if last >= argc || last < first || first >= argc || step <= 0 {
			return dst[:start], false
		}
		for i := first; i <= last; i += step {
			dst = append(dst, Key{int32(i), ks.Flags})
		}
		if ks.Flags&KeyIncomplete != 0 {
			return dst[:start], false
		}
	}
	return dst, true
}

// GetKeys names the key procedures of the commands whose keys Redis
// special-cases (its *GetKeys functions; the JSON's get_keys_function).
type GetKeys uint8

const (
	NoGetKeys GetKeys = iota
	// GetKeysNumkeys1 reads a count at 1 and keys from 2 (ZUNION,
	// ZINTER, ZDIFF, ZINTERCARD, SINTERCARD, LMPOP, ZMPOP).
	GetKeysNumkeys1
	// GetKeysNumkeys2 reads a count at 2 and keys from 3 (EVAL, FCALL,
	// BLMPOP, BZMPOP).
	GetKeysNumkeys2
	// GetKeysStore is a destination at 1, then a count at 2 and keys
	// from 3 (ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE).
	GetKeysStore
	GetKeysSort
	GetKeysSortRO
	GetKeysMigrate
	GetKeysGeoradius
	GetKeysXread
	GetKeysSet
	GetKeysBitfield
)

// GetKeysFuncs maps Redis's key procedure names to GetKeys.
var GetKeysFuncs = map[string]GetKeys{
	"zunionInterDiffGetKeys":      GetKeysNumkeys1,
	"sintercardGetKeys":           GetKeysNumkeys1,
	"lmpopGetKeys":                GetKeysNumkeys1,
	"zmpopGetKeys":                GetKeysNumkeys1,
	"evalGetKeys":                 GetKeysNumkeys2,
	"functionGetKeys":             GetKeysNumkeys2,
	"blmpopGetKeys":               GetKeysNumkeys2,
	"bzmpopGetKeys":               GetKeysNumkeys2,
	"zunionInterDiffStoreGetKeys": GetKeysStore,
	"sortGetKeys":                 GetKeysSort,
	"sortROGetKeys":               GetKeysSortRO,
	"migrateGetKeys":              GetKeysMigrate,
	"georadiusGetKeys":            GetKeysGeoradius,
	"xreadGetKeys":                GetKeysXread,
	"setGetKeys":                  GetKeysSet,
	"bitfieldGetKeys":             GetKeysBitfield,
}

// RefinesFlags reports whether the procedure finds the keys the legacy
// range finds and only refines their flags (SET, BITFIELD).
func (g GetKeys) RefinesFlags() bool { return g == GetKeysSet || g == GetKeysBitfield }

func (g GetKeys) keys(args [][]byte, dst []Key) []Key {
	argc := len(args)
	if argc < 2 {
		return dst // every procedure has a key at 1
	}
	switch g {
	case GetKeysNumkeys1:
		return numkeysKeys(args, dst, 0, 1, 2)
	case GetKeysNumkeys2:
		return numkeysKeys(args, dst, 0, 2, 3)
	case GetKeysStore:
		return numkeysKeys(args, dst, 1, 2, 3)
	case GetKeysSortRO:
		return append(dst, Key{1, KeyRO | KeyAccess})
	case GetKeysSort:
		// Like SORT itself, the last STORE wins; LIMIT, GET and BY skip
		// their arguments and an unknown word is taken as an option.
		dst = append(dst, Key{1, KeyRO | KeyAccess})
		store := 0
		for i := 2; i < argc; i++ {
			switch {
			case equalFold(args[i], "limit"):
				i += 2
			case equalFold(args[i], "get"), equalFold(args[i], "by"):
				i++
			case equalFold(args[i], "store") && i+1 < argc:
				store = i + 1
			}
		}
		if store > 0 {
			dst = append(dst, Key{int32(store), KeyOW | KeyUpdate})
		}
		return dst
	case GetKeysMigrate:
		// MIGRATE host port key|"" db timeout [COPY] [REPLACE]
		// [AUTH pw | AUTH2 user pw] [KEYS key...]
		first, num := 3, 1
		if argc < 4 {
			return dst
		}
	scan:
		for i := 6; i < argc; i++ {
			switch {
			case equalFold(args[i], "keys"):
				if len(args[3]) > 0 {
					num = 0 // a syntax error MIGRATE reports
				} else {
					first, num = i+1, argc-i-1
				}
				break scan
			case equalFold(args[i], "auth"):
				i++
			case equalFold(args[i], "auth2"):
				i += 2
			}
		}
		for i := 0; i < num; i++ {
			dst = append(dst, Key{int32(first + i), KeyRW | KeyAccess | KeyDelete})
		}
		return dst
	case GetKeysGeoradius:
		// The key, and the last STORE or STOREDIST destination.
		stored := 0
		for i := 5; i < argc; i++ {
			if (equalFold(args[i], "store") || equalFold(args[i], "storedist")) && i+1 < argc {
				stored = i + 1
				i++
			}
		}
		dst = append(dst, Key{1, 0})
		if stored > 0 {
			dst = append(dst, Key{int32(stored), 0})
		}
		return dst
	case GetKeysXread:
		// The keys are the first half of what follows STREAMS, found
		// by parsing the options before it ("STREAMS" may be a group
		// or key name).
		for i := 1; i < argc; i++ {
			switch {
			case equalFold(args[i], "block"), equalFold(args[i], "count"):
				i++
			case equalFold(args[i], "group"):
				i += 2
			case equalFold(args[i], "noack"):
			case equalFold(args[i], "streams"):
				n := argc - i - 1
				if n == 0 || n%2 != 0 {
					return dst
				}
				for j := i + 1; j < i+1+n/2; j++ {
					dst = append(dst, Key{int32(j), 0})
				}
				return dst
			default:
				return dst
			}
		}
		return dst
	case GetKeysSet:
		for i := 3; i < argc; i++ {
			if equalFold(args[i], "get") {
				return append(dst, Key{1, KeyRW | KeyAccess | KeyUpdate})
			}
		}
		return append(dst, Key{1, KeyOW | KeyUpdate})
	case GetKeysBitfield:
		readonly := true
	ops:
		for i := 2; i < argc; i++ {
			rem := argc - i - 1
			switch {
			case equalFold(args[i], "get") && rem >= 2:
				i += 2
			case (equalFold(args[i], "set") || equalFold(args[i], "incrby")) && rem >= 3:
				readonly = false
				break ops
			case equalFold(args[i], "overflow") && rem >= 1:
				i++
			default:
				readonly = false // a syntax error: assume a write
				break ops
			}
		}
		if readonly {
			return append(dst, Key{1, KeyRO | KeyAccess})
		}
		return append(dst, Key{1, KeyRW | KeyAccess | KeyUpdate})
	}
	return dst
}

// numkeysKeys is Redis's genericGetKeys: a count at countAt (read as C's
// atoi), that many keys from firstAt, and a destination at storeAt (0:
// none) last. A count that does not fit gives no keys at all.
func numkeysKeys(args [][]byte, dst []Key, storeAt, countAt, firstAt int) []Key {
	if countAt >= len(args) {
		return dst
	}
	num := atoi(args[countAt])
	if num < 1 || num > len(args)-firstAt {
		return dst
	}
	for i := 0; i < num; i++ {
		dst = append(dst, Key{int32(firstAt + i), 0})
	}
	if storeAt > 0 {
		dst = append(dst, Key{int32(storeAt), 0})
	}
	return dst
}

// atoi is C's atoi as glibc has it: leading white space, a sign, the
// digits up to the first other byte; strtol's clamping to the long range,
// then truncated to an int.
func atoi(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] >= '\t' && b[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	var v uint64
	over := false
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if v > (math.MaxUint64-9)/10 {
			over = true
		}
		v = v*10 + uint64(b[i]-'0')
	}
	var l int64
	switch {
	case neg && (over || v > 1<<63):
		l = math.MinInt64
	case neg:
		l = -int64(v)
	case over || v > math.MaxInt64:
		l = math.MaxInt64
	default:
		l = int64(v)
	}
	return int(int32(l))
}

// equalFold reports whether b equals the ASCII word w in any case.
func equalFold(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c, d := b[i], w[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if d >= 'A' && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}
