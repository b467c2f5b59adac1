package pubsub

import (
	"reflect"
	"sort"
	"testing"
)

// Subscribers are strings here.

func TestSubscribeCounts(t *testing.T) {
	var r Registry[string]
	var a Subs
	if !r.Empty() {
		t.Fatal("new registry not empty")
	}
	steps := []struct {
		sub     bool
		k       Kind
		name    string
		changed bool
		count   int64 // Subs.Count(k) after
	}{
		{true, Channel, "news", true, 1},
		{true, Channel, "news", false, 1},
		{true, Pattern, "n*", true, 2}, // channels and patterns count together
		{true, Shard, "orders", true, 1},
		{true, Shard, "news", true, 2}, // a shard channel is its own namespace
		{false, Channel, "nosuch", false, 2},
		{false, Pattern, "n*", true, 1},
		{false, Shard, "orders", true, 1},
	}
	for i, s := range steps {
		var changed bool
		if s.sub {
			changed = r.Subscribe("a", &a, s.k, s.name)
		} else {
			changed = r.Unsubscribe("a", &a, s.k, s.name)
		}
		if changed != s.changed || a.Count(s.k) != s.count {
			t.Errorf("step %d %+v: changed %v count %d", i, s, changed, a.Count(s.k))
		}
	}
	if ch, pat, sh := a.Counts(); ch != 1 || pat != 0 || sh != 1 || a.Total() != 2 {
		t.Errorf("counts %d %d %d total %d", ch, pat, sh, a.Total())
	}
	if ch, pat, sh := r.Counts(); ch != 1 || pat != 0 || sh != 1 {
		t.Errorf("registry counts %d %d %d", ch, pat, sh)
	}
	if got := r.Names(&a, Shard); !reflect.DeepEqual(got, []string{"news"}) {
		t.Errorf("shard names %v", got)
	}
	r.UnsubscribeAll("a", &a)
	if a.Total() != 0 || !r.Empty() || len(r.Names(&a, Channel)) != 0 {
		t.Errorf("after UnsubscribeAll: total %d empty %v", a.Total(), r.Empty())
	}
	if ch, pat, sh := r.Counts(); ch+pat+sh != 0 {
		t.Errorf("registry counts after UnsubscribeAll %d %d %d", ch, pat, sh)
	}
}

type recv struct {
	who     string
	k       Kind
	pattern string
}

func TestPublish(t *testing.T) {
	var r Registry[string]
	subs := map[string]*Subs{}
	for _, s := range []struct {
		who  string
		k    Kind
		name string
	}{
		{"a", Channel, "news.tech"},
		{"b", Channel, "news.tech"},
		{"b", Pattern, "news.*"},
		{"c", Pattern, "news.[st]ech"},
		{"c", Pattern, "sport.*"},
		{"d", Pattern, ""},
		{"e", Shard, "news.tech"},
		{"f", Channel, "NEWS.TECH"},
	} {
		if subs[s.who] == nil {
			subs[s.who] = &Subs{}
		}
		r.Subscribe(s.who, subs[s.who], s.k, s.name)
	}
	cases := []struct {
		channel string
		shard   bool
		want    []recv
	}{
		{"news.tech", false, []recv{{"a", Channel, ""}, {"b", Channel, ""}, {"b", Pattern, "news.*"}, {"c", Pattern, "news.[st]ech"}}},
		{"news.sport", false, []recv{{"b", Pattern, "news.*"}}},
		{"news.tech", true, []recv{{"e", Shard, ""}}},
		{"sport.x", true, nil}, // patterns do not see shard messages
		{"", false, []recv{{"d", Pattern, ""}}},
		{"weather", false, nil},
	}
	for _, c := range cases {
		var got []recv
		n := r.Publish([]byte(c.channel), c.shard, func(who string, k Kind, pattern string) {
			got = append(got, recv{who, k, pattern})
		})
		sort.Slice(got, func(i, j int) bool {
			if got[i].who != got[j].who {
				return got[i].who < got[j].who
			}
			return got[i].k < got[j].k
		})
		if n != len(got) || !reflect.DeepEqual(got, c.want) {
			t.Errorf("publish %q shard %v: %d %v, want %v", c.channel, c.shard, n, got, c.want)
		}
	}
}

func TestQueries(t *testing.T) {
	var r Registry[int]
	s1, s2 := &Subs{}, &Subs{}
	for _, ch := range []string{"b", "a", "abc"} {
		r.Subscribe(1, s1, Channel, ch)
	}
	r.Subscribe(2, s2, Channel, "a")
	r.Subscribe(2, s2, Pattern, "a*")
	r.Subscribe(2, s2, Shard, "x")
	if got := r.Channels(Channel); !reflect.DeepEqual(got, []string{"a", "abc", "b"}) {
		t.Errorf("channels %v", got)
	}
	if got := r.Channels(Channel, []byte("a*")); !reflect.DeepEqual(got, []string{"a", "abc"}) {
		t.Errorf("channels a* %v", got)
	}
	if got := r.Channels(Channel, []byte("")); len(got) != 0 {
		t.Errorf("channels matching an empty pattern %v", got)
	}
	if got := r.Channels(Shard); !reflect.DeepEqual(got, []string{"x"}) {
		t.Errorf("shard channels %v", got)
	}
	if got := r.NumSub(Channel, [][]byte{[]byte("a"), []byte("b"), []byte("a*"), []byte("x")}); !reflect.DeepEqual(got, []int{2, 1, 0, 0}) {
		t.Errorf("numsub %v", got)
	}
	if got := r.NumSub(Shard, [][]byte{[]byte("x")}); !reflect.DeepEqual(got, []int{1}) {
		t.Errorf("shard numsub %v", got)
	}
	var each []string
	r.Each(func(c int, k Kind, name string) {
		each = append(each, string(rune('0'+c))+" "+string(rune('0'+k))+" "+name)
	})
	sort.Strings(each)
	if want := []string{"1 0 a", "1 0 abc", "1 0 b", "2 0 a", "2 1 a*", "2 2 x"}; !reflect.DeepEqual(each, want) {
		t.Errorf("each %v, want %v", each, want)
	}
	r.UnsubscribeAll(1, s1)
	if got := r.NumSub(Channel, [][]byte{[]byte("a"), []byte("b")}); !reflect.DeepEqual(got, []int{1, 0}) {
		t.Errorf("numsub after unsubscribe %v", got)
	}
}
