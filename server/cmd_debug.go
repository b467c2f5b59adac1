package server

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// DEBUG: the subcommands Redis's own test suite and operators use. The
// quicklist's packed threshold is accepted and does nothing, since
// Sluice's lists keep no plain nodes.

func debugCommand(c *Client, args [][]byte) {
	if !c.allowProtected(c.srv.cfg.Get("enable-debug-command")) {
		c.w.Error("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.")
		return
	}
	sub := args[1]
	switch {
	case eq(sub, "help") && len(args) == 2:
		c.replyHelp(args[0], []string{
			"AOF-FLUSH-SLEEP <microsec>",
			"    Server will sleep before flushing the AOF, this is used for testing.",
			"CHANGE-REPL-ID",
			"    Change the replication IDs of the instance.",
			"    Dangerous: should be used only for testing the replication subsystem.",
			"DIGEST",
			"    Output a hex signature representing the current DB content.",
			"DIGEST-VALUE <key> [<key> ...]",
			"    Output a hex signature of the values of all the specified keys.",
			"ERROR <string>",
			"    Return a Redis protocol error with <string> as message. Useful for clients",
			"    unit tests to simulate Redis errors.",
			"LOADAOF",
			"    Flush the AOF buffers on disk and reload the AOF in memory.",
			"LOG <message>",
			"    Write <message> to the server log.",
			"OBJECT <key>",
			"    Show low level info about the `key` and associated value.",
			"POPULATE <count> [<prefix>] [<size>]",
			"    Create <count> string keys named key:<num>. If <prefix> is specified then",
			"    it is used instead of the 'key' prefix. These are not propagated to",
			"    replicas. Cluster slots are not respected so keys not belonging to the",
			"    current node can be created in cluster mode.",
			"PROTOCOL <type>",
			"    Reply with a test value of the specified type. <type> can be: string,",
			"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
			"    true, false.",
			"RELOAD [option ...]",
			"    Save the RDB on disk and reload it back to memory. Valid <option> values:",
			"    * MERGE: conflicting keys will be loaded from RDB.",
			"    * NOFLUSH: the existing database will not be removed before load, but",
			"      conflicting keys will generate an exception and kill the server.",
			"    * NOSAVE: the database will be loaded from an existing RDB file.",
			"    Examples:",
			"    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
			"      the database.",
			"    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
			"      existing RDB file.",
			"    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
			"      file to the database.",
			"SET-ACTIVE-EXPIRE <0|1>",
			"    Setting it to 0 disables expiring keys in background when they are not",
			"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
			"    default.",
			"SLEEP <seconds>",
			"    Stop the server for <seconds>. Decimals allowed.",
		})
	case eq(sub, "segfault") && len(args) == 2:
		// Redis crashes on purpose here (a write through a bad
		// pointer) and logs its crash report; Sluice logs the report
		// and exits.
		c.srv.CrashReport("Sluice " + SluiceVersion + " crashed on DEBUG SEGFAULT, as asked")
		os.Exit(1)
	case eq(sub, "sleep") && len(args) == 3:
		secs, err := strconv.ParseFloat(string(args[2]), 64)
		if err != nil || secs < 0 {
			secs = 0
		}
		if secs > 0 {
			d := time.Duration(secs * float64(time.Second))
			c.withKeyspace(func() { time.Sleep(d) })
		}
		c.w.OK()
	case eq(sub, "clusterlink") && len(args) == 5 && eq(args[2], "kill"), eq(sub, "drop-cluster-packet-filter") && len(args) == 3:
		debugCluster(c, args)
	case eq(sub, "set-active-expire") && len(args) == 3:
		c.srv.activeExpireOff.Store(string(args[2]) == "0")
		c.w.OK()
	case eq(sub, "log") && len(args) == 3:
		c.srv.Warnf("DEBUG LOG: %s", args[2])
		c.w.OK()
	case eq(sub, "error") && len(args) == 3:
		c.w.Error(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(args[2])))
	case eq(sub, "change-repl-id") && len(args) == 2:
		c.srv.Warnf("Changing replication IDs after receiving DEBUG change-repl-id")
		c.srv.changeReplID()
		c.w.OK()
	case eq(sub, "replicate") && len(args) >= 3:
		c.srv.replicateRaw(args[2:])
		c.w.OK()
	case eq(sub, "protocol") && len(args) == 3:
		debugProtocol(c, strings.ToLower(string(args[2])))
	case eq(sub, "populate") && len(args) >= 3 && len(args) <= 5:
		debugPopulate(c, args)
	case eq(sub, "object") && len(args) == 3:
		c.withKeyspace(func() { debugObject(c, args[2]) })
	case eq(sub, "digest") && len(args) == 2:
		var d [20]byte
		c.withKeyspace(func() { d = c.srv.ks.Digest() })
		c.w.Simple(hex.EncodeToString(d[:]))
	case eq(sub, "digest-value") && len(args) >= 2:
		c.withKeyspace(func() {
			db := c.DB()
			c.w.Array(len(args) - 2)
			for _, k := range args[2:] {
				var d [20]byte
				if e := db.PeekRaw(k); e != nil {
					d = store.Digest(e, db.ExpireOf(k, e))
				}
				c.w.Simple(hex.EncodeToString(d[:]))
			}
		})
	case eq(sub, "reload"):
		debugReload(c, args)
	case eq(sub, "loadaof") && len(args) == 2:
		debugLoadAOF(c)
	case eq(sub, "aof-flush-sleep") && len(args) == 3:
		us, _ := strconv.ParseInt(string(args[2]), 10, 64)
		c.srv.pe.SetFlushSleep(us)
		c.w.OK()
	case eq(sub, "htstats") && len(args) >= 3:
		dbi, err := strconv.Atoi(string(args[2]))
		if err != nil || dbi < 0 || dbi >= c.srv.ks.NumDBs() {
			c.w.Error("ERR Out of range database")
			return
		}
		n := c.srv.ks.DB(dbi).Size()
		c.w.Verbatim("txt", fmt.Sprintf("[Dictionary HT]\nHash table 0 stats (main hash table):\n table size: %d\n number of elements: %d\n[Expires HT]\nHash table 0 stats (main hash table):\nNo stats available for empty dictionaries\n", tableSize(n), n))
	case eq(sub, "htstats-key") && len(args) == 3:
		c.withKeyspace(func() {
			e := c.DB().PeekRaw(args[2])
			if e == nil {
				c.w.Error("ERR no such key")
				return
			}
			enc := objectEncodingOf(e)
			if enc != "hashtable" && enc != "skiplist" {
				c.w.Error("ERR The value stored at the specified key is not represented using an hash table")
				return
			}
			n := valueLen(e)
			c.w.Verbatim("txt", fmt.Sprintf("Hash table 0 stats (main hash table):\n table size: %d\n number of elements: %d\n", tableSize(n), n))
		})
	case eq(sub, "config-rewrite-force-all") && len(args) == 2:
		path := c.srv.cfg.File()
		if path == "" {
			c.w.Error("ERR CONFIG-REWRITE-FORCE-ALL failed: The server is running without a config file")
			return
		}
		if err := c.srv.cfg.RewriteAll(path); err != nil {
			c.w.Error("ERR CONFIG-REWRITE-FORCE-ALL failed: " + strerror(err))
			return
		}
		c.w.OK()
	case eq(sub, "set-disable-deny-scripts") && len(args) == 3:
		c.srv.denyScriptsOff.Store(string(args[2]) != "0")
		c.w.OK()
	case eq(sub, "replybuffer") && len(args) == 4:
		c.debugReplyBuffer(args)
	case eq(sub, "set-skip-checksum-validation") && len(args) == 3:
		n, _ := strconv.Atoi(string(args[2]))
		c.srv.skipChecksum.Store(n != 0)
		c.w.OK()
	case eq(sub, "pause-cron") && len(args) == 3:
		n, _ := strconv.Atoi(string(args[2]))
		c.srv.pauseCron.Store(n != 0)
		c.w.OK()
	case eq(sub, "quicklist-packed-threshold") && len(args) == 3:
		c.w.OK()
	case eq(sub, "listpack") && len(args) == 3:
		debugStructure(c, args[2], "listpack")
	case eq(sub, "quicklist") && (len(args) == 3 || len(args) == 4):
		debugStructure(c, args[2], "quicklist")
	case eq(sub, "stringmatch-test") && len(args) == 2:
		globFuzz()
		c.w.Simple("Apparently Redis did not crash: test passed")
	default:
		c.subcommandSyntaxError(args)
	}
}

