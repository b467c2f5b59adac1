// Package server is Sluice's network server and command engine: the event
// loops and their connections, client state, dispatch, the command
// handlers, and the glue that binds the subsystems' packages to them.
//
// What is where:
//   - loops and connections: listen.go; loop_linux.go (event loops that own
//     their connections: read, run every complete command, write once per
//     batch; hold replies for the AOF's group commit; prefetch the keys of
//     what arrived, store.Prefetcher); loop_uring_linux.go
//     (the loops on io_uring: input through multishot receives, a pass's
//     replies sent together; internal/uring holds the ring);
//     loop_tls_linux.go (TLS on the loops); spin.go (whether loops
//     busy-poll; internal/spin decides when); rawsys_linux.go;
//     loop_other.go and conn.go (a goroutine per connection); tls.go;
//     embed.go and direct.go (the embedded mode);
//   - clients and dispatch: client.go (client state, the gates before a
//     command, locking its keys, per-command stats), command.go (the table:
//     internal/cmdspec's specs bound to the handlers by commands_gen.go);
//   - command families, one file each (cmd_*.go, pubsub.go, multi.go,
//     scripting.go, functions.go, acl.go, monitor.go, tracking.go,
//     latency.go): the handlers and the helpers only they use;
//   - blocking.go (clients blocked on keys), pause.go (CLIENT PAUSE),
//     notify.go (keyspace notifications), evict.go (the maxmemory gate and
//     the eviction loop), memory.go (used memory, client memory and
//     maxmemory-clients), lazyfree.go;
//   - config.go (package config bound to the server), info.go and stats.go
//     (INFO);
//   - persistence and replication glue: persist.go and snapshot.go (package
//     persist's host), effects.go (what a write feeds the AOF and the
//     replicas), replication.go, replica.go, fullsync.go and failover.go
//     (package repl's host), shutdown.go; cmd_cluster.go (package cluster's
//     host).
//
// The engines are packages of their own, each reached through a small
// interface: config (directives, redis.conf, CONFIG REWRITE), acl, lua,
// persist and rdb, repl, cluster, store (the keyspace, eviction pools,
// digests), latency, tracking, pubsub, watch, sortkeys, monitor, geo, hll,
// bitstr, tlsconf, internal/cmdspec (the command table, key extraction,
// COMMAND's replies) and internal/sysinfo.
package server
