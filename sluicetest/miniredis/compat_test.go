package miniredis_test

// Tests written against miniredis's API the way its users write them. The
// same file runs against the real miniredis in internal/against, where it
// is copied with only the import line changed (go generate; a test checks
// that the copies match), so each case here passes on both: changing the
// import is the whole migration.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/sluicetest/miniredis"
)

var ctx = context.Background()

func newClient(t *testing.T, m *miniredis.Miniredis) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCompatTTLTimeTravel(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)

	if err := rdb.Set(ctx, "session", "abc", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if got := m.TTL("session"); got != 30*time.Second {
		t.Fatalf("TTL = %v, want 30s", got)
	}
	m.FastForward(29 * time.Second)
	if !m.Exists("session") {
		t.Fatal("session gone after 29 of its 30 s")
	}
	if got := m.TTL("session"); got != time.Second {
		t.Fatalf("TTL after 29 s = %v, want 1s", got)
	}
	if v, err := rdb.Get(ctx, "session").Result(); err != nil || v != "abc" {
		t.Fatalf("GET = %q, %v", v, err)
	}
	if ttl := rdb.TTL(ctx, "session").Val(); ttl != time.Second {
		t.Fatalf("client TTL = %v, want 1s", ttl)
	}
	m.FastForward(2 * time.Second)
	if m.Exists("session") {
		t.Fatal("session still there after 31 s")
	}
	if err := rdb.Get(ctx, "session").Err(); err != redis.Nil {
		t.Fatalf("GET after expiry: %v, want redis.Nil", err)
	}
	if n := rdb.Exists(ctx, "session").Val(); n != 0 {
		t.Fatalf("EXISTS after expiry = %d", n)
	}

	// SetTTL on a key set directly.
	m.Set("token", "t1")
	m.SetTTL("token", time.Minute)
	if ttl := rdb.TTL(ctx, "token").Val(); ttl != time.Minute {
		t.Fatalf("TTL of token = %v, want 1m", ttl)
	}
	if ttl := rdb.PTTL(ctx, "token").Val(); ttl != time.Minute {
		t.Fatalf("PTTL of token = %v, want 1m", ttl)
	}
	m.FastForward(time.Minute)
	if m.Exists("token") {
		t.Fatal("token outlived its TTL")
	}

	// EXPIRE and PERSIST from a client; no TTL reads as 0.
	m.Set("keep", "v")
	if m.TTL("keep") != 0 {
		t.Fatal("a key without TTL has one")
	}
	rdb.Expire(ctx, "keep", 10*time.Second)
	rdb.Persist(ctx, "keep")
	m.FastForward(time.Hour)
	m.CheckGet(t, "keep", "v")

	// Milliseconds.
	rdb.Set(ctx, "short", "v", 1500*time.Millisecond)
	m.FastForward(1499 * time.Millisecond)
	if !m.Exists("short") {
		t.Fatal("short gone early")
	}
	m.FastForward(time.Millisecond)
	if m.Exists("short") {
		t.Fatal("short still there at its expiry time")
	}
}

func TestCompatSetTime(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)

	m.SetTime(time.Unix(1700000000, 123456000))
	tm, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !tm.Equal(time.Unix(1700000000, 123456000)) {
		t.Fatalf("TIME = %v, want the set time", tm)
	}

	m.SetTime(time.Unix(1700000000, 0))
	m.Set("k", "v")
	if err := rdb.ExpireAt(ctx, "k", time.Unix(1700000100, 0)).Err(); err != nil {
		t.Fatal(err)
	}
	if got := m.TTL("k"); got != 100*time.Second {
		t.Fatalf("TTL after EXPIREAT = %v, want 100s", got)
	}
	rdb.Set(ctx, "px", "v", 0)
	rdb.PExpireAt(ctx, "px", time.UnixMilli(1700000000500))
	if got := m.TTL("px"); got != 500*time.Millisecond {
		t.Fatalf("TTL after PEXPIREAT = %v, want 500ms", got)
	}
	m.FastForward(101 * time.Second)
	if m.Exists("k") || m.Exists("px") {
		t.Fatal("keys outlived their expiry time")
	}

	// An expiry time in the past removes the key.
	m.Set("old", "v")
	rdb.ExpireAt(ctx, "old", time.Unix(1600000000, 0))
	if m.Exists("old") {
		t.Fatal("EXPIREAT in the past kept the key")
	}
}

