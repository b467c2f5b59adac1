package miniredis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/server"
	"github.com/sluicedb/sluice/sluicetest"
)

// DumpMaxLineLen is the longest a value gets in Dump's output.
var DumpMaxLineLen = 60

// Miniredis is an embedded Sluice server with miniredis's API.
type Miniredis struct {
	// sync.Mutex is there for miniredis's method set; the server does not
	// use it.
	sync.Mutex
	// Ctx is cancelled by Close.
	Ctx       context.Context
	CtxCancel context.CancelFunc

	mu          sync.Mutex
	s           *sluicetest.Server
	listened    bool // Start ran once (Start after Close restarts)
	selectedDB  int
	dbs         map[int]*RedisDB
	passwords   map[string]string // username -> password, as RequireUserAuth set them
	aclUsers    map[string]bool   // users other than default created on the server
	errMsg      string
	subscribers map[*Subscriber]struct{}
	subConns    atomic.Int64 // connections the subscribers opened on the current server
	subCmds     atomic.Int64 // commands the subscribers sent to it
	fieldTTLs   map[fieldKey]int64
}

// Tester is a minimal version of a testing.T
type Tester interface {
	Fatalf(string, ...interface{})
	Cleanup(func())
	Logf(format string, args ...interface{})
}

// NewMiniRedis makes a new, non-started, Miniredis object. Its direct
// helpers work at once; Start opens it to clients.
func NewMiniRedis() *Miniredis {
	s, err := sluicetest.New()
	if err != nil {
		panic("miniredis: " + err.Error())
	}
	// Keys' time stands still until the test moves it, as in miniredis
	// (see ClockTTL).
	s.Server().Keyspace().Clock().Freeze()
	m := &Miniredis{
		s:           s,
		dbs:         map[int]*RedisDB{},
		subscribers: map[*Subscriber]struct{}{},
	}
	m.Ctx, m.CtxCancel = context.WithCancel(context.Background())
	return m
}

// Run creates and Start()s a Miniredis.
func Run() (*Miniredis, error) {
	m := NewMiniRedis()
	return m, m.Start()
}

// RunT start a new miniredis, pass it a testing.T. It also registers the
// cleanup after your test is done.
func RunT(t Tester) *Miniredis {
	m := NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatalf("could not start miniredis: %s", err)
		// not reached
	}
	t.Cleanup(m.Close)
	return m
}

// RunTLS creates and Start()s a Miniredis, TLS version.
func RunTLS(cfg *tls.Config) (*Miniredis, error) {
	m := NewMiniRedis()
	return m, m.StartTLS(cfg)
}

// Start starts a server. It listens on a random port on localhost (after
// Close: on the port it had, with the data kept). See also Addr().
func (m *Miniredis) Start() error { return m.start("", nil) }

// StartTLS starts a server, TLS version.
func (m *Miniredis) StartTLS(cfg *tls.Config) error { return m.start("", cfg) }

// StartAddr runs miniredis with a given addr. Examples: "127.0.0.1:6379",
// ":6379", or "127.0.0.1:0"
func (m *Miniredis) StartAddr(addr string) error { return m.start(addr, nil) }

// StartAddrTLS runs miniredis with a given addr, TLS version.
func (m *Miniredis) StartAddrTLS(addr string, cfg *tls.Config) error { return m.start(addr, cfg) }

// start listens on addr ("": a random port the first time, the port it had
// after Close), with TLS when cfg is set.
func (m *Miniredis) start(addr string, cfg *tls.Config) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.listened && !m.s.Closed() {
		return fmt.Errorf("listen tcp %s: bind: address already in use", m.s.Addr())
	}
	if addr == "" {
		addr = "127.0.0.1:0"
		if m.listened {
			addr = m.s.Addr()
		}
	}
	restart := m.listened
	var err error
	if cfg != nil {
		err = m.s.ListenTLS(addr, cfg)
	} else {
		err = m.s.Listen(addr)
	}
	if err != nil {
		return err
	}
	m.listened = true
	if restart {
		return m.restartedLocked()
	}
	return nil
}

// restartedLocked applies the settings a new server (after Close) does not
// have from its options: authentication, the forced error, the
// subscribers' connections.
func (m *Miniredis) restartedLocked() error {
	m.subConns.Store(0)
	m.subCmds.Store(0)
	m.aclUsers = nil
	if err := m.applyAuthLocked(); err != nil {
		return err
	}
	m.s.Server().SetErrorReply(m.errMsg)
	for sub := range m.subscribers {
		sub.reconnect()
	}
	return nil
}

// Restart restarts a Close()d server on the same port, TLS or not as it
// was. Values will be preserved.
func (m *Miniredis) Restart() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.listened {
		m.listened = true
		if err := m.s.Listen("127.0.0.1:0"); err != nil {
			return err
		}
		return nil
	}
	if err := m.s.Restart(); err != nil {
		return err
	}
	return m.restartedLocked()
}

// Close shuts down a Miniredis. Its data stays, for the direct helpers and
// for Restart.
func (m *Miniredis) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.s.Closed() {
		return
	}
	m.CtxCancel()
	m.s.Close()
}

