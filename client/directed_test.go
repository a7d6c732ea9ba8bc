package client

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/samsamq/samsa/storage/record"
)

// answerOf encodes records (topic, queue, offset) back to back as a pull
// answer's body.
func answerOf(t *testing.T, recs ...record.Fields) []byte {
	t.Helper()
	var body []byte
	for i := range recs {
		f := &recs[i]
		f.PhysOffset = int64(len(body))
		f.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
		f.BornHost = netip.MustParseAddrPort("127.0.0.1:5555")
		f.Body = []byte("payload")
		sz, err := f.Size()
		if err != nil {
			t.Fatal(err)
		}
		r := make([]byte, sz)
		if _, err := record.Encode(r, f); err != nil {
			t.Fatal(err)
		}
		body = append(body, r...)
	}
	return body
}

// TestCheckDirected: an answer's records must be the pulled queue's, from
// the pull's offset up and rising; any other is refused as a
// CorruptMessageError matching ErrMisdirected and ErrCorruptMessage.
func TestCheckDirected(t *testing.T) {
	q := MessageQueue{Topic: "t", BrokerName: "broker-a", QueueID: 2}
	for _, tc := range []struct {
		name string
		recs []record.Fields
		ok   bool
	}{
		{"rising", []record.Fields{{Topic: "t", QueueID: 2, QueueOffset: 5}, {Topic: "t", QueueID: 2, QueueOffset: 6}, {Topic: "t", QueueID: 2, QueueOffset: 9}}, true},
		{"other topic", []record.Fields{{Topic: "t", QueueID: 2, QueueOffset: 5}, {Topic: "u", QueueID: 2, QueueOffset: 6}}, false},
		{"other queue", []record.Fields{{Topic: "t", QueueID: 3, QueueOffset: 5}}, false},
		{"before the pull", []record.Fields{{Topic: "t", QueueID: 2, QueueOffset: 4}}, false},
		{"repeated", []record.Fields{{Topic: "t", QueueID: 2, QueueOffset: 5}, {Topic: "t", QueueID: 2, QueueOffset: 5}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, err := decodeAnswer(answerOf(t, tc.recs...), decodeOptions{brokerName: q.BrokerName, verify: true, pullOffset: 5})
			if err != nil {
				t.Fatal(err)
			}
			err = checkDirected(msgs, q, 5)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *CorruptMessageError
			if !errors.As(err, &ce) || !errors.Is(err, ErrMisdirected) || !errors.Is(err, ErrCorruptMessage) {
				t.Fatalf("want a CorruptMessageError for a misdirected record, got %v", err)
			}
			if ce.Topic != q.Topic || ce.QueueID != q.QueueID || ce.PullOffset != 5 {
				t.Fatalf("error names %s/%d pull %d, want the pulled queue", ce.Topic, ce.QueueID, ce.PullOffset)
			}
		})
	}
}
