package cluster

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

// MIGRATE's client side (cluster.c's migrateCommand): DUMP payloads sent
// with RESTORE (RESTORE-ASKING in cluster mode, the target importing the
// slot) over connections kept for reuse, up to 64 of them, closed after
// 10 idle seconds.

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

// Migrator holds MIGRATE's connections to other servers, by "host:port".
type Migrator struct {
	mu    sync.Mutex
	conns map[string]*migrateConn
	// Wrap, when set, secures a new connection (TLS with tls-cluster).
	Wrap func(conn net.Conn, timeout time.Duration) (net.Conn, error)
}

// Size is INFO's migrate_cached_sockets.
func (m *Migrator) Size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}

// Expire closes the connections idle for longer than 10 seconds.
func (m *Migrator) Expire(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, mc := range m.conns {
		if now.Sub(mc.lastUse) > migrateCacheTTL {
			mc.conn.Close()
			delete(m.conns, k)
		}
	}
}

func (m *Migrator) drop(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mc := m.conns[addr]; mc != nil {
		mc.conn.Close()
		delete(m.conns, addr)
	}
}

// get returns the cached connection to addr or dials one.
func (m *Migrator) get(addr string, timeout time.Duration) (*migrateConn, error) {
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
	if m.Wrap != nil {
		if conn, err = m.Wrap(conn, timeout); err != nil {
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

// MigrateItem is one key to move: its DUMP payload and its TTL in ms (0:
// none).
type MigrateItem struct {
	Key, Payload []byte
	TTL          int64
}

// MigrateJob is one MIGRATE.
type MigrateJob struct {
	Host, Port         string
	DB                 int64
	Timeout            time.Duration
	Username, Password []byte // AUTH / AUTH2; nil: none
	Replace            bool
	Asking             bool // send RESTORE-ASKING (cluster mode)
	Items              []MigrateItem
}

// Migrate sends the job's keys to the target and calls accepted for each
// key the target restored, in order (the caller deletes it unless COPY).
// It returns the error reply for the client, "" when every key went.
func (m *Migrator) Migrate(job *MigrateJob, accepted func(i int)) string {
	var cmd resp.Writer
	if job.Password != nil {
		if job.Username != nil {
			cmd.Array(3)
			cmd.BulkString("AUTH")
			cmd.Bulk(job.Username)
		} else {
			cmd.Array(2)
			cmd.BulkString("AUTH")
		}
		cmd.Bulk(job.Password)
	}
	restore := []byte("RESTORE")
	if job.Asking {
		restore = []byte("RESTORE-ASKING")
	}
	addr := net.JoinHostPort(job.Host, job.Port)
	for attempt := 0; ; attempt++ {
		mc, err := m.get(addr, job.Timeout)
		if err != nil {
			return "IOERR error or timeout connecting to the client"
		}
		buf := cmd.Buf
		selectDB := mc.lastDB != job.DB
		if selectDB {
			buf = resp.AppendCommand(buf, []byte("SELECT"), strconv.AppendInt(nil, job.DB, 10))
		}
		for _, it := range job.Items {
			ttl := strconv.AppendInt(nil, it.TTL, 10)
			if job.Replace {
				buf = resp.AppendCommand(buf, restore, it.Key, ttl, it.Payload, []byte("REPLACE"))
			} else {
				buf = resp.AppendCommand(buf, restore, it.Key, ttl, it.Payload)
			}
		}
		mc.conn.SetDeadline(time.Now().Add(job.Timeout))
		if _, err := mc.conn.Write(buf); err != nil {
			m.drop(addr)
			if attempt == 0 && !isTimeout(err) {
				continue
			}
			return "IOERR error or timeout writing to target instance"
		}
		var authReply, selectReply string
		readErr := error(nil)
		if job.Password != nil {
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
		for i := range job.Items {
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
			accepted(i)
		}
		if targetErr != "" {
			mc.lastDB = -1
			if readErr != nil {
				m.drop(addr)
			}
			return "ERR Target instance replied with error: " + targetErr[1:]
		}
		if readErr != nil {
			m.drop(addr)
			if attempt == 0 && done == 0 && !isTimeout(readErr) {
				continue
			}
			return "IOERR error or timeout reading to target instance"
		}
		mc.conn.SetDeadline(time.Time{})
		mc.lastDB = job.DB
		return ""
	}
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

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
