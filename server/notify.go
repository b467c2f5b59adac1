package server

// notify publishes a keyspace notification for key when the event's class
// is enabled (notify-keyspace-events). Delivery is wired by the pub/sub
// code through srv.publishHook.
func (c *Client) notify(class int64, event string, key []byte) {
	flags := c.srv.cfg.notifyFlags.Load()
	if flags == 0 || flags&class == 0 {
		return
	}
	if hook := c.srv.notifyHook; hook != nil {
		hook(c.dbi, class, event, key)
	}
}
