// Package server is Sluice's network server and command engine: event
// loops that own their connections (epoll on Linux, a goroutine per
// connection for in-memory and other connections), the client state,
// dispatch, the command handlers with one file per command family, CONFIG,
// INFO and CLIENT. The command table itself is internal/cmdspec's;
// commands_gen.go binds its commands to the handlers here.
// Scripts run on package lua's engine; the server is its host and keeps
// the gates a script's commands pass and the busy state of a long script.
package server
