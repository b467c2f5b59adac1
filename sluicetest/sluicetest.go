// Package sluicetest runs a real Sluice server inside a Go test: the same
// engine as sluice-server, not a fake. Start gives a server on a random
// port (for any client) with in-memory connections for go-redis (no
// socket at all), helpers to seed and inspect keys directly, a clock the
// test moves (FastForward, SetTime), Restart with the data kept, and
// shutdown through t.Cleanup. Package sluicetest/miniredis offers the same
// server behind miniredis's API.
package sluicetest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/server"
)

// Server is an embedded Sluice server.
type Server struct {
	mu     sync.RWMutex // guards srv, addr, direct, closed: Restart replaces them
	srv    *server.Server
	addr   string // where it listens ("" before Listen)
	direct []*server.Direct
	closed bool
	tlsCfg *tls.Config // ListenTLS's, kept for Restart
	opts   []Option

	db         int
	tb         testing.TB
	directCmds atomic.Int64 // commands run by the direct helpers
}

// Option configures an embedded server.
type Option func(cfg *server.Config) error

// WithConfig sets a configuration directive, as in sluice.conf.
func WithConfig(name, value string) Option {
	return func(cfg *server.Config) error { return cfg.Set(name, value) }
}

// WithPassword requires AUTH with password.
func WithPassword(password string) Option { return WithConfig("requirepass", password) }

// New builds an embedded server that does not listen yet: the direct
// helpers work at once, Listen opens it to clients.
func New(opts ...Option) (*Server, error) {
	s := &Server{opts: opts}
	srv, direct, err := s.build()
	if err != nil {
		return nil, err
	}
	s.srv, s.direct = srv, direct
	return s, nil
}

// build makes a server from the options. Its connections are served on
// goroutines: with the clients in the same process that is the fastest
// round trip (see server.Config.ServeOnGoroutines).
func (s *Server) build() (*server.Server, []*server.Direct, error) {
	cfg := server.NewConfig()
	cfg.ServeOnGoroutines()
	if err := cfg.Set("port", "0"); err != nil {
		return nil, nil, err
	}
	if err := cfg.Set("bind", "127.0.0.1"); err != nil {
		return nil, nil, err
	}
	// A test server listening on another address (Listen) takes clients
	// from other hosts, as miniredis does; options may turn it back on.
	if err := cfg.Set("protected-mode", "no"); err != nil {
		return nil, nil, err
	}
	for _, o := range s.opts {
		if err := o(cfg); err != nil {
			return nil, nil, err
		}
	}
	srv := server.New(cfg)
	srv.SetLogger(nil)
	n, _ := strconv.Atoi(cfg.Get("databases"))
	direct := make([]*server.Direct, n)
	for i := range direct {
		direct[i] = srv.NewDirect(i)
	}
	return srv, direct, nil
}

// Run starts an embedded server that listens on a random local port. Call
// Close when done (Start does that for tests).
func Run(opts ...Option) (*Server, error) {
	s, err := New(opts...)
	if err != nil {
		return nil, err
	}
	if err := s.Listen("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return s, nil
}

// Start runs an embedded server for the test and stops it when the test
// ends.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := Run(opts...)
	if err != nil {
		tb.Fatalf("sluicetest: %v", err)
	}
	s.tb = tb
	tb.Cleanup(s.Close)
	return s
}

// Listen starts serving clients on addr ("127.0.0.1:0" picks a free port).
// After Close it starts a new server with the data and the clock of the
// closed one, as Restart does.
func (s *Server) Listen(addr string) error { return s.listen(addr, nil) }

// ListenTLS is Listen for TLS: clients connect with TLS, which cfg
// configures (a server certificate, at least). Restart keeps it.
func (s *Server) ListenTLS(addr string, cfg *tls.Config) error { return s.listen(addr, cfg) }

func (s *Server) listen(addr string, tlsCfg *tls.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr != "" && !s.closed {
		return fmt.Errorf("sluicetest: already listening on %s", s.addr)
	}
	if s.closed || s.addr != "" {
		if err := s.rebuildLocked(); err != nil {
			return err
		}
	}
	s.tlsCfg = tlsCfg
	return s.listenLocked(addr)
}

