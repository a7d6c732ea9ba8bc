package storage

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// fakeClock is an injected clock tests move by hand.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

func newClock() *fakeClock {
	c := &fakeClock{}
	c.ms.Store(1_700_000_000_000)
	return c
}

func appendN(t testing.TB, s *Store, topic string, qid int32, n, size int) []AppendResult {
	t.Helper()
	var out []AppendResult
	for i := 0; i < n; i++ {
		r, err := s.Append(context.Background(), testMessage(topic, qid, size))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestGetMessagesStatuses(t *testing.T) {
	s := mustOpen(t, testOptions(vfs.NewMem(), "pwrite", FlushAsync))
	defer s.Close()
	get := func(off int64, max, bytes int, filter func(int64) bool) GetResult {
		t.Helper()
		g, err := s.GetMessages("T", 0, off, max, bytes, filter)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if g := get(5, 10, 0, nil); g.Status != NoMessageInQueue || g.NextOffset != 0 {
		t.Fatalf("empty queue: %v next %d", g.Status, g.NextOffset)
	}
	res := appendN(t, s, "T", 0, 10, 100)
	waitDispatched(t, s)
	if g := get(10, 10, 0, nil); g.Status != OffsetOverflowOne || g.NextOffset != 10 {
		t.Fatalf("at max: %v next %d", g.Status, g.NextOffset)
	}
	if g := get(12, 10, 0, nil); g.Status != OffsetOverflowBadly || g.NextOffset != 10 {
		t.Fatalf("past max: %v next %d", g.Status, g.NextOffset)
	}
	g := get(3, 4, 0, nil)
	if g.Status != Found || len(g.Records) != 4 || g.NextOffset != 7 || g.MinOffset != 0 || g.MaxOffset != 10 {
		t.Fatalf("found: %v %d records next %d", g.Status, len(g.Records), g.NextOffset)
	}
	for i, b := range g.Records {
		if record.PhysOffsetOf(b) != res[3+i].PhysicalOffset || g.QueueOffsets[i] != int64(3+i) {
			t.Fatalf("record %d at %d", i, record.PhysOffsetOf(b))
		}
	}
	// maxBytes: the first record always comes, then only what fits.
	if g := get(0, 10, 1, nil); len(g.Records) != 1 || g.NextOffset != 1 {
		t.Fatalf("tiny maxBytes: %d records next %d", len(g.Records), g.NextOffset)
	}
	size := int(res[0].Size)
	if g := get(0, 10, 3*size+1, nil); len(g.Records) != 3 || g.Bytes != 3*size {
		t.Fatalf("maxBytes 3 records: %d records, %d bytes", len(g.Records), g.Bytes)
	}
	// A filter that matches nothing scans on and says so.
	if g := get(0, 5, 0, func(int64) bool { return false }); g.Status != NoMatchedMessage || g.NextOffset != 10 {
		t.Fatalf("no match: %v next %d", g.Status, g.NextOffset)
	}
	tags := record.TagsCode("tagT")
	if g := get(0, 5, 0, func(c int64) bool { return c == tags }); g.Status != Found || len(g.Records) != 5 {
		t.Fatalf("matching filter: %v %d", g.Status, len(g.Records))
	}
	// ReadAt out of range.
	if _, err := s.ReadAt(s.WrittenOffset(), 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadAt past the end: %v", err)
	}
}

func TestRetentionByAgeAndDisk(t *testing.T) {
	clock := newClock()
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushSync)
	opts.Clock = clock.now
	opts.SegmentSize = 4 << 10
	opts.ConsumeQueueEntries = 4
	opts.Retention = RetentionOptions{MaxAge: time.Hour, DiskRatio: -1, CheckInterval: time.Hour}
	s := mustOpen(t, opts)
	old := appendN(t, s, "T", 0, 20, 600) // several segments
	clock.advance(30 * time.Minute)
	mid := appendN(t, s, "T", 0, 10, 600)
	waitDispatched(t, s)
	if n, err := s.ApplyRetention(); err != nil || n != 0 {
		t.Fatalf("nothing is old yet: %d %v", n, err)
	}
	clock.advance(45 * time.Minute) // old: 75 min, mid: 45 min
	n, err := s.ApplyRetention()
	if err != nil || n == 0 {
		t.Fatalf("retention deleted %d (%v)", n, err)
	}
	minOff := s.CommitLogMinOffset()
	if minOff <= old[0].PhysicalOffset || minOff > mid[0].PhysicalOffset {
		t.Fatalf("min offset %d: want past the old records, not past %d", minOff, mid[0].PhysicalOffset)
	}
	if _, err := s.ReadAt(mid[0].PhysicalOffset, mid[0].Size); err != nil {
		t.Fatalf("a young record went: %v", err)
	}
	if _, err := s.ReadAt(old[0].PhysicalOffset, old[0].Size); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an old record is still there: %v", err)
	}
	qmin := s.MinQueueOffset("T", 0)
	if qmin == 0 || qmin > 20 {
		t.Fatalf("queue min offset %d", qmin)
	}
	if g, _ := s.GetMessages("T", 0, 0, 10, 0, nil); g.Status != OffsetTooSmall || g.NextOffset != qmin {
		t.Fatalf("read below the min: %v next %d (min %d)", g.Status, g.NextOffset, qmin)
	}
	if g, _ := s.GetMessages("T", 0, qmin, 100, 0, nil); g.Status != Found {
		t.Fatalf("read at the min: %v", g.Status)
	}
	m := s.Metrics()
	if m.SegmentsDeleted != int64(n) || m.MinOffset != minOff {
		t.Fatalf("metrics: %+v", m)
	}
	// Never the active segment, however old.
	clock.advance(24 * time.Hour)
	s.ApplyRetention()
	if m := s.Metrics(); m.Segments != 1 {
		t.Fatalf("%d segments left, want the active one", m.Segments)
	}
	// Offsets survive a restart.
	s.Close()
	s = mustOpen(t, opts)
	defer s.Close()
	if r, err := s.Append(context.Background(), testMessage("T", 0, 10)); err != nil || r.QueueOffset != 30 {
		t.Fatalf("append after restart: %+v %v", r, err)
	}

	// Disk pressure: a small file system, delete oldest first until below.
	mem2 := vfs.NewMem()
	o2 := opts
	o2.FS, o2.Retention = mem2, RetentionOptions{MaxAge: -1, DiskRatio: 0.5, CheckInterval: time.Hour}
	o2.Preallocate = true
	s2 := mustOpen(t, o2)
	defer s2.Close()
	appendN(t, s2, "T", 0, 60, 600)
	waitDispatched(t, s2)
	mem2.SetCapacity(mem2.Used() + 4<<10) // nearly full
	if n, err := s2.ApplyRetention(); err != nil || n == 0 {
		t.Fatalf("disk retention deleted %d (%v)", n, err)
	}
	if total, free, _ := mem2.DiskUsage("/"); float64(total-free)/float64(total) > 0.5 && s2.Metrics().Segments > 1 {
		t.Fatalf("still %d of %d used with %d segments", total-free, total, s2.Metrics().Segments)
	}
}

func TestOffsetByTime(t *testing.T) {
	clock := newClock()
	opts := testOptions(vfs.NewMem(), "pwrite", FlushAsync)
	opts.Clock = clock.now
	s := mustOpen(t, opts)
	defer s.Close()
	t0 := clock.now().UnixMilli()
	var times []int64
	for i := 0; i < 10; i++ {
		r := appendN(t, s, "T", 1, 1, 50)[0]
		times = append(times, r.StoreTimestamp)
		clock.advance(time.Second)
	}
	waitDispatched(t, s)
	if times[0] != t0 || times[9] != t0+9000 {
		t.Fatalf("store times %v", times)
	}
	for _, c := range []struct {
		at   int64
		want int64
	}{{t0 - 1, 0}, {t0, 0}, {t0 + 1, 1}, {t0 + 4500, 5}, {t0 + 9000, 9}, {t0 + 9001, 10}} {
		if got := s.OffsetByTime("T", 1, c.at); got != c.want {
			t.Errorf("OffsetByTime(%d) = %d, want %d", c.at-t0, got, c.want)
		}
	}
	if et, err := s.EarliestStoreTime("T", 1); err != nil || et != t0 {
		t.Fatalf("EarliestStoreTime = %d, %v", et, err)
	}
	// A clock that goes back does not make store times go back.
	clock.advance(-time.Hour)
	if r := appendN(t, s, "T", 1, 1, 50)[0]; r.StoreTimestamp != times[9] {
		t.Fatalf("store time went back: %d after %d", r.StoreTimestamp, times[9])
	}
}

func TestOnDispatchAndTransactions(t *testing.T) {
	s := mustOpen(t, testOptions(vfs.NewMem(), "pwrite", FlushSync))
	defer s.Close()
	var mu sync.Mutex
	var seen []int64
	done := make(chan struct{}, 100)
	s.OnDispatch(func(topic string, qid int32, off int64) {
		mu.Lock()
		seen = append(seen, off)
		mu.Unlock()
		done <- struct{}{}
	})
	appendN(t, s, "T", 2, 3, 10)
	prep := testMessage("T", 2, 10)
	prep.SysFlag = record.TransactionPrepared
	r, err := s.Append(context.Background(), prep)
	if err != nil || r.QueueOffset != 0 {
		t.Fatalf("prepared message: %+v %v", r, err)
	}
	appendN(t, s, "T", 2, 1, 10)
	for i := 0; i < 4; i++ {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("callbacks missing")
		}
	}
	waitDispatched(t, s)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 4 || seen[3] != 3 {
		t.Fatalf("callbacks saw %v", seen)
	}
	if s.MaxQueueOffset("T", 2) != 4 {
		t.Fatalf("max offset %d: the prepared record must not be indexed", s.MaxQueueOffset("T", 2))
	}
	if b, err := s.ReadAt(r.PhysicalOffset, r.Size); err != nil || record.SysFlagOf(b)&record.TransactionPrepared == 0 {
		t.Fatalf("prepared record: %v", err)
	}
}

