package ha

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

func TestWaitQueueOrder(t *testing.T) {
	var wq waitQueue
	mk := func(end, deadline int64) *waiter { w := newWaiter(); w.end, w.deadline = end, deadline; return w }
	ws := []*waiter{mk(30, 5), mk(10, 1), mk(20, 9), mk(10, 3), mk(40, 2)}
	for _, w := range ws {
		wq.push(w)
	}
	var ends []int64
	for _, w := range wq.q[wq.head:] {
		ends = append(ends, w.end)
	}
	if want := []int64{10, 10, 20, 30, 40}; !equalInts(ends, want) {
		t.Fatalf("order %v, want %v", ends, want)
	}
	if wq.q[wq.head] != ws[1] { // FIFO among equal ends
		t.Fatal("equal ends out of arrival order")
	}
	if n := wq.release(20, nil); n != 3 || wq.len() != 2 {
		t.Fatalf("release(20) freed %d, %d left", n, wq.len())
	}
	if n := wq.expire(2, ErrSlaveTimeout); n != 1 || wq.len() != 1 {
		t.Fatalf("expire(2) freed %d, %d left", n, wq.len())
	}
	if err := <-ws[4].done; !errors.Is(err, ErrSlaveTimeout) {
		t.Fatalf("expired waiter got %v", err)
	}
	wq.failAll(ErrClosed)
	if err := <-ws[0].done; !errors.Is(err, ErrClosed) || wq.len() != 0 {
		t.Fatalf("failAll: %v, %d left", err, wq.len())
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// newBareMaster is a master with one slave link that has no slave
// behind it (a pipe): the test acknowledges for it with onAck.
func newBareMaster(t *testing.T, inSync int) (*Master, []*link, *memLog) {
	t.Helper()
	lg := newMemLog(1<<20, 4096)
	ep := openEpochs(t, vfs.NewMem())
	m, err := NewMaster(MasterConfig{Addr: "127.0.0.1:0", Log: lg, Epochs: ep, InSyncReplicas: inSync, Logger: quietLogger()})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	var links []*link
	for id := int64(1); id < int64(inSync); id++ {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		l := &link{m: m, conn: a, brokerID: id, addr: "pipe", kick: make(chan struct{}, 1), done: make(chan struct{})}
		l.heard.Store(m.now())
		if !m.register(l) {
			t.Fatal("register refused")
		}
		links = append(links, l)
	}
	return m, links, lg
}

func (m *Master) pendingLen() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.pending.len()
}

// One acknowledgement releases every waiter it covers, and only those.
func TestManyWaitersReleasedByOneAck(t *testing.T) {
	m, links, _ := newBareMaster(t, 2)
	const n = 200
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.WaitReplicated(int64(1000 + i*10))
		}()
	}
	waitFor(t, "all waiters queued", func() bool { return m.pendingLen() == n })
	m.onAck(links[0], 1000+(n/2-1)*10) // covers the first half
	waitFor(t, "half released", func() bool { return m.pendingLen() == n/2 })
	m.onAck(links[0], 1<<40)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("waiter %d: %v", i, err)
		}
	}
}

// With InSyncReplicas 3 a waiter needs two slaves: the second-highest
// acknowledgement releases.
func TestWaitReplicatedQuorum(t *testing.T) {
	m, links, _ := newBareMaster(t, 3)
	done := make(chan error, 1)
	go func() { done <- m.WaitReplicated(500) }()
	waitFor(t, "waiter queued", func() bool { return m.pendingLen() == 1 })
	m.onAck(links[0], 900)
	select {
	case err := <-done:
		t.Fatalf("released by one slave of two: %v", err)
	case <-time.After(10 * time.Millisecond):
	}
	m.onAck(links[1], 500)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// One slave leaves: too few remain, so a waiter fails at once.
	links[1].close(errors.New("test"))
	m.unregister(links[1])
	if err := m.WaitReplicated(10_000); !errors.Is(err, ErrSlaveNotAvailable) {
		t.Fatalf("with one slave of two: %v", err)
	}
}