// debugStructure is DEBUG LISTPACK and DEBUG QUICKLIST: for a value of
// that encoding, a line with its key and element count is printed on
// standard output (Redis prints the structure's nodes and entries).
func debugStructure(c *Client, key []byte, encoding string) {
	var out []byte
	failed := ""
	c.withKeyspace(func() {
		e := c.DB().PeekRaw(key)
		switch {
		case e == nil:
			failed = "ERR no such key"
		case objectEncodingOf(e) != encoding:
			failed = "ERR Not a " + encoding + " encoded object."
		default:
			n := 0
			switch e.Kind() {
			case store.KindList:
				n = e.AsList().Len()
			case store.KindHash:
				n = e.AsHash().Len()
			case store.KindZSet:
				n = e.AsZSet().Len()
			}
			out = fmt.Appendf(out, "{%s %q: %d elements}\n", encoding, key, n)
		}
	})
	if failed != "" {
		c.w.Error(failed)
		return
	}
	os.Stdout.Write(out)
	c.w.Simple(strings.ToUpper(encoding[:1]) + encoding[1:] + " structure printed on stdout")
}

// globFuzz is DEBUG STRINGMATCH-TEST: glob patterns and strings of random
// bytes, matched against each other (Redis's stringmatchlen_fuzz_test,
// for patterns that would recurse without end or read out of bounds).
func globFuzz() {
	var str, pat [32]byte
	for range 1_000_000 {
		sl, pl := rand.IntN(len(str)), rand.IntN(len(pat))
		for j := range sl {
			str[j] = byte(rand.IntN(128))
		}
		for j := range pl {
			pat[j] = byte(rand.IntN(128))
		}
		store.Match(pat[:pl], str[:sl], false)
	}
}

