package tracking

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

// Clients are ints here (0: unknown).

func TestCheckPrefixes(t *testing.T) {
	cases := []struct {
		current, prefixes []string
		err               string
	}{
		{nil, nil, ""},
		{nil, []string{"a", "b"}, ""},
		{nil, []string{"ab", "ac", "b"}, ""},
		{nil, []string{"a", "ab"}, "ERR Prefix 'a' overlaps with another provided prefix 'ab'. Prefixes for a single client must not overlap."},
		{nil, []string{"ab", "a"}, "ERR Prefix 'ab' overlaps with another provided prefix 'a'. Prefixes for a single client must not overlap."},
		{nil, []string{"x", "x"}, "ERR Prefix 'x' overlaps with another provided prefix 'x'. Prefixes for a single client must not overlap."},
		{nil, []string{"", "a"}, "ERR Prefix '' overlaps with another provided prefix 'a'. Prefixes for a single client must not overlap."},
		{[]string{"user:"}, []string{"obj:"}, ""},
		{[]string{"user:"}, []string{"user:1"}, "ERR Prefix 'user:1' overlaps with an existing prefix 'user:'. Prefixes for a single client must not overlap."},
		{[]string{"user:1"}, []string{"user"}, "ERR Prefix 'user' overlaps with an existing prefix 'user:1'. Prefixes for a single client must not overlap."},
		// Against the current ones before the others given.
		{[]string{"a"}, []string{"ab", "abc"}, "ERR Prefix 'ab' overlaps with an existing prefix 'a'. Prefixes for a single client must not overlap."},
	}
	for _, c := range cases {
		err := CheckPrefixes(c.current, c.prefixes)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.err {
			t.Errorf("CheckPrefixes(%q, %q) = %q, want %q", c.current, c.prefixes, got, c.err)
		}
	}
}

func TestEnableErrors(t *testing.T) {
	cases := []struct {
		name  string
		first *Options // enabled before, if any
		o     Options
		err   string
	}{
		{"plain", nil, Options{}, ""},
		{"prefix without bcast", nil, Options{Prefixes: []string{"a"}}, "ERR PREFIX option requires BCAST mode to be enabled"},
		{"bcast with optin", nil, Options{BCAST: true, OptIn: true}, "ERR OPTIN and OPTOUT are not compatible with BCAST"},
		{"optin and optout", nil, Options{OptIn: true, OptOut: true}, "ERR You can't specify both OPTIN mode and OPTOUT mode"},
		{"switch to bcast", &Options{}, Options{BCAST: true}, "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."},
		{"switch off bcast", &Options{BCAST: true}, Options{}, "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."},
		{"optin to optout", &Options{OptIn: true}, Options{OptOut: true}, "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."},
		{"optin again", &Options{OptIn: true}, Options{OptIn: true, NoLoop: true}, ""},
		{"more prefixes", &Options{BCAST: true, Prefixes: []string{"a"}}, Options{BCAST: true, Prefixes: []string{"b"}}, ""},
		{"overlapping prefix", &Options{BCAST: true, Prefixes: []string{"a"}}, Options{BCAST: true, Prefixes: []string{"ab"}},
			"ERR Prefix 'ab' overlaps with an existing prefix 'a'. Prefixes for a single client must not overlap."},
	}
	for _, c := range cases {
		var tb Table[int]
		st := &State{}
		if c.first != nil {
			if err := tb.Enable(1, st, *c.first); err != nil {
				t.Fatalf("%s: first enable: %v", c.name, err)
			}
		}
		on, bcast, nprefixes := st.on, st.bcast, len(st.prefixes)
		err := tb.Enable(1, st, c.o)
		got := ""
		if err != nil {
			got = err.Error()
			if st.on != on || st.bcast != bcast || len(st.prefixes) != nprefixes {
				t.Errorf("%s: state changed by a refused enable", c.name)
			}
		}
		if got != c.err {
			t.Errorf("%s: %q, want %q", c.name, got, c.err)
		}
		if tb.Clients() != 1 && (c.first != nil || err == nil) {
			t.Errorf("%s: %d clients", c.name, tb.Clients())
		}
	}
}

