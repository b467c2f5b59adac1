package acl_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/acl"
)

// The expected texts are redis-server 7.0.15's replies to ACL SETUSER,
// ACL LIST and ACL GETUSER for the same rules (asked with redis-cli).

// canonRules sorts each run of single-command rules ("+get -set") of a
// description: redis-server lists them in the order of its command hash
// table, which changes with the hash seed of each run, and Sluice by name.
// Flags, passwords, patterns and category rules keep their places.
func canonRules(s string) string {
	var toks []string
	for _, t := range strings.Fields(s) {
		if strings.HasSuffix(t, ")") && len(t) > 1 {
			toks = append(toks, t[:len(t)-1], ")")
		} else {
			toks = append(toks, t)
		}
	}
	single := func(t string) bool {
		return (t[0] == '+' || t[0] == '-') && !strings.HasPrefix(t[1:], "@")
	}
	for i := 0; i < len(toks); {
		j := i
		for j < len(toks) && single(toks[j]) {
			j++
		}
		if j > i {
			sort.Strings(toks[i:j])
			i = j
		} else {
			i++
		}
	}
	return strings.Join(toks, " ")
}

func TestSetUserErrors(t *testing.T) {
	cases := []struct {
		name string
		ops  []string
		want string // the reply without "ERR "
	}{
		{"u", []string{"+nosuch"}, "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		{"u", []string{"+@nosuch"}, "Error in ACL SETUSER modifier '+@nosuch': Unknown command or category name in ACL"},
		{"u", []string{"~*", "~foo"}, "Error in ACL SETUSER modifier '~foo': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"},
		{"u", []string{"&*", "&foo"}, "Error in ACL SETUSER modifier '&foo': Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"},
		{"u", []string{"<nopw"}, "Error in ACL SETUSER modifier '<nopw': The password you are trying to remove from the user does not exist"},
		{"u", []string{"#abc"}, "Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{"u", []string{"!abc"}, "Error in ACL SETUSER modifier '!abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{"u", []string{"+config|get|x"}, "Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported"},
		{"u", []string{"+get|"}, "Error in ACL SETUSER modifier '+get|': Syntax error"},
		{"u", []string{"%X~foo"}, "Error in ACL SETUSER modifier '%X~foo': Syntax error"},
		{"u", []string{"%~foo"}, "Error in ACL SETUSER modifier '%~foo': Syntax error"},
		{"u", []string{"%RR~foo"}, "Error in ACL SETUSER modifier '%RR~foo': Syntax error"},
		{"u", []string{"~a b"}, "Error in ACL SETUSER modifier '~a b': Syntax error"},
		{"u", []string{"&a b"}, "Error in ACL SETUSER modifier '&a b': Syntax error"},
		{"u", []string{"(+get"}, "Unmatched parenthesis in acl selector starting at '(+get'."},
		{"u", []string{"bogus"}, "Error in ACL SETUSER modifier 'bogus': Syntax error"},
		{"a b", []string{"on"}, "Usernames can't contain spaces or null characters"},
		{"u", []string{"+nosuch|x"}, "Error in ACL SETUSER modifier '+nosuch|x': Unknown command or category name in ACL"},
		{"u", []string{"+config|nosuch"}, "Error in ACL SETUSER modifier '+config|nosuch': Unknown command or category name in ACL"},
		{"u", []string{"-config|get|x"}, "Error in ACL SETUSER modifier '-config|get|x': Unknown command or category name in ACL"},
		{"u", []string{"(~* ~x)"}, "Error in ACL SETUSER modifier '(~* ~x)': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"},
		{"u", []string{"+select|0|1"}, "Error in ACL SETUSER modifier '+select|0|1': Unknown command or category name in ACL"},
	}
	st := newStore(t)
	for _, tc := range cases {
		err := st.SetUser(tc.name, tc.ops, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("SETUSER %s %q: %v, want %q", tc.name, tc.ops, err, tc.want)
		}
	}
	// A failed SETUSER changes nothing, and does not create the user.
	if got := st.User("u"); got != nil {
		t.Errorf("user u exists after failed SETUSERs: %s", got.Rules().Describe())
	}
	setUser(t, st, "v", "on ~a")
	if err := st.SetUser("v", []string{"off", "~b", "+nosuch"}, nil); err == nil {
		t.Fatal("SETUSER with an unknown command succeeded")
	}
	if got := st.User("v").Rules().Describe(); got != "on ~a resetchannels -@all" {
		t.Errorf("after a failed SETUSER: %q", got)
	}
}

func TestDescribe(t *testing.T) {
	cases := []struct {
		rules string
		want  string // ACL LIST, after "user NAME "
	}{
		{"reset", "off sanitize-payload resetchannels -@all"},
		{"on nopass +@all -@dangerous ~*", "on nopass ~* resetchannels +@all -@dangerous"},
		{"on >p1 >p2 <p1 -@all +@read -get ~k* %R~r* %W~w* %RW~rw* &ch*", "on #3946ca64ff78d93ca61090a437cbb6b3d2ca0d488f5f9ccf3059608368b27693 ~k* %R~r* %W~w* ~rw* resetchannels &ch* -@all +@read -get"},
		{"on nopass +@all -client|kill -select +select|0", "on nopass resetchannels +@all -client|kill -select +select|0"},
		{"-@all +config|get +acl +client|id", "off resetchannels -@all +acl +client|id +config|get"},
		{"on nopass -@all +get ~a* (+set ~b* &c) (+get ~c* %R~d*)", "on nopass ~a* resetchannels -@all +get (~b* resetchannels &c -@all +set) (~c* %R~d* resetchannels -@all +get)"},
		{"nocommands allkeys allchannels skip-sanitize-payload", "off skip-sanitize-payload ~* &* -@all"},
		{"-@all +select|0 +select|1 +select|0", "off resetchannels -@all +select|0 +select|1"},
		{"-@all +@hash +@set -hset", "off resetchannels -@all +@set +@hash -hset"},
		{"#5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 >other !5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8", "off #d9298a10d1b0735837dc4bd85dac641b0f3cef27a47e5d53a54f2f3f5b2fcffa resetchannels -@all"},
		{"+@all -@all +get +@write -set %R~x %W~x ~y %R~y", "off ~x ~y resetchannels -@all +@write -set +get"},
		{"+@all -@read -@write -@keyspace", "off resetchannels +@all -@write -@read -object|help"},
		{"-@all +@all -acl +acl|whoami", "off resetchannels +@all -acl +acl|whoami"},
		{"~a ~b resetkeys ~c &x resetchannels &y (+get) clearselectors (+set ~z) sanitize-payload", "off sanitize-payload ~c resetchannels &y -@all (~z resetchannels -@all +set)"},
		{"on nopass >x", "on #2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881 resetchannels -@all"},
		{"-@all +get|x", "off resetchannels -@all +get|x"},
		{"-@all +@pubsub +@scripting +@connection +@transaction", "off resetchannels -@all +@connection +@scripting +@pubsub +@transaction"},
		{"+@all -@slow", "off resetchannels +@all -@slow"},
	}
	st := newStore(t)
	for _, tc := range cases {
		st.DeleteUsers([]string{"u"}, nil)
		u := setUser(t, st, "u", tc.rules)
		if got := u.Rules().Describe(); canonRules(got) != canonRules(tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.rules, got, tc.want)
		}
	}
	if got := st.Default().Rules().Describe(); got != "on nopass ~* &* +@all" {
		t.Errorf("default user: %q", got)
	}
}

func TestInfo(t *testing.T) {
	sel := func(cmds, keys, chans string) acl.SelectorInfo {
		return acl.SelectorInfo{Commands: cmds, Keys: keys, Channels: chans}
	}
	cases := []struct {
		rules string
		want  acl.UserInfo
	}{
		{"reset", acl.UserInfo{Flags: []string{"off", "sanitize-payload"}, SelectorInfo: sel("-@all", "", ""), Selectors: []acl.SelectorInfo{}}},
		{"on >p1 >p2 <p1 -@all +@read -get ~k* %R~r* %W~w* %RW~rw* &ch*", acl.UserInfo{Flags: []string{"on"},
			Passwords:    []string{"3946ca64ff78d93ca61090a437cbb6b3d2ca0d488f5f9ccf3059608368b27693"},
			SelectorInfo: sel("-@all +@read -get", "~k* %R~r* %W~w* ~rw*", "&ch*"), Selectors: []acl.SelectorInfo{}}},
		{"on nopass -@all +get ~a* (+set ~b* &c) (+get ~c* %R~d*)", acl.UserInfo{Flags: []string{"on", "nopass"},
			SelectorInfo: sel("-@all +get", "~a*", ""),
			Selectors:    []acl.SelectorInfo{sel("-@all +set", "~b*", "&c"), sel("-@all +get", "~c* %R~d*", "")}}},
		{"nocommands allkeys allchannels skip-sanitize-payload", acl.UserInfo{Flags: []string{"off", "skip-sanitize-payload"}, SelectorInfo: sel("-@all", "~*", "&*"), Selectors: []acl.SelectorInfo{}}},
		{"+@all -@all +get +@write -set %R~x %W~x ~y %R~y", acl.UserInfo{Flags: []string{"off"}, SelectorInfo: sel("-@all +@write -set +get", "~x ~y", ""), Selectors: []acl.SelectorInfo{}}},
	}
	st := newStore(t)
	for _, tc := range cases {
		st.DeleteUsers([]string{"u"}, nil)
		got := setUser(t, st, "u", tc.rules).Rules().Info()
		canonInfo(&got)
		canonInfo(&tc.want)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.rules, got, tc.want)
		}
	}
	want := acl.UserInfo{Flags: []string{"on", "nopass"}, SelectorInfo: sel("+@all", "~*", "&*"), Selectors: []acl.SelectorInfo{}}
	if got := st.Default().Rules().Info(); !reflect.DeepEqual(got, want) {
		t.Errorf("default: %+v", got)
	}
}