// withKeyspace runs fn with the whole keyspace to itself: under the
// exclusive lock, or as it is inside EXEC (which already holds it).
func (c *Client) withKeyspace(fn func()) {
	if c.inExec {
		fn()
		return
	}
	c.srv.ks.Lock.Lock()
	defer c.srv.ks.Lock.Unlock()
	fn()
}

func tableSize(n int) int {
	size := 4
	for size < n {
		size *= 2
	}
	return size
}

func valueLen(e *store.Entry) int {
	switch e.Kind() {
	case store.KindList:
		return e.AsList().Len()
	case store.KindSet:
		return e.AsSet().Len()
	case store.KindHash:
		return e.AsHash().Len()
	case store.KindZSet:
		return e.AsZSet().Len()
	}
	return 1
}

func debugProtocol(c *Client, name string) {
	w := &c.w
	switch name {
	case "string":
		w.BulkString("Hello World")
	case "integer":
		w.Int(12345)
	case "double":
		w.Double(3.141)
	case "bignum":
		if w.Resp3() {
			w.Raw([]byte("(1234567999999999999999999999999999999\r\n"))
		} else {
			w.BulkString("1234567999999999999999999999999999999")
		}
	case "null":
		w.Null()
	case "array":
		w.Array(3)
		for j := 0; j < 3; j++ {
			w.Int(int64(j))
		}
	case "set":
		w.Set(3)
		for j := 0; j < 3; j++ {
			w.Int(int64(j))
		}
	case "map":
		w.Map(3)
		for j := 0; j < 3; j++ {
			w.Int(int64(j))
			w.Bool(j == 1)
		}
	case "attrib":
		if w.Resp3() {
			w.Raw([]byte("|1\r\n"))
			w.BulkString("key-popularity")
			w.Array(2)
			w.BulkString("key:123")
			w.Int(90)
		}
		w.BulkString("Some real reply following the attribute")
	case "push":
		if !w.Resp3() {
			w.Error("ERR RESP2 is not supported by this command")
			return
		}
		w.Push(2)
		w.BulkString("server-cpu-usage")
		w.Int(42)
		w.BulkString("Some real reply following the push reply")
	case "true":
		w.Bool(true)
	case "false":
		w.Bool(false)
	case "verbatim":
		w.Verbatim("txt", "This is a verbatim\nstring")
	default:
		w.Error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
	}
}

