package acl_test

import (
	"strings"
	"testing"

	"github.com/sluicedb/sluice/acl"
)

// dryrun checks args as ACL DRYRUN does and words the answer as it does.
// keys and chans are what the server finds in args (from Redis's key
// specs: GET reads its key, SET writes it, COPY reads the source and
// writes the destination, INCR reads and writes; PUBLISH's channel is
// its first argument, SUBSCRIBE's are all of them).
func dryrun(t *testing.T, u *acl.User, line string, keys []acl.KeyRef, chans []acl.ChannelRef) string {
	t.Helper()
	args := strings.Fields(line)
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	cmds := redisCommands(t)
	name := strings.ToLower(args[0])
	cmd := cmds.Lookup(name)
	if cmd != nil && len(cmd.Subs) > 0 && len(args) > 1 {
		cmd = cmds.Lookup(name + "|" + args[1])
	}
	if cmd == nil {
		t.Fatalf("no command %q", line)
	}
	res, pos := u.Rules().Check(&acl.Request{Cmd: cmd, Args: argv, Keys: keys, Channels: chans})
	switch res {
	case acl.OK:
		return "OK"
	case acl.DeniedCommand:
		return "This user has no permissions to run the '" + cmd.Name + "' command"
	case acl.DeniedKey:
		return "This user has no permissions to access the '" + args[pos] + "' key"
	case acl.DeniedChannel:
		return "This user has no permissions to access the '" + args[pos] + "' channel"
	}
	return res.String()
}

func keys(spec ...any) []acl.KeyRef {
	var out []acl.KeyRef
	for i := 0; i < len(spec); i += 2 {
		out = append(out, acl.KeyRef{Pos: spec[i].(int), Need: spec[i+1].(acl.Perm)})
	}
	return out
}

func chans(pattern bool, pos ...int) []acl.ChannelRef {
	var out []acl.ChannelRef
	for _, p := range pos {
		out = append(out, acl.ChannelRef{Pos: p, Pattern: pattern})
	}
	return out
}

// The answers are redis-server 7.0.15's to ACL DRYRUN for the same users
// and commands.
func TestCheck(t *testing.T) {
	R, W, RW := acl.Read, acl.Write, acl.ReadWrite
	st := newStore(t)
	users := map[string]*acl.User{
		"c1": setUser(t, st, "c1", "on nopass -@all +get +set +copy +publish +subscribe +psubscribe +incr +mset %R~r* %W~w* ~rw* &news:*"),
		"c2": setUser(t, st, "c2", "on nopass -@all +get ~a* (+set ~b*) (+get ~c*)"),
		"c3": setUser(t, st, "c3", "on nopass -@all +select|0 +config|get +client|setname"),
		"c4": setUser(t, st, "c4", "on nopass +@all ~* resetchannels &a (&b* +publish)"),
	}
	cases := []struct {
		user, line string
		keys       []acl.KeyRef
		chans      []acl.ChannelRef
		want       string
	}{
		{"c1", "GET r1", keys(1, R), nil, "OK"},
		{"c1", "GET w1", keys(1, R), nil, "This user has no permissions to access the 'w1' key"},
		{"c1", "GET rw1", keys(1, R), nil, "OK"},
		{"c1", "SET w1 v", keys(1, W), nil, "OK"},
		{"c1", "SET r1 v", keys(1, W), nil, "This user has no permissions to access the 'r1' key"},
		{"c1", "SET rw1 v", keys(1, W), nil, "OK"},
		{"c1", "COPY r1 w1", keys(1, R, 2, W), nil, "OK"},
		{"c1", "COPY w1 r1", keys(1, R, 2, W), nil, "This user has no permissions to access the 'w1' key"},
		{"c1", "COPY r1 r2", keys(1, R, 2, W), nil, "This user has no permissions to access the 'r2' key"},
		{"c1", "PUBLISH news:1 m", nil, chans(false, 1), "OK"},
		{"c1", "PUBLISH other m", nil, chans(false, 1), "This user has no permissions to access the 'other' channel"},
		{"c1", "SUBSCRIBE news:1 other", nil, chans(false, 1, 2), "This user has no permissions to access the 'other' channel"},
		{"c1", "SUBSCRIBE news:1 news:2", nil, chans(false, 1, 2), "OK"},
		{"c1", "PSUBSCRIBE news:*", nil, chans(true, 1), "OK"},
		{"c1", "PSUBSCRIBE news:1*", nil, chans(true, 1), "This user has no permissions to access the 'news:1*' channel"},
		{"c1", "INCR r1", keys(1, RW), nil, "This user has no permissions to access the 'r1' key"},
		{"c1", "INCR w1", keys(1, RW), nil, "This user has no permissions to access the 'w1' key"},
		{"c1", "MSET w1 v r1 v", keys(1, W, 3, W), nil, "This user has no permissions to access the 'r1' key"},
		{"c1", "MSET w1 v w2 v", keys(1, W, 3, W), nil, "OK"},
		{"c1", "DEL w1", keys(1, W), nil, "This user has no permissions to run the 'del' command"},
		{"c1", "AUTH x", nil, nil, "OK"},
		{"c1", "HELLO", nil, nil, "OK"},
		{"c1", "CONFIG GET x", nil, nil, "This user has no permissions to run the 'config|get' command"},
		{"c2", "GET a1", keys(1, R), nil, "OK"},
		{"c2", "GET c1", keys(1, R), nil, "OK"},
		{"c2", "GET b1", keys(1, R), nil, "This user has no permissions to access the 'b1' key"},
		{"c2", "SET a1 v", keys(1, W), nil, "This user has no permissions to access the 'a1' key"},
		{"c2", "SET b1 v", keys(1, W), nil, "OK"},
		{"c2", "SET c1 v", keys(1, W), nil, "This user has no permissions to access the 'c1' key"},
		{"c2", "INCR a1", keys(1, RW), nil, "This user has no permissions to run the 'incr' command"},
		{"c3", "SELECT 0", nil, nil, "OK"},
		{"c3", "SELECT 1", nil, nil, "This user has no permissions to run the 'select' command"},
		{"c3", "CONFIG GET x", nil, nil, "OK"},
		{"c3", "CONFIG SET x y", nil, nil, "This user has no permissions to run the 'config|set' command"},
		{"c3", "CLIENT SETNAME x", nil, nil, "OK"},
		{"c3", "CLIENT ID", nil, nil, "This user has no permissions to run the 'client|id' command"},
		{"c4", "PUBLISH a m", nil, chans(false, 1), "OK"},
		{"c4", "PUBLISH b1 m", nil, chans(false, 1), "OK"},
		{"c4", "PUBLISH c m", nil, chans(false, 1), "This user has no permissions to access the 'c' channel"},
		{"c4", "SUBSCRIBE a b1", nil, chans(false, 1, 2), "This user has no permissions to access the 'b1' channel"},
		{"c4", "PSUBSCRIBE b*", nil, chans(true, 1), "This user has no permissions to access the 'b*' channel"},
		{"c4", "PSUBSCRIBE news:*", nil, chans(true, 1), "This user has no permissions to access the 'news:*' channel"},
		{"c4", "PSUBSCRIBE a", nil, chans(true, 1), "OK"},
	}
	for _, tc := range cases {
		if got := dryrun(t, users[tc.user], tc.line, tc.keys, tc.chans); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.user, tc.line, got, tc.want)
		}
	}
}

