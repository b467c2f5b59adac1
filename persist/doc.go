// Package persist holds Sluice's durability: the append-only file in Redis
// 7.0's multi-part layout (a manifest, one base file in RDB or AOF form,
// incremental files, history kept until cleaned up), its fsync policies
// and group commit, the rewrite that replaces the base, the loader that
// replays the files at start-up, and RDB files written through a child
// process as Redis's forked saves are; a diskless full sync's image goes
// through a child too (StartRelay), as Redis's goes from its fork.
//
// It also takes the images of the store those files are written from
// (Dataset: a point-in-time snapshot walked while clients are served, an
// image encoded whole, or the live tables under the exclusive lock). The
// server hands it the effects of write commands (Feed), its part of an
// image's metadata, and a way to run commands when the files are
// replayed (Replayer); RDB files load into the store through LoadRDB,
// with the server's RDBSink. The rules of the effects stream
// are here too (effects.go: Verbatim, Rewrite, BlockingAsPlain): what a
// write is emitted as, to the AOF and to replicas alike.
package persist
