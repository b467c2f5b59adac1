package cmdspec

import "strings"

// Spec is one command of the table: what COMMAND INFO and COMMAND DOCS
// report, what dispatch checks (arity, flags) and where its keys are.
type Spec struct {
	Name  string // lower case; a subcommand is "container|sub"
	Arity int    // n: exactly n arguments (the name included); -n: at least n
	Flags Flags
	ACL   Categories // the JSON's categories and the implicit ones
	// KeySpecs are Redis's key specifications, in COMMAND INFO's order.
	KeySpecs []KeySpec
	// GetKeys is the key procedure Redis special-cases the command with.
	GetKeys GetKeys
	// First, Last and Step are the legacy key range COMMAND INFO shows
	// (Last is absolute, or negative from the end; all 0 without one),
	// Redis's best effort to describe the key specs as one range.
	First, Last, Step int
	// RangeKeys is set when the legacy range finds every key the command
	// touches: it has one, no key procedure (or one that only refines
	// flags) and no not_key spec. Keys's Access search is then the range.
	RangeKeys bool
	Doc       Doc
	// Subcommands of a container, by name.
	Subcommands []*Spec
}

// Doc is the part of a command only COMMAND DOCS shows.
type Doc struct {
	Summary         string
	Since           string
	Group           string // as COMMAND DOCS spells it ("sorted-set")
	Complexity      string
	DocFlags        DocFlags
	DeprecatedSince string
	ReplacedBy      string
	History         [][2]string // (version, change)
	Tips            []string
	Args            []Arg
}

// Arg is one argument of a command's syntax.
type Arg struct {
	Name            string
	Type            string // "string", "integer", ..., "oneof", "block"
	KeySpecIndex    int    // -1: not a key
	Token           string
	EmptyToken      bool // the token is "" (MIGRATE's empty key), not absent
	Summary         string
	Since           string
	DeprecatedSince string
	Flags           ArgFlags
	Args            []Arg // of a "oneof" or "block"
}

// Flags are command flags. The first ones are Redis's, in the order
// COMMAND INFO shows them; the last are Sluice's own.
type Flags uint64

const (
	Write Flags = 1 << iota
	Readonly
	DenyOOM
	Module
	Admin
	PubSub
	NoScript
	Blocking
	Loading
	Stale
	SkipMonitor
	SkipSlowlog
	Asking
	Fast
	NoAuth
	MayReplicate
	Sentinel
	OnlySentinel
	NoMandatoryKeys
	Protected
	NoAsyncLoading
	NoMulti
	MovableKeys
	AllowBusy
	TouchesArbitraryKeys

	// LockAll (Sluice): the command needs the whole keyspace, so it runs
	// under the exclusive keyspace lock.
	LockAll
	// NoLock (Sluice): the command touches no keys, so it takes no
	// keyspace lock (derived: HasKeys is false, and not LockAll).
	NoLock
)

// FlagInfo names a command flag.
type FlagInfo struct {
	Flag   Flags
	JSON   string // the name in Redis's command JSON
	Reply  string // the name COMMAND INFO shows ("" when hidden)
	Sluice bool   // set by Sluice's overlay, not by Redis's JSON
}

// FlagNames lists every command flag in COMMAND INFO's order.
var FlagNames = []FlagInfo{
	{Write, "WRITE", "write", false},
	{Readonly, "READONLY", "readonly", false},
	{DenyOOM, "DENYOOM", "denyoom", false},
	{Module, "MODULE", "module", false},
	{Admin, "ADMIN", "admin", false},
	{PubSub, "PUBSUB", "pubsub", false},
	{NoScript, "NOSCRIPT", "noscript", false},
	{Blocking, "BLOCKING", "blocking", false},
	{Loading, "LOADING", "loading", false},
	{Stale, "STALE", "stale", false},
	{SkipMonitor, "SKIP_MONITOR", "skip_monitor", false},
	{SkipSlowlog, "SKIP_SLOWLOG", "skip_slowlog", false},
	{Asking, "ASKING", "asking", false},
	{Fast, "FAST", "fast", false},
	{NoAuth, "NO_AUTH", "no_auth", false},
	{MayReplicate, "MAY_REPLICATE", "", false},
	{Sentinel, "SENTINEL", "", false},
	{OnlySentinel, "ONLY_SENTINEL", "", false},
	{NoMandatoryKeys, "NO_MANDATORY_KEYS", "no_mandatory_keys", false},
	{Protected, "PROTECTED", "", false},
	{NoAsyncLoading, "NO_ASYNC_LOADING", "no_async_loading", false},
	{NoMulti, "NO_MULTI", "no_multi", false},
	{MovableKeys, "", "movablekeys", false},
	{AllowBusy, "ALLOW_BUSY", "allow_busy", false},
	{TouchesArbitraryKeys, "TOUCHES_ARBITRARY_KEYS", "", false},
	{LockAll, "lock_all", "", true},
	{NoLock, "", "", true},
}

