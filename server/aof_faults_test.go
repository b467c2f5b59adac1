package server_test

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

// Faults with real files: a full disk (a small tmpfs), a read-only
// directory, truncated and corrupt files.

// smallDisk mounts a tmpfs of size bytes, or skips the test when it cannot
// (mounting needs root).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes a filler file that leaves about free bytes on dir's disk.
func fillDisk(t *testing.T, dir string, free int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail := int64(st.Bavail) * st.Bsize
	path := filepath.Join(dir, "filler")
	if err := os.WriteFile(path, make([]byte, max(avail-free, 0)), 0o644); err != nil && !strings.Contains(err.Error(), "no space") {
		t.Fatal(err)
	}
	return path
}

func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the server did not exit")
		return -1
	}
}

// A full disk under appendfsync everysec: writes are refused with Redis's
// MISCONF error, reads go on, and once there is room again writes are
// accepted; nothing acknowledged is lost across a kill -9.
func TestAOFDiskFullEverysec(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := smallDisk(t, 4<<20)
	srv := &aofServer{t: t, bin: buildServer(t), dir: dir, args: []string{"--appendonly", "yes", "--appendfsync", "everysec"}}
	srv.start()
	defer srv.kill()
	filler := fillDisk(t, dir, 64<<10)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1})
	defer c.Close()
	val := strings.Repeat("v", 4096)
	acked := 0
	var refused error
	for i := 0; i < 1000; i++ {
		if err := c.Set(ctx, "k"+strconv.Itoa(i), val, 0).Err(); err != nil {
			refused = err
			break
		}
		acked++
	}
	if refused == nil || refused.Error() != "MISCONF Errors writing to the AOF file: No space left on device" {
		t.Fatalf("after %d writes: %v", acked, refused)
	}
	if err := c.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF") {
		t.Errorf("PING on a full disk: %v", err) // as in Redis
	}
	if v := c.Get(ctx, "k0").Val(); v != val {
		t.Errorf("reads must go on: %q", v)
	}
	if info := c.Info(ctx, "persistence").Val(); !strings.Contains(info, "aof_last_write_status:err") {
		t.Errorf("INFO: %s", info)
	}
	os.Remove(filler)
	deadline := time.Now().Add(10 * time.Second)
	for c.Set(ctx, "after", "1", 0).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("writes were not accepted again: %s", srv.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(srv.logs.String(), "AOF write error looks solved, Redis can write again.") {
		t.Errorf("log: %s", srv.logs.String())
	}
	srv.kill()
	srv.start()
	c2 := redis.NewClient(&redis.Options{Addr: srv.addr})
	defer c2.Close()
	for i := 0; i < acked; i++ {
		if v := c2.Get(ctx, "k"+strconv.Itoa(i)).Val(); v != val {
			t.Fatalf("k%d lost after the restart (%d acknowledged)", i, acked)
		}
	}
	if c2.Get(ctx, "after").Val() != "1" {
		t.Error("the write after recovery was lost")
	}
}

// A full disk under appendfsync always: the server stops before the reply
// of the write it could not persist, as Redis does, and a restart has
// every acknowledged write.
func TestAOFDiskFullAlways(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := smallDisk(t, 4<<20)
	srv := &aofServer{t: t, bin: buildServer(t), dir: dir, args: []string{"--appendonly", "yes", "--appendfsync", "always"}}
	srv.start()
	filler := fillDisk(t, dir, 64<<10)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1})
	val := strings.Repeat("v", 4096)
	acked := 0
	for i := 0; i < 1000; i++ {
		if err := c.Set(ctx, "k"+strconv.Itoa(i), val, 0).Err(); err != nil {
			break
		}
		acked++
	}
	c.Close()
	if code := waitExit(t, srv.cmd); code != 1 {
		t.Errorf("exit status %d", code)
	}
	if !strings.Contains(srv.logs.String(), "Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...") {
		t.Errorf("log: %s", srv.logs.String())
	}
	os.Remove(filler)
	srv.start()
	defer srv.kill()
	c2 := redis.NewClient(&redis.Options{Addr: srv.addr})
	defer c2.Close()
	if acked == 0 {
		t.Fatal("no write acknowledged")
	}
	for i := 0; i < acked; i++ {
		if v := c2.Get(ctx, "k"+strconv.Itoa(i)).Val(); v != val {
			t.Fatalf("k%d lost after the restart (%d acknowledged)", i, acked)
		}
	}
}

// A BGSAVE that fails on a full disk, with save points: writes are refused
// with Redis's MISCONF text until a save succeeds.
func TestBGSAVEDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := smallDisk(t, 4<<20)
	srv := &aofServer{t: t, bin: buildServer(t), dir: dir, args: []string{"--save", "3600 1000000"}}
	srv.start()
	defer srv.kill()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1})
	defer c.Close()
	rnd := make([]byte, 4096)
	for i := range 300 {
		crand.Read(rnd) // incompressible: the file needs about 1.2 MB
		c.Set(ctx, "k"+strconv.Itoa(i), rnd, 0)
	}
	filler := fillDisk(t, dir, 16<<10)
	c.BgSave(ctx)
	waitBgsave(t, c)
	err := c.Set(ctx, "x", "1", 0).Err()
	if err == nil || err.Error() != "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error." {
		t.Fatalf("SET after a failed BGSAVE: %v\n%s\n%s", err, c.Info(ctx, "persistence").Val(), srv.logs.String())
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "temp-*.rdb")); len(ents) != 0 {
		t.Errorf("temporary files left: %v", ents)
	}
	os.Remove(filler)
	c.BgSave(ctx)
	waitBgsave(t, c)
	if err := c.Set(ctx, "x", "1", 0).Err(); err != nil {
		t.Errorf("SET after a good BGSAVE: %v", err)
	}
}

