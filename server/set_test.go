package server

import (
	"strconv"
	"testing"
)

func hsRange(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, prefix+strconv.Itoa(i))
	}
	return out
}

func hsCmd(name string, args ...[]string) []string {
	out := []string{name}
	for _, a := range args {
		out = append(out, a...)
	}
	return out
}

func TestSetEncodingsVsRedis(t *testing.T) {
	script := [][]string{
		hsCmd("SADD", []string{"ints"}, hsRange("", 0, 512)),
		hsCmd("SADD", []string{"ints513"}, hsRange("", 0, 513)),
		{"SADD", "str", "a"},
		{"SADD", "mixed", "1", "2", "x"},
		{"SADD", "noncanon", "01"},
		{"SADD", "neg", "-5", "-9223372036854775808"},
		{"SADD", "big", "9223372036854775808"},
		// Shrinking does not convert back.
		hsCmd("SREM", []string{"ints513"}, hsRange("", 0, 500)),
		{"SREM", "mixed", "x"},
		// Results are built from an empty intset.
		{"SINTERSTORE", "inter", "ints", "ints513"},
		{"SUNIONSTORE", "union", "mixed", "ints"},
		{"SUNIONSTORE", "union2", "ints513"},
		{"SINTERSTORE", "inter2", "mixed", "str"},
		{"SADD", "m2", "1", "zz"},
		{"SINTERSTORE", "inter3", "mixed", "m2"},
		// SDIFF picks an algorithm by estimated work: with many small
		// subtrahends it copies the first set (converting past 512) and
		// removes, so a small result stays a hashtable; with one big
		// subtrahend it adds only the survivors (an intset).
		hsCmd("SADD", []string{"d600"}, hsRange("", 0, 600)),
		hsCmd("SADD", []string{"d595"}, hsRange("", 0, 595)),
		{"SADD", "x1", "1000"},
		{"SADD", "x2", "1001"},
		{"SADD", "x3", "1002"},
		{"SDIFFSTORE", "diff1", "d600", "d595"},
		{"SDIFFSTORE", "diff2", "d600", "d595", "x1", "x2", "x3"},
		// SMOVE creates the destination for the member's type.
		{"SADD", "src", "7", "x"},
		{"SMOVE", "src", "mv1", "7"},
		{"SMOVE", "src", "mv2", "x"},
	}
	hsCompareEncodings(t, nil, script, []string{"ints", "ints513", "str", "mixed", "noncanon", "neg", "big",
		"inter", "union", "union2", "inter2", "inter3", "diff1", "diff2", "mv1", "mv2"})

	// SPOP removing most of a big set of integers rebuilds it from the
	// survivors, which can make it an intset again.
	script = [][]string{
		hsCmd("SADD", []string{"s"}, hsRange("", 0, 1000)),
		{"SPOP", "s", "900"},
		{"SCARD", "s"},
		hsCmd("SADD", []string{"t"}, hsRange("", 0, 1000)),
		{"SPOP", "t", "10"},
		{"SCARD", "t"},
	}
	hsCompareEncodings(t, nil, script, []string{"s", "t"})

	script = [][]string{
		{"SADD", "four", "1", "2", "3", "4"},
		{"SADD", "five", "1", "2", "3", "4", "5"},
		{"SADD", "one", "1"},
	}
	hsCompareEncodings(t, []string{"set-max-intset-entries", "4"}, script, []string{"four", "five", "one"})
	hsCompareEncodings(t, []string{"set-max-intset-entries", "0"}, script, []string{"four", "five", "one"})
}

func TestSetNotificationsVsRedis(t *testing.T) {
	hsCompareEvents(t, [][]string{
		{"SADD", "s", "1", "2", "3"},
		{"SADD", "s", "1"},
		{"SREM", "s", "9"},
		{"SREM", "s", "1", "9"},
		{"SPOP", "s"},
		{"SPOP", "s", "5"},
		{"SPOP", "nokey"},
		{"SPOP", "nokey", "2"},
		{"SADD", "s", "a", "b", "c", "d", "e", "f"},
		{"SPOP", "s", "0"},
		{"SPOP", "s", "1"},
		{"SPOP", "s", "4"},
		{"SREM", "s", "a", "b", "c", "d", "e", "f"},
		{"SADD", "a", "1", "2"},
		{"SADD", "b", "2", "3"},
		{"SMOVE", "a", "b", "9"},
		{"SMOVE", "a", "b", "1"},
		{"SMOVE", "a", "b", "2"},
		{"SMOVE", "b", "c", "3"},
		{"SMOVE", "b", "b", "1"},
		{"SINTERSTORE", "d", "a", "b"},
		{"SUNIONSTORE", "d", "b", "c"},
		{"SUNIONSTORE", "d", "b", "c"},
		{"SINTERSTORE", "d", "b", "c"},
		{"SDIFFSTORE", "d", "b", "b"},
		{"SUNIONSTORE", "d", "nokey"},
		{"SDIFFSTORE", "d2", "b", "nokey"},
		{"SINTERSTORE", "d2", "b", "nokey"},
		{"SET", "str", "x"},
		{"SUNIONSTORE", "str", "b"},
		{"SADD", "str", "x"},
		{"HSET", "h", "f", "v"},
		{"SINTERSTORE", "h", "b", "b"},
		{"SREM", "h", "1"},
		{"SMEMBERS", "h"},
	})
}

