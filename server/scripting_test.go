package server_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

func bothServers(t *testing.T) map[string]string {
	_, s := redistest.StartSluice(t)
	return map[string]string{"redis": redistest.StartRedis(t), "sluice": s}
}

// go-redis Script.Run tries EVALSHA and falls back to EVAL on NOSCRIPT.
func TestScriptRunEvalshaFallback(t *testing.T) {
	ctx := context.Background()
	results := map[string]string{}
	for name, addr := range bothServers(t) {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		rdb.ScriptFlush(ctx)
		sc := redis.NewScript(`return redis.call('incrby', KEYS[1], ARGV[1])`)
		var out []string
		for i := 0; i < 3; i++ {
			v, err := sc.Run(ctx, rdb, []string{"counter"}, 5).Result()
			out = append(out, fmt.Sprint(v, err))
		}
		ex, _ := sc.Exists(ctx, rdb).Result()
		out = append(out, fmt.Sprint(ex))
		_, err := rdb.EvalSha(ctx, "0000000000000000000000000000000000000000", nil).Result()
		out = append(out, fmt.Sprint(err))
		results[name] = strings.Join(out, "|")
	}
	if results["redis"] != results["sluice"] {
		t.Fatalf("redis %q\nsluice %q", results["redis"], results["sluice"])
	}
}

const tokenBucket = `
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local b = redis.call('get', key .. ':tokens')
local tokens = capacity
if b then tokens = tonumber(b) end
local last = tonumber(redis.call('get', key .. ':ts') or now)
tokens = math.min(capacity, tokens + (now - last))
local allowed = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 end
redis.call('set', key .. ':tokens', tokens)
redis.call('set', key .. ':ts', now)
if allowed == 1 then redis.call('incr', key .. ':allowed') else redis.call('incr', key .. ':denied') end
return allowed`

const lockScript = `
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 60000) then
  redis.call('incr', 'acquired')
  redis.call('append', 'log', ARGV[1] .. ',')
  return 1
end
return 0`

const unlockScript = `
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`

// A token bucket and a lock with expiry driven by 100 concurrent clients:
// the final counters must match redis-server's (the scripts are atomic, so
// the totals do not depend on interleaving).
func TestScriptConcurrentWorkloads(t *testing.T) {
	ctx := context.Background()
	final := map[string]string{}
	for name, addr := range bothServers(t) {
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 100})
		defer rdb.Close()
		rdb.FlushAll(ctx)
		bucket := redis.NewScript(tokenBucket)
		lock, unlock := redis.NewScript(lockScript), redis.NewScript(unlockScript)
		var wg sync.WaitGroup
		for g := 0; g < 100; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 5; i++ {
					// "now" never advances: exactly capacity requests pass.
					if err := bucket.Run(ctx, rdb, []string{"rl"}, 120, 1000).Err(); err != nil {
						t.Error(err)
						return
					}
					me := fmt.Sprintf("c%d-%d", g, i)
					ok, err := lock.Run(ctx, rdb, []string{"lk"}, me).Int()
					if err != nil {
						t.Error(err)
						return
					}
					if ok == 1 {
						if err := unlock.Run(ctx, rdb, []string{"lk"}, me).Err(); err != nil {
							t.Error(err)
						}
					}
				}
			}(g)
		}
		wg.Wait()
		var parts []string
		for _, k := range []string{"rl:tokens", "rl:allowed", "rl:denied", "lk"} {
			v, err := rdb.Get(ctx, k).Result()
			parts = append(parts, k+"="+v+fmt.Sprint(err))
		}
		acq, _ := rdb.Get(ctx, "acquired").Int()
		lg, _ := rdb.Get(ctx, "log").Result()
		entries := strings.Split(strings.TrimSuffix(lg, ","), ",")
		sort.Strings(entries)
		if len(entries) != acq {
			t.Errorf("%s: log has %d entries, acquired %d", name, len(entries), acq)
		}
		final[name] = strings.Join(parts, " ")
	}
	if final["redis"] != final["sluice"] {
		t.Fatalf("redis %q\nsluice %q", final["redis"], final["sluice"])
	}
}