// Dial returns an in-memory client connection to the server: no socket
// is involved. A non-started Miniredis is started first (listening on a
// random port).
func (m *Miniredis) Dial() (net.Conn, error) {
	m.mu.Lock()
	if !m.listened {
		if err := m.s.Listen("127.0.0.1:0"); err != nil {
			m.mu.Unlock()
			return nil, err
		}
		m.listened = true
	}
	closed := m.s.Closed()
	m.mu.Unlock()
	if closed {
		return nil, errors.New("miniredis: server is closed")
	}
	return m.s.Dial(), nil
}

// Addr returns '127.0.0.1:12345'. Can be given to a Dial(). See also Host()
// and Port(), which return the same things.
func (m *Miniredis) Addr() string { return m.s.Addr() }

// Host returns the host part of Addr().
func (m *Miniredis) Host() string {
	h, _, _ := net.SplitHostPort(m.s.Addr())
	return h
}

// Port returns the (random) port part of Addr().
func (m *Miniredis) Port() string {
	_, p, _ := net.SplitHostPort(m.s.Addr())
	return p
}

// Server returns the underlying Sluice server (miniredis returns its own
// server type, for custom commands).
func (m *Miniredis) Server() *server.Server { return m.s.Server() }

// RequireAuth makes every connection need to AUTH first. This is the old
// 'AUTH [password] command. Remove it by setting an empty string.
func (m *Miniredis) RequireAuth(pw string) {
	m.RequireUserAuth("default", pw)
}

// RequireUserAuth adds a username/password, for use with 'AUTH [username]
// [password]'; the user may run every command. Connections then need to
// AUTH first, those already open included. Disable access for the user
// with an empty password.
func (m *Miniredis) RequireUserAuth(username, pw string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.passwords == nil {
		m.passwords = map[string]string{}
	}
	if pw == "" {
		delete(m.passwords, username)
	} else {
		m.passwords[username] = pw
	}
	if err := m.applyAuthLocked(); err != nil {
		panic("miniredis: " + err.Error())
	}
	m.s.Server().RequireAuthAgain()
}

// applyAuthLocked sets the server's users from the passwords: each named
// user may run everything with its password; the default user needs its
// password, or, when only other users have one, cannot be used at all.
func (m *Miniredis) applyAuthLocked() error {
	var names []string
	for u := range m.passwords {
		if u != "default" {
			names = append(names, u)
		}
	}
	sort.Strings(names)
	want := map[string]bool{}
	for _, u := range names {
		want[u] = true
		if _, err := m.s.DoIn(0, "ACL", "SETUSER", u, "reset", "on", ">"+m.passwords[u], "~*", "&*", "+@all"); err != nil {
			return err
		}
	}
	for u := range m.aclUsers {
		if !want[u] {
			if _, err := m.s.DoIn(0, "ACL", "DELUSER", u); err != nil {
				return err
			}
		}
	}
	m.aclUsers = want
	var err error
	switch pw, ok := m.passwords["default"]; {
	case ok:
		_, err = m.s.DoIn(0, "ACL", "SETUSER", "default", "on", "resetpass", ">"+pw)
	case len(names) > 0:
		_, err = m.s.DoIn(0, "ACL", "SETUSER", "default", "on", "resetpass")
	default:
		_, err = m.s.DoIn(0, "ACL", "SETUSER", "default", "on", "nopass")
	}
	return err
}

// SetError makes every command return this message. For example:
//
//	LOADING Redis is loading the dataset in memory
//	MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.
//
// Clear it with an empty string. Don't add newlines.
func (m *Miniredis) SetError(msg string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errMsg = msg
	m.s.Server().SetErrorReply(msg)
}

// DB returns a DB by ID.
func (m *Miniredis) DB(i int) *RedisDB {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dbLocked(i)
}

func (m *Miniredis) dbLocked(i int) *RedisDB {
	if db, ok := m.dbs[i]; ok {
		return db
	}
	db := &RedisDB{master: m, id: i}
	m.dbs[i] = db
	return db
}

// selected returns the database the Miniredis-level helpers use.
func (m *Miniredis) selected() *RedisDB {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dbLocked(m.selectedDB)
}

// Select sets the DB id for all direct commands.
func (m *Miniredis) Select(i int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.selectedDB = i
}

// SwapDB swaps DBs by IDs.
func (m *Miniredis) SwapDB(i, j int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.s.DoIn(0, "SWAPDB", itoa(i), itoa(j)); err != nil {
		return false
	}
	a, b := m.dbLocked(i), m.dbLocked(j)
	a.id, b.id = j, i
	m.dbs[i], m.dbs[j] = b, a
	return true
}

// CommandCount returns the number of processed commands.
func (m *Miniredis) CommandCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s.CommandCount() - int(m.subCmds.Load())
}

// CurrentConnectionCount returns the number of currently connected clients.
func (m *Miniredis) CurrentConnectionCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.s.Closed() {
		return 0
	}
	n := 0
	for sub := range m.subscribers {
		if sub.connected() {
			n++
		}
	}
	return m.s.Server().ConnectedClients() - n
}

