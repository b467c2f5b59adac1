package acl_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/acl"
)

// The expected texts are redis-server 7.0.15's: its aclfile after ACL
// LOAD and ACL SAVE, its ACL LOAD errors, its ACL LIST after requirepass,
// its AUTH answers and its ACL LOG after the same denials.

func TestAclfileRoundTrip(t *testing.T) {
	file := "users.acl"
	in := "user alice on >apw ~obj:* &chan +@read -keys (+set ~s*)\n" +
		"user bob off nopass %R~x* resetchannels +@all -@dangerous\n" +
		"\n" +
		"user default on nopass ~* &* +@all\n" +
		"   user carol on #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 -@all +select|0 +config|get   \n"
	want := "user alice on #e528e908837a6f2c169a132a07f95107a5cc523f61d09d028c2fa799aeef4257 ~obj:* resetchannels &chan -@all +@read -keys (~s* resetchannels -@all +set)\n" +
		"user bob off nopass %R~x* resetchannels +@all -@dangerous\n" +
		"user carol on #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 resetchannels -@all +config|get +select|0\n" +
		"user default on nopass ~* &* +@all\n"
	st := newStore(t)
	if err := st.Load(file, []byte(in), nil); err != nil {
		t.Fatal(err)
	}
	got := string(st.Marshal())
	if canonLines(got) != canonLines(want) {
		t.Fatalf("saved:\n%s\nwant:\n%s", got, want)
	}
	// What ACL SAVE writes, ACL LOAD reads back unchanged.
	st2 := newStore(t)
	if err := st2.Load(file, []byte(got), nil); err != nil {
		t.Fatal(err)
	}
	if again := string(st2.Marshal()); again != got {
		t.Fatalf("second round:\n%s\nfirst:\n%s", again, got)
	}
	if st2.Authenticate([]byte("alice"), []byte("apw")) == nil || st2.Authenticate([]byte("carol"), []byte("password")) == nil {
		t.Error("passwords lost in the round trip")
	}
}

func canonLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = canonRules(l)
	}
	return strings.Join(lines, "\n")
}

func TestAclfileErrors(t *testing.T) {
	const file = "/tmp/users.acl"
	const tail = "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	cases := []struct{ data, want string }{
		{"user x on +get\nuser x off\n", "WARNING: Duplicate user 'x' found on line 2. " + tail},
		{"user x on +nosuch +get bogus ~a b\nfoo bar\nuser\nuser y (+get ~a\nuser z on\n",
			file + ":1: Error in applying operation '+nosuch': Unknown command or category name in ACL. " +
				file + ":1: Syntax error. " +
				file + ":2 should start with user keyword followed by the username. " +
				file + ":3 should start with user keyword followed by the username. " +
				file + ":4: Unmatched parenthesis in selector definition." + tail},
		{"user a on ~* ~x\nuser b on #zz\n",
			file + ":1: Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns. " +
				file + ":2: The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters. " + tail},
	}
	st := newStore(t)
	setUser(t, st, "keep", "on nopass")
	before := string(st.Marshal())
	for _, tc := range cases {
		err := st.Load(file, []byte(tc.data), nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Load(%q):\n got %v\nwant %s", tc.data, err, tc.want)
		}
		if after := string(st.Marshal()); after != before {
			t.Errorf("a failed load changed the users:\n%s", after)
		}
	}
	// A file without the default user resets it to its defaults.
	setUser(t, st, "default", ">pw")
	if err := st.Load(file, []byte("user x on\n"), nil); err != nil {
		t.Fatal(err)
	}
	want := "user default on nopass ~* &* +@all\nuser x on resetchannels -@all\n"
	if got := string(st.Marshal()); got != want {
		t.Errorf("users:\n%s\nwant:\n%s", got, want)
	}
}

