// Package server is Sluice's network server and command engine.
//
// What is where:
//   - loops and connections: listen.go, loop_linux.go (epoll event loops
//     that own their connections), loop_tls_linux.go, loop_other.go and
//     conn.go (a goroutine per connection), spin.go (busy polling), tls.go,
//     embed.go and direct.go (the embedded mode's hooks);
//   - clients and dispatch: client.go (the client state, arity, flags,
//     locking a command's keys, per-command stats), command.go (the table:
//     internal/cmdspec's specs bound to the handlers by commands_gen.go);
//   - command families, one file each (cmd_*.go, pubsub.go, multi.go,
//     scripting.go, functions.go, acl.go, monitor.go, tracking.go): they
//     hold handlers and the helpers only they use; cmd_command.go is
//     COMMAND, served from the table;
//   - blocking.go (clients blocked on keys), pause.go (CLIENT PAUSE),
//     notify.go (keyspace notifications), evict.go and lazyfree.go
//     (maxmemory, background frees), oom.go;
//   - config.go and configfile.go (CONFIG and redis.conf), info.go, stats.go,
//     latencystats.go and latencymon.go (INFO, LATENCY);
//   - persistence and replication glue: persist.go and snapshot.go (package
//     persist's host: images of the dataset, loading), effects.go (what a
//     write feeds the AOF and the replicas), replication.go and replica.go,
//     shutdown.go.
//
// Self-contained engines live in their own packages: acl (the rule
// engine), lua (the scripting VM), persist (AOF and RDB files), rdb (the
// format), store (the keyspace), geo, hll (HyperLogLog), bitstr (bit operations), and internal/cmdspec (the command
// table and key extraction).
package server
