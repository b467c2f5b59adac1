package store_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/store"
)

// globCases are (pattern, subject, match) triples worked out from Redis's
// util.c stringmatchlen; TestGlobTableAgainstRedis checks every row against
// a real redis-server too (KEYS with the subject as the only key).
var globCases = []struct {
	pat, str string
	nocase   bool
	want     bool
}{
	{"", "", false, true},
	{"", "a", false, false},
	{"a", "", false, false},
	{"*", "", false, false}, // Redis: nothing but "" matches ""
	{"**", "", false, false},
	{"*", "abc", false, true},
	{"**", "abc", false, true},
	{"a*", "a", false, true},
	{"a**", "a", false, true},
	{"a*b", "a", false, false},
	{"*a", "a", false, true},
	{"*a", "ba", false, true},
	{"*a", "ab", false, false},
	{"a*b*c", "axxbyyc", false, true},
	{"a*b*c", "axxbyy", false, false},
	{"*a*a*a*a*a*b", strings.Repeat("a", 40), false, false},
	{"*a*a*a*a*a*b", strings.Repeat("a", 40) + "b", false, true},
	{"a*?", "a", false, false},
	{"a*?", "ab", false, true},
	{"?", "", false, false},
	{"?", "x", false, true},
	{"??", "x", false, false},
	{"h?llo", "hello", false, true},
	{"h?llo", "hllo", false, false},
	{"h[ae]llo", "hallo", false, true},
	{"h[ae]llo", "hillo", false, false},
	{"h[^e]llo", "hallo", false, true},
	{"h[^e]llo", "hello", false, false},
	{"h[a-b]llo", "hbllo", false, true},
	{"h[a-b]llo", "hcllo", false, false},
	{"h[b-a]llo", "hallo", false, true}, // reversed range
	{"[a-]", "-", false, false},         // "a-]" is the range ']'..'a'
	{"[a-]", "^", false, true},
	{"[a-]", "a", false, true},
	{"[a-]x", "ax", false, false}, // the class runs to the end
	{"[a-]", "b", false, false},
	{"[", "[", false, false},
	{"[", "", false, false},
	{"[^", "x", false, true},
	{"[^", "xy", false, false},
	{"[abc", "b", false, true},
	{"[abc", "bc", false, false},
	{"[]", "]", false, false},
	{"[]]", "]", false, false},
	{"[]]", "]]", false, false},
	{"[\\]]", "]", false, true},
	{"[\\]", "]", false, true},
	{"[\\]", "\\", false, false},
	{"[\\", "\\", false, true},
	{"[a\\-z]", "-", false, true},
	{"[a\\-z]", "b", false, false},
	{"[\\^a]", "^", false, true},
	{"[^]", "x", false, true},   // an empty class, negated
	{"[^]]", "x", false, false}, // ... followed by a literal ']'
	{"[^]]", "x]", false, true},
	{"[^]]", "]]", false, true},
	{"[*]", "*", false, true},
	{"[*]", "a", false, false},
	{"[?]", "?", false, true},
	{"[?]", "a", false, false},
	{"\\*", "*", false, true},
	{"\\*", "a", false, false},
	{"\\?", "?", false, true},
	{"\\[a]", "[a]", false, true},
	{"\\", "\\", false, true},
	{"\\\\", "\\", false, true},
	{"a\\", "a\\", false, true},
	{"\\a", "a", false, true},
	{"*\\", "ab\\", false, true},
	{"*\\*", "ab*", false, true},
	{"*\\*", "ab", false, false},
	{"[a-c]*[x-z]", "bqqy", false, true},
	{"*[a-c]", "zzzb", false, true},
	{"*[", "x[", false, false},
	{"*[^", "xy", false, true},
	{"a[-]b", "a-b", false, true},
	{"[-a]", "-", false, true},
	{"[!a]", "!", false, true}, // '!' is not a negation in Redis
	{"[!a]", "b", false, false},
	{"HELLO", "hello", true, true},
	{"h[A-C]llo", "hbllo", true, true},
	{"h[a-c]llo", "hBllo", true, true},
	{"h[^A]llo", "hallo", true, false},
	{"h[A-c]llo", "h_llo", false, true}, // 'A'..'c' spans '_'
	{"h[A-c]llo", "h_llo", true, false}, // nocase folds the bounds to 'a'..'c'
	{"[a-\xff]", "\xff", false, true},   // bytes compare as signed char
	{"[a-\xff]", "\x80", false, false},
	{"[a-\xff]", "A", false, true},
	{"[\x80-\xfe]", "\x90", false, true},
	{"[\x80-\xfe]", "a", false, false},
	{"\xe2\x82\xac*", "\xe2\x82\xac1", false, true},
	{"a\x00b", "a\x00b", false, true},
	{"a?b", "a\x00b", false, true},
}

