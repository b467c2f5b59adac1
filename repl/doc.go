// Package repl holds the parts of Redis 7.0's replication protocol that
// have rules of their own and no need of the keyspace:
//
//   - Buffer: the replication buffer the backlog and every replica share
//     (Redis 7.0's repl_buffer_blocks): the stream is held once, however
//     many replicas read it; the backlog keeps repl-backlog-size of it and
//     more while a slow replica still needs older bytes;
//   - Master: a source's replication state (ids, offsets, the buffer, the
//     replicas attached, their acknowledgements, timeouts and output
//     limits) and the full syncs that the replicas waiting share (Sync);
//   - Failover: the FAILOVER command's arguments and steps;
//   - the PSYNC exchange: what a master answers (Psync), what a replica
//     makes of the answer (ParsePsyncReply);
//   - a full sync's payload framing: "$<len>\r\n" or "$EOF:<mark>\r\n ...
//     <mark>" (PayloadReader, NewEOFMark);
//   - Link, a replica's connection to its master: the handshake, PSYNC,
//     the payload handed to its Host to load, then the master's stream
//     split into commands for the Host to apply, with Redis's offsets.
//
// The server (package server) owns the keyspace, the clients and the
// effects stream, and drives these pieces.
package repl
