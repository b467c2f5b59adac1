package server

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Streams through a real client: replies, errors, consumer groups,
// blocking reads, and the RDB encoding against redis-server both ways.

func stClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

func stErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestStreamAddRange(t *testing.T) {
	_, addr := hsStart(t)
	c := stClient(t, addr)
	ctx := context.Background()
	for i, id := range []string{"1-1", "1-2", "2-0", "5-*"} {
		got, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: id, Values: []string{"f", string(rune('a' + i))}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Replace(id, "*", "0", 1); got != want {
			t.Errorf("XADD %s = %s", id, got)
		}
	}
	_, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "5-0", Values: []string{"f", "x"}}).Result()
	stErr(t, err, "ERR The ID specified in XADD is equal or smaller than the target stream top item")
	_, err = c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "bad", Values: []string{"f", "x"}}).Result()
	stErr(t, err, "ERR Invalid stream ID specified as stream command argument")
	_, err = c.XAdd(ctx, &redis.XAddArgs{Stream: "new", ID: "0-0", Values: []string{"f", "x"}}).Result()
	stErr(t, err, "ERR The ID specified in XADD must be greater than 0-0")
	if n := c.XLen(ctx, "s").Val(); n != 4 {
		t.Errorf("XLEN %d", n)
	}
	msgs := c.XRange(ctx, "s", "(1-1", "+").Val()
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.ID)
	}
	if !reflect.DeepEqual(ids, []string{"1-2", "2-0", "5-0"}) {
		t.Errorf("XRANGE exclusive: %v", ids)
	}
	rev := c.XRevRangeN(ctx, "s", "+", "-", 2).Val()
	if len(rev) != 2 || rev[0].ID != "5-0" || rev[1].ID != "2-0" || rev[0].Values["f"] != "d" {
		t.Errorf("XREVRANGE: %v", rev)
	}
	if n := c.XDel(ctx, "s", "1-2", "9-9").Val(); n != 1 {
		t.Errorf("XDEL %d", n)
	}
	info := c.Do(ctx, "XINFO", "STREAM", "s").Val().([]any)
	m := map[string]any{}
	for i := 0; i+1 < len(info); i += 2 {
		m[info[i].(string)] = info[i+1]
	}
	if m["length"] != int64(3) || m["max-deleted-entry-id"] != "1-2" || m["entries-added"] != int64(4) || m["recorded-first-entry-id"] != "1-1" {
		t.Errorf("XINFO STREAM: %v", m)
	}
	c.Set(ctx, "str", "x", 0)
	stErr(t, c.XLen(ctx, "str").Err(), "WRONGTYPE")
	stErr(t, c.XAdd(ctx, &redis.XAddArgs{Stream: "str", Values: []string{"a", "b"}}).Err(), "WRONGTYPE")
	if typ := c.Type(ctx, "s").Val(); typ != "stream" {
		t.Errorf("TYPE %s", typ)
	}
	if enc := c.ObjectEncoding(ctx, "s").Val(); enc != "stream" {
		t.Errorf("OBJECT ENCODING %s", enc)
	}
	// NOMKSTREAM on a missing key: nil, no key.
	if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "nokey", NoMkStream: true, Values: []string{"a", "b"}}).Err(); err != redis.Nil {
		t.Errorf("NOMKSTREAM: %v", err)
	}
	if c.Exists(ctx, "nokey").Val() != 0 {
		t.Error("NOMKSTREAM created the key")
	}
	// COPY is deep.
	c.Copy(ctx, "s", "s2", 0, false)
	c.XAdd(ctx, &redis.XAddArgs{Stream: "s2", ID: "9-0", Values: []string{"f", "z"}})
	if c.XLen(ctx, "s").Val() != 3 || c.XLen(ctx, "s2").Val() != 4 {
		t.Error("COPY shares the stream")
	}
}