func TestCompatStrings(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)

	if err := m.Set("greeting", "hello"); err != nil {
		t.Fatal(err)
	}
	m.CheckGet(t, "greeting", "hello")
	if v := rdb.Get(ctx, "greeting").Val(); v != "hello" {
		t.Fatalf("client GET = %q", v)
	}
	rdb.Set(ctx, "fromclient", "42", 0)
	if v, err := m.Get("fromclient"); err != nil || v != "42" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if _, err := m.Get("missing"); err != miniredis.ErrKeyNotFound {
		t.Fatalf("Get(missing) error = %v, want ErrKeyNotFound", err)
	}

	if n, err := m.Incr("counter", 5); err != nil || n != 5 {
		t.Fatalf("Incr = %d, %v", n, err)
	}
	rdb.IncrBy(ctx, "counter", 10)
	if n, err := m.Incr("counter", -3); err != nil || n != 12 {
		t.Fatalf("Incr = %d, %v", n, err)
	}
	if _, err := m.Incr("greeting", 1); err != miniredis.ErrIntValueError {
		t.Fatalf("Incr of a non-number: %v", err)
	}
	if f, err := m.IncrByFloat("float", 1.5); err != nil || f != 1.5 {
		t.Fatalf("IncrByFloat = %v, %v", f, err)
	}
	if f, err := m.Incrfloat("float", 2.25); err != nil || f != 3.75 {
		t.Fatalf("Incrfloat = %v, %v", f, err)
	}

	if m.Type("greeting") != "string" || m.Type("nothing") != "" {
		t.Fatalf("Type = %q / %q", m.Type("greeting"), m.Type("nothing"))
	}
	if !m.Del("greeting") || m.Del("greeting") {
		t.Fatal("Del reported wrongly")
	}
	m.Set("u", "1")
	if !m.Unlink("u") || m.Exists("u") {
		t.Fatal("Unlink did not delete")
	}

	m.Push("alist", "x")
	if err := m.Set("alist", "x"); err != miniredis.ErrWrongType {
		t.Fatalf("Set over a list: %v, want ErrWrongType", err)
	}
	if _, err := m.Get("alist"); err != miniredis.ErrWrongType {
		t.Fatalf("Get of a list: %v, want ErrWrongType", err)
	}
	if err := rdb.Get(ctx, "alist").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("client GET of a list: %v", err)
	}

	keys := m.Keys()
	if want := []string{"alist", "counter", "float", "fromclient"}; !equal(keys, want) {
		t.Fatalf("Keys = %q, want %q", keys, want)
	}
}

func TestCompatHashes(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)

	m.HSet("user:1", "name", "ada", "lang", "go")
	if v := m.HGet("user:1", "name"); v != "ada" {
		t.Fatalf("HGet = %q", v)
	}
	if v := m.HGet("user:1", "missing"); v != "" {
		t.Fatalf("HGet of a missing field = %q", v)
	}
	if got := rdb.HGetAll(ctx, "user:1").Val(); got["lang"] != "go" || len(got) != 2 {
		t.Fatalf("HGETALL = %v", got)
	}
	rdb.HSet(ctx, "user:1", "age", "36")
	if fields, err := m.HKeys("user:1"); err != nil || !equal(fields, []string{"age", "lang", "name"}) {
		t.Fatalf("HKeys = %q, %v", fields, err)
	}
	m.HDel("user:1", "lang")
	if rdb.HExists(ctx, "user:1", "lang").Val() {
		t.Fatal("HDel did not delete")
	}
	if n, err := m.HIncrBy("user:1", "age", 2); err != nil || n != 38 {
		t.Fatalf("HIncrBy = %d, %v", n, err)
	}
	if n, err := m.HIncr("user:1", "visits", 1); err != nil || n != 1 {
		t.Fatalf("HIncr = %d, %v", n, err)
	}
	if f, err := m.HIncrByFloat("user:1", "score", 0.5); err != nil || f != 0.5 {
		t.Fatalf("HIncrByFloat = %v, %v", f, err)
	}
	if _, err := m.HKeys("nohash"); err != miniredis.ErrKeyNotFound {
		t.Fatalf("HKeys(missing): %v", err)
	}
	if m.Type("user:1") != "hash" {
		t.Fatalf("Type = %q", m.Type("user:1"))
	}
}

