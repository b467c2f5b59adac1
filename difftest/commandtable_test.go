package difftest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/redistest"
)

// The command table against redis-server's: COMMAND INFO and COMMAND
// DOCS of every command, COMMAND COUNT, COMMAND LIST FILTERBY ACLCAT for
// every category, in RESP2 and RESP3, and COMMAND GETKEYS and
// GETKEYSANDFLAGS for every command line of the case files.

// overlayCommands reads the commands Sluice's overlay says it does not
// serve (Redis 7.0 has them) and those it adds (Redis 7.0 lacks them).
func overlayCommands(t *testing.T) (notServed, sluiceOnly map[string]bool) {
	data, err := os.ReadFile(filepath.Join("..", "internal", "cmdspec", "overlay.json"))
	if err != nil {
		t.Fatal(err)
	}
	var overlay map[string]struct {
		Unimplemented bool            `json:"unimplemented"`
		Command       json.RawMessage `json:"command"`
	}
	if err := json.Unmarshal(data, &overlay); err != nil {
		t.Fatal(err)
	}
	notServed, sluiceOnly = map[string]bool{}, map[string]bool{}
	for name, e := range overlay {
		if e.Unimplemented {
			notServed[name] = true
		}
		if e.Command != nil {
			sluiceOnly[name] = true
		}
	}
	return notServed, sluiceOnly
}