// A script's read-modify-write is atomic against concurrent clients.
func TestScriptAtomicity(t *testing.T) {
	ctx := context.Background()
	_, addr := redistest.StartSluice(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 50})
	defer rdb.Close()
	sc := redis.NewScript(`local v = tonumber(redis.call('get', KEYS[1]) or '0'); redis.call('set', KEYS[1], v + 1); return v + 1`)
	var wg sync.WaitGroup
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if err := sc.Run(ctx, rdb, []string{"n"}).Err(); err != nil {
					t.Error(err)
					return
				}
				rdb.Incr(ctx, "other")
			}
		}()
	}
	wg.Wait()
	if v, _ := rdb.Get(ctx, "n").Int(); v != 1000 {
		t.Fatalf("n = %d, want 1000", v)
	}
}

// busyScenario runs an endless script on one connection and checks what
// others see, returning the replies for comparison with redis-server.
func busyScenario(t *testing.T, addr, script string, fn bool) []string {
	a := redistest.Dial(t, addr)
	b := redistest.Dial(t, addr)
	var out []string
	// c is dialed while the script runs: with Sluice's event loops, a new
	// connection is accepted by a loop that is not the script's.
	do := func(c *redistest.Conn, args ...string) string {
		r, err := c.Do(args...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	out = append(out, do(b, "CONFIG", "SET", "busy-reply-threshold", "100"))
	out = append(out, do(b, "SCRIPT", "KILL"))
	out = append(out, do(b, "FUNCTION", "FLUSH"))
	if fn {
		out = append(out, do(b, "FUNCTION", "LOAD", "#!lua name=busy\nredis.register_function('spin', function() "+script+" end)"))
	}
	done := make(chan string, 1)
	go func() {
		var r string
		var err error
		if fn {
			r, err = a.Do("FCALL", "spin", "0")
		} else {
			r, err = a.Do("EVAL", script, "0")
		}
		if err != nil {
			r = err.Error()
		}
		done <- r
	}()
	time.Sleep(400 * time.Millisecond)
	b = redistest.Dial(t, addr)
	out = append(out, do(b, "PING"))
	out = append(out, do(b, "GET", "x"))
	if fn {
		out = append(out, do(b, "SCRIPT", "KILL"))
		out = append(out, do(b, "FUNCTION", "KILL"))
	} else {
		out = append(out, do(b, "FUNCTION", "KILL"))
		out = append(out, do(b, "SCRIPT", "KILL"))
	}
	select {
	case r := <-done:
		out = append(out, r)
	case <-time.After(5 * time.Second):
		t.Fatal("script was not killed")
	}
	out = append(out, do(b, "PING"))
	out = append(out, do(b, "SCRIPT", "KILL"))
	out = append(out, do(b, "CONFIG", "SET", "busy-reply-threshold", "5000"))
	return out
}

func TestScriptBusyAndKill(t *testing.T) {
	servers := bothServers(t)
	for _, tc := range []struct {
		name, script string
		fn           bool
	}{
		{"eval", "while true do end", false},
		{"eval-pcall", "while true do pcall(function() while true do end end) end", false},
		{"function", "while true do end", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := busyScenario(t, servers["redis"], tc.script, tc.fn)
			got := busyScenario(t, servers["sluice"], tc.script, tc.fn)
			if strings.Join(want, "\n") != strings.Join(got, "\n") {
				t.Fatalf("redis:\n%q\nsluice:\n%q", want, got)
			}
		})
	}
}

// FUNCTION DUMP / RESTORE round trip (Sluice's payload format is its own).
func TestFunctionDumpRestore(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	c := redistest.Dial(t, addr)
	do := func(args ...string) string {
		r, err := c.Do(args...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	do("FUNCTION", "FLUSH")
	do("FUNCTION", "LOAD", "#!lua name=l1\nredis.register_function('f1', function() return 1 end)")
	do("FUNCTION", "LOAD", "#!lua name=l2\nredis.register_function('f2', function() return 2 end)")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	payload, err := rdb.FunctionDump(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.FunctionRestore(ctx, payload).Err(); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("append over existing: %v", err)
	}
	rdb.FunctionFlush(ctx)
	if err := rdb.FunctionRestore(ctx, payload).Err(); err != nil {
		t.Fatal(err)
	}
	if v, _ := rdb.FCall(ctx, "f2", nil).Int(); v != 2 {
		t.Fatalf("f2 = %d", v)
	}
	if err := rdb.Do(ctx, "FUNCTION", "RESTORE", payload, "REPLACE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "FUNCTION", "RESTORE", payload[:len(payload)-1], "FLUSH").Err(); err == nil || err.Error() != "ERR DUMP payload version or checksum are wrong" {
		t.Fatalf("corrupt payload: %v", err)
	}
}

// COMMAND INFO / GETKEYS for the scripting commands match redis-server.
func TestScriptCommandInfo(t *testing.T) {
	results := map[string][]string{}
	for name, addr := range bothServers(t) {
		c := redistest.Dial(t, addr)
		for _, args := range [][]string{
			{"COMMAND", "INFO", "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"},
			{"COMMAND", "GETKEYS", "EVAL", "return 1", "2", "a", "b", "c"},
			{"COMMAND", "GETKEYS", "FCALL", "f", "1", "a", "b"},
			{"COMMAND", "INFO", "script|kill", "function|load", "function|stats"},
		} {
			r, err := c.Do(args...)
			if err != nil {
				t.Fatal(err)
			}
			results[name] = append(results[name], r)
		}
	}
	for i := range results["redis"] {
		if results["redis"][i] != results["sluice"][i] {
			t.Errorf("#%d\nredis  %q\nsluice %q", i, results["redis"][i], results["sluice"][i])
		}
	}
}

// A script that already wrote cannot be killed; it finishes normally.
func TestScriptUnkillable(t *testing.T) {
	script := `redis.call('set', 'x', '1')
local t0 = redis.call('time')
while true do
  local t = redis.call('time')
  if (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > 700000 then break end
end
return 1`
	results := map[string][]string{}
	for name, addr := range bothServers(t) {
		a := redistest.Dial(t, addr)
		if _, err := a.Do("CONFIG", "SET", "busy-reply-threshold", "100"); err != nil {
			t.Fatal(err)
		}
		done := make(chan string, 1)
		go func() {
			r, err := a.Do("EVAL", script, "0")
			if err != nil {
				r = err.Error()
			}
			done <- r
		}()
		time.Sleep(300 * time.Millisecond)
		b := redistest.Dial(t, addr)
		var out []string
		for _, args := range [][]string{{"GET", "x"}, {"SCRIPT", "KILL"}, {"FUNCTION", "STATS"}} {
			r, err := b.Do(args...)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		out = append(out, <-done)
		r, _ := b.Do("GET", "x")
		out = append(out, r)
		b.Do("CONFIG", "SET", "busy-reply-threshold", "5000")
		results[name] = out
	}
	if strings.Join(results["redis"], "\n") != strings.Join(results["sluice"], "\n") {
		t.Fatalf("redis:\n%q\nsluice:\n%q", results["redis"], results["sluice"])
	}
}

// runawayScript starts a script that never ends on c and gives it 300 ms
// to pass busy-reply-threshold; its reply (or error) comes on the channel.
func runawayScript(c *redistest.Conn) <-chan string {
	done := make(chan string, 1)
	go func() {
		r, err := c.Do("EVAL", "while true do end", "0")
		if err != nil {
			r = err.Error()
		}
		done <- r
	}()
	time.Sleep(300 * time.Millisecond)
	return done
}

// With a single event loop every client shares the script's loop: the
// stand-in must serve them (BUSY, SCRIPT KILL) while the script runs, and
// SHUTDOWN NOSAVE must not wait for a runaway script.
func TestScriptBusySingleLoop(t *testing.T) {
	_, addr := redistest.StartSluice(t, "io-threads", "1", "busy-reply-threshold", "100")
	a := redistest.Dial(t, addr)
	b := redistest.Dial(t, addr) // connected before the script: same loop
	done := runawayScript(a)
	for _, tc := range []struct{ args, want []string }{
		{[]string{"PING"}, []string{"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"}},
		{[]string{"GET", "x"}, []string{"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"}},
		{[]string{"KEYS", "*"}, []string{"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"}},
		{[]string{"SCRIPT", "KILL"}, []string{"+OK\r\n"}},
	} {
		got, err := b.Do(tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got != tc.want[0] {
			t.Fatalf("%v = %q, want %q", tc.args, got, tc.want[0])
		}
	}
	select {
	case r := <-done:
		if !strings.HasPrefix(r, "-ERR Script killed by user with SCRIPT KILL") {
			t.Fatalf("killed script replied %q", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("script was not killed")
	}
	if r, _ := b.Do("PING"); r != "+PONG\r\n" {
		t.Fatalf("PING after kill = %q", r)
	}
	if r, _ := a.Do("SET", "x", "1"); r != "+OK\r\n" {
		t.Fatalf("the script's client after kill: %q", r)
	}
}

// The stand-in of a loop on io_uring serves the loop's connections
// through epoll while the script holds the ring's thread, and hands them
// back: a client that sent before the script, one that connects during
// it, one that leaves during it, and input sent across the hand-back
// (half a command before SCRIPT KILL, the rest after) keep working, in
// order, afterwards. The same holds for a loop on epoll.
func TestScriptBusyHandsConnectionsBack(t *testing.T) {
	_, addr := redistest.StartSluice(t, "io-threads", "1", "busy-reply-threshold", "100")
	a := redistest.Dial(t, addr)
	b := redistest.Dial(t, addr)
	gone := redistest.Dial(t, addr)
	if r, _ := b.Do("SET", "k", "v0"); r != "+OK\r\n" {
		t.Fatalf("SET before the script: %q", r)
	}
	done := runawayScript(a)
	busy := "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
	n := redistest.Dial(t, addr) // accepted by the stand-in
	if r, _ := n.Do("PING"); r != busy {
		t.Fatalf("PING from a client connected during the script = %q", r)
	}
	if r, _ := b.Do("GET", "k"); r != busy {
		t.Fatalf("GET during the script = %q", r)
	}
	gone.Close()
	// Half of a SET now; the rest once the script is gone.
	whole := redistest.Encode("SET", "k", "v1")
	b.Write(whole[:7])
	if r, _ := n.Do("SCRIPT", "KILL"); r != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL = %q", r)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("script was not killed")
	}
	b.Write(whole[7:])
	if r, err := redistest.ReadReply(b.R); r != "+OK\r\n" {
		t.Fatalf("SET split across the hand-back = %q, %v", r, err)
	}
	var pipe []byte
	for i := 0; i < 200; i++ {
		pipe = append(pipe, redistest.Encode("INCR", "n")...)
	}
	n.Write(pipe)
	for i := 1; i <= 200; i++ {
		if r, err := redistest.ReadReply(n.R); r != fmt.Sprintf(":%d\r\n", i) {
			t.Fatalf("INCR %d from the client the stand-in accepted = %q, %v", i, r, err)
		}
	}
	if r, _ := a.Do("GET", "k"); r != "$2\r\nv1\r\n" {
		t.Fatalf("GET k after the script = %q", r)
	}
	if r, _ := b.Do("CLIENT", "LIST"); strings.Count(r, "id=") != 3 {
		t.Fatalf("CLIENT LIST after one client left during the script:\n%s", r)
	}
}

// Errors of commands a script calls count once in INFO errorstats (not
// again when the script passes them on), commands refused from a script
// count as rejected_calls, and each call is timed on its own.
func TestScriptErrorStats(t *testing.T) {
	results := map[string]string{}
	for name, addr := range bothServers(t) {
		c := redistest.Dial(t, addr)
		c.Do("SET", "s", "abc")
		c.Do("CONFIG", "RESETSTAT")
		for _, args := range [][]string{
			{"EVAL", "redis.call('incr',KEYS[1])", "1", "s"},
			{"EVAL", "return redis.pcall('incr',KEYS[1])", "1", "s"},
			{"EVAL", "return {1, redis.pcall('incr',KEYS[1])}", "1", "s"},
			{"EVAL", "return tostring(redis.pcall('incr',KEYS[1]).ignore_error_stats_update)", "1", "s"},
			{"EVAL", "redis.call('set',KEYS[1])", "1", "s"},
			{"EVAL", "redis.call('nosuch')", "0"},
			{"EVAL", "redis.call('eval','return 1', 0)", "0"},
			{"EVAL_RO", "redis.call('set','a','b')", "1", "a"},
			{"EVAL", "error('x')", "0"},
			{"EVAL", "return redis.error_reply('MY err')", "0"},
			{"EVAL", "redis.call()", "0"},
			{"EVAL", "return redis.pcall()", "0"},
		} {
			c.Do(args...)
		}
		raw, _ := c.Do("INFO", "errorstats", "stats", "commandstats")
		f := infoFields(t, raw)
		var out []string
		out = append(out, "total_error_replies="+f["stats"]["total_error_replies"])
		for _, k := range []string{"errorstat_ERR", "errorstat_MY"} {
			out = append(out, k+"="+f["errorstats"][k])
		}
		for _, k := range []string{"cmdstat_eval", "cmdstat_eval_ro", "cmdstat_incr", "cmdstat_set"} {
			parts := strings.Split(f["commandstats"][k], ",")
			for _, p := range parts {
				if !strings.HasPrefix(p, "usec") {
					out = append(out, k+"."+p)
				}
			}
		}
		results[name] = strings.Join(out, " ")
		if name == "sluice" {
			c.Do("CONFIG", "RESETSTAT")
			c.Do("EVAL", "redis.call('set','x','1')", "0")
			time.Sleep(300 * time.Millisecond)
			c.Do("EVAL", "redis.call('incr','x')", "0")
			raw, _ := c.Do("INFO", "commandstats")
			st := infoFields(t, raw)["commandstats"]["cmdstat_incr"]
			for _, p := range strings.Split(st, ",") {
				if v, ok := strings.CutPrefix(p, "usec="); ok {
					if n, _ := strconv.Atoi(v); n >= 200000 {
						t.Errorf("INCR from a script timed from the previous script call: %s", st)
					}
				}
			}
		}
	}
	if results["redis"] != results["sluice"] {
		t.Errorf("redis:  %s\nsluice: %s", results["redis"], results["sluice"])
	}
}

// A command allowed while a script is busy (HELLO with SETNAME, served by
// the stand-in of the script's own loop) must not serve the clients
// blocked on keys the script filled: they are served when the script ends
// (Redis's "Timedout scripts and unblocked command"). Serving them from
// the stand-in waited for the keyspace the script holds, forever.
func TestScriptBusyUnblockedCommand(t *testing.T) {
	_, saddr := redistest.StartSluice(t, "io-threads", "1", "enable-debug-command", "yes")
	servers := map[string]string{"sluice": saddr, "redis": redistest.StartRedis(t, "--enable-debug-command", "yes")}
	script := `
		local clients
		redis.call('lpush', KEYS[1], 'y')
		while true do
			clients = redis.call('client', 'list')
			if string.find(clients, 'abortscript') ~= nil then break end
		end
		redis.call('lpush', KEYS[1], 'z')
		return 'done'`
	for name, addr := range servers {
		r := redistest.Dial(t, addr)
		rd, rd2, r3 := redistest.Dial(t, addr), redistest.Dial(t, addr), redistest.Dial(t, addr)
		popped := make(chan string, 1)
		go func() {
			rd2.SetDeadline(time.Now().Add(30 * time.Second))
			rd2.Write(redistest.Encode("BLPOP", "x", "0"))
			reply, err := redistest.ReadReply(rd2.R)
			if err != nil {
				reply = err.Error()
			}
			popped <- reply
		}()
		waitFor(t, name+": BLPOP blocked", func() bool {
			info, _ := r.Do("INFO", "clients")
			return strings.Contains(info, "blocked_clients:1\r\n")
		})
		for _, cmd := range [][]string{{"DEBUG", "set-disable-deny-scripts", "1"}, {"CONFIG", "SET", "busy-reply-threshold", "10"}} {
			if reply, _ := r.Do(cmd...); reply != "+OK\r\n" {
				t.Fatalf("%s: %v: %q", name, cmd, reply)
			}
		}
		ran := make(chan string, 1)
		go func() {
			reply, err := rd.Do("EVAL", script, "1", "x")
			if err != nil {
				reply = err.Error()
			}
			ran <- reply
		}()
		waitFor(t, name+": the script busy", func() bool {
			reply, _ := r.Do("PING")
			return strings.HasPrefix(reply, "-BUSY ")
		})
		if reply, err := r3.Do("HELLO", "2", "SETNAME", "abortscript"); err != nil || !strings.HasPrefix(reply, "*") {
			t.Fatalf("%s: HELLO while busy: %q, %v", name, reply, err)
		}
		if reply := <-ran; reply != "$4\r\ndone\r\n" {
			t.Fatalf("%s: the script replied %q", name, reply)
		}
		if reply := <-popped; reply != "*2\r\n$1\r\nx\r\n$1\r\nz\r\n" {
			t.Fatalf("%s: BLPOP got %q, want the script's last push", name, reply)
		}
		r.Do("DEBUG", "set-disable-deny-scripts", "0")
	}
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
