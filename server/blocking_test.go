package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestBlockingFIFO: clients blocked on a key are served in the order they
// blocked, each with the reply shape redis-server gives.
func TestBlockingFIFO(t *testing.T) {
	for _, target := range []string{"sluice", "redis"} {
		t.Run(target, func(t *testing.T) {
			var addr string
			if target == "redis" {
				addr = redistest.StartRedis(t)
			} else {
				_, addr = redistest.StartSluice(t)
			}
			a := redistest.Dial(t, addr)
			b := redistest.Dial(t, addr)
			p := redistest.Dial(t, addr)
			p.Do("LPOP", "q", "100")
			p.Do("LPOP", "dst", "100")
			ra := make(chan string, 1)
			rb := make(chan string, 1)
			go func() { r, _ := a.Do("BLPOP", "q", "0"); ra <- r }()
			time.Sleep(50 * time.Millisecond)
			go func() { r, _ := b.Do("BLMOVE", "q", "dst", "RIGHT", "LEFT", "0"); rb <- r }()
			time.Sleep(50 * time.Millisecond)
			if got, _ := p.Do("RPUSH", "q", "x", "y", "z"); got != ":3\r\n" {
				t.Fatalf("RPUSH: %q", got)
			}
			if got := <-ra; got != "*2\r\n$1\r\nq\r\n$1\r\nx\r\n" {
				t.Fatalf("first waiter: %q", got)
			}
			if got := <-rb; got != "$1\r\nz\r\n" {
				t.Fatalf("second waiter: %q", got)
			}
			if got, _ := p.Do("LRANGE", "q", "0", "-1"); got != "*1\r\n$1\r\ny\r\n" {
				t.Fatalf("left over: %q", got)
			}
			if got, _ := a.Do("BRPOP", "none", "0.05"); got != "*-1\r\n" {
				t.Fatalf("timeout: %q", got)
			}
		})
	}
}

