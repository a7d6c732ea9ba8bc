package broker

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// TestPipelinedPullsKeepTheirRecords: a pull's records are read into a
// pooled buffer that the connection's writer releases once the answer is
// written. Many pulls in flight on two connections at once, over queues
// that interleave in the CommitLog, each get exactly their own records,
// whole and checked: no buffer is reused before its answer has left.
func TestPipelinedPullsKeepTheirRecords(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	const queues, perQueue, batch = 4, 256, 16
	if r := c.call(createTopicReq("pp", queues)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	body := func(q, i int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("q%d-m%d;", q, i)), 40)
	}
	for i := 0; i < perQueue; i++ {
		for q := 0; q < queues; q++ {
			if r := c.call(sendReq("pp", int32(q), body(q, i), nil)); r.Code != protocol.Success {
				t.Fatalf("send: %s", r)
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for q := int32(0); q < queues; q++ {
		for b.store.MaxQueueOffset("pp", q) < perQueue {
			if time.Now().After(deadline) {
				t.Fatalf("queue %d indexed to %d of %d", q, b.store.MaxQueueOffset("pp", q), perQueue)
			}
			time.Sleep(time.Millisecond)
		}
	}
	conns := []*rawClient{c, dialRaw(t, b.Addr())}
	type pending struct {
		q, off int
		ch     <-chan *protocol.Command
	}
	for round := 0; round < 3; round++ {
		var all []pending
		for off := 0; off < perQueue; off += batch {
			for q := 0; q < queues; q++ {
				cc := conns[(off/batch+q)%len(conns)]
				all = append(all, pending{q, off, cc.start(pullReq("g", "pp", int32(q), int64(off), batch, 0, "*"))})
			}
		}
		for _, p := range all {
			var r *protocol.Command
			select {
			case r = <-p.ch:
			case <-time.After(30 * time.Second):
				t.Fatalf("no answer to the pull of queue %d at %d", p.q, p.off)
			}
			if r.Code != protocol.Success {
				t.Fatalf("pull of queue %d at %d: %s", p.q, p.off, r)
			}
			recs := decodeRecords(t, r.Body)
			if len(recs) != batch {
				t.Fatalf("pull of queue %d at %d: %d records", p.q, p.off, len(recs))
			}
			for i, rec := range recs {
				raw := r.Body[:rec.TotalSize]
				r.Body = r.Body[rec.TotalSize:]
				var checked record.Record
				if err := record.Decode(raw, rec.PhysOffset, &checked); err != nil {
					t.Fatalf("queue %d offset %d: %v", p.q, p.off+i, err)
				}
				if int(rec.QueueID) != p.q || rec.QueueOffset != int64(p.off+i) || !bytes.Equal(rec.Body, body(p.q, p.off+i)) {
					t.Fatalf("pull of queue %d at %d, record %d: queue %d offset %d body %.20q",
						p.q, p.off, i, rec.QueueID, rec.QueueOffset, rec.Body)
				}
			}
		}
	}
	// The queues interleave: their pulls shared the read block cache's
	// blocks, and the broker says so.
	m := b.store.Metrics()
	if m.ReadCacheMisses == 0 || m.ReadCacheHits == 0 {
		t.Fatalf("read cache: %d hits, %d misses; want both", m.ReadCacheHits, m.ReadCacheMisses)
	}
	st := textStats(t, b)
	if st["store_read_cache_hits"] != fmt.Sprint(m.ReadCacheHits) || st["store_read_cache_misses"] != fmt.Sprint(m.ReadCacheMisses) {
		t.Errorf("stats: store_read_cache_hits %q misses %q, want %d and %d",
			st["store_read_cache_hits"], st["store_read_cache_misses"], m.ReadCacheHits, m.ReadCacheMisses)
	}
	if !strings.Contains(scrape(t, b), "samsa_store_read_cache_misses_total ") {
		t.Error("/metrics lacks samsa_store_read_cache_misses_total")
	}
}