// A waiter left behind when its slave goes away is told at once.
func TestWaitersFailWhenSlavesLeave(t *testing.T) {
	m, links, _ := newBareMaster(t, 2)
	done := make(chan error, 1)
	go func() { done <- m.WaitReplicated(500) }()
	waitFor(t, "waiter queued", func() bool { return m.pendingLen() == 1 })
	links[0].close(errors.New("test"))
	m.unregister(links[0])
	if err := <-done; !errors.Is(err, ErrSlaveNotAvailable) {
		t.Fatalf("got %v", err)
	}
}

// WaitReplicatedFunc: an outcome known at once is returned and fn is
// never called; otherwise fn gets the outcome exactly once, from the
// acknowledgement that covers it (in offset order), the deadline sweeper,
// a slave leaving, or Close.
func TestWaitReplicatedFunc(t *testing.T) {
	m, links, _ := newBareMaster(t, 2)
	type outcome struct {
		end int64
		err error
	}
	got := make(chan outcome, 16)
	wait := func(end int64) {
		t.Helper()
		done, err := m.WaitReplicatedFunc(end, func(err error) { got <- outcome{end, err} })
		if done {
			t.Fatalf("wait for %d answered at once: %v", end, err)
		}
	}
	for _, end := range []int64{300, 100, 200, 400} {
		wait(end)
	}
	m.onAck(links[0], 300)
	for _, want := range []int64{100, 200, 300} {
		if o := <-got; o.end != want || o.err != nil {
			t.Fatalf("released %d (%v), want %d first", o.end, o.err, want)
		}
	}
	if n := m.pendingLen(); n != 1 {
		t.Fatalf("%d waiting, want the one for 400", n)
	}
	// Known at once: covered already.
	if done, err := m.WaitReplicatedFunc(250, func(error) { t.Error("fn called for an answered wait") }); !done || err != nil {
		t.Fatalf("covered wait: done %v, %v", done, err)
	}
	// The slave leaves: the waiter left behind fails, and a new wait
	// fails at once.
	links[0].close(errors.New("test"))
	m.unregister(links[0])
	if o := <-got; o.end != 400 || !errors.Is(o.err, ErrSlaveNotAvailable) {
		t.Fatalf("left behind: %d %v", o.end, o.err)
	}
	if done, err := m.WaitReplicatedFunc(500, func(error) { t.Error("fn called for an answered wait") }); !done || !errors.Is(err, ErrSlaveNotAvailable) {
		t.Fatalf("no slave: done %v, %v", done, err)
	}
	select {
	case o := <-got:
		t.Fatalf("called again: %d %v", o.end, o.err)
	default:
	}
}