func TestStreamTrim(t *testing.T) {
	_, addr := hsStart(t, "stream-node-max-entries", "10")
	c := stClient(t, addr)
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"f", "v"}})
	}
	// Approximate trimming removes whole nodes only.
	if n := c.XTrimMaxLenApprox(ctx, "s", 55, 0).Val(); n != 40 {
		t.Errorf("XTRIM MAXLEN ~ 55 removed %d", n)
	}
	if n := c.XTrimMaxLen(ctx, "s", 55).Val(); n != 5 {
		t.Errorf("XTRIM MAXLEN 55 removed %d", n)
	}
	stErr(t, c.Do(ctx, "XTRIM", "s", "MAXLEN", "1", "LIMIT", "5").Err(), "ERR syntax error, LIMIT cannot be used without the special ~ option")
	stErr(t, c.Do(ctx, "XTRIM", "s", "MAXLEN", "-1").Err(), "ERR The MAXLEN argument must be >= 0.")
	first := c.XRangeN(ctx, "s", "-", "+", 1).Val()[0].ID
	if n := c.Do(ctx, "XTRIM", "s", "MINID", first).Val(); n != int64(0) {
		t.Errorf("XTRIM MINID first removed %v", n)
	}
}

func TestStreamGroups(t *testing.T) {
	_, addr := hsStart(t)
	c := stClient(t, addr)
	ctx := context.Background()
	for _, id := range []string{"1-0", "2-0", "3-0", "4-0"} {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: id, Values: []string{"f", id}})
	}
	stErr(t, c.XGroupCreate(ctx, "missing", "g", "0").Err(), "ERR The XGROUP subcommand requires the key to exist")
	if err := c.XGroupCreate(ctx, "s", "g", "0").Err(); err != nil {
		t.Fatal(err)
	}
	stErr(t, c.XGroupCreate(ctx, "s", "g", "0").Err(), "BUSYGROUP Consumer Group name already exists")
	res := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "alice", Streams: []string{"s", ">"}, Count: 3}).Val()
	if len(res) != 1 || len(res[0].Messages) != 3 {
		t.Fatalf("XREADGROUP: %v", res)
	}
	p := c.XPending(ctx, "s", "g").Val()
	if p.Count != 3 || p.Lower != "1-0" || p.Higher != "3-0" || p.Consumers["alice"] != 3 {
		t.Errorf("XPENDING: %+v", p)
	}
	if n := c.XAck(ctx, "s", "g", "1-0", "9-0").Val(); n != 1 {
		t.Errorf("XACK %d", n)
	}
	claimed := c.XClaimJustID(ctx, &redis.XClaimArgs{Stream: "s", Group: "g", Consumer: "bob", MinIdle: 0, Messages: []string{"2-0"}}).Val()
	if !reflect.DeepEqual(claimed, []string{"2-0"}) {
		t.Errorf("XCLAIM: %v", claimed)
	}
	// An entry deleted while pending: XAUTOCLAIM drops it and reports it.
	// The tombstone at the group's last ID makes its lag unknown (nil).
	c.XDel(ctx, "s", "3-0")
	msgs, start, err := c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: "s", Group: "g", Consumer: "carol", Start: "0", Count: 10}).Result()
	if err != nil || start != "0-0" || len(msgs) != 1 || msgs[0].ID != "2-0" {
		t.Errorf("XAUTOCLAIM: %v %v %v", msgs, start, err)
	}
	raw := c.Do(ctx, "XAUTOCLAIM", "s", "g", "carol", "0", "0").Val().([]any)
	if len(raw) != 3 {
		t.Errorf("XAUTOCLAIM reply: %v", raw)
	}
	groups := c.XInfoGroups(ctx, "s").Val()
	if len(groups) != 1 || groups[0].Pending != 1 || groups[0].LastDeliveredID != "3-0" || groups[0].EntriesRead != 3 || groups[0].Lag != -1 {
		t.Errorf("XINFO GROUPS: %+v", groups)
	}
	cons := c.XInfoConsumers(ctx, "s", "g").Val()
	if len(cons) != 3 || cons[0].Name != "alice" || cons[2].Name != "carol" || cons[2].Pending != 1 {
		t.Errorf("XINFO CONSUMERS: %+v", cons)
	}
	stErr(t, c.Do(ctx, "XREADGROUP", "GROUP", "nog", "x", "STREAMS", "s", ">").Err(), "NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option")
	stErr(t, c.Do(ctx, "XREADGROUP", "GROUP", "g", "x", "STREAMS", "s", "$").Err(), "ERR The $ ID is meaningless")
	if n := c.XGroupDelConsumer(ctx, "s", "g", "carol").Val(); n != 1 {
		t.Errorf("DELCONSUMER %d", n)
	}
	if n := c.XGroupDestroy(ctx, "s", "g").Val(); n != 1 {
		t.Errorf("DESTROY %d", n)
	}
}