func TestCompatLists(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)

	if n, err := m.Push("queue", "a", "b"); err != nil || n != 2 {
		t.Fatalf("Push = %d, %v", n, err)
	}
	if n, err := m.RPush("queue", "c"); err != nil || n != 3 {
		t.Fatalf("RPush = %d, %v", n, err)
	}
	if n, err := m.Lpush("queue", "z"); err != nil || n != 4 {
		t.Fatalf("Lpush = %d, %v", n, err)
	}
	m.CheckList(t, "queue", "z", "a", "b", "c")
	rdb.RPush(ctx, "queue", "d")
	if got := rdb.LRange(ctx, "queue", 0, -1).Val(); !equal(got, []string{"z", "a", "b", "c", "d"}) {
		t.Fatalf("LRANGE = %q", got)
	}
	if v, err := m.Pop("queue"); err != nil || v != "d" {
		t.Fatalf("Pop = %q, %v", v, err)
	}
	if v, err := m.RPop("queue"); err != nil || v != "c" {
		t.Fatalf("RPop = %q, %v", v, err)
	}
	if v, err := m.Lpop("queue"); err != nil || v != "z" {
		t.Fatalf("Lpop = %q, %v", v, err)
	}
	if l, err := m.List("queue"); err != nil || !equal(l, []string{"a", "b"}) {
		t.Fatalf("List = %q, %v", l, err)
	}
	if _, err := m.List("nolist"); err != miniredis.ErrKeyNotFound {
		t.Fatalf("List(missing): %v", err)
	}
	m.Pop("queue")
	m.Pop("queue")
	if m.Exists("queue") {
		t.Fatal("an emptied list still exists")
	}

	// A blocked pop served by a push.
	done := make(chan []string, 1)
	go func() { done <- rdb.BLPop(ctx, 5*time.Second, "jobs").Val() }()
	time.Sleep(50 * time.Millisecond)
	m.Push("jobs", "job1")
	select {
	case got := <-done:
		if !equal(got, []string{"jobs", "job1"}) {
			t.Fatalf("BLPOP = %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("BLPOP not woken")
	}
}

func TestCompatSets(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)

	if n, err := m.SetAdd("colors", "red", "green"); err != nil || n != 2 {
		t.Fatalf("SetAdd = %d, %v", n, err)
	}
	if n, err := m.SAdd("colors", "green", "blue"); err != nil || n != 1 {
		t.Fatalf("SAdd = %d, %v", n, err)
	}
	m.CheckSet(t, "colors", "blue", "green", "red")
	rdb.SAdd(ctx, "colors", "infrared")
	if members, err := m.Members("colors"); err != nil || !equal(members, []string{"blue", "green", "infrared", "red"}) {
		t.Fatalf("Members = %q, %v", members, err)
	}
	if ok, err := m.IsMember("colors", "red"); err != nil || !ok {
		t.Fatalf("IsMember(red) = %v, %v", ok, err)
	}
	if ok, err := m.SIsMember("colors", "pink"); err != nil || ok {
		t.Fatalf("SIsMember(pink) = %v, %v", ok, err)
	}
	if n, err := m.SRem("colors", "red", "pink"); err != nil || n != 1 {
		t.Fatalf("SRem = %d, %v", n, err)
	}
	if got := rdb.SMembers(ctx, "colors").Val(); len(got) != 3 {
		t.Fatalf("SMEMBERS = %q", got)
	}
	if members, _ := m.SMembers("colors"); !equal(members, []string{"blue", "green", "infrared"}) {
		t.Fatalf("SMembers = %q", members)
	}
	if _, err := m.Members("noset"); err != miniredis.ErrKeyNotFound {
		t.Fatalf("Members(missing): %v", err)
	}
	if n, err := m.SCard("colors"); err != nil || n != 3 {
		t.Fatalf("SCard = %d, %v", n, err)
	}
}

func TestCompatSortedSets(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)

	if added, err := m.ZAdd("scores", 10, "ann"); err != nil || !added {
		t.Fatalf("ZAdd = %v, %v", added, err)
	}
	m.ZAdd("scores", 5, "bob")
	if added, _ := m.ZAdd("scores", 7, "ann"); added {
		t.Fatal("ZAdd of an existing member reported a new one")
	}
	rdb.ZAdd(ctx, "scores", redis.Z{Score: 20, Member: "cid"})
	if members, err := m.ZMembers("scores"); err != nil || !equal(members, []string{"bob", "ann", "cid"}) {
		t.Fatalf("ZMembers = %q, %v", members, err)
	}
	if s, err := m.ZScore("scores", "ann"); err != nil || s != 7 {
		t.Fatalf("ZScore = %v, %v", s, err)
	}
	ss, err := m.SortedSet("scores")
	if err != nil || len(ss) != 3 || ss["cid"] != 20 {
		t.Fatalf("SortedSet = %v, %v", ss, err)
	}
	if removed, err := m.ZRem("scores", "bob"); err != nil || !removed {
		t.Fatalf("ZRem = %v, %v", removed, err)
	}
	if got := rdb.ZRangeWithScores(ctx, "scores", 0, -1).Val(); len(got) != 2 || got[0].Member != "ann" {
		t.Fatalf("ZRANGE = %v", got)
	}
	if _, err := m.ZMembers("nozset"); err != miniredis.ErrKeyNotFound {
		t.Fatalf("ZMembers(missing): %v", err)
	}
}