func TestChangesReported(t *testing.T) {
	st := newStore(t)
	var got []acl.Change
	st.OnChange(func(ch acl.Change) { got = append(got, ch) })
	u := setUser(t, st, "u", "on nopass +@all ~* resetchannels &a &b*")
	v := setUser(t, st, "v", "on nopass")
	if len(got) != 0 {
		t.Fatalf("creating users reported %+v", got)
	}
	// More channels, or the same: nothing to do for the subscribers.
	setUser(t, st, "u", "&c")
	setUser(t, st, "u", "-get")
	if len(got) != 0 {
		t.Fatalf("adding channels reported %+v", got)
	}
	// Fewer channels: u's subscriptions are checked against the new set.
	if err := st.SetUser("u", []string{"resetchannels", "&b*"}, "origin"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].User != u || got[0].Origin != "origin" || got[0].Channels == nil {
		t.Fatalf("shrinking channels reported %+v", got)
	}
	ch := got[0].Channels
	for _, tc := range []struct {
		name    string
		pattern bool
		want    bool
	}{{"a", false, false}, {"b1", false, true}, {"b*", true, true}, {"b1*", true, false}, {"c", false, false}} {
		if ch.Allows([]byte(tc.name), tc.pattern) != tc.want {
			t.Errorf("Allows(%q, %v) = %v", tc.name, tc.pattern, !tc.want)
		}
	}
	// allchannels in a selector: nothing shrinks.
	got = nil
	setUser(t, st, "u", "(&*)")
	setUser(t, st, "u", "clearselectors")
	if len(got) != 1 || got[0].Channels.Allows([]byte("b1"), false) != true || got[0].Channels.Allows([]byte("x"), false) {
		t.Fatalf("dropping an allchannels selector reported %+v", got)
	}
	// DELUSER reports the users that existed.
	got = nil
	if n, err := st.DeleteUsers([]string{"u", "nobody", "v"}, 7); n != 2 || err != nil {
		t.Fatalf("DeleteUsers = %d, %v", n, err)
	}
	if len(got) != 1 || got[0].Origin != 7 || !sameUsers(got[0].Deleted, u, v) {
		t.Fatalf("DELUSER reported %+v", got)
	}
	if _, err := st.DeleteUsers([]string{"x", "default"}, nil); err == nil || err.Error() != "The 'default' user cannot be removed" {
		t.Fatalf("deleting default: %v", err)
	}
	// LOAD reports the users it replaced, not the default user.
	got = nil
	w := setUser(t, st, "w", "on")
	if err := st.Load("f", []byte("user w on\n"), nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !sameUsers(got[0].Deleted, w) || st.User("w") == w {
		t.Fatalf("LOAD reported %+v", got)
	}
}

func sameUsers(got []*acl.User, want ...*acl.User) bool {
	if len(got) != len(want) {
		return false
	}
	m := map[*acl.User]bool{}
	for _, u := range got {
		m[u] = true
	}
	for _, u := range want {
		if !m[u] {
			return false
		}
	}
	return true
}

func TestRequirePassAndAuthenticate(t *testing.T) {
	st := newStore(t)
	if st.AuthRequired() {
		t.Fatal("auth required by default")
	}
	// CONFIG SET requirepass foo, then "".
	st.SetRequirePass("foo")
	if got := st.Default().Rules().Describe(); got != "on #2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae ~* &* +@all" || !st.AuthRequired() {
		t.Errorf("after requirepass foo: %q, auth required %v", got, st.AuthRequired())
	}
	st.SetRequirePass("")
	if got := st.Default().Rules().Describe(); got != "on nopass ~* &* +@all" || st.AuthRequired() {
		t.Errorf("after requirepass \"\": %q", got)
	}
	// requirepass replaces every password of the default user.
	setUser(t, st, "default", ">a >b")
	if got := st.Default().Rules().Describe(); got != "on #ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb #3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d ~* &* +@all" {
		t.Errorf("default with two passwords: %q", got)
	}
	st.SetRequirePass("c")
	if got := st.Default().Rules().Describe(); got != "on #2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6 ~* &* +@all" {
		t.Errorf("after requirepass c: %q", got)
	}
	setUser(t, st, "default", "off")
	if !st.AuthRequired() {
		t.Error("auth not required with the default user off")
	}

	// AUTH: OK or WRONGPASS as redis-server answered.
	steps := []struct {
		rules      string // applied to p1 first, when set
		user, pass string
		ok         bool
	}{
		{"on >x", "p1", "x", true},
		{"", "p1", "y", false},
		{"off", "p1", "x", false},
		{"on nopass", "p1", "anything", true},
		{"", "nosuch", "x", false},
		{"resetpass", "p1", "", false},
	}
	for _, s := range steps {
		if s.rules != "" {
			setUser(t, st, "p1", s.rules)
		}
		u := st.Authenticate([]byte(s.user), []byte(s.pass))
		if (u != nil) != s.ok || u != nil && u.Name() != s.user {
			t.Errorf("after %q: AUTH %s %s = %v", s.rules, s.user, s.pass, u)
		}
	}
}

func TestConfigUsers(t *testing.T) {
	st := newStore(t)
	for _, line := range []string{"alice on >pw ~* +@all", "bob on nopass +nosuch +get (+set ~s*)"} {
		if err := st.AddConfigUser(strings.Fields(line)); err != nil {
			t.Fatalf("user %s: %v", line, err)
		}
	}
	// redis-server 7.0.15 refuses to start with: "Error in user
	// declaration 'alice': Duplicate user found. A user can only be
	// defined once in config files".
	if err := st.AddConfigUser([]string{"alice", "off"}); err == nil || err.Error() != "Error in user declaration 'alice': Duplicate user found. A user can only be defined once in config files" {
		t.Errorf("duplicate user: %v", err)
	}
	if st.User("alice") != nil || !st.HasConfigUsers() {
		t.Fatal("users applied before ApplyConfigUsers")
	}
	// redis-server logs this line (and then exits; Sluice goes on
	// without the rule).
	warnings := st.ApplyConfigUsers()
	if want := []string{"Error loading ACL rule '+nosuch' for the user named 'bob': Unknown command or category name in ACL"}; !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings %q", warnings)
	}
	if st.HasConfigUsers() {
		t.Error("users still pending")
	}
	// ACL LIST of redis-server started with these users (without +nosuch).
	want := "user alice on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~* resetchannels +@all\n" +
		"user bob on nopass resetchannels -@all +get (~s* resetchannels -@all +set)\n" +
		"user default on nopass ~* &* +@all\n"
	if got := string(st.Marshal()); canonLines(got) != canonLines(want) {
		t.Errorf("users:\n%s\nwant:\n%s", got, want)
	}
}

