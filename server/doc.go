// Package server is Sluice's network server and command engine: event
// loops that own their connections (epoll on Linux, a goroutine per
// connection for in-memory and other connections), the client state, the
// command table with one file per command family, CONFIG, INFO and CLIENT.
// Scripts run on package lua's engine; the server is its host and keeps
// the gates a script's commands pass and the busy state of a long script.
package server