func (s *Server) listenLocked(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	cfg := s.srv.Config()
	if a, ok := ln.Addr().(*net.TCPAddr); ok && s.tlsCfg == nil {
		cfg.Set("port", strconv.Itoa(a.Port))
		cfg.Set("bind", a.IP.String())
	}
	if s.tlsCfg != nil {
		ln = tls.NewListener(ln, s.tlsCfg)
	}
	if err := s.srv.Serve(ln); err != nil {
		ln.Close()
		return err
	}
	s.addr, s.closed = ln.Addr().String(), false
	return nil
}

// rebuildLocked replaces a stopped (or running) server by a new one built
// from the same options, with the dataset and the clock carried over.
func (s *Server) rebuildLocked() error {
	old := s.srv
	old.Stop()
	data := old.DumpDataset()
	srv, direct, err := s.build()
	if err != nil {
		return err
	}
	srv.Keyspace().Clock().CopyFrom(old.Keyspace().Clock())
	if err := srv.LoadDataset(data); err != nil {
		return fmt.Errorf("sluicetest: carrying the data over: %v", err)
	}
	s.srv, s.direct, s.closed = srv, direct, true
	s.directCmds.Store(0) // the new server counts from 0
	return nil
}

// Restart stops the server, as a redis-server that saves its data on
// shutdown, and starts a new one on the same address with the data and the
// clock carried over. Connections are closed (clients reconnect). It also
// brings a closed server back.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.rebuildLocked(); err != nil {
		return err
	}
	if s.addr == "" {
		s.closed = false
		return nil
	}
	return s.listenLocked(s.addr)
}

// Close stops the server and closes every connection. The data stays
// readable and writable through the direct helpers, and Restart brings
// the server back with it.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	srv := s.srv
	s.mu.Unlock()
	srv.Stop()
}

// Closed reports whether the server was closed (and not restarted).
func (s *Server) Closed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// Addr is the server's TCP address ("127.0.0.1:port"), "" before Listen.
func (s *Server) Addr() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.addr
}

// Port is the server's TCP port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr())
	n, _ := strconv.Atoi(p)
	return n
}

// Server returns the underlying server (a new one after Restart).
func (s *Server) Server() *server.Server {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.srv
}

// Dial opens an in-memory connection to the server: a net.Conn with no
// socket behind it, served by the real engine. A closed server's
// connection reads EOF.
func (s *Server) Dial() net.Conn {
	client, srvEnd := memPipe()
	s.mu.RLock()
	srv, closed := s.srv, s.closed
	s.mu.RUnlock()
	if closed {
		srvEnd.Close()
		return client
	}
	go srv.ServeConn(srvEnd)
	return client
}

// Client returns a go-redis client connected through in-memory
// connections. It is closed when the test ends (with Start).
func (s *Server) Client(opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{
		Addr:   "sluicetest",
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) { return s.Dial(), nil },
	}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	if s.tb != nil {
		s.tb.Cleanup(func() { c.Close() })
	}
	return c
}

// TCPClient returns a go-redis client that connects over TCP.
func (s *Server) TCPClient(opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: s.Addr()}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	if s.tb != nil {
		s.tb.Cleanup(func() { c.Close() })
	}
	return c
}

// FastForward moves the server's clock forward by d, as if d had passed:
// a key with 30 s to live is still there after FastForward(29*time.Second)
// and gone after 2 s more, for the direct helpers and clients alike (TTL,
// EXISTS, GET, keyspace notifications). TIME, EXPIRETIME, stream IDs and
// idle times move with it. Waits that are under way (BLPOP's timeout,
// CLIENT PAUSE) run on the wall clock and do not.
func (s *Server) FastForward(d time.Duration) { s.Server().AdvanceClock(d) }

// SetTime stops the server's clock at t: TIME returns t, and expiry is
// measured against t, until the next SetTime or FastForward moves it. The
// zero time gives the server back the wall clock.
func (s *Server) SetTime(t time.Time) { s.Server().SetClock(t) }

// Now returns the server's clock: the time expiry is measured against.
func (s *Server) Now() time.Time { return s.Server().Keyspace().Clock().Now() }

// CommandCount is the number of commands clients ran
// (total_commands_processed, without the direct helpers' own).
func (s *Server) CommandCount() int {
	return int(s.Server().CommandsProcessed() - s.directCmds.Load())
}

// Select sets the database the direct helpers use (default 0).
func (s *Server) Select(db int) { s.db = db }

// Do runs a command directly on the server (no connection) in the
// selected database and returns its decoded reply: nil, string, int64,
// float64, bool, []any, map[string]any, or an error for an error reply.
func (s *Server) Do(args ...string) (any, error) { return s.DoIn(s.db, args...) }

