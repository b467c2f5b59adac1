// Package pubsub is the Pub/Sub registry, as Redis's pubsub.c keeps it:
// channels, patterns and shard channels mapped to their subscribers, each
// subscriber's own subscriptions and their counts, the pattern matching
// that finds a published message's receivers, and the queries of PUBSUB
// CHANNELS, NUMSUB, NUMPAT and the shard variants.
//
// A Registry is generic over the server's subscriber type C, which it
// only stores and compares; each subscriber's subscriptions are a Subs
// the server keeps beside it. The server frames and delivers the
// messages.
package pubsub

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/sluicedb/sluice/store"
)

// Kind is a kind of subscription.
type Kind uint8

const (
	Channel Kind = iota // SUBSCRIBE
	Pattern             // PSUBSCRIBE
	Shard               // SSUBSCRIBE
	kinds
)

// Subs is a subscriber's subscriptions. The registry's lock guards the
// names (the server may unsubscribe a client from elsewhere, as a cluster
// does from a slot's shard channels); the counts are atomic, for readers
// anywhere (CLIENT LIST).
type Subs struct {
	names [kinds]map[string]struct{}
	n     [kinds]atomic.Int32
}

// Total is the number of subscriptions of every kind.
func (s *Subs) Total() int { return int(s.n[Channel].Load() + s.n[Pattern].Load() + s.n[Shard].Load()) }

// Counts returns the number of channel, pattern and shard channel
// subscriptions.
func (s *Subs) Counts() (channels, patterns, shard int) {
	return int(s.n[Channel].Load()), int(s.n[Pattern].Load()), int(s.n[Shard].Load())
}

// Count is the count a (un)subscribe reply of kind k carries: shard
// subscriptions for Shard, channels and patterns together otherwise.
func (s *Subs) Count(k Kind) int64 {
	if k == Shard {
		return int64(s.n[Shard].Load())
	}
	return int64(s.n[Channel].Load() + s.n[Pattern].Load())
}

// Registry maps channels and patterns to their subscribers. The zero value
// is empty; its methods may be called from any goroutine.
type Registry[C comparable] struct {
	mu   sync.RWMutex
	m    [kinds]map[string]map[C]struct{}
	size atomic.Int64 // total subscriptions, for the fast path
}

// Empty reports whether no one subscribes to anything: a publish or a
// keyspace event has no one to tell.
func (r *Registry[C]) Empty() bool { return r.size.Load() == 0 }

// Subscribe subscribes c, whose subscriptions are s, to name of kind k,
// and reports whether it was not already.
func (r *Registry[C]) Subscribe(c C, s *Subs, k Kind, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	mine := &s.names[k]
	if *mine == nil {
		*mine = map[string]struct{}{}
	}
	if _, ok := (*mine)[name]; ok {
		return false
	}
	(*mine)[name] = struct{}{}
	s.n[k].Add(1)
	m := &r.m[k]
	if *m == nil {
		*m = map[string]map[C]struct{}{}
	}
	set := (*m)[name]
	if set == nil {
		set = map[C]struct{}{}
		(*m)[name] = set
	}
	set[c] = struct{}{}
	r.size.Add(1)
	return true
}

// Unsubscribe unsubscribes c from name of kind k, and reports whether it
// was subscribed.
func (r *Registry[C]) Unsubscribe(c C, s *Subs, k Kind, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := s.names[k][name]; !ok {
		return false
	}
	delete(s.names[k], name)
	s.n[k].Add(-1)
	r.remove(c, k, name)
	return true
}

// remove takes c out of name's subscribers. r.mu is held.
func (r *Registry[C]) remove(c C, k Kind, name string) {
	if set := r.m[k][name]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(r.m[k], name)
		}
	}
	r.size.Add(-1)
}

// Names returns the names s subscribes to of kind k, in no order.
func (r *Registry[C]) Names(s *Subs, k Kind) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	all := make([]string, 0, len(s.names[k]))
	for n := range s.names[k] {
		all = append(all, n)
	}
	return all
}

// UnsubscribeAll drops every subscription of c (a closing client, RESET).
func (r *Registry[C]) UnsubscribeAll(c C, s *Subs) {
	r.mu.Lock()
	for k := range kinds {
		for name := range s.names[k] {
			r.remove(c, k, name)
		}
		s.names[k] = nil
	}
	r.mu.Unlock()
	for k := range kinds {
		s.n[k].Store(0)
	}
}

// Publish finds the receivers of a message on channel: for a shard
// channel its subscribers (kind Shard), otherwise the channel's (kind
// Channel) and those of every pattern that matches it (kind Pattern, with
// the pattern). It calls send for each, with the registry read-locked,
// and returns how many there were.
func (r *Registry[C]) Publish(channel []byte, shard bool, send func(c C, k Kind, pattern string)) int {
	n := 0
	r.mu.RLock()
	defer r.mu.RUnlock()
	if shard {
		for c := range r.m[Shard][string(channel)] {
			send(c, Shard, "")
			n++
		}
		return n
	}
	for c := range r.m[Channel][string(channel)] {
		send(c, Channel, "")
		n++
	}
	if len(r.m[Pattern]) == 0 {
		return n
	}
	for pat, set := range r.m[Pattern] {
		if !store.Match([]byte(pat), channel, false) {
			continue
		}
		for c := range set {
			send(c, Pattern, pat)
			n++
		}
	}
	return n
}

// Each calls fn for every subscription, with the registry read-locked.
func (r *Registry[C]) Each(fn func(c C, k Kind, name string)) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for k := range kinds {
		for name, set := range r.m[k] {
			for c := range set {
				fn(c, k, name)
			}
		}
	}
}

// Channels is PUBSUB CHANNELS (k Channel) or SHARDCHANNELS (k Shard): the
// channels with subscribers, sorted, only those matching pattern when one
// is given.
func (r *Registry[C]) Channels(k Kind, pattern ...[]byte) []string {
	r.mu.RLock()
	var out []string
	for ch := range r.m[k] {
		if len(pattern) > 0 && !store.Match(pattern[0], []byte(ch), false) {
			continue
		}
		out = append(out, ch)
	}
	r.mu.RUnlock()
	sort.Strings(out)
	return out
}

// NumSub is PUBSUB NUMSUB (k Channel) or SHARDNUMSUB (k Shard): the
// number of subscribers of each channel named.
func (r *Registry[C]) NumSub(k Kind, channels [][]byte) []int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]int, len(channels))
	for i, ch := range channels {
		out[i] = len(r.m[k][string(ch)])
	}
	return out
}

// Counts returns the number of channels, patterns and shard channels with
// subscribers (PUBSUB NUMPAT is the patterns).
func (r *Registry[C]) Counts() (channels, patterns, shard int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.m[Channel]), len(r.m[Pattern]), len(r.m[Shard])
}