func TestNeedsKeysAndChannels(t *testing.T) {
	st := newStore(t)
	cases := []struct {
		rules       string
		keys, chans bool
	}{
		{"on nopass +@all ~* &*", false, false},
		{"on nopass -@all +get ~* &*", false, false},
		{"on nopass +@all ~k* &*", true, false},
		{"on nopass +@all ~* resetchannels", false, true},
		{"on nopass +@all ~* &* (+get ~k*)", true, true},
	}
	for _, tc := range cases {
		st.DeleteUsers([]string{"u"}, nil)
		r := setUser(t, st, "u", tc.rules).Rules()
		if r.NeedsKeys() != tc.keys || r.NeedsChannels() != tc.chans {
			t.Errorf("%s: NeedsKeys %v NeedsChannels %v", tc.rules, r.NeedsKeys(), r.NeedsChannels())
		}
	}
}

func TestRestricted(t *testing.T) {
	st := newStore(t)
	if st.Default().Restricted() {
		t.Error("the default user is restricted")
	}
	cases := []struct {
		rules      string
		restricted bool
	}{
		{"on nopass +@all ~* &*", false},
		{"off +@all ~* &*", false}, // off only stops AUTH
		{"on nopass +@all -get ~* &*", true},
		{"on nopass +@all ~k* &*", true},
		{"on nopass +@all ~* resetchannels", true},
		{"on nopass +@all ~* &* (+get ~k*)", true},
		{"on nopass -@all +@all ~* &*", false},
	}
	for _, tc := range cases {
		st.DeleteUsers([]string{"u"}, nil)
		if u := setUser(t, st, "u", tc.rules); u.Restricted() != tc.restricted {
			t.Errorf("%s: restricted %v", tc.rules, u.Restricted())
		}
	}
	// A deleted user denies everything to the connections still using it.
	u := setUser(t, st, "gone", "on nopass +@all ~* &*")
	st.DeleteUsers([]string{"gone"}, nil)
	if !u.Restricted() || dryrun(t, u, "PING", nil, nil) != "This user has no permissions to run the 'ping' command" {
		t.Error("a deleted user still allows commands")
	}
}

// UnrestrictedKeys is SORT's check for BY and GET: redis-server 7.0.15
// refuses them ("BY option of SORT denied due to insufficient ACL
// permissions.") unless a selector allowing SORT reads every key.
func TestUnrestrictedKeys(t *testing.T) {
	st := newStore(t)
	cases := []struct {
		rules string
		want  bool
	}{
		{"on nopass +@all ~*", true},
		{"on nopass +@all %R~*", true},
		{"on nopass +@all %W~*", false},
		{"on nopass +@all ~k*", false},
		{"on nopass -@all +get ~* (+sort ~k*)", false},
		{"on nopass -@all ~k* (+sort %R~*)", true},
	}
	for _, tc := range cases {
		st.DeleteUsers([]string{"u"}, nil)
		r := setUser(t, st, "u", tc.rules).Rules()
		req := &acl.Request{Cmd: redisCommands(t).Lookup("sort"), Args: [][]byte{[]byte("sort"), []byte("k1"), []byte("by"), []byte("w_*")}, Keys: keys(1, acl.Read)}
		if got := r.UnrestrictedKeys(req, acl.Read); got != tc.want {
			t.Errorf("%s: %v", tc.rules, got)
		}
	}
}