// debugPopulate: DEBUG POPULATE count [prefix] [size] creates string keys
// prefix:0 .. prefix:count-1 (prefix "key") holding "value:N", padded
// with zero bytes or cut to size bytes when size is given. Existing keys
// are left alone.
func debugPopulate(c *Client, args [][]byte) {
	count, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		c.w.Error("ERR value is not an integer or out of range")
		return
	}
	if count < 0 {
		c.w.Error("ERR value is out of range, must be positive")
		return
	}
	size := int64(0)
	if len(args) == 5 {
		if size, err = strconv.ParseInt(string(args[4]), 10, 64); err != nil {
			c.w.Error("ERR value is not an integer or out of range")
			return
		}
		if size < 0 {
			c.w.Error("ERR value is out of range, must be positive")
			return
		}
	}
	prefix := "key"
	if len(args) >= 4 {
		prefix = string(args[3])
	}
	c.withKeyspace(func() {
		db := c.DB()
		var key, val []byte
		for j := int64(0); j < count; j++ {
			key = strconv.AppendInt(append(append(key[:0], prefix...), ':'), j, 10)
			if db.Exists(key) {
				continue
			}
			val = strconv.AppendInt(append(val[:0], "value:"...), j, 10)
			v := val
			if size > 0 {
				v = make([]byte, size)
				copy(v, val)
			}
			db.Add(key, store.NewString(v))
			db.Modified(key)
		}
	})
	c.w.OK()
}

// debugObject: DEBUG OBJECT key, in Redis's layout.
func debugObject(c *Client, key []byte) {
	e := c.DB().PeekRaw(key)
	if e == nil {
		c.w.Error("ERR no such key")
		return
	}
	enc := objectEncodingOf(e)
	if e.Kind() == store.KindString {
		enc = e.StringEncoding()
	}
	var serialized int
	if p := c.dumpPayload(e); len(p) > 10 {
		serialized = len(p) - 11 // less the type byte, RDB version and CRC
	}
	lru := e.LRU()
	idle := int64(0)
	if !c.srv.isLFUPolicy() {
		idle = int64(c.srv.ks.LRUClock() - lru)
		if idle < 0 {
			idle = 0
		}
	}
	extra := ""
	if e.Kind() == store.KindList {
		// The nodes of a quicklist filled by RPUSH (rdb.QuicklistShape).
		l := e.AsList()
		fill := int(c.srv.cfg.ListPackSize.Load())
		nodes, size := rdb.QuicklistShape(fill, func(yield func([]byte) bool) {
			l.Each(false, func(_ int, v []byte) bool { return yield(v) })
		})
		extra = fmt.Sprintf(" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:0 ql_uncompressed_size:%d",
			nodes, float64(l.Len())/float64(max(nodes, 1)), fill, size)
	}
	// lru is Redis's 24-bit object clock (LRU seconds, or LFU data).
	c.w.Simple(fmt.Sprintf("Value at:%p refcount:%d encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d%s",
		e, refcount(c, e), enc, serialized, lru&(1<<24-1), idle, extra))
}

// debugReload: DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save the dataset,
// empty it and load the file back, under the exclusive lock.
func debugReload(c *Client, args [][]byte) {
	flush, save, merge := true, true, false
	for _, o := range args[2:] {
		switch {
		case eq(o, "merge"):
			merge = true
		case eq(o, "noflush"):
			flush = false
		case eq(o, "nosave"):
			save = false
		default:
			c.w.Error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
			return
		}
	}
	s := c.srv
	var failed error
	c.withKeyspace(func() {
		if save {
			if err := s.saveLocked(); err != nil {
				failed = err
				return
			}
		}
		b, err := os.ReadFile(s.cfg.Get("dbfilename"))
		if err != nil {
			failed = fmt.Errorf("Error trying to load the RDB dump")
			return
		}
		if flush {
			for i := 0; i < s.ks.NumDBs(); i++ {
				s.ks.DB(i).Flush()
				s.ks.DB(i).DropScanSnapshots()
			}
			s.flushFunctions()
		}
		if err := s.loadRDBLocked(b, merge); err != nil {
			s.Warnf("%v", err)
			failed = fmt.Errorf("Error trying to load the RDB dump")
		}
	})
	if failed != nil {
		c.w.Error("ERR " + strings.TrimPrefix(failed.Error(), "ERR "))
		return
	}
	s.Warnf("DB reloaded by DEBUG RELOAD")
	c.w.OK()
}
