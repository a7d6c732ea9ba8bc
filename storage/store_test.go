package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

func TestAppendReadReopen(t *testing.T) {
	for _, policy := range []FlushPolicy{FlushSync, FlushAsync, FlushNone} {
		t.Run(policy.String(), func(t *testing.T) {
			fs := vfs.NewMem()
			opts := testOptions(fs, "pwrite", policy)
			s := mustOpen(t, opts)
			ctx := context.Background()
			var results []AppendResult
			var msgs []*Message
			for i := 0; i < 200; i++ {
				m := testMessage(fmt.Sprintf("T%d", i%3), int32(i%2), 10+i*7)
				r, err := s.Append(ctx, m)
				if err != nil {
					t.Fatal(err)
				}
				results = append(results, r)
				msgs = append(msgs, m)
			}
			check := func(s *Store) {
				t.Helper()
				waitDispatched(t, s)
				for i, r := range results {
					b, err := s.ReadAt(r.PhysicalOffset, r.Size)
					if err != nil {
						t.Fatal(err)
					}
					var rec record.Record
					if err := record.Decode(b, r.PhysicalOffset, &rec); err != nil {
						t.Fatalf("#%d: %v", i, err)
					}
					if string(rec.Topic) != msgs[i].Topic || !bytes.Equal(rec.Body, msgs[i].Body) || rec.QueueOffset != r.QueueOffset {
						t.Fatalf("#%d: got %s/%d %q", i, rec.Topic, rec.QueueOffset, rec.Body)
					}
				}
				for topic := 0; topic < 3; topic++ {
					for q := int32(0); q < 2; q++ {
						name := fmt.Sprintf("T%d", topic)
						var want []int
						for i, m := range msgs {
							if m.Topic == name && m.QueueID == q {
								want = append(want, i)
							}
						}
						if got := s.MaxQueueOffset(name, q); got != int64(len(want)) {
							t.Fatalf("%s/%d: max offset %d, want %d", name, q, got, len(want))
						}
						g, err := s.GetMessages(name, q, 0, 1000, 0, nil)
						if err != nil || g.Status != Found || len(g.Records) != len(want) {
							t.Fatalf("%s/%d: %v %v %d records, want %d", name, q, err, g.Status, len(g.Records), len(want))
						}
						for j, b := range g.Records {
							r := results[want[j]]
							if record.PhysOffsetOf(b) != r.PhysicalOffset || g.QueueOffsets[j] != int64(j) {
								t.Fatalf("%s/%d #%d: phys %d, want %d", name, q, j, record.PhysOffsetOf(b), r.PhysicalOffset)
							}
						}
					}
				}
			}
			check(s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, opts)
			check(s)
			// Offsets continue.
			r, err := s.Append(ctx, testMessage("T0", 0, 5))
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(34); r.QueueOffset != want {
				t.Fatalf("queue offset after reopen %d, want %d", r.QueueOffset, want)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func testOptions(fs vfs.FS, be string, policy FlushPolicy) Options {
	return Options{
		Dir:                 "/store",
		FS:                  fs,
		Backend:             be,
		SegmentSize:         8 << 10,
		ConsumeQueueEntries: 16,
		IndexReserve:        64 << 10, // MemFS holds allocated bytes in memory
		Flush:               FlushOptions{Policy: policy, Interval: 5 * time.Millisecond, Timeout: 10 * time.Second},
		Retention:           RetentionOptions{MaxAge: -1, DiskRatio: -1, CheckInterval: time.Hour},
		CheckpointInterval:  time.Hour,
		Logger:              quietLogger(),
	}
}

func testMessage(topic string, qid int32, bodyLen int) *Message {
	body := make([]byte, bodyLen)
	for i := range body {
		body[i] = byte('a' + (i+bodyLen)%26)
	}
	return &Message{
		Topic:         topic,
		QueueID:       qid,
		Body:          body,
		Properties:    record.AppendProperty(nil, record.PropertyTags, "tag"+topic),
		TagsCode:      record.TagsCode("tag" + topic),
		BornTimestamp: 1700000000000,
		BornHost:      netip.MustParseAddrPort("127.0.0.1:5555"),
		StoreHost:     netip.MustParseAddrPort("127.0.0.1:10911"),
	}
}

func mustOpen(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitDispatched waits (with a deadline) until every written record is
// indexed.
func waitDispatched(t testing.TB, s *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.dispatchOK.Load() < s.WrittenOffset() {
		if time.Now().After(deadline) {
			t.Fatalf("dispatcher stuck at %d, written %d", s.dispatchOK.Load(), s.WrittenOffset())
		}
		time.Sleep(time.Millisecond)
	}
}

var _ = errors.Is