// An error that ends a block (CLIENT UNBLOCK ... ERROR, a wrong-type
// BLMOVE destination) counts in errorstats, total_error_replies and the
// blocking command's failed_calls, as in Redis.
func TestBlockedErrorStats(t *testing.T) {
	_, saddr := redistest.StartSluice(t)
	for name, addr := range map[string]string{"redis": redistest.StartRedis(t), "sluice": saddr} {
		t.Run(name, func(t *testing.T) {
			c, rd := redistest.Dial(t, addr), redistest.Dial(t, addr)
			c.Do("FLUSHALL")
			mustDo(t, c, "+OK\r\n", "CONFIG", "RESETSTAT")
			id, _ := rd.Do("CLIENT", "ID")
			send(t, rd, []string{"BLPOP", "list", "0"})
			waitBlocked(t, c, 1)
			mustDo(t, c, ":1\r\n", "CLIENT", "UNBLOCK", strings.Trim(id, ":\r\n"), "ERROR")
			read(t, rd, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n")

			mustDo(t, c, "+OK\r\n", "SET", "dst", "x")
			send(t, rd, []string{"BLMOVE", "src", "dst", "LEFT", "LEFT", "0"})
			waitBlocked(t, c, 1)
			mustDo(t, c, ":1\r\n", "LPUSH", "src", "a")
			read(t, rd, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")

			stats, _ := c.Do("INFO", "errorstats")
			for _, want := range []string{"errorstat_UNBLOCKED:count=1", "errorstat_WRONGTYPE:count=1"} {
				if !strings.Contains(stats, want) {
					t.Errorf("INFO errorstats lacks %s:\n%s", want, stats)
				}
			}
			cmds, _ := c.Do("INFO", "commandstats")
			for _, want := range []string{"cmdstat_blpop:calls=1,", "cmdstat_blmove:calls=1,"} {
				i := strings.Index(cmds, want)
				if i < 0 || !strings.HasPrefix(cmds[i+strings.Index(cmds[i:], "rejected_calls"):], "rejected_calls=0,failed_calls=1\r\n") {
					t.Errorf("%s...failed_calls=1 not in:\n%s", want, cmds)
				}
			}
			if n := infoField(t, c, "stats", "total_error_replies"); n != 2 {
				t.Errorf("total_error_replies %d, want 2", n)
			}
		})
	}
}

// TestBlockedCommandInSlowLog: a blocked command enters the slow log when
// it is served, after the command that served it (here EXEC), with the
// time it waited, as Redis logs it.
func TestBlockedCommandInSlowLog(t *testing.T) {
	for target, addr := range bothServers(t) {
		t.Run(target, func(t *testing.T) {
			r := redistest.Dial(t, addr)
			rd := redistest.Dial(t, addr)
			r.Do("CONFIG", "SET", "slowlog-log-slower-than", "0")
			defer r.Do("CONFIG", "SET", "slowlog-log-slower-than", "10000")
			got := make(chan string, 1)
			go func() { v, _ := rd.Do("BLPOP", "l", "0"); got <- v }()
			time.Sleep(100 * time.Millisecond)
			r.Do("MULTI")
			r.Do("LPUSH", "l", "foo")
			r.Do("SLOWLOG", "RESET")
			r.Do("EXEC")
			if v := <-got; v != "*2\r\n$1\r\nl\r\n$3\r\nfoo\r\n" {
				t.Fatalf("BLPOP: %q", v)
			}
			log, err := r.Do("SLOWLOG", "GET")
			if err != nil {
				t.Fatal(err)
			}
			// Newest first: BLPOP, served after EXEC's commands ran, then
			// SLOWLOG RESET, which ran inside EXEC (EXEC itself is
			// skip_slowlog). Compare the commands, not times and ports.
			var names []string
			for _, line := range strings.Split(log, "\r\n") {
				switch strings.ToLower(line) {
				case "blpop", "exec", "slowlog", "lpush":
					names = append(names, strings.ToLower(line))
				}
			}
			if got := strings.Join(names, " "); got != "blpop slowlog" {
				t.Fatalf("slow log holds %q, want \"blpop slowlog\": %q", got, log)
			}
		})
	}
}

// TestWaitWithoutReplicas: WAIT for a replica blocks until its timeout or
// CLIENT UNBLOCK and answers 0, as redis-server without replicas does.
func TestWaitWithoutReplicas(t *testing.T) {
	for target, addr := range bothServers(t) {
		t.Run(target, func(t *testing.T) {
			a := redistest.Dial(t, addr)
			b := redistest.Dial(t, addr)
			id, _ := a.Do("CLIENT", "ID")
			id = strings.TrimSuffix(strings.TrimPrefix(id, ":"), "\r\n")
			start := time.Now()
			if r, _ := a.Do("WAIT", "1", "100"); r != ":0\r\n" {
				t.Fatalf("WAIT 1 100: %q", r)
			}
			if d := time.Since(start); d < 90*time.Millisecond {
				t.Fatalf("WAIT 1 100 returned after %v", d)
			}
			for _, how := range []string{"TIMEOUT", "ERROR"} {
				got := make(chan string, 1)
				go func() { r, _ := a.Do("WAIT", "2", "0"); got <- r }()
				time.Sleep(100 * time.Millisecond)
				if r, _ := b.Do("CLIENT", "UNBLOCK", id, how); r != ":1\r\n" {
					t.Fatalf("CLIENT UNBLOCK %s: %q", how, r)
				}
				want := ":0\r\n"
				if how == "ERROR" {
					want = "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
				}
				if r := <-got; r != want {
					t.Fatalf("WAIT after CLIENT UNBLOCK %s: %q, want %q", how, r, want)
				}
			}
		})
	}
}

// A client that has read the reply ending its block is no longer counted in
// blocked_clients, whichever way the block ended (a push served it, CLIENT
// UNBLOCK ended it): Redis's tests read the reply, then check INFO at once.
func TestBlockedClientsCountAfterReply(t *testing.T) {
	_, saddr := redistest.StartSluice(t)
	for name, addr := range map[string]string{"redis": redistest.StartRedis(t), "sluice": saddr} {
		t.Run(name, func(t *testing.T) {
			c, rd := redistest.Dial(t, addr), redistest.Dial(t, addr)
			id, _ := rd.Do("CLIENT", "ID")
			for i := 0; i < 200; i++ {
				send(t, rd, []string{"BLPOP", "list", "0"})
				waitBlocked(t, c, 1)
				if i%2 == 0 {
					mustDo(t, c, ":1\r\n", "LPUSH", "list", "a")
					read(t, rd, "*2\r\n$4\r\nlist\r\n$1\r\na\r\n")
				} else {
					mustDo(t, c, ":1\r\n", "CLIENT", "UNBLOCK", strings.Trim(id, ":\r\n"), "ERROR")
					read(t, rd, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n")
				}
				if n := infoField(t, rd, "clients", "blocked_clients"); n != 0 {
					t.Fatalf("round %d: blocked_clients:%d after the reply was read", i, n)
				}
			}
		})
	}
}