func TestStreamBlocking(t *testing.T) {
	_, addr := hsStart(t)
	c := stClient(t, addr)
	ctx := context.Background()
	// Woken by XADD.
	done := make(chan []redis.XStream, 1)
	go func() {
		b := stClient(t, addr)
		done <- b.XRead(ctx, &redis.XReadArgs{Streams: []string{"s", "$"}, Block: 5 * time.Second}).Val()
	}()
	time.Sleep(100 * time.Millisecond)
	c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "7-7", Values: []string{"f", "v"}})
	select {
	case r := <-done:
		if len(r) != 1 || r[0].Stream != "s" || len(r[0].Messages) != 1 || r[0].Messages[0].ID != "7-7" {
			t.Errorf("woken XREAD: %v", r)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("XREAD BLOCK not woken by XADD")
	}
	// Timeout: nil.
	if err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"s", "$"}, Block: 50 * time.Millisecond}).Err(); err != redis.Nil {
		t.Errorf("timed out XREAD: %v", err)
	}
	// XREADGROUP unblocked with an error when the key is deleted.
	c.XGroupCreate(ctx, "s", "g", "$")
	errc := make(chan error, 1)
	go func() {
		b := stClient(t, addr)
		errc <- b.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "a", Streams: []string{"s", ">"}, Block: 5 * time.Second}).Err()
	}()
	time.Sleep(100 * time.Millisecond)
	c.Del(ctx, "s")
	select {
	case err := <-errc:
		stErr(t, err, "UNBLOCKED the stream key no longer exists")
	case <-time.After(3 * time.Second):
		t.Fatal("XREADGROUP not unblocked by DEL")
	}
	// Inside MULTI, BLOCK does not block.
	pipe := c.TxPipeline()
	pipe.XRead(ctx, &redis.XReadArgs{Streams: []string{"nosuch", "$"}, Block: time.Second})
	if _, err := pipe.Exec(ctx); err != redis.Nil {
		t.Errorf("XREAD BLOCK in MULTI: %v", err)
	}
	// Scripts refuse BLOCK.
	stErr(t, c.Eval(ctx, "return redis.pcall('xread','BLOCK',0,'STREAMS','s','$')", nil).Err(), "xread command is not allowed with BLOCK option from scripts")
}

