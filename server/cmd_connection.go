package server

import "strconv"

func init() {
	register(
		&Command{Name: "ping", Arity: -1, Flags: []string{"fast", "sentinel"}, ACL: []string{"fast", "connection"}, Group: "connection", Since: "1.0.0", Summary: "Returns the server's liveliness response.", Complexity: "O(1)", Fn: pingCommand},
		&Command{Name: "echo", Arity: 2, Flags: []string{"fast"}, ACL: []string{"fast", "connection"}, Group: "connection", Since: "1.0.0", Summary: "Returns the given string.", Complexity: "O(1)", Fn: func(c *Client, args [][]byte) { c.w.Bulk(args[1]) }},
		&Command{Name: "select", Arity: 2, Flags: []string{"loading", "stale", "fast"}, ACL: []string{"fast", "connection"}, Group: "connection", Since: "1.0.0", Summary: "Changes the selected database.", Complexity: "O(1)", Fn: selectCommand},
		&Command{Name: "quit", Arity: -1, Flags: []string{"allow_busy", "noscript", "loading", "stale", "fast", "no_auth"}, ACL: []string{"fast", "connection"}, Group: "connection", Since: "1.0.0", Summary: "Closes the connection.", Complexity: "O(1)", Fn: func(c *Client, args [][]byte) {
			c.w.OK()
			c.closeAfterReply = true
		}},
	)
}

func pingCommand(c *Client, args [][]byte) {
	if len(args) > 2 {
		c.w.Error(errArity("ping"))
		return
	}
	if len(args) == 2 {
		c.w.Bulk(args[1])
		return
	}
	c.w.Simple("PONG")
}

func selectCommand(c *Client, args [][]byte) {
	n, err := strconv.Atoi(string(args[1]))
	if err != nil {
		c.w.Error(errNotInt)
		return
	}
	if n < 0 || n >= c.srv.ks.NumDBs() {
		c.w.Error(errDBIndex)
		return
	}
	c.dbi = n
	c.w.OK()
}
