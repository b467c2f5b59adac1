package acl_test

import (
	"bufio"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/acl"
)

// The tests use redis-server 7.0.15's own command table (its COMMAND
// reply, in testdata), so that the texts they expect are the ones
// redis-server 7.0.15 answered to the same rules.

var (
	tableOnce sync.Once
	table     *acl.Commands
	tableErr  error
)

// redisCommands returns the command table of redis-server 7.0.15.
func redisCommands(t testing.TB) *acl.Commands {
	t.Helper()
	tableOnce.Do(func() {
		f, err := os.Open("testdata/redis-7.0-commands.txt")
		if err != nil {
			tableErr = err
			return
		}
		defer f.Close()
		byName := map[string]*acl.Command{}
		var top []*acl.Command
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			fields := strings.Fields(line)
			c := &acl.Command{Name: fields[0]}
			for _, f := range fields[1:] {
				if f == "no_auth" {
					c.NoAuth = true
				} else if i := acl.CategoryIndex(strings.TrimPrefix(f, "@")); i >= 0 {
					c.Categories |= 1 << i
				}
			}
			byName[c.Name] = c
			if i := strings.IndexByte(c.Name, '|'); i >= 0 {
				parent := byName[c.Name[:i]] // sorted: the parent comes first
				parent.Subs = append(parent.Subs, c)
			} else {
				top = append(top, c)
			}
		}
		tableErr = sc.Err()
		table = acl.NewCommands(top)
	})
	if tableErr != nil {
		t.Fatal(tableErr)
	}
	return table
}

func newStore(t testing.TB) *acl.Store {
	t.Helper()
	return acl.NewStore(redisCommands(t), nil)
}

// setUser is ACL SETUSER with rules split on blanks.
func setUser(t testing.TB, st *acl.Store, name, rules string) *acl.User {
	t.Helper()
	if err := st.SetUser(name, strings.Fields(rules), nil); err != nil {
		t.Fatalf("SETUSER %s %s: %v", name, rules, err)
	}
	return st.User(name)
}
