package acl

// Context is where a denied command came from, as ACL LOG shows it.
type Context int

const (
	Toplevel Context = iota // sent by a client
	Multi                   // queued in MULTI, or checked again at EXEC
	Lua                     // called by a script
)

func (c Context) String() string {
	switch c {
	case Multi:
		return "multi"
	case Lua:
		return "lua"
	}
	return "toplevel"
}

// LogEntry is one entry of the ACL log.
type LogEntry struct {
	Count      int64
	Reason     Reason
	Context    Context
	Object     string // the command, key or channel denied; for auth, the command
	Username   string
	Time       int64  // unix milliseconds of the last occurrence
	ClientInfo string // CLIENT INFO of the last client denied
}

// AddLog adds e to the ACL log (its Count is ignored), keeping at most
// maxLen entries. An entry that matches one of the ten newest (same
// reason, context, object and user, within 60 seconds) is merged into it:
// its count grows and it moves to the front.
func (st *Store) AddLog(e LogEntry, maxLen int64) {
	st.logMu.Lock()
	defer st.logMu.Unlock()
	for i, old := range st.log {
		if i >= 10 {
			break
		}
		d := e.Time - old.Time
		if d < 0 {
			d = -d
		}
		if old.Reason == e.Reason && old.Context == e.Context && d <= 60000 && old.Object == e.Object && old.Username == e.Username {
			copy(st.log[1:i+1], st.log[:i])
			st.log[0] = old
			old.ClientInfo, old.Time = e.ClientInfo, e.Time
			old.Count++
			return
		}
	}
	e.Count = 1
	st.log = append([]*LogEntry{&e}, st.log...)
	if int64(len(st.log)) > maxLen {
		st.log = st.log[:maxLen]
	}
}

// Log returns copies of the newest count entries of the ACL log (all of
// them when count is negative), newest first.
func (st *Store) Log(count int) []LogEntry {
	st.logMu.Lock()
	defer st.logMu.Unlock()
	if count < 0 || count > len(st.log) {
		count = len(st.log)
	}
	out := make([]LogEntry, count)
	for i := range out {
		out[i] = *st.log[i]
	}
	return out
}

// ResetLog empties the ACL log (ACL LOG RESET).
func (st *Store) ResetLog() {
	st.logMu.Lock()
	st.log = nil
	st.logMu.Unlock()
}
