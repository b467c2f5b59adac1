package server

// MODULE on a server that loads no modules: LIST is empty, and LOAD,
// LOADEX and UNLOAD (protected, as in Redis: enable-module-command) fail
// with redis-server's errors for a module it cannot load or does not have.

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