// TotalConnectionCount returns the number of client connections since
// server start.
func (m *Miniredis) TotalConnectionCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int(m.s.Server().TotalConnections() - m.subConns.Load())
}

// FastForward moves the server's clock forward by duration: every TTL
// decreases by it, and keys whose TTL reaches 0 are gone. TIME and the
// stream IDs XADD makes move with it.
func (m *Miniredis) FastForward(duration time.Duration) {
	m.s.FastForward(duration)
	m.expireFields()
}

// SetTime sets the server's clock: what TIME returns, what EXPIREAT and
// the other absolute expiry times are compared with, and the time in the
// stream IDs XADD makes. The clock then stands still until FastForward or
// SetTime moves it (ClockTTL(true) lets it run from there).
func (m *Miniredis) SetTime(t time.Time) {
	if t.IsZero() {
		t = time.Now()
	}
	m.s.SetTime(t)
	m.expireFields()
}

// ClockTTL(true) makes the server's clock run, so TTLs decrease as time
// passes, as in Redis; ClockTTL(false), the default, stops it again, so
// TTLs move only with FastForward and SetTime.
func (m *Miniredis) ClockTTL(enabled bool) {
	c := m.s.Server().Keyspace().Clock()
	if enabled {
		c.Run()
	} else {
		c.Freeze()
	}
}

// Seed is accepted for miniredis's API. Random picks (SPOP, SRANDMEMBER,
// RANDOMKEY) are the server's, as in Redis, not a seeded sequence.
func (m *Miniredis) Seed(seed int) {}

// IsReadOnlyCommand checks if a command is marked as read-only
func (m *Miniredis) IsReadOnlyCommand(cmd string) bool {
	v, err := m.s.DoIn(0, "COMMAND", "INFO", cmd)
	if err != nil {
		return false
	}
	infos, _ := v.([]any)
	if len(infos) != 1 {
		return false
	}
	info, _ := infos[0].([]any)
	if len(info) < 3 {
		return false
	}
	flags, _ := info[2].([]any)
	for _, f := range flags {
		if f == "readonly" {
			return true
		}
	}
	return false
}

// Copy a value. Needs the IDs of both the source and dest DBs (which can
// differ). Returns ErrKeyNotFound if src does not exist. Overwrites dest
// if it already exists (unlike the redis command, which needs a flag to
// allow that).
func (m *Miniredis) Copy(srcDB int, src string, destDB int, dest string) error {
	db := m.DB(srcDB)
	if srcDB == destDB && src == dest {
		if !db.Exists(src) {
			return ErrKeyNotFound
		}
		return nil
	}
	n, err := db.int("COPY", src, dest, "DB", itoa(m.DB(destDB).id), "REPLACE")
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrKeyNotFound
	}
	return nil
}

// Dump returns a text version of the selected DB, usable for debugging.
//
// Dump limits the maximum length of each key:value to "DumpMaxLineLen" characters.
// To increase that, call something like:
//
//	miniredis.DumpMaxLineLen = 1024
//	mr, _ = miniredis.Run()
//	mr.Dump()
func (m *Miniredis) Dump() string {
	var (
		maxLen = DumpMaxLineLen
		indent = "   "
		db     = m.selected()
		r      strings.Builder
		v      = func(s string) string {
			suffix := ""
			if len(s) > maxLen {
				suffix = fmt.Sprintf("...(%d)", len(s))
				s = s[:maxLen-len(suffix)]
			}
			return fmt.Sprintf("%q%s", s, suffix)
		}
	)
	for _, k := range db.Keys() {
		fmt.Fprintf(&r, "- %s\n", k)
		switch t := db.Type(k); t {
		case "string":
			s, _ := db.str("GET", k)
			fmt.Fprintf(&r, "%s%s\n", indent, v(s))
		case "hash":
			h := db.hashAll(k)
			for _, f := range sortedKeys(h) {
				fmt.Fprintf(&r, "%s%s: %s\n", indent, f, v(h[f]))
			}
		case "list":
			l, _ := db.List(k)
			for _, e := range l {
				fmt.Fprintf(&r, "%s%s\n", indent, v(e))
			}
		case "set":
			s, _ := db.Members(k)
			for _, e := range s {
				fmt.Fprintf(&r, "%s%s\n", indent, v(e))
			}
		case "zset":
			for _, e := range db.zsetElements(k) {
				fmt.Fprintf(&r, "%s%f: %s\n", indent, e.score, v(e.member))
			}
		case "stream":
			entries, _ := db.Stream(k)
			for _, e := range entries {
				fmt.Fprintf(&r, "%s%s\n", indent, e.ID)
				for i := 0; i+1 < len(e.Values); i += 2 {
					fmt.Fprintf(&r, "%s%s%s: %s\n", indent, indent, v(e.Values[i]), v(e.Values[i+1]))
				}
			}
		default:
			fmt.Fprintf(&r, "%s(a %s, fixme!)\n", indent, t)
		}
	}
	return r.String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
