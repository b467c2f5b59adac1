package repl

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// A replica's arrival at its master, after Redis 7.0's replconfCommand
// and syncCommand: what it says with REPLCONF before SYNC or PSYNC
// (Handshake, kept by connection until it asks for the stream), then its
// record (NewReplica) and the master's answer to PSYNC (TryPartial).

// Handshake is what a would-be replica said with REPLCONF.
type Handshake struct {
	Port   int    // listening-port
	IP     string // ip-address ("": the peer's)
	PSYNC2 bool   // capa psync2
	EOF    bool   // capa eof
	// RDBOnly (rdb-only 1) and FunctionsOnly (rdb-filter-only functions):
	// the peer wants the RDB alone, with only the functions in it
	// (redis-cli --functions-rdb).
	RDBOnly, FunctionsOnly bool
}

// Set applies one REPLCONF option other than ACK and GETACK; it returns
// the error reply, "" when none.
func (h *Handshake) Set(opt, val []byte) string {
	switch {
	case eq(opt, "listening-port"):
		port, err := strconv.ParseInt(string(val), 10, 64)
		if err != nil {
			return "ERR value is not an integer or out of range"
		}
		h.Port = int(port)
	case eq(opt, "ip-address"):
		if len(val) >= 46 {
			return fmt.Sprintf("ERR REPLCONF ip-address provided by replica instance is too long: %d bytes", len(val))
		}
		h.IP = string(val)
	case eq(opt, "capa"):
		if eq(val, "psync2") {
			h.PSYNC2 = true
		} else if eq(val, "eof") {
			h.EOF = true
		}
	case eq(opt, "rdb-only"):
		n, err := strconv.ParseInt(string(val), 10, 64)
		if err != nil || n < 0 || n > 1 {
			return "ERR value is out of range, must be positive"
		}
		h.RDBOnly = n == 1
	case eq(opt, "rdb-filter-only"):
		h.FunctionsOnly = false
		if len(val) == 0 {
			return ""
		}
		for _, f := range strings.Split(string(val), " ") {
			if !strings.EqualFold(f, "functions") {
				return "ERR Unsupported rdb-filter-only option: " + f
			}
		}
		h.FunctionsOnly = true
	default:
		return "ERR Unrecognized REPLCONF option: " + string(opt)
	}
	return ""
}

// Handshake returns what the connection known by key said so far (made
// at its first REPLCONF).
func (m *Master) Handshake(key any) *Handshake {
	v, _ := m.shakes.LoadOrStore(key, &Handshake{})
	return v.(*Handshake)
}

// HandshakeOf returns what the connection known by key said (nil:
// nothing).
func (m *Master) HandshakeOf(key any) *Handshake {
	if v, ok := m.shakes.Load(key); ok {
		return v.(*Handshake)
	}
	return nil
}

// ForgetHandshake forgets the connection known by key (it closed).
func (m *Master) ForgetHandshake(key any) { m.shakes.Delete(key) }

// NewReplica is the record of a replica connected from addr that said h
// (nil: nothing) before asking for the stream.
func NewReplica(conn Conn, addr string, h *Handshake) *Replica {
	r := &Replica{Conn: conn, Addr: addr}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		r.IP = host
	}
	if h != nil {
		r.Port, r.PSYNC2, r.EOF = h.Port, h.PSYNC2, h.EOF
		if h.IP != "" {
			r.IP = h.IP
		}
	}
	return r
}

// TryPartial answers a replica's PSYNC replid offset
// (masterTryPartialResynchronization, with its counters and log lines):
// when the backlog has what it asks for, r is attached online and the
// reply line to send before the stream is returned; otherwise false, and
// a full sync follows.
func (m *Master) TryPartial(r *Replica, replid string, off int64) (string, bool) {
	d, line, sent := m.Continue(r, replid, off)
	if d.Continue {
		m.SyncPartialOK.Add(1)
		m.Log.Logf("Partial resynchronization request from %s accepted. Sending %d bytes of backlog starting from offset %d.", r.Name(), sent, off)
		return line, true
	}
	if d.Log != "" {
		m.Log.Logf("%s", d.Log)
	}
	if d.Warn != "" {
		m.Log.Warnf("%s", d.Warn)
	}
	if replid != "?" {
		m.SyncPartialErr.Add(1)
	}
	return "", false
}

// eq reports whether b is s, ignoring ASCII case.
func eq(b []byte, s string) bool { return len(b) == len(s) && strings.EqualFold(string(b), s) }
