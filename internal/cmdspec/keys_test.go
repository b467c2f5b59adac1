package cmdspec

import (
	"fmt"
	"strings"
	"testing"
)

func lookup(t *testing.T, name string) *Spec {
	t.Helper()
	parent, sub, _ := strings.Cut(name, "|")
	for _, s := range Table {
		if s.Name != parent {
			continue
		}
		if sub == "" {
			return s
		}
		for _, ss := range s.Subcommands {
			if ss.Name == name {
				return ss
			}
		}
	}
	t.Fatalf("no command %s", name)
	return nil
}

func split(cmd string) [][]byte {
	var args [][]byte
	for _, f := range strings.Fields(cmd) {
		if f == `""` {
			f = ""
		}
		args = append(args, []byte(f))
	}
	return args
}

// show writes keys as "pos:FLAG,FLAG pos:..." for comparison.
func show(keys []Key) string {
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d:%s", k.Pos, strings.Join(k.Flags.Names(), ",")))
	}
	return strings.Join(parts, " ")
}

// TestKeysDeclared: the keys and flags COMMAND GETKEYSANDFLAGS shows,
// as redis-server 7.0.15 shows them (the differential suite checks the
// same against a running redis-server).
func TestKeysDeclared(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{
		{"get k", "1:RO,access"},
		{"set k v", "1:OW,update"},
		{"set k v get", "1:RW,access,update"},
		{"mset a 1 b 2", "1:OW,update 3:OW,update"},
		{"lmove a b left right", "1:RW,access,delete 2:RW,insert"},
		{"smove a b m", "1:RW,access,delete 2:RW,insert"},
		{"zunionstore d 2 a b weights 1 2", "1:OW,update 3:RO,access 4:RO,access"},
		{"zunionstore d 0 a", ""},   // keynum 0: no keys (the spec is fine, the procedure too)
		{"zunionstore d x a", ""},   // numkeys not a number: procedure, atoi gives 0
		{"eval s 2.5 a b", "3: 4:"}, // spec fails, EVAL's procedure reads 2 (atoi)
		{"eval s 2 a b c", "3:RW,access,update 4:RW,access,update"},
		{"sintercard 3 a b", ""}, // more keys than arguments
		{"xread count 1 streams a b 0 0", "4:RO,access 5:RO,access"},
		{"xread streams a b 0", "2:RO,access"}, // odd: the spec still finds one
		{"sort k by x get y store d", "1:RO,access 7:OW,update"},
		{"sort_ro k by x", "1:RO,access"},
		{"bitfield k get u8 0", "1:RO,access"},
		{"bitfield k set u8 0 1", "1:RW,access,update"},
		{"bitfield k foo", "1:RW,access,update"},
		{"georadius k 15 37 200 km store a storedist b", "1:RO,access 7:OW,update 9:OW,update"},
		{"migrate h p k 0 5", "3:RW,access,delete"},
		{`migrate h p "" 0 5 keys a b`, "7:RW,access,delete 8:RW,access,delete"},
		{"migrate h p k 0 5 keys a", ""}, // KEYS with a key argument: MIGRATE's syntax error
		{"pfmerge d", ""},                // the source range is past the end
		{"object encoding k", "2:RO"},
		{"memory usage k", "2:RO"},
		{"spublish ch m", ""},
	} {
		args := split(c.cmd)
		s := lookup(t, strings.ToLower(string(args[0])))
		if s.Subcommands != nil {
			s = lookup(t, s.Name+"|"+string(args[1]))
		}
		if got := show(s.Keys(args, nil, Declared)); got != c.want {
			t.Errorf("%s: Declared keys %q, want %q", c.cmd, got, c.want)
		}
	}
}

