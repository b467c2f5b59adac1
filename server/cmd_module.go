package server

// MODULE on a server that loads no modules: LIST is empty, and LOAD,
// LOADEX and UNLOAD (protected, as in Redis: enable-module-command) fail
// with redis-server's errors for a module it cannot load or does not have.
func init() {
	register(
		&Command{Name: "module", Arity: -2, Group: "server", Since: "4.0.0", Summary: "A container for module commands", Complexity: "Depends on subcommand.", Subs: []*Command{
			{Name: "help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "server", Since: "5.0.0", Summary: "Show helpful text about the different subcommands", Complexity: "O(1)", Fn: moduleHelpCommand},
			{Name: "list", Arity: 2, Flags: []string{"admin", "noscript"}, Group: "server", Since: "4.0.0", Summary: "List all modules loaded by the server", Complexity: "O(N) where N is the number of loaded modules.", Fn: moduleListCommand},
			{Name: "load", Arity: -3, Flags: []string{"no_async_loading", "admin", "noscript", "protected"}, Group: "server", Since: "4.0.0", Summary: "Load a module", Complexity: "O(1)", Fn: moduleLoadCommand},
			{Name: "loadex", Arity: -3, Flags: []string{"no_async_loading", "admin", "noscript", "protected"}, Group: "server", Since: "7.0.0", Summary: "Load a module with extended parameters", Complexity: "O(1)", Fn: moduleLoadCommand},
			{Name: "unload", Arity: 3, Flags: []string{"no_async_loading", "admin", "noscript", "protected"}, Group: "server", Since: "4.0.0", Summary: "Unload a module", Complexity: "O(1)", Fn: moduleUnloadCommand},
		}},
	)
}

func moduleListCommand(c *Client, args [][]byte) { c.w.Array(0) }

func moduleHelpCommand(c *Client, args [][]byte) {
	c.replyHelp(args[0], []string{
		"LIST",
		"    Return a list of loaded modules.",
		"LOAD <path> [<arg> ...]",
		"    Load a module library from <path>, passing to it any optional arguments.",
		"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
		"    Load a module library from <path>, while passing it module configurations and optional arguments.",
		"UNLOAD <name>",
		"    Unload a module.",
	})
}

// moduleAllowed applies enable-module-command, as for DEBUG.
func (c *Client) moduleAllowed() bool {
	if c.allowProtected(c.srv.cfg.Get("enable-module-command")) {
		return true
	}
	c.w.Error("ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.")
	return false
}

func moduleLoadCommand(c *Client, args [][]byte) {
	if c.moduleAllowed() {
		// Sluice runs no C modules: every load fails as a bad path does.
		c.w.Error("ERR Error loading the extension. Please check the server logs.")
	}
}

func moduleUnloadCommand(c *Client, args [][]byte) {
	if c.moduleAllowed() {
		c.w.Error("ERR Error unloading module: no such module with that name")
	}
}
