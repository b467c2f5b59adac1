// Package repl holds the parts of Redis 7.0's replication that have rules
// of their own and no need of the keyspace:
//
//   - Buffer: the replication buffer the backlog and every replica share
//     (Redis 7.0's repl_buffer_blocks): the stream is held once, however
//     many replicas read it; the backlog keeps repl-backlog-size of it and
//     more while a slow replica still needs older bytes;
//   - Master: a server's replication state (ids, offsets, the buffer, the
//     replicas attached, their acknowledgements, timeouts and output
//     limits), the full syncs that the replicas waiting share (Sync) and
//     their sending: the streamed image's fan-out, the file after a
//     BGSAVE (fullsync.go); WAIT's requests and their release (wait.go);
//     the replica side's state: the link to its master, the cached
//     master's id, promotion and resumption (replicaof.go); the stream's
//     RDB AUX fields on save and load (aux.go); REPLCONF's handshake and
//     the answer to PSYNC (replconf.go); INFO replication's snapshots
//     (info.go); a shutdown's view of lagging replicas;
//   - Failover: the FAILOVER command's arguments and steps;
//   - the PSYNC exchange: what a master answers (Psync), what a replica
//     makes of the answer (ParsePsyncReply);
//   - a full sync's payload framing: "$<len>\r\n" or "$EOF:<mark>\r\n ...
//     <mark>" (PayloadReader, NewEOFMark);
//   - Link, a replica's connection to its master: the handshake, PSYNC,
//     the payload handed to its Host to load, then the master's stream
//     split into commands for the Host to apply, with Redis's offsets;
//   - the load of a master's payload as repl-diskless-load says (disk,
//     on-empty-db, swapdb), into a Loader the server implements, with
//     key-load-delay (load.go);
//   - WrittenKeys, the keys with an expiry written on a writable replica,
//     which it expires itself;
//   - what a command that ran replicates as (Verbatim, Rewrite,
//     BlockingAsPlain).
//
// The server (package server) owns the keyspace, the clients and the
// effects stream, and drives these pieces: it keeps the commands'
// handlers (SYNC, REPLCONF, REPLICAOF, ROLE, WAIT, FAILOVER), the
// replicas' and the master's clients, and what locks the keyspace.
package repl
