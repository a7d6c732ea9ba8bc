package broker

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/samsamq/samsa/storage"
)

func openCombinerStore(t *testing.T, segment int64) *storage.Store {
	t.Helper()
	st, err := storage.Open(storage.Options{Dir: t.TempDir(), SegmentSize: segment, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func combinerMessage(topic string, q int32, body string) *storage.Message {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	return &storage.Message{Topic: topic, QueueID: q, Body: []byte(body), BornHost: host, StoreHost: host}
}

// Concurrent appends through the combiner each get their own record: the
// physical offsets are distinct, every queue's offsets are dense, and each
// record holds its own body.
func TestAppendCombinerConcurrent(t *testing.T) {
	st := openCombinerStore(t, 4<<20)
	c := newAppendCombiner(st, 4<<20)
	const writers, each, queues = 16, 200, 4
	type got struct {
		q    int32
		body string
		res  storage.AppendResult
	}
	out := make([][]got, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				q := int32((w + i) % queues)
				body := fmt.Sprintf("w%d-i%d", w, i)
				res, err := c.append(combinerMessage("combine", q, body))
				if err != nil {
					t.Error(err)
					return
				}
				out[w] = append(out[w], got{q, body, res})
			}
		}()
	}
	wg.Wait()
	phys := map[int64]bool{}
	perQueue := map[int32][]int64{}
	for _, ws := range out {
		for _, g := range ws {
			if phys[g.res.PhysicalOffset] {
				t.Fatalf("physical offset %d given twice", g.res.PhysicalOffset)
			}
			phys[g.res.PhysicalOffset] = true
			perQueue[g.q] = append(perQueue[g.q], g.res.QueueOffset)
			rec, err := st.ReadAt(g.res.PhysicalOffset, g.res.Size)
			if err != nil {
				t.Fatal(err)
			}
			if !containsBytes(rec, g.body) {
				t.Fatalf("record at %d lacks body %q", g.res.PhysicalOffset, g.body)
			}
		}
	}
	for q, offs := range perQueue {
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("queue %d: offsets %v are not dense", q, offs[:min(len(offs), 10)])
			}
		}
		// The consume queues are filled by the store's dispatcher, after
		// the appends return.
		waitFor(t, func() bool { return st.MaxQueueOffset("combine", q) == int64(len(offs)) },
			fmt.Sprintf("queue %d: max offset %d, as appended", q, len(offs)))
	}
	if len(phys) != writers*each {
		t.Fatalf("%d records, want %d", len(phys), writers*each)
	}
}

// A batch spoilt by one message the store refuses gives that message its
// error and stores the others.
func TestAppendCombinerPerMessageError(t *testing.T) {
	st := openCombinerStore(t, 4<<20)
	c := newAppendCombiner(st, 4<<20)
	good1, bad, good2 := combinerMessage("combine", 0, "a"), combinerMessage("combine", 0, "b"), combinerMessage("combine", 1, "c")
	bad.Body = make([]byte, storage.DefaultMaxMessageSize+1)
	batch := []*combineEntry{{m: good1, done: make(chan struct{}, 1)}, {m: bad, done: make(chan struct{}, 1)}, {m: good2, done: make(chan struct{}, 1)}}
	c.write(batch)
	for i, e := range batch {
		<-e.done
		if (i == 1) != (e.err != nil) {
			t.Fatalf("entry %d: err %v", i, e.err)
		}
	}
	if !errors.Is(batch[1].err, storage.ErrMessageTooLarge) {
		t.Fatalf("bad entry: %v, want ErrMessageTooLarge", batch[1].err)
	}
	if batch[0].res.QueueOffset != 0 || batch[2].res.QueueOffset != 0 || batch[0].res.PhysicalOffset == batch[2].res.PhysicalOffset {
		t.Fatalf("results %+v %+v", batch[0].res, batch[2].res)
	}
}

// The batch bound follows small segments so a combined batch always fits.
func TestAppendCombinerBounds(t *testing.T) {
	st := openCombinerStore(t, 64<<10)
	c := newAppendCombiner(st, 64<<10)
	if c.maxBytes != 16<<10 {
		t.Fatalf("maxBytes %d for a 64 KiB segment", c.maxBytes)
	}
	for range 40 {
		c.mu.queue = append(c.mu.queue, &combineEntry{m: combinerMessage("t", 0, string(make([]byte, 1000)))})
	}
	b := c.takeLocked()
	if len(b) == 0 || len(b) > 16 || len(c.mu.queue) != 40-len(b) {
		t.Fatalf("took %d, %d left", len(b), len(c.mu.queue))
	}
}

func containsBytes(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return true
		}
	}
	return false
}

// offsetMsgIDs joins what offsetMsgID gives, one id a result.
func TestOffsetMsgIDs(t *testing.T) {
	host := netip.MustParseAddrPort("10.1.2.3:10911")
	res := []storage.AppendResult{{PhysicalOffset: 0}, {PhysicalOffset: 1<<40 + 0xABC}, {PhysicalOffset: 1<<63 - 1}}
	for n := 1; n <= len(res); n++ {
		var want []string
		for _, r := range res[:n] {
			want = append(want, offsetMsgID(host, r.PhysicalOffset))
		}
		if got := offsetMsgIDs(host, res[:n]); got != strings.Join(want, ",") {
			t.Fatalf("%d: %s, want %s", n, got, strings.Join(want, ","))
		}
	}
}