func TestSscanGuaranteeThroughServer(t *testing.T) {
	_, addr := hsStart(t)
	c, other := hsDial(t, addr), hsDial(t, addr)
	c.do(hsCmd("SADD", []string{"s"}, hsRange("stable", 0, 2000))...)
	seen := map[string]bool{}
	cursor := "0"
	next := 0
	for calls := 0; ; calls++ {
		reply, ok := c.do("SSCAN", "s", cursor, "COUNT", "5").([]any)
		if !ok || len(reply) != 2 {
			t.Fatalf("bad SSCAN reply %#v", reply)
		}
		cursor = reply[0].(string)
		for _, m := range hsStrings(t, reply[1]) {
			seen[m] = true
		}
		if calls < 100 {
			other.do(hsCmd("SADD", []string{"s"}, hsRange("churn"+strconv.Itoa(calls)+"-", 0, 60))...)
			next = calls + 1
		} else if next > 0 {
			next--
			other.do(hsCmd("SREM", []string{"s"}, hsRange("churn"+strconv.Itoa(next)+"-", 0, 60))...)
		}
		if cursor == "0" {
			break
		}
		if calls > 100000 {
			t.Fatal("SSCAN does not terminate")
		}
	}
	for i := 0; i < 2000; i++ {
		if !seen["stable"+strconv.Itoa(i)] {
			t.Fatalf("stable%d never returned", i)
		}
	}
}

func TestSetRandomThroughServer(t *testing.T) {
	_, addr := hsStart(t)
	c := hsDial(t, addr)
	for _, tc := range []struct {
		key     string
		members []string
	}{
		{"intset", hsRange("", 0, 50)},
		{"hashtable", hsRange("m", 0, 300)},
	} {
		n := len(tc.members)
		c.do(hsCmd("SADD", []string{tc.key}, tc.members)...)
		draws := n * 100
		counts := map[string]int{}
		for _, m := range hsStrings(t, c.do("SRANDMEMBER", tc.key, strconv.Itoa(-draws))) {
			counts[m]++
		}
		if chi, ok := hsChiSquareOK(counts, n, draws); !ok {
			t.Errorf("%s: SRANDMEMBER negative count not uniform (chi-square %.1f)", tc.key, chi)
		}
		// Single draws too.
		counts = map[string]int{}
		for i := 0; i < n*30; i++ {
			counts[c.do("SRANDMEMBER", tc.key).(string)]++
		}
		if chi, ok := hsChiSquareOK(counts, n, n*30); !ok {
			t.Errorf("%s: SRANDMEMBER not uniform (chi-square %.1f)", tc.key, chi)
		}
		for _, k := range []int{1, 2, n / 10, n/3 + 1, n - 1, n, n + 10} {
			ms := hsStrings(t, c.do("SRANDMEMBER", tc.key, strconv.Itoa(k)))
			want := k
			if want > n {
				want = n
			}
			uniq := map[string]bool{}
			for _, m := range ms {
				uniq[m] = true
			}
			if len(ms) != want || len(uniq) != want {
				t.Fatalf("%s SRANDMEMBER %d: %d members, %d distinct", tc.key, k, len(ms), len(uniq))
			}
		}
		// SPOP with counts (both strategies) pops distinct members and
		// removes exactly them.
		left := map[string]bool{}
		for _, m := range tc.members {
			left[m] = true
		}
		for _, k := range []int{3, n / 2, n / 2} {
			for _, m := range hsStrings(t, c.do("SPOP", tc.key, strconv.Itoa(k))) {
				if !left[m] {
					t.Fatalf("%s: SPOP returned %q twice or unknown", tc.key, m)
				}
				delete(left, m)
			}
			if got := hsInt(t, c.do("SCARD", tc.key)); int(got) != len(left) {
				t.Fatalf("%s: SCARD %d, expected %d", tc.key, got, len(left))
			}
		}
		for m := range left {
			if hsInt(t, c.do("SISMEMBER", tc.key, m)) != 1 {
				t.Fatalf("%s: survivor %s missing", tc.key, m)
			}
		}
	}
}

func BenchmarkSAddSmall(b *testing.B) { benchDispatch(b, hsBenchArgs("SADD", 100)) }
