package server

import (
	"math"

	"github.com/sluicedb/sluice/resp"
)

// Replication commands on a server that has no replicas.

// WAIT numreplicas timeout: no replica ever acknowledges, so the answer is
// 0, at once when 0 replicas are asked for (or inside MULTI), else when
// the timeout (milliseconds, 0: forever) passes or CLIENT UNBLOCK ends it,
// as redis-server without replicas does.
func waitCommand(c *Client, args [][]byte) {
	numreplicas, ok := resp.ParseInt(args[1])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	timeout, ok := c.parseTimeoutMs(args[2])
	if !ok {
		return
	}
	if c.srv.replLink() != nil {
		c.w.Error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
		return
	}
	if c.srv.repl.flags.Load()&replFeed != 0 && c.waitReplicas(numreplicas, timeout) {
		return
	}
	if numreplicas <= 0 || !c.canBlock() {
		c.w.Int(0)
		return
	}
	deadline := int64(0)
	if now := wallMs(); timeout > 0 && timeout <= math.MaxInt64-now {
		deadline = now + timeout
	} // a timeout past the end of time waits forever, as in Redis 7.0
	c.blockWith(nil, blockList, deadline, nil, []byte(":0\r\n"))
}