// TestLog replays denials redis-server 7.0.15 logged (a user allowed GET
// on ~k*: GET x twice, SET k v, GET x, PUBLISH d m, a wrong AUTH, GET y in
// MULTI) and compares ACL LOG.
func TestLog(t *testing.T) {
	st := newStore(t)
	now := int64(1_700_000_000_000)
	add := func(reason acl.Reason, ctx acl.Context, obj string) {
		now += 10
		st.AddLog(acl.LogEntry{Reason: reason, Context: ctx, Object: obj, Username: "L", Time: now, ClientInfo: fmt.Sprint(now)}, 128)
	}
	add(acl.DeniedKey, acl.Toplevel, "x")
	add(acl.DeniedKey, acl.Toplevel, "x")
	add(acl.DeniedCommand, acl.Toplevel, "set")
	add(acl.DeniedKey, acl.Toplevel, "x")
	add(acl.DeniedCommand, acl.Toplevel, "publish")
	add(acl.DeniedAuth, acl.Toplevel, "AUTH")
	add(acl.DeniedKey, acl.Multi, "y")
	want := []string{"1 key multi y L", "1 auth toplevel AUTH L", "1 command toplevel publish L", "3 key toplevel x L", "1 command toplevel set L"}
	if got := logLines(st.Log(-1)); !reflect.DeepEqual(got, want) {
		t.Fatalf("ACL LOG:\n%q\nwant\n%q", got, want)
	}
	// A merged entry takes the newest client info and time.
	if e := st.Log(-1)[3]; e.Time != now-30 || e.ClientInfo != fmt.Sprint(now-30) {
		t.Errorf("merged entry %+v", e)
	}
	if got := st.Log(2); len(got) != 2 || got[0].Object != "y" {
		t.Errorf("ACL LOG 2 = %+v", got)
	}
	// acllog-max-len 2, then three more denials: the two newest remain.
	for _, k := range []string{"z1", "z2", "z3"} {
		now += 10
		st.AddLog(acl.LogEntry{Reason: acl.DeniedKey, Context: acl.Toplevel, Object: k, Username: "L", Time: now}, 2)
	}
	if got := logLines(st.Log(-1)); !reflect.DeepEqual(got, []string{"1 key toplevel z3 L", "1 key toplevel z2 L"}) {
		t.Fatalf("after max-len 2: %q", got)
	}
	st.ResetLog()
	if n := len(st.Log(-1)); n != 0 {
		t.Fatalf("%d entries after RESET", n)
	}

	// Redis merges only with one of the 10 newest entries, and only within
	// 60 seconds (ACLLogMatchEntry, ACL_LOG_GROUPING_MAX_TIME_DELTA).
	now = 0
	for i := 0; i < 11; i++ {
		add(acl.DeniedKey, acl.Toplevel, fmt.Sprint("k", i))
	}
	add(acl.DeniedKey, acl.Toplevel, "k0") // 11th newest: a new entry
	add(acl.DeniedKey, acl.Toplevel, "k2") // 10th newest: merged
	if got := st.Log(2); got[0].Object != "k2" || got[0].Count != 2 || got[1].Object != "k0" || got[1].Count != 1 {
		t.Errorf("window of 10: %+v", got)
	}
	now += 60000 - 10
	add(acl.DeniedKey, acl.Toplevel, "k2") // 60 s after: merged
	now += 60000
	add(acl.DeniedKey, acl.Toplevel, "k2") // 60.01 s after: new
	if got := st.Log(2); got[0].Count != 1 || got[1].Count != 3 {
		t.Errorf("window of 60 s: %+v", got)
	}
}

func logLines(entries []acl.LogEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, fmt.Sprintf("%d %s %s %s %s", e.Count, e.Reason, e.Context, e.Object, e.Username))
	}
	return out
}
