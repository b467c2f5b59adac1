package lua

import (
	"testing"

	"github.com/sluicedb/sluice/resp"
)

// noCommands is a host with no commands, for scripts that call none.
type noCommands struct{ w resp.Writer }

func (h *noCommands) Call(argv [][]byte, proto int) []byte {
	h.w.Buf = h.w.Buf[:0]
	h.w.Error("ERR Unknown Redis command called from script")
	return h.w.Buf
}
func (h *noCommands) Refused() bool                        { return true }
func (h *noCommands) Log(int, string)                      {}
func (h *noCommands) ACLCheck([][]byte) (allowed, ok bool) { return false, false }
func (h *noCommands) SetRepl(int)                          {}

// TestEvalNoRecompile checks that a cached script is bound to the VM once
// and reused by every run (EVALSHA compiles nothing).
func TestEvalNoRecompile(t *testing.T) {
	e := New(&noCommands{}, "7.0.15")
	sc, err := e.LoadScript([]byte("return 1"))
	if err != nil {
		t.Fatal(err)
	}
	run := func() {
		var w resp.Writer
		e.StartEval(sc, nil, nil)
		e.Run()
		e.Reply(&w)
		if string(w.Buf) != ":1\r\n" {
			t.Fatalf("reply %q", w.Buf)
		}
	}
	run()
	fn := sc.fn
	run()
	if fn == nil || sc.fn != fn {
		t.Fatal("the script's function was rebuilt")
	}
}

func TestVersionNum(t *testing.T) {
	for v, want := range map[string]int{"7.0.15": 0x07000f, "6.2.1": 0x060201, "7": 0x070000} {
		if got := versionNum(v); got != want {
			t.Errorf("versionNum(%q) = %#x, want %#x", v, got, want)
		}
	}
}
