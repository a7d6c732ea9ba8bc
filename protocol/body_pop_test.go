package protocol

import (
	"slices"
	"testing"
)

// A batch ack's bit set reads as Java's BitSet.toByteArray (little-endian
// bits), under RocketMQ's short field names or their long alternates.
func TestBatchAckBody(t *testing.T) {
	for _, body := range []string{
		`{"brokerName":"b","acks":[{"c":"g","t":"T","r":"0","so":10,"q":1,"rq":0,"pt":5,"it":60000,"b":"BQE="}]}`,
		`{"brokerName":"b","acks":[{"consumerGroup":"g","topic":"T","retry":"0","so":10,"q":1,"rq":0,"pt":5,"it":60000,"bitSet":"BQE="}]}`,
	} {
		var b BatchAckMessageRequestBody
		if err := UnmarshalBody([]byte(body), &b); err != nil {
			t.Fatal(err)
		}
		a := b.Acks[0]
		a.Normalize()
		if a.ConsumerGroup != "g" || a.Topic != "T" || a.QueueID != 1 || a.PopTime != 5 {
			t.Fatalf("%s: decoded %+v", body, a)
		}
		// bytes 0x05 0x01: bits 0, 2 and 8
		if got := a.Offsets(); !slices.Equal(got, []int64{10, 12, 18}) {
			t.Fatalf("%s: offsets %v", body, got)
		}
	}
}
