package server

import (
	"strconv"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/resp"
)

// notify publishes a keyspace notification for key when the event's class
// is enabled (notify-keyspace-events), as Redis's notifyKeyspaceEvent does:
// "__keyspace@<db>__:<key>" carries the event, "__keyevent@<db>__:<event>"
// carries the key.
func (c *Client) notify(class int64, event string, key []byte) {
	flags := c.srv.cfg.NotifyFlags.Load()
	if flags == 0 || flags&class == 0 {
		return
	}
	c.srv.notifyDB(c, c.dbi, class, flags, event, key)
}

// notifyFunc observes keyspace notifications (tests).
type notifyFunc func(db int, class int64, event string, key []byte)

// setNotifyHook makes fn observe every keyspace notification from now on.
func (s *Server) setNotifyHook(fn notifyFunc) { s.notifyHook.Store(&fn) }

func (s *Server) notifyDB(from *Client, db int, class, flags int64, event string, key []byte) {
	if hook := s.notifyHook.Load(); hook != nil {
		(*hook)(db, class, event, key)
	}
	if s.pubsub.Empty() {
		return
	}
	var buf [64]byte
	if flags&config.NotifyKeyspace != 0 {
		ch := append(buf[:0], "__keyspace@"...)
		ch = strconv.AppendInt(ch, int64(db), 10)
		ch = append(ch, "__:"...)
		ch = append(ch, key...)
		s.publish(from, ch, []byte(event), false)
	}
	if flags&config.NotifyKeyevent != 0 {
		ch := append(buf[:0], "__keyevent@"...)
		ch = strconv.AppendInt(ch, int64(db), 10)
		ch = append(ch, "__:"...)
		ch = append(ch, event...)
		s.publish(from, ch, key, false)
	}
}

// notifyExpired is the store's expiry hook: "expired" events (class x).
func (s *Server) notifyExpired(db int, key []byte) {
	flags := s.cfg.NotifyFlags.Load()
	if flags&config.NotifyExpired == 0 {
		return
	}
	s.notifyDB(nil, db, config.NotifyExpired, flags, "expired", key)
}

// pushMessage encodes a pub/sub message for a client of protocol proto.
func pushMessage(w *resp.Writer, kind string, pattern, channel, msg []byte) {
	n := 3
	if pattern != nil {
		n = 4
	}
	w.Push(n)
	w.BulkString(kind)
	if pattern != nil {
		w.Bulk(pattern)
	}
	w.Bulk(channel)
	w.Bulk(msg)
}
