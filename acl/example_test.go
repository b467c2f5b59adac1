package acl_test

import (
	"fmt"

	"github.com/sluicedb/sluice/acl"
)

// A server describes its commands once, builds a Store, and checks each
// command of a restricted user with the keys and channels it found in
// the arguments.
func Example() {
	bit := func(name string) uint32 { return 1 << acl.CategoryIndex(name) }
	get := &acl.Command{Name: "get", Categories: bit("read") | bit("string") | bit("fast")}
	set := &acl.Command{Name: "set", Categories: bit("write") | bit("string") | bit("slow")}
	st := acl.NewStore(acl.NewCommands([]*acl.Command{get, set}), nil)

	if err := st.SetUser("app", []string{"on", ">secret", "+@read", "~app:*"}, nil); err != nil {
		fmt.Println(err)
	}
	u := st.Authenticate([]byte("app"), []byte("secret"))
	fmt.Println(u.Name(), u.Restricted())

	args := [][]byte{[]byte("get"), []byte("other")}
	res, pos := u.Rules().Check(&acl.Request{Cmd: get, Args: args, Keys: []acl.KeyRef{{Pos: 1, Need: acl.Read}}})
	fmt.Println(res, string(args[pos]))

	args = [][]byte{[]byte("set"), []byte("app:1"), []byte("v")}
	res, _ = u.Rules().Check(&acl.Request{Cmd: set, Args: args, Keys: []acl.KeyRef{{Pos: 1, Need: acl.Write}}})
	fmt.Println(res)

	fmt.Println(u.Rules().Describe())
	// Output:
	// app true
	// key other
	// command
	// on #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b ~app:* resetchannels -@all +@read
}

// The aclfile is the users as ACL LIST shows them, one a line.
func ExampleStore_Load() {
	st := acl.NewStore(acl.NewCommands(nil), nil)
	err := st.Load("users.acl", []byte("user bob on nopass ~bob:* &*\n"), nil)
	fmt.Println(err)
	fmt.Print(string(st.Marshal()))
	// Output:
	// <nil>
	// user bob on nopass ~bob:* &* -@all
	// user default on nopass ~* &* +@all
}
