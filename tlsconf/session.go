package tlsconf

import (
	"crypto/rand"
	"crypto/tls"
	"sync"
	"time"
)

// sessionCache is the server's cache of TLS sessions for resumption, as
// tls-session-caching, tls-session-cache-size and -timeout configure
// OpenSSL's: a session is kept on the server, the client holds only a
// random handle to it (its ticket), at most size sessions are kept (0: no
// limit; the oldest go first) and each lives timeout.
type sessionCache struct {
	mu      sync.Mutex
	size    int
	timeout time.Duration
	m       map[string]cachedSession
	order   []string // handles, oldest first
}

type cachedSession struct {
	state   []byte
	created time.Time
}

func newSessionCache(size int, timeout time.Duration) *sessionCache {
	return &sessionCache{size: size, timeout: timeout, m: map[string]cachedSession{}}
}

// wrap stores a new session and returns its handle.
func (sc *sessionCache) wrap(_ tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
	state, err := ss.Bytes()
	if err != nil {
		return nil, err
	}
	handle := make([]byte, 32)
	rand.Read(handle)
	now := time.Now()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	// Drop expired sessions from the front, then make room.
	for len(sc.order) > 0 {
		old, ok := sc.m[sc.order[0]]
		if ok && now.Sub(old.created) <= sc.timeout && (sc.size == 0 || len(sc.m) < sc.size) {
			break
		}
		delete(sc.m, sc.order[0])
		sc.order = sc.order[1:]
	}
	sc.m[string(handle)] = cachedSession{state: state, created: now}
	sc.order = append(sc.order, string(handle))
	return handle, nil
}

// unwrap returns the session a handle names; nil (a full handshake) when
// it is unknown or expired.
func (sc *sessionCache) unwrap(handle []byte, _ tls.ConnectionState) (*tls.SessionState, error) {
	sc.mu.Lock()
	s, ok := sc.m[string(handle)]
	if ok && time.Since(s.created) > sc.timeout {
		delete(sc.m, string(handle))
		ok = false
	}
	sc.mu.Unlock()
	if !ok {
		return nil, nil
	}
	ss, err := tls.ParseSessionState(s.state)
	if err != nil {
		return nil, nil
	}
	return ss, nil
}

// len reports how many sessions are cached.
func (sc *sessionCache) len() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.m)
}
