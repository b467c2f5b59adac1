package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// MIGRATE from Sluice into a real redis-server and into another Sluice.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	_, saddr := redistest.StartSluice(t)
	src := redis.NewClient(&redis.Options{Addr: saddr})
	defer src.Close()
	_, taddr := redistest.StartSluice(t)
	targets := map[string]string{"sluice": taddr, "redis": redistest.StartRedis(t)}
	for name, addr := range targets {
		t.Run(name, func(t *testing.T) {
			dst := redis.NewClient(&redis.Options{Addr: addr, DB: 9})
			defer dst.Close()
			host, port, _ := strings.Cut(addr, ":")
			migrate := func(args ...any) (any, error) {
				return src.Do(ctx, append([]any{"migrate", host, port}, args...)...).Result()
			}
			src.FlushAll(ctx)
			dst.FlushAll(ctx)
			src.RPush(ctx, "list", "a", "b", "c")
			src.Set(ctx, "ttl", "v", time.Hour)
			if v, err := migrate("list", 9, 5000); err != nil || v != "OK" {
				t.Fatalf("migrate list: %v %v", v, err)
			}
			if src.Exists(ctx, "list").Val() != 0 || strings.Join(dst.LRange(ctx, "list", 0, -1).Val(), ",") != "a,b,c" {
				t.Fatalf("list not moved: src %d dst %v", src.Exists(ctx, "list").Val(), dst.LRange(ctx, "list", 0, -1).Val())
			}
			if v, err := migrate("ttl", 9, 5000, "copy"); err != nil || v != "OK" {
				t.Fatalf("migrate copy: %v %v", v, err)
			}
			if src.Exists(ctx, "ttl").Val() != 1 || dst.Get(ctx, "ttl").Val() != "v" {
				t.Fatal("COPY did not keep the source or did not reach the target")
			}
			if ttl := dst.TTL(ctx, "ttl").Val(); ttl < 59*time.Minute {
				t.Errorf("TTL on the target %v", ttl)
			}
			// The key exists on the target now: BUSYKEY, unless REPLACE.
			_, err := migrate("ttl", 9, 5000, "copy")
			if err == nil || !strings.HasPrefix(err.Error(), "ERR Target instance replied with error: BUSYKEY") {
				t.Errorf("second copy: %v", err)
			}
			src.Set(ctx, "ttl", "new", 0)
			if v, err := migrate("ttl", 9, 5000, "replace"); err != nil || v != "OK" {
				t.Fatalf("migrate replace: %v %v", v, err)
			}
			if dst.Get(ctx, "ttl").Val() != "new" || dst.TTL(ctx, "ttl").Val() != -1 {
				t.Errorf("replace: %q ttl %v", dst.Get(ctx, "ttl").Val(), dst.TTL(ctx, "ttl").Val())
			}
			if v, err := migrate("nokey", 9, 5000); err != nil || v != "NOKEY" {
				t.Errorf("missing key: %v %v", v, err)
			}
			src.MSet(ctx, "k1", 1, "k2", 2)
			if v, err := migrate("", 9, 5000, "keys", "k1", "nokey", "k2"); err != nil || v != "OK" {
				t.Fatalf("migrate keys: %v %v", v, err)
			}
			if dst.Exists(ctx, "k1", "k2").Val() != 2 || src.Exists(ctx, "k1", "k2").Val() != 0 {
				t.Error("KEYS did not move both keys")
			}
			if _, err := migrate("k1", 9, 5000, "keys", "k1"); err == nil || !strings.Contains(err.Error(), "must be set to the empty string") {
				t.Errorf("KEYS with a key argument: %v", err)
			}
			src.Set(ctx, "k3", 3, 0)
			if _, err := migrate("k3", 9, 5000, "auth", "nopass"); err == nil || !strings.HasPrefix(err.Error(), "ERR Target instance replied with error:") {
				t.Errorf("AUTH against a server without a password: %v", err)
			}
			if src.Exists(ctx, "k3").Val() != 1 {
				t.Error("a key the target refused was deleted")
			}
		})
	}
	if !strings.Contains(src.Info(ctx, "stats").Val(), "migrate_cached_sockets:2") {
		t.Errorf("cached sockets: %s", src.Info(ctx, "stats").Val())
	}
	// Nothing listens there: IOERR.
	src.Set(ctx, "ttl", "v", 0)
	_, err := src.Do(ctx, "migrate", "127.0.0.1", redistest.FreePort(t), "ttl", 0, 200).Result()
	if err == nil || err.Error() != "IOERR error or timeout connecting to the client" {
		t.Errorf("dead target: %v", err)
	}
}

// MIGRATE reaches replicas (and the AOF) as DEL of the keys it moved, as
// in Redis: a replica that ran the MIGRATE itself would keep the keys (the
// target already has them), and so would a reload of the AOF.
func TestMigrateReplicatesAsDel(t *testing.T) {
	ctx := context.Background()
	for _, source := range []string{"redis", "sluice"} {
		t.Run(source, func(t *testing.T) {
			var maddr, raddr string
			if source == "redis" {
				maddr = redistest.StartRedis(t)
				h, p := hostPort(maddr)
				raddr = redistest.StartRedis(t, "--replicaof", h, p, "--dir", t.TempDir())
			} else {
				_, maddr = redistest.StartSluice(t)
				// The replica loads the payload from the socket, so the
				// test leaves no dump.rdb in the package's directory.
				_, raddr = redistest.StartSluice(t, "repl-diskless-load", "swapdb")
				h, p := hostPort(maddr)
				if err := replClient(t, raddr, 0).Do(ctx, "REPLICAOF", h, p).Err(); err != nil {
					t.Fatal(err)
				}
			}
			waitInfo(t, raddr, `master_link_status:up`)
			taddr := redistest.StartRedis(t)
			src, rep, dst := replClient(t, maddr, 0), replClient(t, raddr, 0), replClient(t, taddr, 0)
			src.MSet(ctx, "k1", "a", "k2", "b", "stay", "c")
			if n, err := src.Do(ctx, "WAIT", "1", "5000").Int(); err != nil || n != 1 {
				t.Fatalf("WAIT: %v %v", n, err)
			}
			h, p := hostPort(taddr)
			if v, err := src.Do(ctx, "MIGRATE", h, p, "", "0", "5000", "KEYS", "k1", "k2", "missing").Result(); err != nil || v != "OK" {
				t.Fatalf("MIGRATE: %v %v", v, err)
			}
			if v, err := src.Do(ctx, "MIGRATE", h, p, "stay", "0", "5000", "COPY").Result(); err != nil || v != "OK" {
				t.Fatalf("MIGRATE COPY: %v %v", v, err)
			}
			src.Set(ctx, "after", "1", 0)
			if n, err := src.Do(ctx, "WAIT", "1", "5000").Int(); err != nil || n != 1 {
				t.Fatalf("WAIT: %v %v", n, err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for rep.Exists(ctx, "after").Val() != 1 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if n := rep.Exists(ctx, "k1", "k2").Val(); n != 0 {
				t.Errorf("the replica still has %d of the migrated keys", n)
			}
			if rep.Get(ctx, "stay").Val() != "c" {
				t.Errorf("the replica lost the key copied with COPY")
			}
			if n := dst.Exists(ctx, "k1", "k2", "stay").Val(); n != 3 {
				t.Errorf("target has %d of 3 keys", n)
			}
		})
	}
}