func canonInfo(u *acl.UserInfo) {
	if len(u.Passwords) == 0 {
		u.Passwords = nil
	}
	u.Commands = canonRules(u.Commands)
	for i := range u.Selectors {
		u.Selectors[i].Commands = canonRules(u.Selectors[i].Commands)
	}
}

func TestCategories(t *testing.T) {
	want := "keyspace read write set sortedset list hash string bitmap hyperloglog geo stream pubsub admin fast slow blocking dangerous connection transaction scripting"
	if got := strings.Join(acl.Categories(), " "); got != want {
		t.Errorf("categories: %s", got)
	}
	// ACL CAT lists a category's commands in the order of its command
	// table (a hash table in Redis): compare them as sets.
	cats := map[string]string{
		"transaction": "watch discard unwatch exec multi",
		"connection":  "hello quit wait asking ping command command|list command|getkeys command|help command|count command|getkeysandflags command|info command|docs auth client|unblock client|no-evict client|tracking client|id client|caching client|info client|pause client|getredir client|unpause client|setname client|list client|getname client|trackinginfo client|help client|kill client|reply echo readwrite reset readonly select",
	}
	for cat, names := range cats {
		got := redisCommands(t).InCategory(acl.CategoryIndex(cat))
		w := strings.Fields(names)
		if !sameSet(got, w) {
			t.Errorf("ACL CAT %s = %q, want %q", cat, got, w)
		}
	}
	if acl.CategoryIndex("NoSuch") != -1 || acl.CategoryIndex("READ") != 1 {
		t.Error("CategoryIndex")
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		if m[x]--; m[x] < 0 {
			return false
		}
	}
	return true
}
