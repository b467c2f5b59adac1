package server

import (
	"time"

	"github.com/sluicedb/sluice/cluster"
	"github.com/sluicedb/sluice/config"
)

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//         [AUTH password | AUTH2 username password] [KEYS key ...]
//
// It moves keys to another server as Redis does: DUMP payloads sent with
// RESTORE by cluster.Migrator over a connection kept for reuse, the
// source keys deleted once the target took them. Like Redis, the caller
// waits for the target; only the keys' shards are held meanwhile.

func migrateCommand(c *Client, args [][]byte) {
	var copyKeys, replace bool
	var username, password []byte
	keys := args[3:4]
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "copy"):
			copyKeys = true
		case eq(args[j], "replace"):
			replace = true
		case eq(args[j], "auth"):
			if more < 1 {
				c.w.Error(errSyntax)
				return
			}
			j++
			password = args[j]
		case eq(args[j], "auth2"):
			if more < 2 {
				c.w.Error(errSyntax)
				return
			}
			username, password = args[j+1], args[j+2]
			j += 2
		case eq(args[j], "keys"):
			if len(args[3]) != 0 {
				c.w.Error("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return
			}
			keys = args[j+1:]
			j = len(args)
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	timeoutMs, ok := c.intArg(args[5])
	if !ok {
		return
	}
	dbid, ok := c.intArg(args[4])
	if !ok {
		return
	}
	if timeoutMs <= 0 {
		timeoutMs = 1000
	}
	timeout := time.Duration(timeoutMs) * time.Millisecond
	db := c.DB()
	var items []cluster.MigrateItem
	now := c.srv.ks.Now()
	for _, k := range keys {
		e := db.Lookup(k)
		if e == nil {
			continue
		}
		var ttl int64
		if at := db.ExpireOf(k, e); at > 0 {
			if ttl = at - now; ttl < 0 {
				continue
			}
			ttl = max(ttl, 1)
		}
		items = append(items, cluster.MigrateItem{Key: k, Payload: c.dumpPayload(e), TTL: ttl})
	}
	if len(items) == 0 {
		c.w.Simple("NOKEY")
		return
	}
	job := &cluster.MigrateJob{Host: string(args[1]), Port: string(args[2]), DB: dbid, Timeout: timeout,
		Username: username, Password: password, Replace: replace, Asking: c.srv.cluster != nil, Items: items}
	if msg := c.srv.migrate.Migrate(job, func(i int) {
		if !copyKeys && db.Delete(items[i].Key) {
			c.notify(config.NotifyGeneric, "del", items[i].Key)
		}
	}); msg != "" {
		c.w.Error(msg)
		return
	}
	c.w.OK()
}