func TestCompatStreamsAndHLL(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)

	if id, err := m.XAdd("events", "1-1", []string{"name", "a"}); err != nil || id != "1-1" {
		t.Fatalf("XAdd = %q, %v", id, err)
	}
	if _, err := m.XAdd("events", "1-0", []string{"name", "b"}); err == nil {
		t.Fatal("XAdd of a smaller ID succeeded")
	}
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: "events", ID: "2-0", Values: []string{"name", "c"}})
	id, err := m.XAdd("events", "*", []string{"name", "d"})
	if err != nil || !strings.Contains(id, "-") {
		t.Fatalf("XAdd(*) = %q, %v", id, err)
	}
	entries, err := m.Stream("events")
	if err != nil || len(entries) != 3 || entries[1].ID != "2-0" || !equal(entries[1].Values, []string{"name", "c"}) {
		t.Fatalf("Stream = %v, %v", entries, err)
	}
	if got := rdb.XLen(ctx, "events").Val(); got != 3 {
		t.Fatalf("XLEN = %d", got)
	}

	if n, err := m.PfAdd("visitors", "a", "b", "c"); err != nil || n != 1 {
		t.Fatalf("PfAdd = %d, %v", n, err)
	}
	rdb.PFAdd(ctx, "visitors", "d")
	if n, err := m.PfCount("visitors"); err != nil || n != 4 {
		t.Fatalf("PfCount = %d, %v", n, err)
	}
}

func TestCompatDatabases(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)
	rdb2 := redis.NewClient(&redis.Options{Addr: m.Addr(), DB: 2})
	defer rdb2.Close()

	m.Set("k", "zero")
	m.Select(2)
	m.Set("k", "two")
	if v := rdb2.Get(ctx, "k").Val(); v != "two" {
		t.Fatalf("db 2 GET = %q", v)
	}
	m.Select(0)
	m.CheckGet(t, "k", "zero")
	if v, _ := m.DB(2).Get("k"); v != "two" {
		t.Fatalf("DB(2).Get = %q", v)
	}
	m.DB(5).Set("only5", "x")
	if m.Exists("only5") || !m.DB(5).Exists("only5") {
		t.Fatal("DB(5) wrote elsewhere")
	}
	if !m.SwapDB(0, 2) {
		t.Fatal("SwapDB failed")
	}
	if v := rdb.Get(ctx, "k").Val(); v != "two" {
		t.Fatalf("db 0 after SWAPDB: %q", v)
	}
	m.DB(2).FlushDB()
	if m.DB(2).Exists("k") || !m.Exists("k") {
		t.Fatal("FlushDB flushed the wrong database")
	}
	m.FlushAll()
	if len(m.Keys()) != 0 || len(m.DB(5).Keys()) != 0 {
		t.Fatal("FlushAll left keys")
	}
}

