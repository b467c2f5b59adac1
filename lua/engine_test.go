package lua_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/lua"
	"github.com/sluicedb/sluice/resp"
)

func TestScriptCache(t *testing.T) {
	e := lua.New(newMapHost(), "7.0.15")
	body := []byte("return 1")
	sc, err := e.LoadScript(body)
	if err != nil {
		t.Fatal(err)
	}
	// SCRIPT LOAD's reply for "return 1" in redis-server 7.0.15.
	if sc.SHA != "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" {
		t.Fatalf("sha %s", sc.SHA)
	}
	if again, _ := e.LoadScript(body); again != sc {
		t.Fatal("loading the same body again made a new script")
	}
	if e.Script([]byte(strings.ToUpper(sc.SHA))) != sc || e.Script([]byte(sc.SHA[:39])) != nil {
		t.Fatal("lookup by SHA1 is not case-insensitive over 40 hex digits")
	}
	if sc.Flags != lua.Compat {
		t.Fatalf("flags of a script without shebang: %v", sc.Flags)
	}
	sc2, err := e.LoadScript([]byte("#!lua flags=no-writes,allow-stale\nreturn 2"))
	if err != nil || sc2.Flags != lua.NoWrites|lua.AllowStale {
		t.Fatalf("shebang flags %v, %v", sc2.Flags, err)
	}
	if n := e.NumScripts(); n != 2 {
		t.Fatalf("%d scripts", n)
	}
	e.FlushScripts()
	if e.NumScripts() != 0 || e.Script([]byte(sc.SHA)) != nil {
		t.Fatal("FlushScripts left scripts")
	}
	if _, err := e.LoadScript([]byte("return +")); err == nil {
		t.Fatal("a script that does not compile was cached")
	}
}

