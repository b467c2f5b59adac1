package msgp

import (
	"testing"

	"github.com/sluicedb/sluice/cache/internal/fixtures"
)

func TestCodec(t *testing.T) {
	c := New[fixtures.Small]()
	data, err := c.Marshal(fixtures.NewSmall())
	if err != nil {
		t.Fatal(err)
	}
	var out fixtures.Small
	if err := c.Unmarshal(data, &out); err != nil || out != fixtures.NewSmall() {
		t.Fatalf("Unmarshal: %+v, %v", out, err)
	}
	if err := c.Unmarshal(append(data, 0xc0), &out); err == nil {
		t.Error("trailing bytes accepted")
	}
	if err := c.Unmarshal(data[:len(data)-1], &out); err == nil {
		t.Error("truncated value accepted")
	}
}
