package proto

import (
	"testing"

	gproto "google.golang.org/protobuf/proto"

	pb "github.com/sluicedb/sluice/cache/internal/fixtures/fixturespb"
)

func TestCodec(t *testing.T) {
	c := New[*pb.LargeNested]()
	in := pb.Unicode()
	data, err := c.AppendMarshal([]byte("prefix"), in)
	if err != nil || string(data[:6]) != "prefix" {
		t.Fatalf("AppendMarshal: %q, %v", data, err)
	}
	var out *pb.LargeNested
	if err := c.Unmarshal(data[6:], &out); err != nil || !gproto.Equal(in, out) {
		t.Fatalf("Unmarshal: %v, %v", out, err)
	}
	if err := c.Unmarshal([]byte{0xff, 0xff}, &out); err == nil {
		t.Error("garbage decoded")
	}
	var zero Codec[*pb.Small]
	var s *pb.Small
	if err := zero.Unmarshal(nil, &s); err == nil {
		t.Error("zero Codec decoded")
	}
	defer func() {
		if recover() == nil {
			t.Error("New[proto.Message] did not panic")
		}
	}()
	New[gproto.Message]()
}
