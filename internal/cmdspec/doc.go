// Package cmdspec is Sluice's command table: for every command its arity,
// flags, ACL categories, key specifications and documentation, the one
// source that dispatch, COMMAND (INFO, DOCS, COUNT, LIST, GETKEYS), arity
// errors, ACL and key extraction read.
//
// The table (table_gen.go) is generated, as Redis generates commands.c,
// from Redis 7.0.15's command JSON (commands/*.json, copied unchanged from
// Redis's src/commands; BSD-3-Clause, see commands/COPYING) and Sluice's
// overlay (overlay.json: the commands Sluice does not serve, the ones that
// lock the whole keyspace, handlers not named after their command, and
// commands Redis 7.0 lacks). The same run writes server/commands_gen.go,
// which binds each command to its handler. After editing either source,
// run go generate ./internal/cmdspec; a test fails while the output is
// stale. (The generator builds this package with the cmdspecgen tag, which
// leaves the old table out, so a stale table never stops it.)
//
// Spec.Keys is the one key extraction: Redis's key specs and the key
// procedures of the commands Redis special-cases.
//
// render.go writes COMMAND's replies from a Spec, in Redis's shapes:
// WriteInfo (COMMAND INFO), WriteDocs (COMMAND DOCS), WriteKeys (COMMAND
// GETKEYS and GETKEYSANDFLAGS), WriteKeyFlags, and List (COMMAND LIST's
// walk); the server keeps the handlers, which look the commands up.
package cmdspec

//go:generate go run -tags cmdspecgen generate.go