// A callback waiter times out through the sweeper, and Close fails the
// rest with ErrClosed.
func TestWaitReplicatedFuncTimeoutAndClose(t *testing.T) {
	lg := newMemLog(1<<20, 4096)
	m, err := NewMaster(MasterConfig{Addr: "127.0.0.1:0", Log: lg, Epochs: openEpochs(t, vfs.NewMem()), InSyncReplicas: 2,
		AckTimeout: 50 * time.Millisecond, Logger: quietLogger()})
	must(t, err)
	defer m.Close()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	l := &link{m: m, conn: a, brokerID: 1, addr: "pipe", kick: make(chan struct{}, 1), done: make(chan struct{})}
	l.heard.Store(m.now())
	if !m.register(l) {
		t.Fatal("register refused")
	}
	got := make(chan error, 2)
	if done, err := m.WaitReplicatedFunc(100, func(err error) { got <- err }); done {
		t.Fatalf("answered at once: %v", err)
	}
	select {
	case err := <-got:
		if !errors.Is(err, ErrSlaveTimeout) {
			t.Fatalf("timed out with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no timeout")
	}
	l.heard.Store(m.now())
	if done, err := m.WaitReplicatedFunc(200, func(err error) { got <- err }); done {
		t.Fatalf("answered at once: %v", err)
	}
	go m.Close()
	select {
	case err := <-got:
		if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrSlaveTimeout) {
			t.Fatalf("closed with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("not released by Close")
	}
}

func TestWaitReplicatedZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	m, links, _ := newBareMaster(t, 2)
	// A broken invariant ends the test with a message in seconds, never a
	// hang: the slave gives up on a waiter that never comes, and a waiter
	// released before its acknowledgement is reported (acked is stored
	// before onAck, so a correct release always finds it).
	var failMu sync.Mutex
	var failure string
	fail := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		if failure == "" {
			failure = fmt.Sprintf(format, args...)
		}
	}
	failed := func() bool { failMu.Lock(); defer failMu.Unlock(); return failure != "" }
	var acked atomic.Int64
	ends := make(chan int64)
	stop := make(chan struct{})
	go func() { // the acknowledging slave
		defer close(stop)
		for end := range ends {
			deadline := time.Now().Add(30 * time.Second)
			for m.pendingLen() == 0 {
				if failed() {
					return
				}
				if time.Now().After(deadline) {
					fail("no waiter for %d came within 30 s", end)
					return
				}
				runtime.Gosched()
			}
			acked.Store(end)
			m.onAck(links[0], end)
		}
	}()
	defer close(ends)
	var end int64
	send := func() bool {
		if failed() {
			return false
		}
		end += 100
		select {
		case ends <- end:
			return true
		case <-stop:
			return false
		}
	}
	released := func(err error) {
		if err != nil {
			fail("waiter for %d: %v", end, err)
		} else if a := acked.Load(); a < end {
			fail("waiter for %d released before its acknowledgement (acknowledged up to %d)", end, a)
		}
	}
	call := func() {
		if send() {
			released(m.WaitReplicated(end))
		}
	}
	for i := 0; i < 100; i++ { // warm the pool and the queue
		call()
	}
	allocs := testing.AllocsPerRun(2000, call)
	if failed() {
		t.Fatal(failure)
	}
	if allocs != 0 {
		t.Fatalf("WaitReplicated allocates %.2f times per call", allocs)
	}
	// WaitReplicatedFunc with one fn reused: nothing per call either.
	done := make(chan error, 1)
	fn := func(err error) { done <- err }
	timer := time.NewTimer(time.Hour) // reset per call: no allocation
	callFunc := func() {
		if !send() {
			return
		}
		if ok, err := m.WaitReplicatedFunc(end, fn); ok {
			released(err)
			fail("WaitReplicatedFunc(%d) was done at once", end)
			return
		}
		timer.Reset(30 * time.Second)
		defer timer.Stop()
		select {
		case err := <-done:
			released(err)
		case <-stop:
		case <-timer.C:
			fail("waiter for %d not released within 30 s of its acknowledgement", end)
		}
	}
	for i := 0; i < 100; i++ {
		callFunc()
	}
	allocs = testing.AllocsPerRun(2000, callFunc)
	if failed() {
		t.Fatal(failure)
	}
	if allocs != 0 {
		t.Fatalf("WaitReplicatedFunc allocates %.2f times per call", allocs)
	}
}

func TestLagRing(t *testing.T) {
	var r lagRing
	r.init()
	ms := int64(time.Millisecond)
	if got := r.lag(0, 50*ms, 50*ms); got != 50*time.Millisecond {
		t.Fatalf("no samples: %v", got)
	}
	r.note(0, 1000*ms)   // handed rose above 0 at 1 s
	r.note(100, 1050*ms) // within the period: skipped
	r.note(200, 1200*ms) // above 200 at 1.2 s
	r.note(300, 1400*ms)
	for _, c := range []struct {
		ack  int64
		want time.Duration
	}{{0, 1000}, {150, 1000}, {200, 800}, {299, 800}, {300, 600}, {5000, 600}} {
		if got := r.lag(c.ack, 2000*ms, 2000*ms); got != c.want*time.Millisecond {
			t.Errorf("lag(%d) = %v, want %v", c.ack, got, c.want*time.Millisecond)
		}
	}
	for i := int64(0); i < lagSamples+10; i++ { // wrap the ring
		r.note(1000+i, 2000*ms+i*lagPeriod)
	}
	now := 2000*ms + (lagSamples+10)*lagPeriod
	if got, want := r.lag(0, now, now), time.Duration(lagSamples*lagPeriod); got != want {
		t.Fatalf("behind the ring: %v, want the oldest sample's age %v", got, want)
	}
}