func TestInfoAndFlags(t *testing.T) {
	var tb Table[int]
	flags, redir, prefixes := tb.Info(nil)
	if !reflect.DeepEqual(flags, []string{"off"}) || redir != -1 || len(prefixes) != 0 {
		t.Errorf("nil state: %v %d %v", flags, redir, prefixes)
	}
	st := &State{}
	tb.Enable(1, st, Options{Redirect: 7, OptIn: true, NoLoop: true})
	if err := tb.Caching(st, false); err == nil || err.Error() != "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode." {
		t.Errorf("caching no in optin: %v", err)
	}
	if err := tb.Caching(st, true); err != nil {
		t.Fatal(err)
	}
	tb.BreakRedirect(st)
	flags, redir, _ = tb.Info(st)
	if want := []string{"on", "optin", "caching-yes", "noloop", "broken_redirect"}; !reflect.DeepEqual(flags, want) || redir != 7 {
		t.Errorf("info %v %d, want %v 7", flags, redir, want)
	}
	if got := string(tb.AppendListFlags(st, []byte("N"))); got != "NtR" {
		t.Errorf("list flags %q", got)
	}
	tb.EndCaching(st)
	tb.Disable(1, st)
	if got := string(tb.AppendListFlags(st, nil)); got != "" || tb.Clients() != 0 {
		t.Errorf("after disable: flags %q, %d clients", got, tb.Clients())
	}
	if err := tb.Caching(st, true); err == nil || !strings.HasPrefix(err.Error(), "ERR CLIENT CACHING can be called only") {
		t.Errorf("caching while off: %v", err)
	}
	b := &State{}
	tb.Enable(2, b, Options{BCAST: true, Prefixes: []string{"z", "a"}})
	flags, redir, prefixes = tb.Info(b)
	if !reflect.DeepEqual(flags, []string{"on", "bcast"}) || redir != 0 || !reflect.DeepEqual(prefixes, []string{"a", "z"}) {
		t.Errorf("bcast info %v %d %v", flags, redir, prefixes)
	}
	if got := string(tb.AppendListFlags(b, nil)); got != "tB" {
		t.Errorf("bcast list flags %q", got)
	}
}

// Which modes remember reads: the default, OPTIN after CACHING yes,
// OPTOUT unless CACHING no; never BCAST or off.
func TestRemember(t *testing.T) {
	cases := []struct {
		name    string
		o       Options
		caching bool
		want    bool
	}{
		{"default", Options{}, false, true},
		{"optin", Options{OptIn: true}, false, false},
		{"optin caching yes", Options{OptIn: true}, true, true},
		{"optout", Options{OptOut: true}, false, true},
		{"optout caching no", Options{OptOut: true}, true, false},
		{"bcast", Options{BCAST: true}, false, false},
	}
	for _, c := range cases {
		var tb Table[int]
		st := &State{}
		tb.Enable(1, st, c.o)
		if c.caching {
			tb.Caching(st, c.o.OptIn)
		}
		tb.Remember(st, 1, [][]byte{[]byte("k")}, 0)
		if keys, _, _ := tb.Stats(); (keys == 1) != c.want {
			t.Errorf("%s: %d keys remembered", c.name, keys)
		}
	}
	var tb Table[int]
	if tb.Remember(&State{}, 1, [][]byte{[]byte("k")}, 0) {
		t.Error("remembered for a client with tracking off")
	}
}

