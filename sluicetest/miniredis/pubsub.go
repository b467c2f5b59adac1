package miniredis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/sluicedb/sluice/store"
)

// PubsubMessage is what gets broadcasted over pubsub channels.
type PubsubMessage struct {
	Channel string
	Message string
}

// PubsubPmessage is a message received through a pattern subscription.
type PubsubPmessage struct {
	Pattern string
	Channel string
	Message string
}

// Subscriber has the (p)subscriptions. It is a real subscriber of the
// server, on an in-memory connection of its own: PUBLISH from any client
// reaches it, and it counts in PUBSUB CHANNELS and NUMSUB.
type Subscriber struct {
	m        *Miniredis
	publish  chan PubsubMessage
	ppublish chan PubsubPmessage
	quit     chan struct{} // closed by Close: stops a blocked delivery

	mu       sync.Mutex // guards the subscriptions and conn
	channels map[string]struct{}
	patterns map[string]struct{}
	conn     *subConn
	closed   bool
}

// subConn is a subscriber's connection to the current server.
type subConn struct {
	c    net.Conn
	acks chan []string // subscription confirmations, in order
	done chan struct{} // closed when the reader ends
}

// NewSubscriber starts a new pubsub subscriber. It can (un) subscribe to
// channels and patterns, and has a channel to get published messages.
// Close it with Close(). Does not close itself when there are no
// subscriptions left.
func (m *Miniredis) NewSubscriber() *Subscriber {
	sub := &Subscriber{
		m:        m,
		publish:  make(chan PubsubMessage),
		ppublish: make(chan PubsubPmessage),
		quit:     make(chan struct{}),
		channels: map[string]struct{}{},
		patterns: map[string]struct{}{},
	}
	m.mu.Lock()
	m.subscribers[sub] = struct{}{}
	m.mu.Unlock()
	sub.reconnect()
	return sub
}

// reconnect opens a connection to the current server (a new one after a
// restart), unless it is closed, and subscribes it to the subscriber's
// channels and patterns.
func (s *Subscriber) reconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.m.s.Closed() {
		return
	}
	if s.conn != nil {
		// The connection to the old server is dead or dying: let go of
		// it (its reader ends on its own, even while it waits for the
		// test to take a message).
		s.conn.c.Close()
	}
	client, srvEnd := net.Pipe()
	go s.m.s.Server().ServeInternalConn(srvEnd)
	sc := &subConn{c: client, acks: make(chan []string, 64), done: make(chan struct{})}
	s.conn = sc
	s.m.subConns.Add(1)
	go s.read(sc)
	for _, c := range sortedKeys(s.channels) {
		s.sendLocked("SUBSCRIBE", c)
	}
	for _, p := range sortedKeys(s.patterns) {
		s.sendLocked("PSUBSCRIBE", p)
	}
}

// sendLocked sends a (p)(un)subscribe command and waits for its
// confirmation. The caller holds s.mu.
func (s *Subscriber) sendLocked(cmd, arg string) {
	sc := s.conn
	if sc == nil {
		return
	}
	select {
	case <-sc.done:
		return
	default:
	}
	s.m.subCmds.Add(1)
	req := fmt.Sprintf("*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(cmd), cmd, len(arg), arg)
	if _, err := io.WriteString(sc.c, req); err != nil {
		return
	}
	want := cmd
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ack := <-sc.acks:
			if len(ack) >= 2 && equalFold(ack[0], want) && ack[1] == arg {
				return
			}
		case <-sc.done:
			return
		case <-deadline:
			return // messages nobody reads hold the confirmation back
		}
	}
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// read delivers the connection's messages and confirmations until it
// closes.
func (s *Subscriber) read(sc *subConn) {
	defer close(sc.done)
	r := bufio.NewReader(sc.c)
	for {
		v, err := readArray(r)
		if err != nil {
			sc.c.Close()
			return
		}
		switch {
		case len(v) == 3 && v[0] == "message":
			select {
			case s.publish <- PubsubMessage{Channel: v[1], Message: v[2]}:
			case <-s.quit:
				return
			}
		case len(v) == 4 && v[0] == "pmessage":
			select {
			case s.ppublish <- PubsubPmessage{Pattern: v[1], Channel: v[2], Message: v[3]}:
			case <-s.quit:
				return
			}
		default:
			select {
			case sc.acks <- v:
			default: // nobody waits for it
			}
		}
	}
}

// readArray reads one RESP2 reply: an array of bulk strings and integers
// (given as their decimal text), or a simple string or error as a
// one-element array.
func readArray(r *bufio.Reader) ([]string, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	switch line[0] {
	case '+', '-', ':':
		return []string{line[1:]}, nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, max(n, 0))
		for i := 0; i < n; i++ {
			item, err := readLine(r)
			if err != nil {
				return nil, err
			}
			switch item[0] {
			case ':', '+':
				out = append(out, item[1:])
			case '$':
				size, err := strconv.Atoi(item[1:])
				if err != nil {
					return nil, err
				}
				if size < 0 {
					out = append(out, "")
					continue
				}
				buf := make([]byte, size+2)
				if _, err := io.ReadFull(r, buf); err != nil {
					return nil, err
				}
				out = append(out, string(buf[:size]))
			default:
				return nil, errors.New("miniredis: unexpected reply " + item)
			}
		}
		return out, nil
	}
	return nil, errors.New("miniredis: unexpected reply " + line)
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 {
		return "", errors.New("miniredis: short reply line")
	}
	return line[:len(line)-2], nil
}

