package server

import (
	"bytes"
	"strconv"
	"testing"
)

// newBenchClient returns a client of a fresh in-memory server, built the
// way the drivers build theirs (newClient), so process runs the full
// command path: parsing, dispatch, locking, the handler and statistics.
func newBenchClient(tb testing.TB) *Client {
	tb.Helper()
	srv := New(NewConfig())
	c := srv.newClient(srv.goSlot, "bench", "bench", false, nil)
	if c == nil {
		tb.Fatal("newClient refused")
	}
	return c
}

func encodeCmd(args ...string) []byte {
	var b bytes.Buffer
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.Bytes()
}

// runCmd feeds buf to process and checks the reply, then resets the output.
func runCmd(tb testing.TB, c *Client, buf []byte, want string) {
	if n := c.process(buf); n != len(buf) {
		tb.Fatalf("consumed %d of %d bytes", n, len(buf))
	}
	if string(c.w.Buf) != want {
		tb.Fatalf("reply %q, want %q", c.w.Buf, want)
	}
	c.w.Buf = c.w.Buf[:0]
}

// BenchmarkGetSet drives GET and SET through Client.process on an
// in-memory buffer. After warm-up (the key exists, buffers are grown), a
// SET of an existing key overwrites in place and neither command may
// allocate.
func BenchmarkGetSet(b *testing.B) {
	for _, bc := range []struct{ name, val string }{
		{"str", "hello world value"},
		{"int", "12345678"},
		{"big", string(bytes.Repeat([]byte("x"), 1000))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := newBenchClient(b)
			set := encodeCmd("SET", "bench:key", bc.val)
			get := encodeCmd("GET", "bench:key")
			getReply := "$" + strconv.Itoa(len(bc.val)) + "\r\n" + bc.val + "\r\n"
			for i := 0; i < 3; i++ {
				runCmd(b, c, set, "+OK\r\n")
				runCmd(b, c, get, getReply)
			}
			b.Run("SET", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					c.process(set)
					c.w.Buf = c.w.Buf[:0]
				}
			})
			b.Run("GET", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					c.process(get)
					c.w.Buf = c.w.Buf[:0]
				}
			})
		})
	}
}

// TestGetSetZeroAllocs is the assertion behind BenchmarkGetSet: GET and a
// SET that overwrites an existing key allocate nothing per command.
func TestGetSetZeroAllocs(t *testing.T) {
	for _, val := range []string{"hello world value", "12345678", string(bytes.Repeat([]byte("x"), 1000))} {
		c := newBenchClient(t)
		set := encodeCmd("SET", "k", val)
		get := encodeCmd("GET", "k")
		getReply := "$" + strconv.Itoa(len(val)) + "\r\n" + val + "\r\n"
		for i := 0; i < 3; i++ {
			runCmd(t, c, set, "+OK\r\n")
			runCmd(t, c, get, getReply)
		}
		if n := testing.AllocsPerRun(200, func() { runCmd(t, c, set, "+OK\r\n") }); n != 0 {
			t.Errorf("SET %d bytes: %v allocs/op", len(val), n)
		}
		if n := testing.AllocsPerRun(200, func() { runCmd(t, c, get, getReply) }); n != 0 {
			t.Errorf("GET %d bytes: %v allocs/op", len(val), n)
		}
	}
}

// TestIncrZeroAllocs: INCR/INCRBY/DECR of an integer-encoded value update
// it in place.
func TestIncrZeroAllocs(t *testing.T) {
	c := newBenchClient(t)
	runCmd(t, c, encodeCmd("SET", "n", "100000"), "+OK\r\n")
	for _, args := range [][]string{{"INCR", "n"}, {"INCRBY", "n", "-7"}, {"DECR", "n"}, {"DECRBY", "n", "3"}} {
		buf := encodeCmd(args...)
		c.process(buf)
		c.w.Buf = c.w.Buf[:0]
		if n := testing.AllocsPerRun(200, func() {
			c.process(buf)
			c.w.Buf = c.w.Buf[:0]
		}); n != 0 {
			t.Errorf("%v: %v allocs/op", args, n)
		}
	}
}

// SetNotifyHookForTest lets the external string tests observe the keyspace
// notifications commands emit (no pub/sub needed).
func (s *Server) SetNotifyHookForTest(fn func(db int, class int64, event string, key []byte)) {
	s.setNotifyHook(fn)
}

// newAOFBenchClient is newBenchClient with appendonly yes (appendfsync
// policy) in a temporary directory.
func newAOFBenchClient(tb testing.TB, policy string) *Client {
	tb.Helper()
	tb.Chdir(tb.TempDir()) // the data directory, restored after
	cfg := NewConfig()
	cfg.Set("appendonly", "yes")
	cfg.Set("appendfsync", policy)
	srv := New(cfg)
	srv.SetLogger(nil)
	if err := srv.LoadDataFile(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.pe.Close() })
	c := srv.newClient(srv.goSlot, "bench", "bench", false, nil)
	if c == nil {
		tb.Fatal("newClient refused")
	}
	return c
}

// TestSetWithAOFZeroAllocs: with the AOF on, a SET and the commit that
// writes it to the file allocate nothing either.
func TestSetWithAOFZeroAllocs(t *testing.T) {
	c := newAOFBenchClient(t, "no")
	set := encodeCmd("SET", "k", "hello world value")
	for i := 0; i < 3; i++ {
		runCmd(t, c, set, "+OK\r\n")
		c.srv.commitIfPending()
	}
	if n := testing.AllocsPerRun(200, func() {
		runCmd(t, c, set, "+OK\r\n")
		c.srv.commitIfPending()
	}); n != 0 {
		t.Errorf("SET with the AOF: %v allocs/op", n)
	}
}

// BenchmarkSetAOF is SET with the AOF on, the commit included (one write,
// and under always one fsync, per SET: the worst case, a batch of one).
func BenchmarkSetAOF(b *testing.B) {
	for _, policy := range []string{"no", "everysec", "always"} {
		b.Run(policy, func(b *testing.B) {
			c := newAOFBenchClient(b, policy)
			set := encodeCmd("SET", "bench:key", "hello world value")
			runCmd(b, c, set, "+OK\r\n")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.process(set)
				c.srv.commitIfPending()
				c.w.Buf = c.w.Buf[:0]
			}
		})
	}
}