func TestCompatAuth(t *testing.T) {
	m := miniredis.RunT(t)
	// A connection opened before the password is set.
	conn, err := redigo.Dial("tcp", m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Do("PING"); err != nil {
		t.Fatal(err)
	}

	m.RequireAuth("s3cret")
	if _, err := conn.Do("PING"); err == nil || err.Error() != "NOAUTH Authentication required." {
		t.Fatalf("PING before AUTH: %v", err)
	}
	if _, err := conn.Do("AUTH", "wrong"); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Fatalf("AUTH wrong: %v", err)
	}
	if ok, err := redigo.String(conn.Do("AUTH", "s3cret")); err != nil || ok != "OK" {
		t.Fatalf("AUTH: %q %v", ok, err)
	}
	if _, err := conn.Do("PING"); err != nil {
		t.Fatalf("PING after AUTH: %v", err)
	}

	noPass := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer noPass.Close()
	if err := noPass.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("client without password: %v", err)
	}
	withPass := redis.NewClient(&redis.Options{Addr: m.Addr(), Password: "s3cret"})
	defer withPass.Close()
	if err := withPass.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("client with password: %v", err)
	}
	m.CheckGet(t, "k", "v") // direct access needs no password

	m.RequireUserAuth("alice", "wonderland")
	alice := redis.NewClient(&redis.Options{Addr: m.Addr(), Username: "alice", Password: "wonderland"})
	defer alice.Close()
	if v, err := alice.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("alice GET: %q %v", v, err)
	}
	bad := redis.NewClient(&redis.Options{Addr: m.Addr(), Username: "alice", Password: "wrong"})
	defer bad.Close()
	if err := bad.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Fatalf("alice with a wrong password: %v", err)
	}

	m.RequireAuth("")
	m.RequireUserAuth("alice", "")
	open := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer open.Close()
	if err := open.Ping(ctx).Err(); err != nil {
		t.Fatalf("after removing the passwords: %v", err)
	}
}

func TestCompatPubSub(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)

	// A direct subscriber hears a client's PUBLISH.
	sub := m.NewSubscriber()
	defer sub.Close()
	if n := sub.Subscribe("news"); n != 1 {
		t.Fatalf("Subscribe = %d", n)
	}
	if n := sub.Psubscribe("sport.*"); n != 2 {
		t.Fatalf("Psubscribe = %d", n)
	}
	if got := sub.Channels(); !equal(got, []string{"news"}) {
		t.Fatalf("Channels = %q", got)
	}
	if got := sub.Patterns(); !equal(got, []string{"sport.*"}) {
		t.Fatalf("Patterns = %q", got)
	}
	go rdb.Publish(ctx, "news", "hello")
	select {
	case msg := <-sub.Messages():
		if msg.Channel != "news" || msg.Message != "hello" {
			t.Fatalf("message %+v", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no message")
	}
	go m.Publish("sport.tennis", "ace")
	select {
	case msg := <-sub.Pmessages():
		if msg.Pattern != "sport.*" || msg.Channel != "sport.tennis" || msg.Message != "ace" {
			t.Fatalf("pmessage %+v", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no pmessage")
	}

	// A client subscriber hears the direct Publish.
	ps := rdb.Subscribe(ctx, "alerts")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if n := m.Publish("alerts", "fire"); n != 1 {
		t.Fatalf("Publish reached %d", n)
	}
	msg, err := ps.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "fire" {
		t.Fatalf("client got %v, %v", msg, err)
	}

	if got := m.PubSubChannels(""); !equal(got, []string{"alerts", "news"}) {
		t.Fatalf("PubSubChannels = %q", got)
	}
	if got := m.PubSubChannels("a*"); !equal(got, []string{"alerts"}) {
		t.Fatalf("PubSubChannels(a*) = %q", got)
	}
	if got := m.PubSubNumSub("news", "alerts", "none"); got["news"] != 1 || got["alerts"] != 1 || got["none"] != 0 {
		t.Fatalf("PubSubNumSub = %v", got)
	}
	if n := m.PubSubNumPat(); n != 1 {
		t.Fatalf("PubSubNumPat = %d", n)
	}
	if n := sub.Unsubscribe("news"); n != 1 {
		t.Fatalf("Unsubscribe = %d", n)
	}
	if got := m.PubSubChannels(""); !equal(got, []string{"alerts"}) {
		t.Fatalf("PubSubChannels after Unsubscribe = %q", got)
	}
}

func TestCompatRestart(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)
	addr := m.Addr()

	rdb.Set(ctx, "persisted", "yes", 0)
	rdb.Set(ctx, "ttl", "v", time.Hour)
	m.HSet("h", "f", "v")
	m.Close()

	// Direct access works while closed.
	m.CheckGet(t, "persisted", "yes")
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("a closed server accepted a connection")
	}

	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	if m.Addr() != addr {
		t.Fatalf("restarted on %s, was %s", m.Addr(), addr)
	}
	if v, err := rdb.Get(ctx, "persisted").Result(); err != nil || v != "yes" {
		t.Fatalf("GET after Restart: %q %v", v, err)
	}
	if ttl := m.TTL("ttl"); ttl != time.Hour {
		t.Fatalf("TTL after Restart = %v", ttl)
	}
	if v := rdb.HGet(ctx, "h", "f").Val(); v != "v" {
		t.Fatalf("HGET after Restart: %q", v)
	}
}

func TestCompatSetError(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)

	m.SetError("LOADING Redis is loading the dataset in memory")
	if err := rdb.Get(ctx, "k").Err(); err == nil || err.Error() != "LOADING Redis is loading the dataset in memory" {
		t.Fatalf("GET with SetError: %v", err)
	}
	m.Set("k", "direct") // direct access is not affected
	m.SetError("")
	if v := rdb.Get(ctx, "k").Val(); v != "direct" {
		t.Fatalf("GET after clearing the error: %q", v)
	}
}