// Close the listening channels.
func (s *Subscriber) Close() {
	s.m.mu.Lock()
	delete(s.m.subscribers, s)
	s.m.mu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.quit)
	sc := s.conn
	s.mu.Unlock()
	if sc != nil {
		sc.c.Close()
		<-sc.done
	}
	close(s.publish)
	close(s.ppublish)
}

// connected reports whether the subscriber holds a connection.
func (s *Subscriber) connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return false
	}
	select {
	case <-s.conn.done:
		return false
	default:
		return true
	}
}

// Count the total number of channels and patterns
func (s *Subscriber) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.channels) + len(s.patterns)
}

// Subscribe to a channel. Returns the total number of (p)subscriptions after
// subscribing.
func (s *Subscriber) Subscribe(c string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c] = struct{}{}
	s.sendLocked("SUBSCRIBE", c)
	return len(s.channels) + len(s.patterns)
}

// Unsubscribe a channel. Returns the total number of (p)subscriptions after
// unsubscribing.
func (s *Subscriber) Unsubscribe(c string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.channels, c)
	s.sendLocked("UNSUBSCRIBE", c)
	return len(s.channels) + len(s.patterns)
}

// Psubscribe subscribes to a pattern. Returns the total number of
// (p)subscriptions after subscribing.
func (s *Subscriber) Psubscribe(pat string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patterns[pat] = struct{}{}
	s.sendLocked("PSUBSCRIBE", pat)
	return len(s.channels) + len(s.patterns)
}

// Punsubscribe unsubscribes a pattern. Returns the total number of
// (p)subscriptions after unsubscribing.
func (s *Subscriber) Punsubscribe(pat string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.patterns, pat)
	s.sendLocked("PUNSUBSCRIBE", pat)
	return len(s.channels) + len(s.patterns)
}

// Channels lists all subscribed channels, in alphabetical order.
func (s *Subscriber) Channels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return nilIfEmpty(sortedKeys(s.channels))
}

// Patterns lists all subscribed patterns, in alphabetical order.
func (s *Subscriber) Patterns() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return nilIfEmpty(sortedKeys(s.patterns))
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// Publish a message to this subscriber alone (not through the server).
// Will return how often it sent the message: once for a matching
// subscription and once for a matching pattern. It blocks until the
// messages are read.
func (s *Subscriber) Publish(c, msg string) int {
	s.mu.Lock()
	_, sub := s.channels[c]
	pat, matched := "", false
	for _, p := range sortedKeys(s.patterns) {
		if store.MatchString([]byte(p), c, false) {
			pat, matched = p, true
			break
		}
	}
	s.mu.Unlock()
	n := 0
	if sub {
		s.publish <- PubsubMessage{Channel: c, Message: msg}
		n++
	}
	if matched {
		s.ppublish <- PubsubPmessage{Pattern: pat, Channel: c, Message: msg}
		n++
	}
	return n
}

// Messages is the channel to read messages for this subscriber. Only for
// messages matching a SUBSCRIBE.
func (s *Subscriber) Messages() <-chan PubsubMessage { return s.publish }

// Pmessages is the channel to read messages for this subscriber. Only for
// messages matching a PSUBSCRIBE.
func (s *Subscriber) Pmessages() <-chan PubsubPmessage { return s.ppublish }

// Publish a message to subscribers. Returns the number of receivers.
func (m *Miniredis) Publish(channel, message string) int {
	v, _ := m.s.DoIn(0, "PUBLISH", channel, message)
	n, _ := v.(int64)
	return int(n)
}

// PubSubChannels is "PUBSUB CHANNELS <pattern>". An empty pattern is fine
// (meaning all channels).
// Returned channels will be ordered alphabetically.
func (m *Miniredis) PubSubChannels(pattern string) []string {
	args := []string{"PUBSUB", "CHANNELS"}
	if pattern != "" {
		args = append(args, pattern)
	}
	v, _ := m.s.DoIn(0, args...)
	a, _ := v.([]any)
	var out []string
	for _, x := range a {
		s, _ := x.(string)
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// PubSubNumSub is "PUBSUB NUMSUB [channels]". It returns all channels with their
// subscriber count.
func (m *Miniredis) PubSubNumSub(channels ...string) map[string]int {
	v, _ := m.s.DoIn(0, append([]string{"PUBSUB", "NUMSUB"}, channels...)...)
	a, _ := v.([]any)
	out := map[string]int{}
	for i := 0; i+1 < len(a); i += 2 {
		c, _ := a[i].(string)
		n, _ := a[i+1].(int64)
		out[c] = int(n)
	}
	return out
}

// PubSubNumPat is "PUBSUB NUMPAT"
func (m *Miniredis) PubSubNumPat() int {
	v, _ := m.s.DoIn(0, "PUBSUB", "NUMPAT")
	n, _ := v.(int64)
	return int(n)
}
