package storage

import (
	"context"
	"errors"
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// confCycle runs appenders and a reader on s until the machine crashes:
// at a file-operation count drawn now (not on mmap or a stage, whose
// appends write through a mapping, not through operations), or once a drawn number of
// appends are acknowledged, or when the appenders are done.
//
// An append is acknowledged when Append returned no error before the
// crash; an append that returns after it belongs to a dead process (no
// client heard it), except at the power-loss level, where success needs
// an fsync and so a crash before it could not have been missed. Since the
// test reads the crash flag after Append returns, an acknowledgement just
// before the crash may be left unchecked, never checked wrongly. Reads
// count the same way.
func confCycle(t *testing.T, s *Store, cfs *crashFS, led *confLedger, be string, rng *rand.Rand) {
	level := led.level
	writers := 1 + rng.Intn(3)
	target := int64(rng.Intn(24))
	byOps := !s.ho.inAppend && rng.Intn(2) == 0
	if byOps {
		cfs.arm(1 + rng.Int63n(100))
	}
	dispatched := newTouched()
	s.OnDispatch(dispatched.add)

	var acked atomic.Int64
	reached := make(chan struct{}) // closed once acked reaches target
	var reachedOnce sync.Once
	if target == 0 {
		reachedOnce.Do(func() { close(reached) })
	}
	var wg sync.WaitGroup
	writersDone := make(chan struct{})
	ctx := context.Background()
	for w := 0; w < writers; w++ {
		wrng := rand.New(rand.NewSource(rng.Int63()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 80 && !cfs.dead.Load(); i++ {
				if wrng.Intn(40) == 0 {
					s.Checkpoint()
				}
				res, msgs, err := confAppend(ctx, s, wrng)
				ok := err == nil && (level == DurabilityPowerLoss || !cfs.dead.Load())
				led.written(msgs, res, ok)
				if ok {
					if acked.Add(int64(len(res))) >= target {
						reachedOnce.Do(func() { close(reached) })
					}
				} else if err != nil && !errors.Is(err, ErrBroken) && !errors.Is(err, ErrClosed) && !cfs.dead.Load() {
					t.Errorf("append on a live machine: %v", err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(writersDone) }()
	readerDone := make(chan struct{})
	go confReader(t, s, cfs, led, rand.New(rand.NewSource(rng.Int63())), dispatched, writersDone, readerDone)

	if !byOps {
		select {
		case <-reached:
		case <-writersDone:
		case <-time.After(30 * time.Second):
			t.Errorf("no progress: %d of %d appends acknowledged", acked.Load(), target)
		}
		confCrash(s, cfs, be)
	}
	<-writersDone
	<-readerDone
	if !cfs.dead.Load() { // the armed operation never came
		confCrash(s, cfs, be)
	}
	cfs.disarm()
}

// confCrash crashes the machine now. Where appends copy into a mapping
// (mmap, a stage) it holds the append lock, so no copy is in flight while
// the image is taken.
func confCrash(s *Store, cfs *crashFS, be string) {
	if s.ho.inAppend {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	cfs.crash()
}

// confAppend appends one message or a batch, drawn from rng.
func confAppend(ctx context.Context, s *Store, rng *rand.Rand) ([]AppendResult, []*Message, error) {
	n := 1
	if rng.Intn(4) == 0 {
		n = 1 + rng.Intn(5)
	}
	msgs := make([]*Message, n)
	for j := range msgs {
		msgs[j] = crashMessage(rng, s.segSize, n)
	}
	if n == 1 && rng.Intn(2) == 0 {
		r, err := s.Append(ctx, msgs[0])
		if r.Size > 0 {
			return []AppendResult{r}, msgs, err
		}
		return nil, msgs, err
	}
	res, err := s.AppendBatch(ctx, msgs)
	return res, msgs, err
}

// touched collects the queues the dispatcher indexed records of, for the
// reader; add is an OnDispatch callback.
type touched struct {
	kick chan struct{} // a queue was added since the last take
	mu   sync.Mutex
	keys map[queueKey]bool
}

func newTouched() *touched {
	return &touched{kick: make(chan struct{}, 1), keys: map[queueKey]bool{}}
}

func (tc *touched) add(topic string, qid int32, _ int64) {
	tc.mu.Lock()
	tc.keys[queueKey{topic, qid}] = true
	tc.mu.Unlock()
	kick(tc.kick)
}

// take returns the queues added since the last take, in a fixed order.
func (tc *touched) take() []queueKey {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	keys := make([]queueKey, 0, len(tc.keys))
	for k := range tc.keys {
		keys = append(keys, k)
		delete(tc.keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].topic < keys[j].topic || keys[i].topic == keys[j].topic && keys[i].qid < keys[j].qid
	})
	return keys
}

// confReader follows the queues the appenders write, from where they end
// at the start of the cycle, reading those the dispatcher indexed records
// of, until stop closes or the machine dies. What it gets before the
// crash goes to the ledger.
func confReader(t *testing.T, s *Store, cfs *crashFS, led *confLedger, rng *rand.Rand,
	dispatched *touched, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	cursor := map[queueKey]int64{}
	for _, topic := range crashTopics {
		for qid := int32(0); qid < 3; qid++ {
			cursor[queueKey{topic, qid}] = s.MaxQueueOffset(topic, qid)
		}
	}
	for {
		select {
		case <-dispatched.kick:
		case <-stop:
			return
		}
		for _, k := range dispatched.take() {
			if cfs.dead.Load() {
				return
			}
			res, err := s.GetMessages(k.topic, k.qid, cursor[k], 1+rng.Intn(8), 0, nil)
			if cfs.dead.Load() {
				return // the read may have ended after the crash: not an observation
			}
			if err != nil {
				t.Errorf("GetMessages %s/%d at %d on a live machine: %v", k.topic, k.qid, cursor[k], err)
				return
			}
			if res.Status == Found {
				led.observed(k.topic, k.qid, res)
				cursor[k] = res.NextOffset
			}
		}
	}
}
