package server

import "time"

// Two clocks. Key expiry and what a client reads as the time (TIME,
// EXPIRETIME, stream IDs and idle times, OBJECT IDLETIME, LASTSAVE) follow
// the keyspace's clock (store.Clock), which an embedded server's tests may
// move. Timeouts a client waits through (blocking commands, CLIENT PAUSE,
// WAIT) and connection ages run on the wall clock: moving the keyspace's
// clock must not end or stretch a wait that is happening in real time.

// wallMs is the wall clock in unix milliseconds, for timeouts.
func wallMs() int64 { return time.Now().UnixMilli() }