func TestGlobTable(t *testing.T) {
	for _, tc := range globCases {
		if got := store.Match([]byte(tc.pat), []byte(tc.str), tc.nocase); got != tc.want {
			t.Errorf("Match(%q, %q, nocase=%v) = %v, want %v", tc.pat, tc.str, tc.nocase, got, tc.want)
		}
		if got := store.MatchString([]byte(tc.pat), tc.str, tc.nocase); got != tc.want {
			t.Errorf("MatchString(%q, %q) = %v, want %v", tc.pat, tc.str, got, tc.want)
		}
	}
}

// TestGlobTableAgainstRedis checks the table's expectations themselves
// against redis-server: KEYS pattern in a database holding only the
// subject. (KEYS short-cuts a lone "*", and nocase is not reachable from
// KEYS, so those rows are left out.)
func TestGlobTableAgainstRedis(t *testing.T) {
	addr := redistest.StartRedis(t)
	conn := redistest.Dial(t, addr)
	for _, tc := range globCases {
		if tc.nocase || tc.pat == "*" {
			continue
		}
		if _, err := conn.Do("FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Do("SET", tc.str, "v"); err != nil {
			t.Fatal(err)
		}
		got, err := conn.Do("KEYS", tc.pat)
		if err != nil {
			t.Fatal(err)
		}
		matched := got != "*0\r\n"
		if matched != tc.want {
			t.Errorf("redis KEYS %q with key %q: matched=%v, table says %v", tc.pat, tc.str, matched, tc.want)
		}
	}
}

// oracleMatch is a step-by-step model of stringmatchlen: recursive, with a
// NUL byte after the pattern (C reads it), C's signed chars in ranges, and
// the flag that stops all outer '*' once an inner one has failed.
func oracleMatch(pattern, str []byte, nocase bool) bool {
	pat := append(append([]byte(nil), pattern...), 0)
	skip := false
	return oracleImpl(pat, 0, len(pattern), str, 0, len(str), nocase, &skip)
}

func oracleImpl(pat []byte, p, plen int, str []byte, s, slen int, nocase bool, skip *bool) bool {
	low := func(c int) int {
		if c >= 'A' && c <= 'Z' {
			return c + 32
		}
		return c
	}
	eqb := func(a, b byte) bool {
		if nocase {
			return low(int(a)) == low(int(b))
		}
		return a == b
	}
	for plen > 0 && slen > 0 {
		switch pat[p] {
		case '*':
			for plen > 0 && pat[p+1] == '*' {
				p++
				plen--
			}
			if plen == 1 {
				return true
			}
			for slen > 0 {
				if oracleImpl(pat, p+1, plen-1, str, s, slen, nocase, skip) {
					return true
				}
				if *skip {
					return false
				}
				s++
				slen--
			}
			*skip = true
			return false
		case '?':
			s++
			slen--
		case '[':
			p++
			plen--
			not := pat[p] == '^'
			if not {
				p++
				plen--
			}
			match := false
			for {
				if pat[p] == '\\' && plen >= 2 {
					p++
					plen--
					if pat[p] == str[s] {
						match = true
					}
				} else if pat[p] == ']' {
					break
				} else if plen == 0 {
					p--
					plen++
					break
				} else if plen >= 3 && pat[p+1] == '-' {
					start, end, c := int(int8(pat[p])), int(int8(pat[p+2])), int(int8(str[s]))
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, c = low(start), low(end), low(c)
					}
					p += 2
					plen -= 2
					if c >= start && c <= end {
						match = true
					}
				} else if eqb(pat[p], str[s]) {
					match = true
				}
				p++
				plen--
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s++
			slen--
		case '\\':
			if plen >= 2 {
				p++
				plen--
			}
			fallthrough
		default:
			if !eqb(pat[p], str[s]) {
				return false
			}
			s++
			slen--
		}
		p++
		plen--
		if slen == 0 {
			for pat[p] == '*' {
				p++
				plen--
			}
			break
		}
	}
	return plen == 0 && slen == 0
}

func TestGlobOracleTable(t *testing.T) {
	for _, tc := range globCases {
		if got := oracleMatch([]byte(tc.pat), []byte(tc.str), tc.nocase); got != tc.want {
			t.Errorf("oracle(%q, %q) = %v, want %v", tc.pat, tc.str, got, tc.want)
		}
	}
}

// TestGlobRandom compares Match with the model on random short patterns
// and subjects over an alphabet rich in special characters.
func TestGlobRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	patAlpha := []byte("ab*?[]^-\\A\xff\x80")
	strAlpha := []byte("abA]^-\\*[\xff\x80")
	gen := func(alpha []byte, max int) []byte {
		b := make([]byte, r.IntN(max+1))
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		return b
	}
	for i := 0; i < 200000; i++ {
		p, s := gen(patAlpha, 8), gen(strAlpha, 6)
		nocase := i%4 == 0
		if got, want := store.Match(p, s, nocase), oracleMatch(p, s, nocase); got != want {
			t.Fatalf("Match(%q, %q, nocase=%v) = %v, model says %v", p, s, nocase, got, want)
		}
	}
}