// A directory that cannot be written: appendonly yes at start-up stops the
// server; turned on at run time it is refused.
func TestAOFUnwritableDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	if os.Getuid() == 0 {
		// Root writes through permissions: a read-only tmpfs then.
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_RDONLY, "size=1m"); err != nil {
			t.Skipf("cannot mount a read-only tmpfs: %v", err)
		}
		t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	} else {
		os.Chmod(dir, 0o555)
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
	}
	bin := buildServer(t)
	cmd := exec.Command(bin, "--port", strconv.Itoa(redistest.FreePort(t)), "--dir", dir, "--appendonly", "yes")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "Can't open or create append-only dir appendonlydir") {
		t.Errorf("start-up in a read-only dir: exit %d, %s", cmd.ProcessState.ExitCode(), out)
	}
	srv := &aofServer{t: t, bin: bin, dir: dir}
	srv.start()
	defer srv.kill()
	c := redis.NewClient(&redis.Options{Addr: srv.addr})
	defer c.Close()
	ctx := context.Background()
	err := c.ConfigSet(ctx, "appendonly", "yes").Err()
	if err == nil || !strings.Contains(err.Error(), "Unable to turn on AOF. Check server logs.") {
		t.Errorf("CONFIG SET appendonly yes: %v", err)
	}
	if v := c.ConfigGet(ctx, "appendonly").Val()["appendonly"]; v != "no" {
		t.Errorf("appendonly is %q after the refusal", v)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Errorf("writes without AOF: %v", err)
	}
	if err := c.Save(ctx).Err(); err == nil {
		t.Error("SAVE in a read-only directory succeeded")
	}
}

// Truncated and corrupt files at start-up.
func TestAOFBadFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	incr := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.Write(redistest.Encode("INCR", "n"))
		}
		return b.String()
	}
	setup := func(content string) string {
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, "appendonlydir"), 0o755)
		os.WriteFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof"), []byte(content), 0o644)
		os.WriteFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest"), []byte("file appendonly.aof.1.incr.aof seq 1 type i\n"), 0o644)
		return dir
	}
	ctx := context.Background()

	// A truncated last command, aof-load-truncated yes: loaded without it,
	// the file cut at the last whole command.
	full := incr(5)
	dir := setup(full + string(redistest.Encode("INCR", "n"))[:8])
	srv := &aofServer{t: t, bin: bin, dir: dir, args: []string{"--appendonly", "yes"}}
	srv.start()
	c := redis.NewClient(&redis.Options{Addr: srv.addr})
	if v := c.Get(ctx, "n").Val(); v != "5" {
		t.Errorf("truncated file loaded n=%q", v)
	}
	c.Close()
	srv.kill()
	if !strings.Contains(srv.logs.String(), "!!! Warning: short read while loading the AOF file appendonly.aof.1.incr.aof!!!") {
		t.Errorf("log: %s", srv.logs.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof")); string(b) != full {
		t.Errorf("the file was not cut at the last command: %d bytes", len(b))
	}

	for _, tc := range []struct{ name, content, opt, log string }{
		{"truncated, aof-load-truncated no", full + incr(1)[:8], "no", "Unexpected end of file reading the append only file appendonly.aof.1.incr.aof"},
		{"corrupt in the middle", incr(2) + "!!!\r\n" + incr(2), "yes", "Bad file format reading the append only file appendonly.aof.1.incr.aof"},
		{"unknown command", incr(1) + string(redistest.Encode("NOSUCHCMD", "x")), "yes", "Unknown command 'NOSUCHCMD' reading the append only file"},
	} {
		dir := setup(tc.content)
		cmd := exec.Command(bin, "--port", strconv.Itoa(redistest.FreePort(t)), "--dir", dir, "--appendonly", "yes", "--aof-load-truncated", tc.opt)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), tc.log) {
			t.Errorf("%s: exit %d, output %s", tc.name, cmd.ProcessState.ExitCode(), out)
		}
	}

	// A base in RDB form with a bad checksum.
	dir = t.TempDir()
	srv = &aofServer{t: t, bin: bin, dir: dir, args: []string{"--appendonly", "yes"}}
	srv.start()
	c = redis.NewClient(&redis.Options{Addr: srv.addr})
	c.Set(ctx, "k", "v", 0)
	c.BgRewriteAOF(ctx)
	waitRewrite(t, c)
	c.Close()
	srv.kill()
	base := filepath.Join(dir, "appendonlydir", "appendonly.aof.2.base.rdb")
	b, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	os.WriteFile(base, b, 0o644)
	cmd := exec.Command(bin, "--port", strconv.Itoa(redistest.FreePort(t)), "--dir", dir, "--appendonly", "yes")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "Error reading the RDB base file appendonly.aof.2.base.rdb, AOF loading aborted") {
		t.Errorf("corrupt base: exit %d, output %s", cmd.ProcessState.ExitCode(), out)
	}
}

func waitRewrite(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Contains(c.Info(ctx, "persistence").Val(), "aof_rewrite_in_progress:1") {
		if time.Now().After(deadline) {
			t.Fatal("the rewrite did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if info := c.Info(ctx, "persistence").Val(); !strings.Contains(info, "aof_last_bgrewrite_status:ok") {
		t.Fatal(fmt.Sprintf("rewrite failed: %s", info))
	}
}