func TestCommandTable(t *testing.T) {
	notServed, sluiceOnly := overlayCommands(t)
	redisAddr := redistest.StartRedis(t)
	_, sluiceAddr := redistest.StartSluice(t)
	for _, proto := range []string{"2", "3"} {
		r := redistest.Dial(t, redisAddr)
		s := redistest.Dial(t, sluiceAddr)
		for _, c := range []*redistest.Conn{r, s} {
			if _, err := c.Do("HELLO", proto); err != nil {
				t.Fatal(err)
			}
		}
		do := func(c *redistest.Conn, args ...string) string {
			reply, err := c.Do(args...)
			if err != nil {
				t.Fatalf("%s: %v", strings.Join(args, " "), err)
			}
			return reply
		}
		compare := func(args ...string) {
			want, got := do(r, args...), do(s, args...)
			if args[1] == "INFO" || args[1] == "DOCS" {
				// Redis lists subcommands in its dict's order.
				want, got = sortSubcommands(args[1], want), sortSubcommands(args[1], got)
			}
			if want != got {
				t.Errorf("RESP%s %s\n redis:  %q\n sluice: %q", proto, strings.Join(args, " "), want, got)
			}
		}
		names := elements(do(r, "COMMAND", "LIST"))
		if len(names) < 300 {
			t.Fatalf("redis lists %d commands", len(names))
		}
		for _, n := range names {
			if notServed[n] {
				continue
			}
			if n == "client" {
				// Its subcommands are compared one by one; Sluice has two more.
				continue
			}
			compare("COMMAND", "INFO", n)
			compare("COMMAND", "DOCS", n)
		}
		if want, got := do(r, "COMMAND", "COUNT"), do(s, "COMMAND", "COUNT"); want != fmt.Sprintf(":%d\r\n", atoiReply(t, got)+len(notServed)) {
			t.Errorf("COMMAND COUNT: redis %q, sluice %q (Sluice serves %d fewer)", want, got, len(notServed))
		}
		for _, cat := range elements(do(r, "ACL", "CAT")) {
			want := elements(do(r, "COMMAND", "LIST", "FILTERBY", "ACLCAT", cat))
			got := elements(do(s, "COMMAND", "LIST", "FILTERBY", "ACLCAT", cat))
			if a, b := listWithout(want, notServed), listWithout(got, sluiceOnly); a != b {
				t.Errorf("RESP%s COMMAND LIST FILTERBY ACLCAT %s\n redis:  %s\n sluice: %s", proto, cat, a, b)
			}
		}
	}

	r := redistest.Dial(t, redisAddr)
	s := redistest.Dial(t, sluiceAddr)
	files, _ := filepath.Glob("testdata/*.txt")
	n := 0
	for _, f := range files {
		for _, c := range parseCases(t, f) {
			for _, l := range c.lines {
				if len(l.args) == 0 || notServed[strings.ToLower(l.args[0])] {
					continue
				}
				n++
				for _, sub := range []string{"GETKEYS", "GETKEYSANDFLAGS"} {
					args := append([]string{"COMMAND", sub}, l.args...)
					want, err1 := r.Do(args...)
					got, err2 := s.Do(args...)
					if err1 != nil || err2 != nil {
						t.Fatalf("%s:%d: %v %v", f, l.no, err1, err2)
					}
					if want != got {
						t.Errorf("%s:%d COMMAND %s %s\n redis:  %q\n sluice: %q", f, l.no, sub, strings.Join(l.args, " "), want, got)
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Errorf("only %d command lines for GETKEYS", n)
	}
}

func atoiReply(t *testing.T, reply string) int {
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(reply, ":")))
	if err != nil {
		t.Fatalf("not an integer: %q", reply)
	}
	return n
}

// elements returns the bulk strings of a flat array reply.
func elements(raw string) []string {
	root, _ := parseNode(raw, 0)
	var out []string
	for _, k := range root.kids {
		if i := strings.Index(k.head, "\r\n"); i >= 0 && k.head[0] == '$' {
			out = append(out, strings.TrimSuffix(k.head[i+2:], "\r\n"))
		}
	}
	return out
}

func listWithout(names []string, drop map[string]bool) string {
	var out []string
	for _, n := range names {
		if !drop[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// node is a parsed RESP reply: its first line (with a bulk string's
// body) and its elements.
type node struct {
	head string
	kids []*node
}

func parseNode(s string, i int) (*node, int) {
	j := strings.Index(s[i:], "\r\n") + i
	n := &node{head: s[i : j+2]}
	i = j + 2
	l, _ := strconv.Atoi(n.head[1 : len(n.head)-2])
	switch n.head[0] {
	case '$', '=', '!':
		if l >= 0 {
			n.head += s[i : i+l+2]
			i += l + 2
		}
	case '*', '~', '%', '>':
		if n.head[0] == '%' {
			l *= 2
		}
		for k := 0; k < l; k++ {
			var c *node
			c, i = parseNode(s, i)
			n.kids = append(n.kids, c)
		}
	}
	return n, i
}

func (n *node) String() string {
	var b strings.Builder
	b.WriteString(n.head)
	for _, k := range n.kids {
		b.WriteString(k.String())
	}
	return b.String()
}

// sortKids sorts a node's elements (pairs: a map's entries by key).
func sortKids(n *node, pairs bool) {
	if !pairs {
		sort.Slice(n.kids, func(i, j int) bool { return n.kids[i].String() < n.kids[j].String() })
		return
	}
	type pair struct{ k, v *node }
	var ps []pair
	for i := 0; i+1 < len(n.kids); i += 2 {
		ps = append(ps, pair{n.kids[i], n.kids[i+1]})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].k.String() < ps[j].k.String() })
	n.kids = n.kids[:0]
	for _, p := range ps {
		n.kids = append(n.kids, p.k, p.v)
	}
}

// sortSubcommands puts the subcommands of COMMAND INFO's or COMMAND
// DOCS's reply in name order (Redis lists them in its dict's order).
func sortSubcommands(sub, raw string) string {
	if raw == "" || raw[0] == '-' {
		return raw
	}
	root, _ := parseNode(raw, 0)
	var info func(n *node)
	info = func(n *node) {
		if len(n.kids) == 10 {
			sortKids(n.kids[9], false)
			for _, k := range n.kids[9].kids {
				info(k)
			}
		}
	}
	var docs func(n *node)
	docs = func(n *node) {
		for i := 0; i+1 < len(n.kids); i += 2 {
			if strings.HasSuffix(n.kids[i].head, "\r\nsubcommands\r\n") {
				sortKids(n.kids[i+1], true)
				for j := 1; j < len(n.kids[i+1].kids); j += 2 {
					docs(n.kids[i+1].kids[j])
				}
			}
		}
	}
	if sub == "INFO" {
		for _, k := range root.kids {
			info(k)
		}
	} else {
		for i := 1; i < len(root.kids); i += 2 {
			docs(root.kids[i])
		}
	}
	return root.String()
}