// DoIn is Do in database db.
func (s *Server) DoIn(db int, args ...string) (any, error) {
	s.mu.RLock()
	if db < 0 || db >= len(s.direct) {
		s.mu.RUnlock()
		return nil, replyError("ERR DB index is out of range")
	}
	d := s.direct[db]
	s.mu.RUnlock()
	s.directCmds.Add(1)
	raw := d.DoStrings(args...)
	v, _, err := decode(raw)
	if err != nil {
		return nil, err
	}
	if e, ok := v.(replyError); ok {
		return nil, e
	}
	return v, nil
}

func (s *Server) must(args ...string) any {
	v, err := s.Do(args...)
	if err != nil {
		panic(fmt.Sprintf("sluicetest: %v: %v", args, err))
	}
	return v
}

// Set sets a string key.
func (s *Server) Set(key, value string) { s.must("SET", key, value) }

// Get returns a string key's value and whether it exists.
func (s *Server) Get(key string) (string, bool) {
	v := s.must("GET", key)
	if v == nil {
		return "", false
	}
	return v.(string), true
}

// Exists reports whether key exists.
func (s *Server) Exists(key string) bool { return s.must("EXISTS", key).(int64) == 1 }

// Del deletes keys and returns how many existed.
func (s *Server) Del(keys ...string) int {
	return int(s.must(append([]string{"DEL"}, keys...)...).(int64))
}

// Keys returns the keys matching pattern.
func (s *Server) Keys(pattern string) []string { return strs(s.must("KEYS", pattern)) }

// Type returns the type of key ("none" if missing).
func (s *Server) Type(key string) string { return s.must("TYPE", key).(string) }

// SetTTL sets key's time to live.
func (s *Server) SetTTL(key string, ttl time.Duration) {
	s.must("PEXPIRE", key, strconv.FormatInt(ttl.Milliseconds(), 10))
}

// TTL returns key's time to live, 0 when it has none or does not exist.
func (s *Server) TTL(key string) time.Duration {
	ms := s.must("PTTL", key).(int64)
	if ms < 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// HSet sets hash fields from field/value pairs.
func (s *Server) HSet(key string, fieldValues ...string) {
	s.must(append([]string{"HSET", key}, fieldValues...)...)
}

// HGetAll returns a hash's fields.
func (s *Server) HGetAll(key string) map[string]string {
	v := s.must("HGETALL", key)
	out := map[string]string{}
	switch t := v.(type) {
	case []any:
		for i := 0; i+1 < len(t); i += 2 {
			out[t[i].(string)] = t[i+1].(string)
		}
	case map[string]any:
		for k, x := range t {
			out[k] = x.(string)
		}
	}
	return out
}

// RPush appends values to a list.
func (s *Server) RPush(key string, values ...string) {
	s.must(append([]string{"RPUSH", key}, values...)...)
}

// List returns a list's elements.
func (s *Server) List(key string) []string { return strs(s.must("LRANGE", key, "0", "-1")) }

// SAdd adds members to a set.
func (s *Server) SAdd(key string, members ...string) {
	s.must(append([]string{"SADD", key}, members...)...)
}

// Members returns a set's members.
func (s *Server) Members(key string) []string { return strs(s.must("SMEMBERS", key)) }

// ZAdd adds a member with a score to a sorted set.
func (s *Server) ZAdd(key string, score float64, member string) {
	s.must("ZADD", key, strconv.FormatFloat(score, 'g', -1, 64), member)
}

// ZScore returns a member's score.
func (s *Server) ZScore(key, member string) (float64, bool) {
	v := s.must("ZSCORE", key, member)
	if v == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.(string), 64)
	return f, err == nil
}

// FlushAll empties every database.
func (s *Server) FlushAll() { s.must("FLUSHALL") }

// DBSize returns the number of keys in the selected database.
func (s *Server) DBSize() int { return int(s.must("DBSIZE").(int64)) }

// CheckGet fails the test unless key holds want.
func (s *Server) CheckGet(t testing.TB, key, want string) {
	t.Helper()
	got, ok := s.Get(key)
	if !ok {
		t.Errorf("key %q does not exist, want %q", key, want)
	} else if got != want {
		t.Errorf("key %q = %q, want %q", key, got, want)
	}
}

// CheckList fails the test unless key is a list holding want.
func (s *Server) CheckList(t testing.TB, key string, want ...string) {
	t.Helper()
	got := s.List(key)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("list %q = %q, want %q", key, got, want)
	}
}

func strs(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
