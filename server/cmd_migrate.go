package server

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/sluicedb/sluice/resp"
)

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//         [AUTH password | AUTH2 username password] [KEYS key ...]
//
// It moves keys to another server as Redis does: DUMP payloads sent with
// RESTORE over a connection kept for reuse (up to 64 of them, closed after
// 10 idle seconds), the source keys deleted once the target took them.
// Like Redis, the caller waits for the target; only the keys' shards are
// held meanwhile.

func init() {
	register(&Command{Name: "migrate", Arity: -6, Flags: []string{"write", "movablekeys"}, First: 3, Last: 3, Step: 1, ACL: []string{"keyspace", "write", "slow", "dangerous"}, Group: "generic", Since: "2.6.0", Summary: "Atomically transfer a key from a Redis instance to another one.", Complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.", Keys: migrateKeys, Fn: migrateCommand})
}

const (
	migrateCacheItems = 64
	migrateCacheTTL   = 10 * time.Second
)

type migrateConn struct {
	conn    net.Conn
	rd      *bufio.Reader
	lastDB  int64
	lastUse time.Time
}

// migrateCache holds the connections MIGRATE keeps, by "host:port".
type migrateCache struct {
	mu    sync.Mutex
	conns map[string]*migrateConn
	// wrap, when set, secures a new connection (TLS with tls-cluster).
	wrap func(conn net.Conn, timeout time.Duration) (net.Conn, error)
}

func (m *migrateCache) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}

// expire closes the connections idle for longer than migrateCacheTTL.
func (m *migrateCache) expire(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, mc := range m.conns {
		if now.Sub(mc.lastUse) > migrateCacheTTL {
			mc.conn.Close()
			delete(m.conns, k)
		}
	}
}

func (m *migrateCache) drop(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mc := m.conns[addr]; mc != nil {
		mc.conn.Close()
		delete(m.conns, addr)
	}
}

// get returns the cached connection to addr or dials one.
func (m *migrateCache) get(addr string, timeout time.Duration) (*migrateConn, error) {
	m.mu.Lock()
	if mc := m.conns[addr]; mc != nil {
		mc.lastUse = time.Now()
		m.mu.Unlock()
		return mc, nil
	}
	if m.conns == nil {
		m.conns = map[string]*migrateConn{}
	}
	if len(m.conns) >= migrateCacheItems {
		for k, mc := range m.conns { // make room: drop one at random
			mc.conn.Close()
			delete(m.conns, k)
			break
		}
	}
	m.mu.Unlock()
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	if m.wrap != nil {
		if conn, err = m.wrap(conn, timeout); err != nil {
			return nil, err
		}
	}
	mc := &migrateConn{conn: conn, rd: bufio.NewReader(conn), lastDB: -1, lastUse: time.Now()}
	m.mu.Lock()
	if old := m.conns[addr]; old != nil {
		old.conn.Close()
	}
	m.conns[addr] = mc
	m.mu.Unlock()
	return mc, nil
}

// migrateKeys: the key argument, or the keys after KEYS when it is "".
func migrateKeys(args [][]byte) []int {
	if len(args) < 6 {
		return nil
	}
	if len(args[3]) == 0 {
		for j := 6; j < len(args); j++ {
			switch {
			case eq(args[j], "auth"):
				j++
			case eq(args[j], "auth2"):
				j += 2
			case eq(args[j], "keys"):
				out := make([]int, 0, len(args)-j-1)
				for k := j + 1; k < len(args); k++ {
					out = append(out, k)
				}
				return out
			}
		}
		return nil
	}
	return []int{3}
}

func migrateCommand(c *Client, args [][]byte) {
	var copyKeys, replace bool
	var username, password []byte
	keys := args[3:4]
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "copy"):
			copyKeys = true
		case eq(args[j], "replace"):
			replace = true
		case eq(args[j], "auth"):
			if more < 1 {
				c.w.Error(errSyntax)
				return
			}
			j++
			password = args[j]
		case eq(args[j], "auth2"):
			if more < 2 {
				c.w.Error(errSyntax)
				return
			}
			username, password = args[j+1], args[j+2]
			j += 2
		case eq(args[j], "keys"):
			if len(args[3]) != 0 {
				c.w.Error("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return
			}
			keys = args[j+1:]
			j = len(args)
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	timeoutMs, ok := c.intArg(args[5])
	if !ok {
		return
	}
	dbid, ok := c.intArg(args[4])
	if !ok {
		return
	}
	if timeoutMs <= 0 {
		timeoutMs = 1000
	}
	timeout := time.Duration(timeoutMs) * time.Millisecond
	db := c.DB()
	type found struct {
		key     []byte
		payload []byte
		ttl     int64
	}
	var items []found
	now := c.srv.ks.Now()
	for _, k := range keys {
		e := db.Lookup(k)
		if e == nil {
			continue
		}
		var ttl int64
		if at := db.ExpireOf(k, e); at > 0 {
			if ttl = at - now; ttl < 0 {
				continue
			}
			ttl = max(ttl, 1)
		}
		items = append(items, found{key: k, payload: c.dumpPayload(e), ttl: ttl})
	}
	if len(items) == 0 {
		c.w.Simple("NOKEY")
		return
	}
	var cmd resp.Writer
	if password != nil {
		if username != nil {
			cmd.Array(3)
			cmd.BulkString("AUTH")
			cmd.Bulk(username)
		} else {
			cmd.Array(2)
			cmd.BulkString("AUTH")
		}
		cmd.Bulk(password)
	}
	cache := &c.srv.migrate
	addr := net.JoinHostPort(string(args[1]), string(args[2]))
	for attempt := 0; ; attempt++ {
		mc, err := cache.get(addr, timeout)
		if err != nil {
			c.w.Error("IOERR error or timeout connecting to the client")
			return
		}
		buf := cmd.Buf
		selectDB := mc.lastDB != dbid
		if selectDB {
			buf = appendRESPCommand(buf, []byte("SELECT"), strconv.AppendInt(nil, dbid, 10))
		}
		restore := []byte("RESTORE")
		if c.srv.cluster != nil {
			restore = []byte("RESTORE-ASKING") // the target is importing the slot
		}
		for _, it := range items {
			ttl := strconv.AppendInt(nil, it.ttl, 10)
			if replace {
				buf = appendRESPCommand(buf, restore, it.key, ttl, it.payload, []byte("REPLACE"))
			} else {
				buf = appendRESPCommand(buf, restore, it.key, ttl, it.payload)
			}
		}
		mc.conn.SetDeadline(time.Now().Add(timeout))
		if _, err := mc.conn.Write(buf); err != nil {
			cache.drop(addr)
			if attempt == 0 && !isTimeout(err) {
				continue
			}
			c.w.Error("IOERR error or timeout writing to target instance")
			return
		}
		var authReply, selectReply string
		readErr := error(nil)
		if password != nil {
			authReply, readErr = readLine(mc.rd)
		}
		if readErr == nil && selectDB {
			selectReply, readErr = readLine(mc.rd)
		}
		// An AUTH or SELECT error fails every key; a RESTORE error only
		// its own key, and the error reported is the first one.
		targetErr, allFail := "", false
		if readErr == nil && len(authReply) > 0 && authReply[0] == '-' {
			targetErr, allFail = authReply, true
		} else if readErr == nil && len(selectReply) > 0 && selectReply[0] == '-' {
			targetErr, allFail = selectReply, true
		}
		done := 0
		for _, it := range items {
			if readErr != nil {
				break
			}
			var line string
			if line, readErr = readLine(mc.rd); readErr != nil {
				break
			}
			done++
			if line[0] == '-' || allFail {
				if targetErr == "" {
					targetErr = line
				}
				continue
			}
			if !copyKeys && db.Delete(it.key) {
				c.notify(NotifyGeneric, "del", it.key)
			}
		}
		if targetErr != "" {
			mc.lastDB = -1
			if readErr != nil {
				cache.drop(addr)
			}
			c.w.Error("ERR Target instance replied with error: " + targetErr[1:])
			return
		}
		if readErr != nil {
			cache.drop(addr)
			if attempt == 0 && done == 0 && !isTimeout(readErr) {
				continue
			}
			c.w.Error("IOERR error or timeout reading to target instance")
			return
		}
		mc.conn.SetDeadline(time.Time{})
		mc.lastDB = dbid
		c.w.OK()
		return
	}
}

func appendRESPCommand(buf []byte, args ...[]byte) []byte {
	var w resp.Writer
	w.Buf = buf
	w.Array(len(args))
	for _, a := range args {
		w.Bulk(a)
	}
	return w.Buf
}

// readLine reads one reply line (the target's replies to AUTH, SELECT and
// RESTORE are all single lines), without its CRLF.
func readLine(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 {
		return "", errors.New("short reply")
	}
	return line[:len(line)-2], nil
}

func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}
