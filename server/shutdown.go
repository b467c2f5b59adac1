package server

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicedb/sluice/persist"
)

// Shutdown, after Redis 7.0's prepareForShutdown and finishShutdown: with
// replicas behind, SHUTDOWN (or SIGTERM/SIGINT) first waits up to
// shutdown-timeout seconds for them to acknowledge the whole stream,
// writes paused meanwhile and the SHUTDOWN clients blocked; then the
// persistence steps (children killed, the AOF fsynced, the final save),
// and the server stops. If a step fails the shutdown is cancelled, the
// blocked clients get an error, and the server keeps running. SHUTDOWN
// ABORT cancels a shutdown that waits.

type shutdownState struct {
	mu        sync.Mutex
	asap      bool   // a signal asked for a shutdown the cron starts
	sig       string // "sigterm" or "sigint"
	deadline  int64  // unix ms the wait for replicas ends; 0: none initiated
	save      bool
	nosave    bool
	force     bool
	clients   []*Client // blocked on SHUTDOWN
	finishing bool      // finishShutdown runs
	exiting   bool
}

const errShutdownFailed = "ERR Errors trying to SHUTDOWN. Check logs."

func shutdownCommand(c *Client, args [][]byte) {
	var nosave, save, now, force, abort bool
	for _, a := range args[1:] {
		switch {
		case eq(a, "nosave"):
			nosave = true
		case eq(a, "save"):
			save = true
		case eq(a, "now"):
			now = true
		case eq(a, "force"):
			force = true
		case eq(a, "abort"):
			abort = true
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	if abort && (nosave || save || now || force) || nosave && save {
		c.w.Error(errSyntax)
		return
	}
	s := c.srv
	if abort {
		if s.abortShutdown() {
			c.w.OK()
		} else {
			c.w.Error("ERR No shutdown in progress.")
		}
		return
	}
	if !nosave && s.lua.busySince.Load() != 0 && c.heldLoop() {
		c.w.Error(s.busyText())
		return
	}
	sd := &s.shutdown
	sd.mu.Lock()
	exiting := sd.exiting
	sd.mu.Unlock()
	if exiting {
		c.closeAfterReply = true
		return
	}
	// Blocked first, as Redis's blockClient(c, BLOCKED_SHUTDOWN): the
	// client waits for the shutdown, and gets an error if it fails.
	c.blockWith(nil, blockList, 0, nil, []byte("-"+errShutdownFailed+"\r\n"))
	s.prepareShutdown(save, nosave, now, force, c)
}

// ShutdownSignal starts a shutdown for a signal ("sigterm", "sigint"), as
// shutdown-on-sigterm/sigint say; the cron carries it out. A second SIGINT
// while one is pending exits at once, removing the file a save at
// shutdown was writing.
func (s *Server) ShutdownSignal(sig string) {
	sd := &s.shutdown
	sd.mu.Lock()
	defer sd.mu.Unlock()
	if sd.asap && sig == "sigint" {
		s.Warnf("You insist... exiting now.")
		persist.RemoveTempRDB()
		os.Exit(1)
	}
	if s.loading.On.Load() {
		s.Warnf("Received shutdown signal during loading, scheduling shutdown.")
	} else {
		s.Warnf("Received %s scheduling shutdown...", strings.ToUpper(sig))
	}
	sd.asap, sd.sig = true, sig
}

// shutdownCron starts a shutdown a signal asked for, and finishes one that
// waited for replicas once they caught up or the time is up.
func (s *Server) shutdownCron() {
	sd := &s.shutdown
	sd.mu.Lock()
	asap, sig, deadline := sd.asap, sd.sig, sd.deadline
	sd.mu.Unlock()
	switch {
	case asap && deadline == 0:
		flags := " " + s.cfg.Get("shutdown-on-"+sig) + " "
		s.prepareShutdown(strings.Contains(flags, " save "), strings.Contains(flags, " nosave "),
			strings.Contains(flags, " now "), strings.Contains(flags, " force "), nil)
	case deadline != 0:
		if time.Now().UnixMilli() >= deadline || s.repl.m.InSync() {
			s.finishShutdown()
		}
	}
}

// prepareShutdown begins a shutdown: it waits for replicas (waiting true)
// or finishes at once; err when it failed (the server keeps running).
func (s *Server) prepareShutdown(save, nosave, now, force bool, by *Client) (waiting bool, err error) {
	sd := &s.shutdown
	sd.mu.Lock()
	if by != nil {
		sd.clients = append(sd.clients, by)
	}
	if sd.deadline != 0 {
		sd.mu.Unlock()
		return true, nil
	}
	if s.loading.On.Load() {
		save, nosave = false, true // never over the file being loaded
	}
	sd.save, sd.nosave, sd.force = save, nosave, force
	sd.mu.Unlock()
	s.Warnf("User requested shutdown...")
	timeout, _ := strconv.ParseInt(s.cfg.Get("shutdown-timeout"), 10, 64)
	if !now && timeout != 0 && !s.repl.m.InSync() {
		sd.mu.Lock()
		sd.deadline = time.Now().UnixMilli() + timeout*1000
		sd.mu.Unlock()
		if s.pause.typ.Load() == pauseOff {
			s.sendGetack()
		}
		s.pauseClients(pauseWrite, 1<<62)
		s.Logf("Waiting for replicas before shutting down.")
		return true, nil
	}
	return false, s.finishShutdown()
}

// sendGetack asks the replicas for an acknowledgement now.
func (s *Server) sendGetack() {
	r := &s.repl
	r.lock()
	if len(r.m.ReplicasLocked()) > 0 {
		r.feedLocked(-1, bargs("REPLCONF", "GETACK", "*"))
	}
	r.unlock()
}

// finishShutdown logs the replicas' state, runs the persistence steps and
// stops the server; on failure the shutdown is cancelled.
func (s *Server) finishShutdown() error {
	sd := &s.shutdown
	sd.mu.Lock()
	if sd.finishing || sd.exiting {
		sd.mu.Unlock()
		return nil
	}
	sd.finishing = true
	sd.mu.Unlock()
	s.repl.m.LogLagging()
	sd.mu.Lock()
	save := sd.save || !sd.nosave && len(strings.Fields(s.cfg.Get("save"))) > 0
	force := sd.force
	sd.mu.Unlock()
	if err := s.shutdownSave(save, force); err != nil {
		s.Warnf("Errors trying to shut down the server. Check the logs for more information.")
		s.cancelShutdown()
		return err
	}
	if pf := s.cfg.Get("pidfile"); pf != "" {
		s.Logf("Removing the pid file.")
		os.Remove(pf)
	}
	sd.mu.Lock()
	sd.exiting = true
	sd.clients = nil
	sd.mu.Unlock()
	s.pe.Close()
	s.stopAccepting()
	go func() {
		s.Stop()
		if hook := s.shutdownHook.Load(); hook != nil {
			(*hook)()
		}
	}()
	return nil
}

// cancelShutdown ends a shutdown that failed or was aborted: the clients
// blocked on SHUTDOWN get an error and writes resume.
func (s *Server) cancelShutdown() {
	sd := &s.shutdown
	sd.mu.Lock()
	waited := sd.deadline != 0
	clients := sd.clients
	sd.asap, sd.deadline, sd.clients, sd.finishing = false, 0, nil, false
	sd.save, sd.nosave, sd.force = false, false, false
	sd.mu.Unlock()
	for _, c := range clients {
		s.blocking.mu.Lock()
		w := s.blocking.byClient[c]
		s.blocking.mu.Unlock()
		if w != nil {
			s.blocking.finish(w, []byte("-"+errShutdownFailed+"\r\n"))
		}
	}
	if waited {
		s.unpauseClients()
	}
}

// abortShutdown is SHUTDOWN ABORT; false when no shutdown is pending.
func (s *Server) abortShutdown() bool {
	sd := &s.shutdown
	sd.mu.Lock()
	initiated, asap := sd.deadline != 0, sd.asap
	if !initiated && asap {
		sd.asap = false
	}
	sd.mu.Unlock()
	switch {
	case initiated:
		s.cancelShutdown()
	case asap:
	default:
		return false
	}
	s.Logf("Shutdown manually aborted.")
	return true
}

// shutdownPending reports whether a shutdown waits for replicas.
func (s *Server) shutdownPending() bool {
	sd := &s.shutdown
	sd.mu.Lock()
	defer sd.mu.Unlock()
	return sd.deadline != 0
}

// shutdownInMillis is INFO's shutdown_in_milliseconds (ok: initiated).
func (s *Server) shutdownInMillis() (int64, bool) {
	sd := &s.shutdown
	sd.mu.Lock()
	defer sd.mu.Unlock()
	if sd.deadline == 0 {
		return 0, false
	}
	return max(sd.deadline-time.Now().UnixMilli(), 0), true
}