func TestInvalidateAndLimit(t *testing.T) {
	var tb Table[int]
	a, b := &State{}, &State{}
	tb.Enable(1, a, Options{})
	tb.Enable(2, b, Options{})
	if tb.Live() {
		t.Fatal("live with nothing tracked")
	}
	over := tb.Remember(a, 1, [][]byte{[]byte("k1"), []byte("k2"), []byte("k3")}, 2)
	tb.Remember(b, 2, [][]byte{[]byte("k1")}, 2)
	if !over || !tb.Live() {
		t.Fatalf("over %v live %v", over, tb.Live())
	}
	if keys, items, _ := tb.Stats(); keys != 3 || items != 4 {
		t.Errorf("stats %d keys %d items", keys, items)
	}
	ids := tb.Invalidate([]byte("k1"))
	if len(ids) != 2 {
		t.Errorf("k1 invalidates %v", ids)
	}
	if ids := tb.Invalidate([]byte("k1")); ids != nil {
		t.Errorf("k1 again: %v (it is forgotten once invalidated)", ids)
	}
	if v := tb.Limit(2); v != nil {
		t.Errorf("limit under the maximum dropped %v", v)
	}
	v := tb.Limit(1)
	if len(v) != 1 || (v[0].Key != "k2" && v[0].Key != "k3") || len(v[0].IDs) != 1 {
		t.Errorf("limit dropped %v", v)
	}
	if keys, items, _ := tb.Stats(); keys != 1 || items != 1 {
		t.Errorf("after limit: %d keys %d items", keys, items)
	}
	if !tb.FlushAll() {
		t.Error("flush with tracking clients")
	}
	if keys, _, _ := tb.Stats(); keys != 0 || tb.Live() {
		t.Errorf("after flush: %d keys, live %v", keys, tb.Live())
	}
	tb.Disable(1, a)
	tb.Disable(2, b)
	if tb.FlushAll() {
		t.Error("flush with no one to tell")
	}
}

// BCAST: a change under a prefix goes to its clients at the next
// Broadcast, once per key in the order changed; a NOLOOP client does not
// get the keys it changed itself.
func TestBroadcast(t *testing.T) {
	var tb Table[int]
	a, b, c := &State{}, &State{}, &State{}
	tb.Enable(1, a, Options{BCAST: true, Prefixes: []string{"user:"}})
	tb.Enable(2, b, Options{BCAST: true, NoLoop: true, Prefixes: []string{"user:", "obj:"}})
	tb.Enable(3, c, Options{BCAST: true}) // every key
	if _, _, prefixes := tb.Stats(); prefixes != 3 {
		t.Errorf("%d prefixes", prefixes)
	}
	if tb.BroadcastQueued() || tb.Broadcast() != nil {
		t.Fatal("broadcast with nothing changed")
	}
	tb.Invalidate([]byte("user:1"))
	b.Exec.Store(&Exec{Keys: []string{"user:2"}}) // client 2 changes user:2
	tb.Invalidate([]byte("user:2"))
	b.Exec.Store(nil)
	tb.Invalidate([]byte("user:1"))
	tb.Invalidate([]byte("other"))
	if !tb.BroadcastQueued() {
		t.Fatal("nothing queued")
	}
	got := map[string]bool{}
	for _, m := range tb.Broadcast() {
		got[string(rune('0'+m.To))+" "+string(m.Payload)] = true
	}
	want := map[string]bool{
		"1 " + string(KeyArray("user:1", "user:2")): true,
		"2 " + string(KeyArray("user:1")):           true,
		// One message per prefix: the empty prefix covers every key.
		"3 " + string(KeyArray("user:1", "user:2", "other")): true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("broadcast %q, want %q", keysOf(got), keysOf(want))
	}
	if tb.Broadcast() != nil {
		t.Error("keys broadcast twice")
	}
	tb.Disable(2, b)
	if _, _, prefixes := tb.Stats(); prefixes != 2 {
		t.Errorf("%d prefixes after disable", prefixes)
	}
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestExecHas(t *testing.T) {
	e := &Exec{Keys: []string{"a", "b"}}
	if !e.Has([]byte("b")) || e.Has([]byte("c")) || !(&Exec{All: true}).Has([]byte("c")) {
		t.Error("Exec.Has")
	}
}

func TestKeyArray(t *testing.T) {
	if got := string(KeyArray("a", "bc")); got != "*2\r\n$1\r\na\r\n$2\r\nbc\r\n" {
		t.Errorf("%q", got)
	}
}