// Names returns the flags COMMAND INFO shows, in its order.
func (f Flags) Names() []string {
	var out []string
	for _, n := range FlagNames {
		if f&n.Flag != 0 && n.Reply != "" {
			out = append(out, n.Reply)
		}
	}
	return out
}

// Categories are ACL categories, one bit each in ACL CAT's order.
type Categories uint32

const (
	CatKeyspace Categories = 1 << iota
	CatRead
	CatWrite
	CatSet
	CatSortedSet
	CatList
	CatHash
	CatString
	CatBitmap
	CatHyperLogLog
	CatGeo
	CatStream
	CatPubSub
	CatAdmin
	CatFast
	CatSlow
	CatBlocking
	CatDangerous
	CatConnection
	CatTransaction
	CatScripting
)

// CategoryNames are the ACL categories, bit i named CategoryNames[i].
var CategoryNames = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection", "transaction", "scripting"}

// Category returns the category named name (any case, without '@').
func Category(name string) (Categories, bool) {
	for i, n := range CategoryNames {
		if strings.EqualFold(n, name) {
			return 1 << i, true
		}
	}
	return 0, false
}

// Names returns the categories' names in ACL CAT's order.
func (c Categories) Names() []string {
	var out []string
	for i, n := range CategoryNames {
		if c&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// ImplicitCategories adds the categories Redis derives from a command's
// flags (setImplicitACLCategories): @write, @read, @admin and @dangerous,
// @pubsub, @fast, @blocking, and @slow for what is not @fast.
func ImplicitCategories(f Flags, c Categories) Categories {
	if f&Write != 0 {
		c |= CatWrite
	}
	if f&Readonly != 0 && c&CatScripting == 0 {
		c |= CatRead
	}
	if f&Admin != 0 {
		c |= CatAdmin | CatDangerous
	}
	if f&PubSub != 0 {
		c |= CatPubSub
	}
	if f&Fast != 0 {
		c |= CatFast
	}
	if f&Blocking != 0 {
		c |= CatBlocking
	}
	if c&CatFast == 0 {
		c |= CatSlow
	}
	return c
}

// KeyFlags are key-spec flags, in the order COMMAND shows them.
type KeyFlags uint32

const (
	KeyRO KeyFlags = 1 << iota
	KeyRW
	KeyOW
	KeyRM
	KeyAccess
	KeyUpdate
	KeyInsert
	KeyDelete
	KeyNotKey
	KeyIncomplete
	KeyVariableFlags
)

// KeyFlagNames name the key-spec flags: bit i is KeyFlagNames[i], as
// COMMAND shows it (Redis's JSON spells it in upper case).
var KeyFlagNames = []string{"RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key", "incomplete", "variable_flags"}

// Names returns the flags' names in COMMAND's order.
func (f KeyFlags) Names() []string {
	out := make([]string, 0, 4)
	for i, n := range KeyFlagNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// DocFlags are a command's documentation flags.
type DocFlags uint8

const (
	DocDeprecated DocFlags = 1 << iota
	DocSyscmd
)

// DocFlagNames name the documentation flags, bit i DocFlagNames[i].
var DocFlagNames = []string{"deprecated", "syscmd"}

// ArgFlags are an argument's flags.
type ArgFlags uint8

const (
	ArgOptional ArgFlags = 1 << iota
	ArgMultiple
	ArgMultipleToken
)

// ArgFlagNames name the argument flags, bit i ArgFlagNames[i].
var ArgFlagNames = []string{"optional", "multiple", "multiple_token"}

// BeginSearch is how a key spec finds its first key.
type BeginSearch uint8

const (
	BeginUnknown BeginSearch = iota
	BeginIndex               // at argument Index
	BeginKeyword             // after Keyword, searched from StartFrom
)

// FindKeys is how a key spec finds its keys from the first one.
type FindKeys uint8

const (
	FindUnknown FindKeys = iota
	FindRange            // LastKey (relative; negative: from the end), KeyStep, Limit
	FindKeynum           // the count at KeyNumIdx, keys from FirstKey, KeyStep apart
)

// KeySpec is one of Redis's key specifications.
type KeySpec struct {
	Notes     string
	Flags     KeyFlags
	Begin     BeginSearch
	Index     int
	Keyword   string
	StartFrom int
	Find      FindKeys
	LastKey   int
	KeyStep   int
	Limit     int
	KeyNumIdx int
	FirstKey  int
}