func TestCompatCounters(t *testing.T) {
	m := miniredis.RunT(t)
	if n := m.CurrentConnectionCount(); n != 0 {
		t.Fatalf("CurrentConnectionCount = %d before any client", n)
	}
	conn, err := redigo.Dial("tcp", m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	before := m.CommandCount()
	for i := 0; i < 3; i++ {
		if _, err := conn.Do("PING"); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.CommandCount() - before; n != 3 {
		t.Fatalf("CommandCount grew by %d for 3 commands", n)
	}
	if n := m.CurrentConnectionCount(); n != 1 {
		t.Fatalf("CurrentConnectionCount = %d", n)
	}
	if n := m.TotalConnectionCount(); n != 1 {
		t.Fatalf("TotalConnectionCount = %d", n)
	}
	conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for m.CurrentConnectionCount() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("CurrentConnectionCount = %d after the client closed", m.CurrentConnectionCount())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := m.TotalConnectionCount(); n != 1 {
		t.Fatalf("TotalConnectionCount = %d after close", n)
	}
}

func TestCompatScriptsAndTransactions(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := newClient(t, m)

	m.Set("k", "v")
	v, err := rdb.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{"k"}).Result()
	if err != nil || v != "v" {
		t.Fatalf("EVAL = %v, %v", v, err)
	}
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "n")
		p.Incr(ctx, "n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m.CheckGet(t, "n", "2")
}

func TestCompatDialAndLifecycle(t *testing.T) {
	m := miniredis.NewMiniRedis()
	if err := m.Set("early", "bird"); err != nil {
		t.Fatal(err)
	}
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Host() != "127.0.0.1" || m.Port() == "" || m.Addr() != m.Host()+":"+m.Port() {
		t.Fatalf("Addr %q, Host %q, Port %q", m.Addr(), m.Host(), m.Port())
	}
	rdb := redis.NewClient(&redis.Options{
		Dialer: func(ctx context.Context, _, _ string) (net.Conn, error) { return m.Dial() },
	})
	defer rdb.Close()
	if v := rdb.Get(ctx, "early").Val(); v != "bird" {
		t.Fatalf("GET over Dial = %q", v)
	}
	if !m.IsReadOnlyCommand("get") || m.IsReadOnlyCommand("set") {
		t.Fatal("IsReadOnlyCommand is wrong")
	}
	if err := m.Copy(0, "early", 3, "copied"); err != nil {
		t.Fatal(err)
	}
	if v, _ := m.DB(3).Get("copied"); v != "bird" {
		t.Fatalf("Copy: %q", v)
	}
	if err := m.Copy(0, "nothing", 0, "x"); err != miniredis.ErrKeyNotFound {
		t.Fatalf("Copy of a missing key: %v", err)
	}
}

func TestCompatDump(t *testing.T) {
	m := miniredis.RunT(t)
	m.Set("str", "value")
	m.Push("list", "a", "b")
	m.HSet("hash", "f2", "2", "f1", "1")
	m.SetAdd("set", "y", "x")
	want := `- hash
   f1: "1"
   f2: "2"
- list
   "a"
   "b"
- set
   "x"
   "y"
- str
   "value"
`
	if got := m.Dump(); got != want {
		t.Fatalf("Dump:\n%s\nwant:\n%s", got, want)
	}
}

func TestCompatTLS(t *testing.T) {
	serverCfg, roots := selfSigned(t)
	m, err := miniredis.RunTLS(serverCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Set("secret", "s3")
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), TLSConfig: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}})
	defer rdb.Close()
	if v, err := rdb.Get(ctx, "secret").Result(); err != nil || v != "s3" {
		t.Fatalf("GET over TLS: %q, %v", v, err)
	}
	plain := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatal("a plain client was served on the TLS port")
	}
}

// selfSigned returns a server configuration with a fresh self-signed
// certificate for 127.0.0.1, and the pool that trusts it.
func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, roots
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
