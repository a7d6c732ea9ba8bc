package storage

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// cutPoint returns the physical offset of a record in the middle of
// segment k of s's log (not its first).
func cutPoint(t *testing.T, s *Store, k int64) int64 {
	t.Helper()
	var in []int64
	for _, r := range walkLog(t, s, "cut point") {
		if r.phys/s.segSize == k && r.phys%s.segSize != 0 {
			in = append(in, r.phys)
		}
	}
	if len(in) == 0 {
		t.Fatalf("segment %d holds no record past its first", k)
	}
	return in[len(in)/2]
}

// checkCut checks s ends at off with everything at rest there.
func checkCut(t *testing.T, s *Store, off int64, where string) {
	t.Helper()
	if w, h, d := s.WrittenOffset(), s.HandedOffset(), s.DurableOffset(); w != off || h != off || d != off {
		t.Fatalf("%s: written %d, handed %d, durable %d; want %d", where, w, h, d, off)
	}
	waitDispatched(t, s)
	names, err := s.fs.List(s.clDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if base, ok := parseSegmentName(n); ok && base > off {
			t.Fatalf("%s: segment %s lies past the cut %d", where, n, off)
		}
	}
}

// TestTruncateTo: a slave cut mid-log in an earlier segment, then at a
// segment base, follows a new master (a copy of the cut slave that took
// appends of its own) from the cut: its log, files, queues and counters
// are the new master's, and stay so across a restart. Concurrent readers
// only ever get records that validate at their place. Offsets that are not
// record boundaries or lie outside the log are refused, changing nothing.
func TestTruncateTo(t *testing.T) {
	for _, be := range memBackends(t) {
		for _, policy := range []FlushPolicy{FlushSync, FlushAsync, FlushNone} {
			t.Run(fmt.Sprintf("backend=%s/flush=%s", be, policy), func(t *testing.T) {
				testTruncateTo(t, be, policy)
			})
		}
	}
}

func testTruncateTo(t *testing.T, be string, policy FlushPolicy) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	m := mustOpen(t, replOptions(t, vfs.NewMem(), "/master", be, policy))
	defer m.Close()
	so := replOptions(t, vfs.NewMem(), "/slave", be, policy)
	s := mustOpen(t, so)
	appendRandom(t, m, rng, 120)
	newReplicator(m, s, 64<<10).catchUp(t)
	if s.WrittenOffset() < 4*s.segSize {
		t.Fatalf("%d bytes: fewer than 4 segments", s.WrittenOffset())
	}

	// Refused, nothing changed.
	off := cutPoint(t, s, 1)
	w := s.WrittenOffset()
	for _, bad := range []int64{off + 1, off - 3, w + 1, -1} {
		if err := s.TruncateTo(bad); err == nil {
			t.Fatalf("TruncateTo(%d) succeeded", bad)
		}
		if s.WrittenOffset() != w {
			t.Fatalf("a refused TruncateTo(%d) moved the log's end to %d", bad, s.WrittenOffset())
		}
	}
	if err := s.TruncateTo(w); err != nil {
		t.Fatalf("TruncateTo(WrittenOffset): %v", err)
	}

	// Readers run through the cuts.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, s.MaxRecordSize())
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			topic, q := crashTopics[i%len(crashTopics)], int32(i%3)
			res, err := s.GetMessages(topic, q, 0, 64, 0, nil)
			if err == nil {
				for j, b := range res.Records {
					var r record.Record
					if err := record.Decode(b, record.PhysOffsetOf(b), &r); err != nil || string(r.Topic) != topic ||
						r.QueueID != q || r.QueueOffset != res.QueueOffsets[j] {
						t.Errorf("reader got a wrong record for %s/%d offset %d: %v", topic, q, res.QueueOffsets[j], err)
						return
					}
				}
			}
			if n, _, err := s.ReadLog(0, buf); err == nil && n > 0 {
				if _, err := record.Validate(buf, 0); err != nil {
					t.Errorf("ReadLog(0) gave a bad record: %v", err)
					return
				}
			}
		}
	}()

	// Mid-log, two segments back.
	if err := s.TruncateTo(off); err != nil {
		t.Fatal(err)
	}
	checkCut(t, s, off, "after TruncateTo mid-log")
	// The new master: a copy of the cut slave, with appends of its own.
	m2 := mustOpen(t, replOptions(t, vfs.NewMem(), "/master2", be, policy))
	defer m2.Close()
	newReplicator(s, m2, 64<<10).catchUp(t)
	sameLog(t, m2, s, "the new master's copy")
	appendRandom(t, m2, rng, 50)
	newReplicator(m2, s, 3<<10).catchUp(t)
	sameLog(t, m2, s, "after following the new master")

	// At a segment base.
	base := s.segSize * (s.WrittenOffset()/s.segSize - 1)
	if err := s.TruncateTo(base); err != nil {
		t.Fatal(err)
	}
	checkCut(t, s, base, "after TruncateTo at a segment base")
	close(stop)
	wg.Wait()
	newReplicator(m2, s, 64<<10).catchUp(t)
	sameLog(t, m2, s, "after following the new master again")

	// Restart: recovery agrees.
	s = restartAndFollow(t, m2, s, so, rng, 64<<10)
	s.Close()
}

