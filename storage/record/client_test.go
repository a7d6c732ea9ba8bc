package record

import (
	"bytes"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestOfficialClientDecodes feeds records, several back to back as a pull
// response carries them, to the official Go client's decoder.
func TestOfficialClientDecodes(t *testing.T) {
	var wire []byte
	var want []Fields
	for i := 0; i < 3; i++ {
		f := sampleFields()
		f.QueueOffset = int64(i)
		f.PhysOffset = int64(len(wire))
		f.Body = bytes.Repeat([]byte{'a' + byte(i)}, 10+i)
		n, _ := f.Size()
		buf := make([]byte, n)
		if _, err := Encode(buf, &f); err != nil {
			t.Fatal(err)
		}
		wire = append(wire, buf...)
		want = append(want, f)
	}
	msgs := primitive.DecodeMessage(wire)
	if len(msgs) != len(want) {
		t.Fatalf("client decoded %d messages, want %d", len(msgs), len(want))
	}
	for i, m := range msgs {
		f := want[i]
		if m.Topic != f.Topic || !bytes.Equal(m.Body, f.Body) || m.QueueOffset != f.QueueOffset ||
			m.CommitLogOffset != f.PhysOffset || m.Queue.QueueId != int(f.QueueID) || m.Flag != f.Flag ||
			m.BornTimestamp != f.BornTimestamp || m.StoreTimestamp != f.StoreTimestamp ||
			m.ReconsumeTimes != f.ReconsumeTimes || m.BornHost != f.BornHost.String() ||
			m.StoreHost != f.StoreHost.String() || m.BodyCRC != int32(BodyCRC(f.Body)) {
			t.Fatalf("message %d: client sees %+v, want %+v", i, m, f)
		}
		if m.GetTags() != "TagA" || m.GetProperty("KEYS") != "k1" || len(m.GetProperty(PropertyCRC32)) != 10 {
			t.Fatalf("message %d: properties %v", i, m.GetProperties())
		}
	}
}
