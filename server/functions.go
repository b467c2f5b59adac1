package server

import (
	"github.com/sluicedb/sluice/lua"
	"github.com/sluicedb/sluice/store"
)

// The server's side of Redis 7 functions (functions.c): the FCALL and
// FUNCTION commands over the engine's libraries.

func fcallCommand(c *Client, a [][]byte) { fcallGenericCommand(c, a, false) }

func fcallRoCommand(c *Client, a [][]byte) { fcallGenericCommand(c, a, true) }

func functionKillCommand(c *Client, _ [][]byte) { scriptKill(c, false) }

func fcallGenericCommand(c *Client, args [][]byte, ro bool) {
	c.srv.feedMonitors(c, c.dbi, args, false) // before the commands it runs
	st := &c.srv.lua
	f := st.eng.Function(args[1])
	if f == nil {
		c.w.Error("ERR Function not found")
		return
	}
	keys, argv, ok := evalKeysArgs(c, args, "ERR Bad number of keys provided")
	if !ok {
		return
	}
	if !st.checkFlags(c, f.Flags, ro) {
		return
	}
	st.eng.StartFunction(f, keys, argv)
	// FUNCTION STATS shows the running command (published with the run).
	st.run.cmd = st.run.cmd[:0]
	for _, a := range args {
		st.run.cmd = append(st.run.cmd, string(a))
	}
	st.run.keys = keys
	st.execute(c, f.Name, false, ro || f.Flags&lua.NoWrites != 0)
}

func functionLoadCommand(c *Client, args [][]byte) {
	replace := false
	i := 2
	for ; i < len(args)-1; i++ {
		if eq(args[i], "replace") {
			replace = true
			continue
		}
		c.w.Error("ERR Unknown option given: " + string(args[i]))
		return
	}
	if i >= len(args) {
		c.w.Error("ERR Function code is missing")
		return
	}
	name, err := c.srv.lua.eng.LoadLibrary(string(args[i]), replace)
	if err != nil {
		c.w.Error("ERR " + err.Error())
		return
	}
	c.w.BulkString(name)
}

func functionDeleteCommand(c *Client, args [][]byte) {
	if !c.srv.lua.eng.DeleteLibrary(string(args[2])) {
		c.w.Error("ERR Library not found")
		return
	}
	c.w.OK()
}

func functionFlushCommand(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.w.Error("ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.")
		return
	}
	if len(args) == 3 && !eq(args[2], "sync") && !eq(args[2], "async") {
		c.w.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	c.srv.flushFunctions()
	c.w.OK()
}

// flushFunctions deletes every function library.
func (s *Server) flushFunctions() { s.lua.eng.FlushLibraries() }

func functionListCommand(c *Client, args [][]byte) {
	withCode := false
	var pattern []byte
	for i := 2; i < len(args); i++ {
		if !withCode && eq(args[i], "withcode") {
			withCode = true
			continue
		}
		if pattern == nil && eq(args[i], "libraryname") {
			if i >= len(args)-1 {
				c.w.Error("ERR library name argument was not given")
				return
			}
			i++
			pattern = args[i]
			continue
		}
		c.w.Error("ERR Unknown argument " + string(args[i]))
		return
	}
	var libs []*lua.Library
	for _, l := range c.srv.lua.eng.Libraries() {
		if pattern == nil || store.Match(pattern, []byte(l.Name), false) {
			libs = append(libs, l)
		}
	}
	c.w.Array(len(libs))
	for _, l := range libs {
		if withCode {
			c.w.Map(4)
		} else {
			c.w.Map(3)
		}
		c.w.BulkString("library_name")
		c.w.BulkString(l.Name)
		c.w.BulkString("engine")
		c.w.BulkString("LUA")
		c.w.BulkString("functions")
		funcs := l.Functions()
		c.w.Array(len(funcs))
		for _, f := range funcs {
			c.w.Map(3)
			c.w.BulkString("name")
			c.w.BulkString(f.Name)
			c.w.BulkString("description")
			if f.Description != nil {
				c.w.BulkString(*f.Description)
			} else {
				c.w.Null()
			}
			c.w.BulkString("flags")
			names := f.Flags.Names()
			c.w.Set(len(names))
			for _, n := range names {
				c.w.Simple(n)
			}
		}
		if withCode {
			c.w.BulkString("library_code")
			c.w.BulkString(l.Code)
		}
	}
}

func functionDumpCommand(c *Client, args [][]byte) {
	c.w.Bulk(c.srv.lua.eng.Dump())
}

func functionRestoreCommand(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.w.Error("ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP.")
		return
	}
	policy := lua.RestoreAppend
	if len(args) == 4 {
		switch {
		case eq(args[3], "flush"):
			policy = lua.RestoreFlush
		case eq(args[3], "append"):
		case eq(args[3], "replace"):
			policy = lua.RestoreReplace
		default:
			c.w.Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	if err := c.srv.lua.eng.Restore(args[2], policy); err != nil {
		c.w.Error("ERR " + err.Error())
		return
	}
	c.w.OK()
}

func functionStatsCommand(c *Client, args [][]byte) {
	st := &c.srv.lua
	st.mu.Lock()
	run := st.running.Load()
	var since int64
	if run != nil {
		since = st.busySince.Load()
	}
	st.mu.Unlock()
	nlibs, nfuncs := st.eng.Counts()
	if run != nil && run.eval {
		c.w.Error(errBusyScript)
		return
	}
	c.w.Map(2)
	c.w.BulkString("running_script")
	if run == nil {
		c.w.Null()
	} else {
		c.w.Map(3)
		c.w.BulkString("name")
		c.w.BulkString(run.name)
		c.w.BulkString("command")
		c.w.Array(len(run.cmd))
		for _, a := range run.cmd {
			c.w.BulkString(a)
		}
		c.w.BulkString("duration_ms")
		c.w.Int((nanotime() - since) / 1e6)
	}
	c.w.BulkString("engines")
	c.w.Map(1)
	c.w.BulkString("LUA")
	c.w.Map(2)
	c.w.BulkString("libraries_count")
	c.w.Int(int64(nlibs))
	c.w.BulkString("functions_count")
	c.w.Int(int64(nfuncs))
}

func functionHelpCommand(c *Client, args [][]byte) {
	lines := []string{
		"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"LOAD [REPLACE] <FUNCTION CODE>",
		"    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>",
		"    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
		"    Return general information on all the libraries:",
		"    * Library name",
		"    * The engine used to run the Library",
		"    * Library description",
		"    * Functions list",
		"    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
		"STATS",
		"    Return information about the current function running:",
		"    * Function name",
		"    * Command used to run the function",
		"    * Duration in MS that the function is running",
		"    If no function is running, return nil",
		"    In addition, returns a list of available engines.",
		"KILL",
		"    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]",
		"    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.",
		"    * SYNC: Synchronously flush the libraries.",
		"DUMP",
		"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
		"      libraries with the new libraries (notice that even on this case there is no guarantee that the",
		"      new libraries will have a new name or is unique.)",
		"HELP",
		"    Prints this help.",
	}
	c.w.Array(len(lines))
	for _, l := range lines {
		c.w.Simple(l)
	}
}