// TestKeysAccess: the keys a command touches (what dispatch locks), as
// Redis's getKeysFromCommand finds them.
func TestKeysAccess(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{
		{"get k", "1:"},
		{"mset a 1 b 2", "1: 3:"},
		{"mset a 1 b", "1: 3:"},
		{"del a b c", "1: 2: 3:"},
		{"lmove a b left right", "1: 2:"},
		{"zunionstore d 2 a b", "3: 4: 1:"},
		{"xread count streams streams a 0", "4:"}, // the procedure parses COUNT's argument
		{"spublish ch m", ""},
		{"ping", ""},
	} {
		args := split(c.cmd)
		s := lookup(t, strings.ToLower(string(args[0])))
		if got := show(s.Keys(args, nil, Access)); got != c.want {
			t.Errorf("%s: Access keys %q, want %q", c.cmd, got, c.want)
		}
	}
	if got := show(lookup(t, "spublish").Keys(split("spublish ch m"), nil, Access|IncludeNotKeys)); got != "1:" {
		t.Errorf("spublish with IncludeNotKeys: %q, want the channel", got)
	}
}

// TestEveryCommandKeys runs both searches on every command with short
// and long argument lists: no panic, every position inside the arguments.
func TestEveryCommandKeys(t *testing.T) {
	var walk func([]*Spec)
	walk = func(ss []*Spec) {
		for _, s := range ss {
			for n := 0; n < 12; n++ {
				args := [][]byte{[]byte(s.Name)}
				for i := 1; i < n; i++ {
					args = append(args, []byte([]string{"1", "keys", "store", "streams", "get", "x", "-1"}[i%7]))
				}
				for _, search := range []Search{Access, Declared, Access | IncludeNotKeys, Declared | IncludeNotKeys} {
					for _, k := range s.Keys(args, nil, search) {
						if k.Pos < 1 || int(k.Pos) >= len(args) {
							t.Errorf("%s with %d arguments: key at %d", s.Name, len(args), k.Pos)
						}
					}
				}
			}
			walk(s.Subcommands)
		}
	}
	walk(Table)
}

func TestKeysAllocationFree(t *testing.T) {
	get, set := lookup(t, "get"), lookup(t, "set")
	gargs, sargs := split("get k"), split("set k v ex 10")
	dst := make([]Key, 0, 8)
	if n := testing.AllocsPerRun(100, func() {
		dst = get.Keys(gargs, dst[:0], Access)
		dst = set.Keys(sargs, dst[:0], Access)
	}); n != 0 {
		t.Errorf("Keys allocates %v times per GET+SET", n)
	}
}

func TestAtoi(t *testing.T) {
	for in, want := range map[string]int{"2": 2, " 2": 2, "+3": 3, "-1": -1, "2.5": 2, "2abc": 2, "": 0, "x": 0, "\t7": 7, "99999999999999999999": -1, "4294967297": 1} {
		if got := atoi([]byte(in)); got != want {
			t.Errorf("atoi(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestCategories(t *testing.T) {
	get := lookup(t, "get")
	if got := strings.Join(get.ACL.Names(), " "); got != "read string fast" {
		t.Errorf("GET's categories: %s", got)
	}
	if got := strings.Join(lookup(t, "flushall").ACL.Names(), " "); got != "keyspace write slow dangerous" {
		t.Errorf("FLUSHALL's categories: %s", got)
	}
	if c, ok := Category("SortedSet"); !ok || c != CatSortedSet {
		t.Error("Category(SortedSet)")
	}
	if _, ok := Category("nope"); ok {
		t.Error("Category(nope) found one")
	}
}

func TestFlagNames(t *testing.T) {
	if got := strings.Join(lookup(t, "zunionstore").Flags.Names(), " "); got != "write denyoom movablekeys" {
		t.Errorf("ZUNIONSTORE's flags: %s", got)
	}
	// Sluice's own and Redis's hidden flags never show.
	if got := strings.Join(lookup(t, "eval").Flags.Names(), " "); got != "noscript stale skip_monitor no_mandatory_keys movablekeys" {
		t.Errorf("EVAL's flags: %s", got)
	}
	if lookup(t, "eval").Flags&LockAll == 0 || lookup(t, "ping").Flags&NoLock == 0 || lookup(t, "get").Flags&NoLock != 0 {
		t.Error("LockAll/NoLock not set from the overlay")
	}
}