// stBuild fills a stream with tombstones, several nodes, groups and
// pending entries.
func stBuild(t *testing.T, c *redis.Client) {
	ctx := context.Background()
	c.Do(ctx, "XADD", "s", "1-1", "a", "1", "b", "hello")
	c.Do(ctx, "XADD", "s", "1-2", "a", "2", "b", "world")
	c.Do(ctx, "XADD", "s", "2-1", "z", strings.Repeat("x", 100))
	for i := 0; i < 250; i++ {
		c.Do(ctx, "XADD", "s", "3-"+itoa(int64(i)), "a", itoa(int64(i)), "b", "v")
	}
	c.Do(ctx, "XDEL", "s", "3-5", "1-1")
	c.Do(ctx, "XGROUP", "CREATE", "s", "g1", "0")
	c.Do(ctx, "XGROUP", "CREATE", "s", "g2", "$", "ENTRIESREAD", "7")
	c.Do(ctx, "XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "s", ">")
	c.Do(ctx, "XREADGROUP", "GROUP", "g1", "bob", "COUNT", "2", "STREAMS", "s", ">")
	c.Do(ctx, "XGROUP", "CREATECONSUMER", "s", "g1", "carol")
}

func stFull(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	v, err := c.Do(context.Background(), "XINFO", "STREAM", key, "FULL", "COUNT", "0").Result()
	if err != nil {
		t.Fatal(err)
	}
	return fmtAny(v)
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmtAny(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case nil:
		return "<nil>"
	case string:
		return x
	case int64:
		return itoa(x)
	}
	return "?"
}

func TestStreamDumpRestoreWithRedis(t *testing.T) {
	raddr := hsRedis(t)
	_, addr := hsStart(t)
	r, s := stClient(t, raddr), stClient(t, addr)
	ctx := context.Background()
	stBuild(t, r)
	want := stFull(t, r, "s")
	payload, err := r.Dump(ctx, "s").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(ctx, "s", 0, payload).Err(); err != nil {
		t.Fatalf("RESTORE of redis's payload: %v", err)
	}
	if got := stFull(t, s, "s"); got != want {
		t.Errorf("after RESTORE:\n got %s\nwant %s", got, want)
	}
	back, err := s.Dump(ctx, "s").Result()
	if err != nil {
		t.Fatal(err)
	}
	if back != payload {
		t.Errorf("DUMP after RESTORE differs from redis's payload")
	}
	if err := r.Restore(ctx, "s2", 0, back).Err(); err != nil {
		t.Fatalf("redis RESTORE of Sluice's payload: %v", err)
	}
	if got := stFull(t, r, "s2"); got != want {
		t.Errorf("redis after RESTORE:\n got %s\nwant %s", got, want)
	}
	// Built the same way (without groups, whose times differ), Sluice's
	// payload is byte for byte redis's.
	for _, c := range []*redis.Client{r, s} {
		c.Del(ctx, "p")
		for i := 0; i < 150; i++ {
			c.Do(ctx, "XADD", "p", "5-"+itoa(int64(i)), "k", "v"+itoa(int64(i%3)))
		}
		c.Do(ctx, "XADD", "p", "6-0", "other", "fields", "x", "1")
		c.Do(ctx, "XDEL", "p", "5-3", "5-120")
	}
	pr, ps := r.Dump(ctx, "p").Val(), s.Dump(ctx, "p").Val()
	if pr != ps {
		t.Errorf("DUMP payloads differ:\nredis  %q\nsluice %q", pr, ps)
	}
	stErr(t, s.Restore(ctx, "bad", 0, pr[:len(pr)-3]+"xyz").Err(), "ERR DUMP payload version or checksum are wrong")
}

func TestStreamRDBWithRedis(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // "dir" changes the working directory: restored at the end
	srv, addr := hsStart(t, "dir", dir)
	s := stClient(t, addr)
	stBuild(t, s)
	want := stFull(t, s, "s")
	if err := srv.Save(); err != nil {
		t.Fatal(err)
	}
	raddr := hsRedis(t, "--dir", dir, "--dbfilename", "dump.rdb")
	r := stClient(t, raddr)
	if got := stFull(t, r, "s"); got != want {
		t.Errorf("redis loading Sluice's RDB:\n got %s\nwant %s", got, want)
	}
	// And back: redis saves (over Sluice's file), Sluice loads.
	os.Remove(filepath.Join(dir, "dump.rdb"))
	if err := r.Save(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err != nil {
		t.Fatal(err)
	}
	cfg := NewConfig()
	cfg.Set("port", "0")
	cfg.Set("dir", dir)
	srv2 := New(cfg)
	srv2.SetLogger(nil)
	if err := srv2.LoadDataFile(); err != nil {
		t.Fatalf("loading redis's RDB with a stream: %v", err)
	}
	if err := srv2.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv2.Stop)
	if got := stFull(t, stClient(t, srv2.Addrs()[0].String()), "s"); got != want {
		t.Errorf("Sluice loading redis's RDB:\n got %s\nwant %s", got, want)
	}
}

func TestStreamNotifications(t *testing.T) {
	srv, addr := hsStart(t, "notify-keyspace-events", "KEA")
	c := stClient(t, addr)
	ctx := context.Background()
	var mu sync.Mutex
	var events []string
	srv.setNotifyHook(func(db int, class int64, event string, key []byte) {
		mu.Lock()
		events = append(events, event)
		mu.Unlock()
	})
	c.Do(ctx, "XADD", "s", "MAXLEN", "1", "1-1", "f", "v")
	c.Do(ctx, "XADD", "s", "MAXLEN", "1", "1-2", "f", "v")
	c.Do(ctx, "XGROUP", "CREATE", "s", "g", "0")
	c.Do(ctx, "XGROUP", "CREATECONSUMER", "s", "g", "c")
	c.Do(ctx, "XGROUP", "DELCONSUMER", "s", "g", "c")
	c.Do(ctx, "XGROUP", "SETID", "s", "g", "0")
	c.Do(ctx, "XSETID", "s", "9-9")
	c.Do(ctx, "XDEL", "s", "1-2")
	c.Do(ctx, "XGROUP", "DESTROY", "s", "g")
	mu.Lock()
	defer mu.Unlock()
	want := []string{"xadd", "xadd", "xtrim", "xgroup-create", "xgroup-createconsumer", "xgroup-delconsumer", "xgroup-setid", "xsetid", "xdel", "xgroup-destroy"}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events %v\nwant   %v", events, want)
	}
}