func TestScriptCacheConcurrent(t *testing.T) {
	e := lua.New(newMapHost(), "7.0.15")
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				sc, err := e.LoadScript([]byte("return " + string(rune('a'+i%20))))
				if err != nil || e.Script([]byte(sc.SHA)) == nil {
					t.Error("script lost", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := e.NumScripts(); n != 20 {
		t.Fatalf("%d scripts, want 20", n)
	}
}

// The error redis-server 7.0.15 replies to EVAL "while true do end" 0
// once SCRIPT KILL stopped it.
const killedReply = "-ERR Script killed by user with SCRIPT KILL... script: 694a5fe1ddb97a4c6a1bf299d9537c7d3d0f84e7, on @user_script:1.\r\n"

func TestKill(t *testing.T) {
	e := lua.New(newMapHost(), "7.0.15")
	sc, err := e.LoadScript([]byte("while true do end"))
	if err != nil {
		t.Fatal(err)
	}
	// Killed once started, before it runs.
	e.StartEval(sc, nil, nil)
	e.Kill()
	e.Run()
	var w resp.Writer
	e.Reply(&w)
	if string(w.Buf) != killedReply {
		t.Fatalf("killed before running: %q", w.Buf)
	}
	// The VM runs the next script normally.
	if got := eval(t, e, "return 1", nil, nil, 2); got != ":1\r\n" {
		t.Fatalf("after a kill: %q", got)
	}
	// Killed while it runs.
	e.StartEval(sc, nil, nil)
	done := make(chan struct{})
	go func() {
		e.Run()
		close(done)
	}()
	e.Kill()
	<-done
	w.Buf = w.Buf[:0]
	e.Reply(&w)
	if string(w.Buf) != killedReply {
		t.Fatalf("killed while running: %q", w.Buf)
	}
	// A kill with nothing started does nothing.
	e.Kill()
	if got := eval(t, e, "return 2", nil, nil, 2); got != ":2\r\n" {
		t.Fatalf("after a kill of nothing: %q", got)
	}
}

// TestErrorStats checks that an error counts once: the host counts the
// errors its commands reply; the engine counts (through the writer's
// hook) only errors the script itself makes.
func TestErrorStats(t *testing.T) {
	for _, tc := range []struct {
		script     string
		host, here int
	}{
		{"redis.call('set', 's', 'x'); return redis.pcall('incr', 's')", 1, 0},
		{"redis.call('set', 's', 'x'); return redis.call('incr', 's')", 1, 0},
		{"redis.call('set', 's', 'x'); local e = redis.pcall('incr', 's'); return redis.error_reply(e.err)", 1, 1},
		{"return redis.error_reply('MINE')", 0, 1},
		{"error('mine')", 0, 1},
		{"return redis.call('nosuchcommand')", 1, 0},
	} {
		h := newMapHost()
		e := lua.New(h, "7.0.15")
		sc, err := e.LoadScript([]byte(tc.script))
		if err != nil {
			t.Fatal(err)
		}
		here := 0
		w := resp.Writer{OnError: func(string) { here++ }}
		e.StartEval(sc, nil, nil)
		e.Run()
		e.Reply(&w)
		if h.errs != tc.host || here != tc.here || w.Buf[0] != '-' {
			t.Errorf("%s: %q, host counted %d (want %d), reply counted %d (want %d)", tc.script, w.Buf, h.errs, tc.host, here, tc.here)
		}
	}
}

func TestLog(t *testing.T) {
	h := newMapHost()
	e := lua.New(h, "7.0.15")
	got := eval(t, e, "redis.log(redis.LOG_WARNING, 'hello', 'world', 1.5); redis.log(redis.LOG_DEBUG, 'x')", nil, nil, 2)
	if got != "$-1\r\n" {
		t.Fatalf("reply %q", got)
	}
	want := []string{"3 hello world 1.5", "0 x"}
	if strings.Join(h.logs, "|") != strings.Join(want, "|") {
		t.Fatalf("logged %q, want %q", h.logs, want)
	}
}

func TestDumpRestore(t *testing.T) {
	e := lua.New(newMapHost(), "7.0.15")
	lib1 := "#!lua name=lib1\nredis.register_function('f', function() return 1 end)"
	lib2 := "#!lua name=lib2\nredis.register_function('g', function() return 2 end)"
	for _, code := range []string{lib1, lib2} {
		if _, err := e.LoadLibrary(code, false); err != nil {
			t.Fatal(err)
		}
	}
	payload := e.Dump()
	call := func(name string) string {
		f := e.Function([]byte(name))
		if f == nil {
			return "no function"
		}
		var w resp.Writer
		e.StartFunction(f, nil, nil)
		e.Run()
		e.Reply(&w)
		return string(w.Buf)
	}
	e.FlushLibraries()
	if call("f") != "no function" {
		t.Fatal("FlushLibraries kept f")
	}
	if err := e.Restore(payload, lua.RestoreAppend); err != nil {
		t.Fatal(err)
	}
	if call("f") != ":1\r\n" || call("g") != ":2\r\n" {
		t.Fatal("restored functions do not run")
	}
	if !bytes.Equal(e.Dump(), payload) {
		t.Fatal("a restored dump differs")
	}
	// The errors are redis-server 7.0.15's (without "ERR ").
	check := func(err error, want string) {
		t.Helper()
		if err == nil || err.Error() != want {
			t.Fatalf("error %v, want %q", err, want)
		}
	}
	check(e.Restore(payload, lua.RestoreAppend), "Library lib1 already exists")
	check(e.Restore(payload[:len(payload)-1], lua.RestoreAppend), "DUMP payload version or checksum are wrong")
	bad := bytes.Clone(payload)
	bad[10] ^= 1
	check(e.Restore(bad, lua.RestoreAppend), "DUMP payload version or checksum are wrong")
	if !e.DeleteLibrary("lib1") || e.DeleteLibrary("lib1") {
		t.Fatal("DeleteLibrary")
	}
	if _, err := e.LoadLibrary("#!lua name=lib3\nredis.register_function('f', function() return 3 end)", false); err != nil {
		t.Fatal(err)
	}
	// lib1's f is lib3's now: appending lib1 back collides.
	check(e.Restore(payload, lua.RestoreReplace), "Function f already exists")
	if call("f") != ":3\r\n" || call("g") != ":2\r\n" {
		t.Fatal("a failed restore changed the libraries")
	}
	if err := e.Restore(payload, lua.RestoreFlush); err != nil {
		t.Fatal(err)
	}
	if l, f := e.Counts(); l != 2 || f != 2 || call("f") != ":1\r\n" {
		t.Fatalf("after RestoreFlush: %d libraries, %d functions, f %q", l, f, call("f"))
	}
	if _, err := e.LoadLibrary("#!lua name=lib2\nredis.register_function('h', function() return 4 end)", false); err == nil {
		t.Fatal("LoadLibrary replaced a library without replace")
	}
	if err := e.Restore(payload, lua.RestoreReplace); err != nil {
		t.Fatal(err)
	}
}
