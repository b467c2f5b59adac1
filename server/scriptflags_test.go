package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// A queued script counts, for EXEC's checks, with the flags it declares
// (Redis's getCommandFlags at queue time): a script with a shebang and no
// no-writes flag is a write (EXEC refused for want of replicas), one
// without allow-oom is refused over maxmemory; one without a shebang has
// EVAL's own flags. redis-server and Sluice answer alike.
func TestQueuedScriptFlags(t *testing.T) {
	out := map[string]string{}
	for name, addr := range bothServers(t) {
		var log strings.Builder
		c, admin := redistest.Dial(t, addr), redistest.Dial(t, addr)
		do := func(c *redistest.Conn, args ...string) {
			r, err := c.Do(args...)
			log.WriteString(strings.Join(args, " ") + " => " + r)
			if err != nil {
				log.WriteString(" error: " + err.Error())
			}
		}
		for _, setting := range [][]string{{"min-replicas-to-write", "1"}, {"maxmemory", "1"}} {
			for _, script := range []string{"#!lua\nreturn 1", "#!lua flags=no-writes\nreturn 2",
				"#!lua flags=allow-oom\nreturn 3", "return 4"} {
				do(c, "MULTI")
				do(c, "EVAL", script, "0")
				do(admin, "CONFIG", "SET", setting[0], setting[1])
				do(c, "EXEC")
				do(admin, "CONFIG", "SET", setting[0], "0")
			}
		}
		out[name] = log.String()
	}
	if out["redis"] != out["sluice"] {
		t.Errorf("redis:\n%s\nsluice:\n%s", out["redis"], out["sluice"])
	}
	if !strings.Contains(out["sluice"], "EXECABORT Transaction discarded because of: NOREPLICAS") {
		t.Errorf("no transaction refused for want of replicas:\n%s", out["sluice"])
	}
}

// A script that wrote goes on writing when the server's state would now
// refuse writes (scriptVerifyWriteCommandAllow): here its master loses the
// replica min-replicas-to-write asks for while it runs. As Redis's test
// "not enough good replicas state change during long script".
func TestScriptWriteAfterReplicaLoss(t *testing.T) {
	ctx := context.Background()
	_, sm := redistest.StartSluice(t)
	_, sr := redistest.StartSluice(t)
	pairs := map[string][2]string{"redis": {redistest.StartRedis(t), redistest.StartRedis(t)}, "sluice": {sm, sr}}
	for name, p := range pairs {
		t.Run(name, func(t *testing.T) {
			m := redis.NewClient(&redis.Options{Addr: p[0]})
			r := redis.NewClient(&redis.Options{Addr: p[1]})
			defer m.Close()
			defer r.Close()
			h, port, _ := strings.Cut(p[0], ":")
			if err := r.SlaveOf(ctx, h, port).Err(); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 10*time.Second, "the replica online", func() bool {
				return strings.Contains(m.Info(ctx, "replication").Val(), "state=online")
			})
			m.ConfigSet(ctx, "min-replicas-to-write", "1")
			m.ConfigSet(ctx, "busy-reply-threshold", "10")
			done := make(chan error, 1)
			go func() {
				done <- m.Eval(ctx, `
redis.call('set','x','script value')
while true do
  local info = redis.call('info','replication')
  if string.match(info, 'connected_slaves:0') then
    redis.call('set','x',info)
    break
  end
end
return 1`, []string{"x"}).Err()
			}()
			time.Sleep(100 * time.Millisecond)
			if err := r.SlaveOf(ctx, "no", "one").Err(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("the script failed: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the script did not end")
			}
			if v := m.Get(ctx, "x").Val(); !strings.Contains(v, "connected_slaves:0") {
				t.Errorf("x = %q", v)
			}
		})
	}
}
