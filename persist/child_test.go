package persist

import (
	"io"
	"strings"
	"syscall"
	"testing"
)

// A relay passes back what it is given, whole, and exits 0 at the end; an
// early end (its parent died) or a kill makes it fail, and its output ends.
func TestRelay(t *testing.T) {
	c, out, err := StartRelay()
	if err != nil {
		t.Fatal(err)
	}
	data := strings.Repeat("0123456789", 500000)
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(out)
		got <- string(b)
	}()
	c.Write([]byte(data[:1000]))
	c.Write([]byte(data[1000:]))
	c.End()
	if b := <-got; b != data {
		t.Errorf("relayed %d bytes, want %d", len(b), len(data))
	}
	if ex := c.Wait(); ex.Code != 0 || ex.Signal != 0 {
		t.Fatalf("exit %+v", ex)
	}
	out.Close()

	// The parent's stream ends without the end frame.
	c, out, _ = StartRelay()
	c.Write([]byte("partial"))
	c.bw.Flush()
	c.pipe.Close()
	if b, _ := io.ReadAll(out); string(b) != "partial" {
		t.Errorf("relayed %q before the early end", b)
	}
	if ex := c.Wait(); ex.Code != 1 || ex.Msg != "The parent's stream ended early" {
		t.Errorf("early end: %+v", ex)
	}
	out.Close()

	// Killed: its output ends, and Exited says how.
	c, out, _ = StartRelay()
	if _, done := c.Exited(); done {
		t.Error("a running relay reported as exited")
	}
	c.Kill()
	if _, err := io.ReadAll(out); err != nil {
		t.Errorf("output after a kill: %v", err)
	}
	if ex, done := c.Exited(); !done || ex.Signal != int(syscall.SIGKILL) {
		t.Errorf("kill: %+v %v", ex, done)
	}
	out.Close()
}
