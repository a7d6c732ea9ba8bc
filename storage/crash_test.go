package storage

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/consumequeue"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

var (
	crashSeed   = flag.Int64("seed", 0, "crash test: replay this seed (0: from the clock)")
	crashPoints = flag.Int("crashes", 2000, "crash test: crash points in all (split over the backends, at least 500 each)")
	long        = flag.Bool("long", false, "run the long variants (more crash points, soak)")
)

// testBackend returns the backend a test uses for name: the registered
// one, except that odirect and uring get append buffers sized for test
// segments (their 4 MiB default is costly under the race detector).
func testBackend(t testing.TB, name string) backend.Backend {
	return testBackendRing(t, name, 32<<10)
}

// testBackendRing is testBackend with odirect's and uring's append ring
// (their stage's buffer) of ring bytes.
func testBackendRing(t testing.TB, name string, ring int) backend.Backend {
	small := backend.ODirectOptions{BufferSize: ring, StagedRingSize: ring, StageSize: 8 << 10}
	var b backend.Backend
	var err error
	switch name {
	case "odirect":
		b, err = backend.NewODirect(small)
	case "uring":
		b, err = backend.NewUring(backend.UringOptions{ODirectOptions: small})
	default:
		b, err = backend.Get(name)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// memBackends returns the registered backends that work on a MemFS.
func memBackends(t *testing.T) []string {
	var names []string
	for _, n := range backend.Names() {
		b, _ := backend.Get(n)
		fs := vfs.NewMem()
		fs.MkdirAll("/probe")
		sg, err := b.Create(backend.Config{FS: fs, Path: "/probe/seg", Capacity: 64 << 10})
		if err != nil {
			if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, vfs.ErrDirectUnsupported) {
				t.Logf("backend %s does not run on MemFS: %v", n, err)
				continue
			}
			t.Fatalf("backend %s: probe: %v", n, err)
		}
		sg.Close()
		names = append(names, n)
	}
	return names
}

// TestCrash: seeded random appends (single and batched, several topics and
// queues, concurrent appenders) on the sync policy (a fifth of the stores
// async, where only the structure is checked), power loss at random
// points (between any two file operations, during recovery, or at a moment
// of the test's choosing), reopen, check:
//
//   - the store opens;
//   - every acknowledged append is there, byte for byte, with its queue
//     offset; everything seen after an earlier successful Open too;
//   - every record in the log validates and is one that was written (so no
//     half record, no stale or foreign bytes), in order;
//   - every ConsumeQueue indexes exactly its queue's records, offsets
//     0..n-1 in log order.
//
// On failure it prints the seed; -seed replays the same operations and
// crash draws (the interleaving of appenders, flusher and checkpoints is
// the scheduler's, so a replay may take another path).
func TestCrash(t *testing.T) {
	backends := memBackends(t)
	points := max(500, (*crashPoints+len(backends)-1)/len(backends))
	if *long {
		points *= 10
	}
	for _, be := range backends {
		t.Run("backend="+be, func(t *testing.T) {
			seed := *crashSeed
			if seed == 0 {
				seed = time.Now().UnixNano()
			}
			defer func() {
				if t.Failed() {
					t.Logf("replay with: go test ./storage -run 'TestCrash/backend=%s' -seed %d", be, seed)
				}
			}()
			runCrash(t, be, seed, points)
		})
	}
}

// expected is one record the test wrote, as it must read back.
type expected struct {
	phys  int64
	bytes []byte
	topic string
	qid   int32
	qoff  int64
}

// crashModel is what the test knows about one store's lineage.
type crashModel struct {
	durable map[int64]expected // must be present: acknowledged or seen after a good Open
	written map[int64]expected // written this cycle, maybe not durable

	// ghost, when set, says whether b at phys is the record of an append
	// that returned no result around the crash (a dead process's: it may
	// be there or not, like any unacknowledged append) and what it is.
	ghost func(phys int64, b []byte) (expected, bool)
	// explain, when set, says what the lineage knows of a record the
	// test did not write at its offset, for the failure message.
	explain func(phys int64, b []byte) string
}

func runCrash(t *testing.T, be string, seed int64, points int) {
	rng := rand.New(rand.NewSource(seed))
	crashes, lineages, opensCrashed := 0, 0, 0
	for crashes < points {
		lineages++
		segSize := int64(4<<10) << rng.Intn(3)
		cqEntries := 4 + rng.Intn(8) // fixed for a store's life, as SegmentSize
		policy := FlushSync
		if rng.Intn(5) == 0 {
			policy = FlushAsync // acknowledgements promise nothing: structure only
		}
		retain := rng.Intn(4) == 0 // appenders call ApplyRetention: every old segment goes
		mem := vfs.NewMem()
		model := &crashModel{durable: map[int64]expected{}}
		cycles := 4 + rng.Intn(12)
		for c := 0; c < cycles && crashes < points; c++ {
			cfs := newCrashFS(mem, rng.Int63())
			opts := crashOptions(t, cfs, be, segSize, cqEntries, policy, rng)
			if retain {
				opts.Retention.MaxAge = time.Nanosecond
			}
			// Sometimes lose power during Open (recovery) itself.
			if rng.Intn(8) == 0 {
				cfs.arm(1 + rng.Int63n(60))
			}
			s, err := Open(opts)
			cfs.disarm()
			if cfs.dead.Load() {
				if s != nil {
					s.Close()
				}
				crashes++
				opensCrashed++
				mem = cfs.clone
				continue
			}
			if err != nil {
				t.Fatalf("seed %d lineage %d cycle %d: Open: %v", seed, lineages, c, err)
			}
			model.verify(t, s, fmt.Sprintf("seed %d lineage %d cycle %d", seed, lineages, c))
			model.written = map[int64]expected{}
			crashCycle(t, s, cfs, model, be, rng)
			s.Close() // against a dead machine: errors expected
			crashes++
			mem = cfs.clone
		}
	}
	t.Logf("seed %d: %d crash points (%d during Open) over %d lineages", seed, crashes, opensCrashed, lineages)
}

func crashOptions(t testing.TB, fs vfs.FS, be string, segSize int64, cqEntries int, policy FlushPolicy, rng *rand.Rand) Options {
	ring := 32 << 10
	if rng.Intn(2) == 0 {
		ring = 8 << 10 // odirect, uring: a ring smaller than most segments wraps
	}
	o := Options{
		Dir:                 "/data/store",
		FS:                  fs,
		SegmentBackend:      testBackendRing(t, be, ring),
		SegmentSize:         segSize,
		Preallocate:         rng.Intn(2) == 0,
		IndexReserve:        16 << 10, // MemFS holds allocated bytes in memory
		ConsumeQueueEntries: cqEntries,
		CheckpointInterval:  time.Duration(1+rng.Intn(5)) * time.Millisecond,
		Flush: FlushOptions{Policy: policy, Timeout: time.Minute, MaxPending: 64,
			Interval: time.Duration(1+rng.Intn(3)) * time.Millisecond, DirtyPages: rng.Intn(3) - 1},
		Retention: RetentionOptions{MaxAge: -1, DiskRatio: -1, CheckInterval: time.Hour},
		Logger:    quietLogger(),
	}
	if rng.Intn(4) == 0 {
		o.Flush.MinInterval = time.Duration(rng.Intn(200)) * time.Microsecond
		o.Flush.MaxBatchBytes = int64(rng.Intn(8 << 10))
	}
	return o
}

// crashCycle runs appenders until the machine dies.
func crashCycle(t *testing.T, s *Store, cfs *crashFS, model *crashModel, be string, rng *rand.Rand) {
	writers := 1 + rng.Intn(4)
	target := int64(rng.Intn(40))
	// Appends that copy into a mapping (mmap, a stage) are no file
	// operation: crash under the append lock, never at an operation count
	// (which could take the image while a copy is in flight).
	byOps := !s.ho.inAppend && rng.Intn(2) == 0
	if byOps {
		cfs.arm(1 + rng.Int63n(200))
	}
	var acked atomic.Int64
	reached := make(chan struct{}) // closed once acked reaches target
	var reachedOnce sync.Once
	if target == 0 {
		reachedOnce.Do(func() { close(reached) })
	}
	var mu sync.Mutex // guards model.written and model.durable
	var wg sync.WaitGroup
	writersDone := make(chan struct{})
	ctx := context.Background()
	for w := 0; w < writers; w++ {
		wrng := rand.New(rand.NewSource(rng.Int63()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 400 && !cfs.dead.Load(); i++ {
				if wrng.Intn(40) == 0 {
					s.Checkpoint()
				}
				if s.opts.Retention.MaxAge == time.Nanosecond && wrng.Intn(30) == 0 {
					s.ApplyRetention()
				}
				n := 1
				if wrng.Intn(4) == 0 {
					n = 1 + wrng.Intn(5)
				}
				msgs := make([]*Message, n)
				for j := range msgs {
					msgs[j] = crashMessage(wrng, s.segSize, n)
				}
				var res []AppendResult
				var err error
				if n == 1 && wrng.Intn(2) == 0 {
					var r AppendResult
					r, err = s.Append(ctx, msgs[0])
					if r.Size > 0 {
						res = []AppendResult{r}
					}
				} else {
					res, err = s.AppendBatch(ctx, msgs)
				}
				mu.Lock()
				for j, r := range res {
					e := expectedOf(msgs[j], r)
					model.written[r.PhysicalOffset] = e
					if err == nil && s.policy == FlushSync {
						model.durable[r.PhysicalOffset] = e
					}
				}
				mu.Unlock()
				if err == nil {
					if acked.Add(int64(len(res))) >= target {
						reachedOnce.Do(func() { close(reached) })
					}
				} else if !errors.Is(err, ErrBroken) && !errors.Is(err, ErrClosed) && !cfs.dead.Load() {
					t.Errorf("append on a live machine: %v", err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(writersDone) }()
	if !byOps {
		select {
		case <-reached:
		case <-writersDone:
		case <-time.After(10 * time.Second):
			t.Errorf("no progress: %d of %d appends acknowledged", acked.Load(), target)
		}
		s.mu.Lock() // no append (no copy into a mapping) in flight
		cfs.crash()
		s.mu.Unlock()
	}
	<-writersDone
	if !cfs.dead.Load() { // the armed operation never came
		s.mu.Lock()
		cfs.crash()
		s.mu.Unlock()
	}
	cfs.disarm()
}

var crashTopics = []string{"orders", "pay", "%RETRY%g1", "a"}

func crashMessage(rng *rand.Rand, segSize int64, batch int) *Message {
	m := testMessage(crashTopics[rng.Intn(len(crashTopics))], int32(rng.Intn(3)), 0)
	size := rng.Intn(int(segSize) / 6)
	if batch == 1 && rng.Intn(10) == 0 {
		size = rng.Intn(int(segSize) - 600) // nearly a whole segment
	}
	m.Body = make([]byte, size)
	rng.Read(m.Body)
	m.BornTimestamp = rng.Int63()
	if rng.Intn(20) == 0 {
		m.SysFlag = record.TransactionPrepared // no queue offset, no index
	}
	return m
}

// expectedOf is the record m must read back as, given where it went.
func expectedOf(m *Message, r AppendResult) expected {
	f := m.fields()
	f.QueueOffset, f.PhysOffset, f.StoreTimestamp = r.QueueOffset, r.PhysicalOffset, r.StoreTimestamp
	b := make([]byte, r.Size)
	if _, err := record.Encode(b, &f); err != nil {
		panic(err)
	}
	return expected{phys: r.PhysicalOffset, bytes: b, topic: m.Topic, qid: m.QueueID, qoff: r.QueueOffset}
}

// verify checks the reopened store against the model, then records what
// it holds as durable (Open fsyncs the recovered log before it returns).
func (m *crashModel) verify(t *testing.T, s *Store, where string) {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.FailNow()
		}
	}()
	log := walkLog(t, s, where)
	minOff := s.CommitLogMinOffset()
	for phys := range m.durable {
		if phys < minOff { // deleted by retention
			delete(m.durable, phys)
		}
	}
	byPhys := map[int64][]byte{}
	for _, r := range log {
		byPhys[r.phys] = r.b
	}
	for phys, e := range m.durable {
		got, ok := byPhys[phys]
		if !ok {
			t.Fatalf("%s: acknowledged record at %d (%s/%d offset %d) lost; log ends at %d",
				where, phys, e.topic, e.qid, e.qoff, s.WrittenOffset())
		}
		if !bytes.Equal(got, e.bytes) {
			t.Fatalf("%s: record at %d differs from what was acknowledged", where, phys)
		}
	}
	// Every record is one the test wrote (this cycle or an earlier one).
	queues := map[queueKey][]expected{}
	ghosts := map[int64]expected{}   // records of ghost appends, by offset
	firstOff := map[queueKey]int64{} // a queue's first offset still in the log (retention)
	for _, r := range log {
		e, ok := m.durable[r.phys]
		if !ok {
			e, ok = m.written[r.phys]
		}
		if (!ok || !bytes.Equal(e.bytes, r.b)) && m.ghost != nil {
			if e, ok = m.ghost(r.phys, r.b); ok {
				ghosts[r.phys] = e
			}
		}
		if !ok || !bytes.Equal(e.bytes, r.b) {
			why := ""
			if m.explain != nil {
				why = "; " + m.explain(r.phys, r.b)
			}
			t.Fatalf("%s: record at %d (%d bytes, queue offset %d) was never written by the test there (an expected record at that offset: %v)%s",
				where, r.phys, len(r.b), record.QueueOffsetOf(r.b), ok, why)
		}
		if indexed(record.SysFlagOf(r.b)) {
			k := queueKey{e.topic, e.qid}
			if _, ok := firstOff[k]; !ok {
				firstOff[k] = 0
				if minOff > 0 {
					firstOff[k] = e.qoff
				}
			}
			if want := firstOff[k] + int64(len(queues[k])); e.qoff != want {
				t.Fatalf("%s: %s/%d: record at %d has queue offset %d, want %d", where, e.topic, e.qid, r.phys, e.qoff, want)
			}
			queues[k] = append(queues[k], e)
		}
	}
	// The ConsumeQueues index exactly that.
	s.cq.Each(func(topic string, qid int32, q *consumequeue.Queue) {
		k := queueKey{topic, qid}
		want, base := queues[k], firstOff[k]
		if len(want) == 0 && minOff > 0 {
			return // every record of the queue may be gone
		}
		if q.MaxOffset() != base+int64(len(want)) || q.MinOffset() > base {
			t.Errorf("%s: queue %s/%d has offsets [%d, %d), the log %d records from %d",
				where, topic, qid, q.MinOffset(), q.MaxOffset(), len(want), base)
			return
		}
		es, err := q.Entries(base, len(want), nil)
		if err != nil {
			t.Errorf("%s: queue %s/%d: %v", where, topic, qid, err)
			return
		}
		for i, en := range es {
			e := want[i]
			if en.PhysOffset != e.phys || int(en.Size) != len(e.bytes) {
				t.Errorf("%s: queue %s/%d offset %d: entry %v, record at %d size %d", where, topic, qid, i, en, e.phys, len(e.bytes))
				return
			}
		}
	})
	for k, want := range queues {
		if got := s.MaxQueueOffset(k.topic, k.qid); got != firstOff[k]+int64(len(want)) {
			t.Errorf("%s: queue %s/%d: max offset %d, log has %d from %d", where, k.topic, k.qid, got, len(want), firstOff[k])
		}
	}
	for _, r := range log {
		if _, ok := m.durable[r.phys]; !ok {
			e, ok := m.written[r.phys]
			if g, isGhost := ghosts[r.phys]; isGhost && (!ok || !bytes.Equal(e.bytes, r.b)) {
				e = g
			}
			m.durable[r.phys] = e
		}
	}
}

type logRecord struct {
	phys int64
	b    []byte
}

// walkLog reads every record of the store's log, checking each validates
// and that they tile the log up to the written offset.
func walkLog(t *testing.T, s *Store, where string) []logRecord {
	t.Helper()
	var out []logRecord
	segs := s.segmentsSnapshot()
	end := s.WrittenOffset()
	for i, g := range segs {
		n := g.seg.Written()
		data := make([]byte, n) // one read per segment: cheap on every backend
		if _, err := g.seg.ReadAt(data, 0); err != nil {
			t.Fatalf("%s: read %s: %v", where, g.path, err)
		}
		pos := int64(0)
		for g.base+pos < end {
			size, magic, err := record.Header(data[min(pos, n):])
			if err != nil {
				t.Fatalf("%s: header at %d: %v", where, g.base+pos, err)
			}
			if magic == record.MagicBlank {
				if int64(size) != s.segSize-pos || i == len(segs)-1 && g.end(s.segSize) != end {
					t.Fatalf("%s: blank at %d of %d bytes, %d left; log end %d", where, g.base+pos, size, s.segSize-pos, end)
				}
				break
			}
			if size <= 0 || g.base+pos+int64(size) > end || pos+int64(size) > n {
				t.Fatalf("%s: record at %d of %d bytes passes the written offset %d", where, g.base+pos, size, end)
			}
			b := data[pos : pos+int64(size)]
			if _, err := record.Validate(b, g.base+pos); err != nil {
				t.Fatalf("%s: record at %d: %v", where, g.base+pos, err)
			}
			out = append(out, logRecord{g.base + pos, b})
			pos += int64(size)
		}
		if i < len(segs)-1 && !g.sealed.Load() {
			t.Fatalf("%s: segment %s before the last is not sealed", where, g.path)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].phys < out[j].phys })
	return out
}
