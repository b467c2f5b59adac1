package acl

import (
	"sort"
	"strings"
)

// categories are Redis's ACL categories, in the order ACL CAT and
// COMMAND show them. Bit i of a Command's Categories is categories[i].
var categories = [...]string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection", "transaction", "scripting"}

// Categories returns the names of the ACL categories, without '@'.
func Categories() []string { return append([]string(nil), categories[:]...) }

// CategoryIndex returns the bit of the category named name (in any
// case), or -1.
func CategoryIndex(name string) int {
	for i, c := range categories {
		if strings.EqualFold(c, name) {
			return i
		}
	}
	return -1
}

// Command is a command as ACL rules name it. The server describes each of
// its commands with one, and gives them to NewCommands.
type Command struct {
	Name       string     // lower case; a subcommand is "parent|sub"
	Categories uint32     // bit i: in category Categories()[i]
	NoAuth     bool       // allowed to every user (AUTH, HELLO, QUIT, ...)
	Subs       []*Command // a container's subcommands

	id     int
	parent *Command
	sub    map[string]*Command // by the part of the name after '|'
}

// Commands is the command table of a set of users.
type Commands struct {
	top    map[string]*Command
	sorted []*Command // top-level commands by name (their Subs by name too)
	order  []*Command // sorted, each followed by its subcommands
	n      int        // commands; bit n of a selector is "future commands"
	words  int        // uint64 words of a selector's command bitmap
}

// NewCommands builds the table from the top-level commands; it numbers
// them and their subcommands, and sorts the subcommands by name.
func NewCommands(top []*Command) *Commands {
	t := &Commands{top: map[string]*Command{}}
	for _, c := range top {
		t.top[c.Name] = c
		t.sorted = append(t.sorted, c)
	}
	sort.Slice(t.sorted, func(i, j int) bool { return t.sorted[i].Name < t.sorted[j].Name })
	for _, c := range t.sorted {
		c.id = t.n
		t.n++
		t.order = append(t.order, c)
		if len(c.Subs) == 0 {
			continue
		}
		sort.Slice(c.Subs, func(i, j int) bool { return c.Subs[i].Name < c.Subs[j].Name })
		c.sub = map[string]*Command{}
		for _, s := range c.Subs {
			s.id = t.n
			t.n++
			s.parent = c
			c.sub[s.Name[strings.IndexByte(s.Name, '|')+1:]] = s
			t.order = append(t.order, s)
		}
	}
	t.words = t.n/64 + 1
	return t
}

// Lookup finds a command by "name" or "name|sub", in any case (Redis's
// ACLLookupCommand): nil when there is none.
func (t *Commands) Lookup(name string) *Command {
	name = strings.ToLower(name)
	parts := strings.Split(name, "|")
	if len(parts) > 2 {
		return nil
	}
	cmd := t.top[parts[0]]
	if cmd == nil {
		return nil
	}
	if len(parts) == 2 {
		if cmd.sub == nil {
			return nil
		}
		return cmd.sub[parts[1]]
	}
	return cmd
}

// InCategory returns the names of the commands and subcommands in the
// category with bit cat, as ACL CAT lists them.
func (t *Commands) InCategory(cat int) []string {
	var names []string
	for _, cmd := range t.order {
		if cmd.Categories&(1<<cat) != 0 {
			names = append(names, cmd.Name)
		}
	}
	return names
}