// TestResetTo: a slave with a log of its own resets to a later segment
// base of a master whose log itself began at 1 GiB (it was reset there
// fresh) and copies from there: queues start past 0, the log and queues
// are the master's from the base on, and a restart (recovery of a log
// whose first segment lies at a base above 0) keeps them.
func TestResetTo(t *testing.T) {
	for _, be := range memBackends(t) {
		t.Run("backend="+be, func(t *testing.T) {
			rng := rand.New(rand.NewSource(time.Now().UnixNano()))
			mo := replOptions(t, vfs.NewMem(), "/master", be, FlushSync)
			m := mustOpen(t, mo)
			defer m.Close()
			if err := m.ResetTo(1 << 30); err != nil {
				t.Fatal(err)
			}
			appendRandom(t, m, rng, 100)
			if err := m.Close(); err != nil { // the master restarts too
				t.Fatal(err)
			}
			m = mustOpen(t, mo)
			defer m.Close()
			if lo := m.CommitLogMinOffset(); lo != 1<<30 {
				t.Fatalf("the master's log begins at %d after a restart", lo)
			}

			so := replOptions(t, vfs.NewMem(), "/slave", be, FlushAsync)
			var shift atomic.Int64 // the slave's clock, for retention
			so.Clock = func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
			so.Retention.MaxAge = time.Hour
			s := mustOpen(t, so)
			appendRandom(t, s, rng, 30) // a log of its own
			base := m.CommitLogMinOffset() + 2*m.segSize
			if err := s.ResetTo(base + 1); err == nil {
				t.Fatal("ResetTo off a segment base succeeded")
			}
			if err := s.ResetTo(base); err != nil {
				t.Fatal(err)
			}
			checkCut(t, s, base, "after ResetTo")
			if lo := s.CommitLogMinOffset(); lo != base {
				t.Fatalf("min offset %d after ResetTo(%d)", lo, base)
			}
			for _, topic := range crashTopics {
				if n := s.MaxQueueOffset(topic, 0); n != 0 {
					t.Fatalf("%s/0 holds offsets up to %d after ResetTo", topic, n)
				}
			}
			newReplicator(m, s, 64<<10).catchUp(t)
			sameLog(t, m, s, "after copying from the base")
			s = restartAndFollow(t, m, s, so, rng, 64<<10)
			// Retention on the reset slave, then a restart.
			if err := s.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			shift.Store(int64(2 * time.Hour))
			if n, err := s.ApplyRetention(); err != nil || n == 0 {
				t.Fatalf("retention on the slave deleted %d segments: %v", n, err)
			}
			if lo := s.CommitLogMinOffset(); lo <= base {
				t.Fatalf("min offset %d after retention, base %d", lo, base)
			}
			sameLog(t, m, s, "after retention on the slave")
			s = restartAndFollow(t, m, s, so, rng, 64<<10)
			s.Close()
		})
	}
}