func TestAppendBatchAndLimits(t *testing.T) {
	opts := testOptions(vfs.NewMem(), "pwrite", FlushSync)
	opts.SegmentSize = 8 << 10
	opts.MaxMessageSize = 2000
	s := mustOpen(t, opts)
	ctx := context.Background()
	var batch []*Message
	for i := 0; i < 5; i++ {
		batch = append(batch, testMessage("B", int32(i%2), 500))
	}
	for round := 0; round < 10; round++ { // rolls several times, never splitting a batch
		res, err := s.AppendBatch(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(res); i++ {
			if res[i].PhysicalOffset != res[i-1].PhysicalOffset+int64(res[i-1].Size) {
				t.Fatalf("batch not contiguous: %+v", res)
			}
		}
		if res[0].PhysicalOffset/opts.SegmentSize != res[4].PhysicalOffset/opts.SegmentSize {
			t.Fatalf("batch split across segments: %+v", res)
		}
		if res[4].QueueOffset != int64(3*round+2) || res[3].QueueOffset != int64(2*round+1) {
			t.Fatalf("round %d queue offsets %+v", round, res)
		}
	}
	big := make([]*Message, 20)
	for i := range big {
		big[i] = testMessage("B", 0, 500)
	}
	if _, err := s.AppendBatch(ctx, big); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("batch larger than a segment: %v", err)
	}
	if _, err := s.Append(ctx, testMessage("B", 0, 2001)); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("body over MaxMessageSize: %v", err)
	}
	if _, err := s.Append(ctx, testMessage(strings.Repeat("x", 128), 0, 1)); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("long topic: %v", err)
	}
	if _, err := s.Append(ctx, testMessage("B", -1, 1)); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("negative queue: %v", err)
	}
	if res, err := s.AppendBatch(ctx, nil); res != nil || err != nil {
		t.Fatalf("empty batch: %v %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, testMessage("B", 0, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestFlushTimeoutContextAndMaxPending(t *testing.T) {
	g := &gateFS{FS: vfs.NewMem(), gate: make(chan struct{})}
	opts := testOptions(g, "pwrite", FlushSync)
	opts.Flush.Timeout = 50 * time.Millisecond
	opts.Flush.MaxPending = 2
	s := mustOpen(t, opts)
	holdGate(t, g, s) // a failed check must not leave Close waiting on the gate
	ctx := context.Background()
	if _, err := s.Append(ctx, testMessage("T", 0, 10)); !errors.Is(err, ErrFlushTimeout) {
		t.Fatalf("held fsync: %v, want ErrFlushTimeout", err)
	}
	// A context that ends first gives up the wait. (On a busy machine the
	// 50 ms flush timeout may be seen first: the waiter gives up either way.)
	gaveUp := func(err error) bool {
		return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrFlushTimeout)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	if _, err := s.Append(cctx, testMessage("T", 0, 10)); !gaveUp(err) {
		t.Fatalf("context: %v", err)
	}
	cancel()
	// Both abandoned waiters still hold their places: the queue is full.
	cctx, cancel = context.WithTimeout(ctx, time.Millisecond)
	if _, err := s.Append(cctx, testMessage("T", 0, 10)); !gaveUp(err) || s.Metrics().PendingFull == 0 {
		t.Fatalf("full queue: %v (pending full %d)", err, s.Metrics().PendingFull)
	}
	cancel()
	g.release()
	// The records written meanwhile become durable; new appends go through.
	if _, err := s.Append(ctx, testMessage("T", 0, 10)); err != nil {
		t.Fatal(err)
	}
	if m := s.Metrics(); m.WaitAbandoned != 2 || s.DurableOffset() != s.WrittenOffset() {
		t.Fatalf("abandoned %d, durable %d written %d", m.WaitAbandoned, s.DurableOffset(), s.WrittenOffset())
	}
}

func TestAsyncFlushPolicy(t *testing.T) {
	opts := testOptions(vfs.NewMem(), "pwrite", FlushAsync)
	opts.Flush.Interval = time.Millisecond
	opts.Flush.DirtyPages = 1 << 20 // never by pages
	opts.Flush.FullInterval = 20 * time.Millisecond
	s := mustOpen(t, opts)
	defer s.Close()
	appendN(t, s, "T", 0, 5, 10)
	if s.DurableOffset() == s.WrittenOffset() {
		t.Fatal("async append was durable at once")
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.DurableOffset() < s.WrittenOffset() {
		if time.Now().After(deadline) {
			t.Fatal("the full flush never came")
		}
		time.Sleep(time.Millisecond)
	}
	// By pages: 1 page threshold, a bigger write flushes at the next tick.
	opts.Dir = "/store2"
	opts.Flush.DirtyPages, opts.Flush.FullInterval = 1, time.Hour
	s2 := mustOpen(t, opts)
	defer s2.Close()
	appendN(t, s2, "T", 0, 2, 5000)
	deadline = time.Now().Add(10 * time.Second)
	for s2.DurableOffset() < s2.WrittenOffset() {
		if time.Now().After(deadline) {
			t.Fatal("the dirty-pages flush never came")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAbortMarkerAndCleanRestart(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushNone)
	s := mustOpen(t, opts)
	if ok, _ := exists(mem, "/store/abort"); !ok {
		t.Fatal("no abort marker while open")
	}
	appendN(t, s, "T", 0, 50, 300)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := exists(mem, "/store/abort"); ok {
		t.Fatal("abort marker left after a clean Close")
	}
	// Close flushed everything even with FlushNone: a power loss now
	// loses nothing.
	opts.FS = mem.CrashClone(nil)
	s = mustOpen(t, opts)
	defer s.Close()
	if s.MaxQueueOffset("T", 0) != 50 {
		t.Fatalf("after a clean close and a power loss: %d offsets", s.MaxQueueOffset("T", 0))
	}
}