// TestCutCrash: a crash (process crash or power loss) at every file
// operation of TruncateTo and of ResetTo leaves a store that opens
// consistent: after TruncateTo its log is the old one cut somewhere
// between the cut and the old end (at the cut once TruncateTo returned),
// every ConsumeQueue indexing exactly its queue's records; after ResetTo
// it is the old store or the reset one, nothing between.
func TestCutCrash(t *testing.T) {
	for _, mode := range []crashMode{processCrash, powerLoss} {
		for _, op := range []string{"truncate", "reset"} {
			t.Run(fmt.Sprintf("%s/%s", op, mode), func(t *testing.T) {
				testCutCrash(t, op, mode)
			})
		}
	}
}

func testCutCrash(t *testing.T, op string, mode crashMode) {
	mem := vfs.NewMem()
	opts := replOptions(t, mem, "/store", "pwrite", FlushSync) // no timer does I/O
	s := mustOpen(t, opts)
	appendRandom(t, s, rand.New(rand.NewSource(5)), 60)
	waitDispatched(t, s)
	old := walkLog(t, s, "before")
	oldEnd := s.WrittenOffset()
	off := cutPoint(t, s, 1)
	base := 8 * s.segSize
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	model := func(upTo int64) *crashModel {
		m := &crashModel{durable: map[int64]expected{}, written: map[int64]expected{}}
		for _, r := range old {
			var rec record.Record
			if err := record.Decode(r.b, r.phys, &rec); err != nil {
				t.Fatal(err)
			}
			e := expected{phys: r.phys, bytes: r.b, topic: string(rec.Topic), qid: rec.QueueID, qoff: rec.QueueOffset}
			m.written[r.phys] = e
			if r.phys < upTo {
				m.durable[r.phys] = e
			}
		}
		return m
	}
	for n := int64(1); ; n++ {
		cfs := newCrashFSMode(mem.ProcessCrashClone(), n, mode)
		o := opts
		o.FS = cfs
		s := mustOpen(t, o)
		cfs.arm(n)
		var err error
		if op == "truncate" {
			err = s.TruncateTo(off)
		} else {
			err = s.ResetTo(base)
		}
		crashed := cfs.dead.Load()
		if !crashed && err != nil {
			t.Fatalf("crash at op %d: %s failed without a crash: %v", n, op, err)
		}
		cfs.crash() // the machine goes down after a finished cut too
		s.Close()
		o.FS = cfs.clone
		s2, err := Open(o)
		if err != nil {
			t.Fatalf("crash at op %d of %s (crashed: %v): Open: %v", n, op, crashed, err)
		}
		where := fmt.Sprintf("crash at op %d of %s", n, op)
		end, lo := s2.WrittenOffset(), s2.CommitLogMinOffset()
		switch {
		case op == "truncate":
			if end < off || end > oldEnd || (!crashed && end != off) {
				t.Fatalf("%s: the log ends at %d; the cut was at %d, the old end %d (finished: %v)", where, end, off, oldEnd, !crashed)
			}
			model(off).verify(t, s2, where)
		case lo == base:
			if end != base || len(walkLog(t, s2, where)) != 0 {
				t.Fatalf("%s: reset to %d but the log ends at %d", where, base, end)
			}
		default:
			if crashed == false || lo != 0 || end != oldEnd {
				t.Fatalf("%s: neither the old store nor the reset one: log [%d, %d) (finished: %v)", where, lo, end, !crashed)
			}
			model(oldEnd).verify(t, s2, where)
		}
		// The store takes appends again.
		if _, err := s2.Append(context.Background(), testMessage("after", 0, 10)); err != nil {
			t.Fatalf("%s: append after recovery: %v", where, err)
		}
		if err := s2.Close(); err != nil {
			t.Fatalf("%s: close: %v", where, err)
		}
		if !crashed {
			t.Logf("%s completed after %d file operations", op, n-1)
			return
		}
		if n > 1000 {
			t.Fatal("still crashing after 1000 operations")
		}
	}
}
