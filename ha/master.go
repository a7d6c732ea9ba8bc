package ha

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Master ships its CommitLog to the slaves that connect to it and tells
// SYNC_MASTER writes when enough of them hold a record.
//
// Goroutines: one accepts connections; per slave, one reads its
// handshake and then its acknowledgements (link.serve) and one streams
// the log to it (link.send), woken by OnHanded; one sweeps the
// WaitReplicated deadlines. A stalled slave blocks only its own sender.
type Master struct {
	cfg     MasterConfig
	log     SourceLog
	lg      *slog.Logger
	ln      net.Listener
	epochs  []Epoch // this master's epoch list: fixed while it runs
	need    int     // slaves a WaitReplicated needs: InSyncReplicas-1
	base    time.Time
	closed  atomic.Bool
	stop    chan struct{}
	wg      sync.WaitGroup
	waiters sync.Pool

	// links is the registered links, copied on change, for the lock-free
	// readers (the OnHanded kick, ConfirmOffset).
	links atomic.Pointer[[]*link]
	// handed is the last handed offset OnHanded reported.
	handed atomic.Int64
	lag    lagRing
	// lastRefusal is the last failed handshake's error, logged once.
	lastRefusal atomic.Value
	// acknowledged is the highest quorum ever reached: every
	// WaitReplicated for an end up to it was (or would be) released.
	acknowledged atomic.Int64

	mu struct {
		sync.Mutex
		links   []*link // registered links (in the transfer phase)
		conns   map[net.Conn]struct{}
		pending waitQueue
		// spare is an empty fired list to swap in while one is called.
		spare []*waiter
		// quorum is the offset at least need registered slaves have
		// acknowledged (-1: fewer than need are registered).
		quorum int64
		top    []int64 // scratch for quorumLocked
		// required: slaves (broker ids) that must each acknowledge as
		// well (SetRequired); nil: none.
		required []int64
		closed   bool
	}
}

// NewMaster opens a new epoch in cfg.Epochs, starts listening and returns
// the running master. Nothing may be appended to cfg.Log before it
// returns (the epoch starts at the log's end).
func NewMaster(cfg MasterConfig) (*Master, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := cfg.Log
	var e Epoch
	var err error
	if cfg.Epoch != 0 {
		e, err = cfg.Epochs.BeginMasterEpochAt(cfg.Epoch, l.WrittenOffset(), l.CommitLogMinOffset())
	} else {
		e, err = cfg.Epochs.BeginMasterEpoch(l.WrittenOffset(), l.CommitLogMinOffset())
	}
	if err != nil {
		return nil, fmt.Errorf("ha: open master epoch: %w", err)
	}
	ln := cfg.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return nil, fmt.Errorf("ha: listen: %w", err)
		}
	}
	m := &Master{cfg: cfg, log: l, lg: cfg.Logger, ln: ln, epochs: cfg.Epochs.Entries(),
		need: cfg.InSyncReplicas - 1, base: time.Now(), stop: make(chan struct{})}
	m.waiters.New = func() any { return newWaiter() }
	m.links.Store(new([]*link))
	m.mu.conns = make(map[net.Conn]struct{})
	m.mu.quorum = -1
	m.acknowledged.Store(-1)
	m.mu.top = make([]int64, 0, m.need)
	m.lag.init()
	m.lastRefusal.Store("")
	m.handed.Store(l.HandedOffset())
	l.OnHanded(m.onHanded)
	m.lg.Info("ha: master started", "addr", ln.Addr().String(), "epoch", e.Epoch, "epochStart", e.Start, "config", cfg.String())
	m.wg.Add(2)
	go m.accept()
	go m.sweep()
	return m, nil
}

// Addr is the address the master listens on.
func (m *Master) Addr() net.Addr { return m.ln.Addr() }

// Epoch is the epoch this master writes.
func (m *Master) Epoch() Epoch { return m.epochs[len(m.epochs)-1] }

func (m *Master) now() int64 { return int64(time.Since(m.base)) }

// onHanded is the log's OnHanded callback: it wakes every sender and
// samples the lag ring. It never blocks.
func (m *Master) onHanded(h int64) {
	if m.closed.Load() {
		return
	}
	if prev := m.handed.Swap(h); prev < h {
		m.lag.note(prev, m.now())
	}
	for _, l := range *m.links.Load() {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// accept is the listener's goroutine: it starts a link per connection.
// Ends when Close closes the listener.
func (m *Master) accept() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			if m.closed.Load() {
				return
			}
			m.lg.Warn("ha: accept failed", "err", err)
			select {
			case <-time.After(100 * time.Millisecond):
				continue
			case <-m.stop:
				return
			}
		}
		m.mu.Lock()
		if m.mu.closed {
			m.mu.Unlock()
			_ = c.Close()
			return
		}
		m.mu.conns[c] = struct{}{}
		m.mu.Unlock()
		m.wg.Add(1)
		go m.serve(c)
	}
}

// sweep is the deadline goroutine: it times out waiters whose AckTimeout
// passed. Woken by its ticker; ends at Close.
func (m *Master) sweep() {
	defer m.wg.Done()
	t := time.NewTicker(min(max(m.cfg.AckTimeout/10, time.Millisecond), 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			m.mu.Lock()
			if m.mu.pending.len() > 0 {
				m.mu.pending.expire(m.now(), ErrSlaveTimeout)
			}
			m.unlockAndFire()
		case <-m.stop:
			return
		}
	}
}

// WaitReplicated returns nil once InSyncReplicas-1 slaves have
// acknowledged the log up to end (SYNC_MASTER: call it after the record
// ending at end is appended). It returns ErrSlaveNotAvailable at once when
// fewer slaves than that are in sync (and later if so many disconnect
// that too few remain connected), ErrSlaveTimeout after AckTimeout, and
// ErrClosed once the master is closed.
//
// It is group commit: waiters queue in offset order and one
// acknowledgement releases every one it covers. No goroutine or timer per
// call; a steady-state call allocates nothing.
func (m *Master) WaitReplicated(end int64) error {
	if m.need == 0 {
		return nil
	}
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	if m.mu.quorum >= end {
		m.mu.Unlock()
		return nil
	}
	now := m.now()
	if m.inSyncCountLocked(m.log.HandedOffset(), now) < m.need {
		m.mu.Unlock()
		return ErrSlaveNotAvailable
	}
	w := m.waiters.Get().(*waiter)
	w.end, w.deadline = end, now+int64(m.cfg.AckTimeout)
	m.mu.pending.push(w)
	m.mu.Unlock()
	err := <-w.done
	m.waiters.Put(w)
	return err
}

// WaitReplicatedFunc is WaitReplicated without the wait, for a caller
// that must not block (the broker's inline send path): when the outcome
// is known at once it returns done with it and never calls fn; otherwise
// it calls fn exactly once later with what WaitReplicated would have
// returned. fn runs on the goroutine that released it (a slave's
// acknowledgement reader, the deadline sweeper, or Close), never under
// the master's lock, in offset order within one release; it must not
// block. No goroutine or timer per call; a steady-state call allocates
// nothing beyond what fn's caller allocated.
func (m *Master) WaitReplicatedFunc(end int64, fn func(error)) (done bool, err error) {
	if m.need == 0 {
		return true, nil
	}
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return true, ErrClosed
	}
	if m.mu.quorum >= end {
		m.mu.Unlock()
		return true, nil
	}
	now := m.now()
	if m.inSyncCountLocked(m.log.HandedOffset(), now) < m.need {
		m.mu.Unlock()
		return true, ErrSlaveNotAvailable
	}
	w := m.waiters.Get().(*waiter)
	w.end, w.deadline, w.fn = end, now+int64(m.cfg.AckTimeout), fn
	m.mu.pending.push(w)
	m.mu.Unlock()
	return false, nil
}

// unlockAndFire unlocks m.mu and then calls the callback waiters the
// locked section released, in order. Their list is swapped for the spare
// one first, so another release can run while these are called.
func (m *Master) unlockAndFire() {
	f := m.mu.pending.fired
	if len(f) == 0 {
		m.mu.Unlock()
		return
	}
	m.mu.pending.fired, m.mu.spare = m.mu.spare, nil
	m.mu.Unlock()
	for i, w := range f {
		fn, err := w.fn, w.err
		w.fn, w.err = nil, nil
		f[i] = nil
		m.waiters.Put(w)
		fn(err)
	}
	m.mu.Lock()
	if m.mu.spare == nil {
		m.mu.spare = f[:0]
	}
	m.mu.Unlock()
}

// inSync says whether a slave counts for SYNC_MASTER: its acknowledged
// offset within MaxGapNotInSync of handed, heard from within
// HousekeepingInterval.
func (m *Master) inSync(l *link, handed, now int64) bool {
	return handed-l.ack.Load() <= m.cfg.MaxGapNotInSync && now-l.heard.Load() <= int64(m.cfg.HousekeepingInterval)
}

// inSyncCountLocked counts the slaves in sync, noting changes of state.
func (m *Master) inSyncCountLocked(handed, now int64) int {
	n := 0
	for _, l := range m.mu.links {
		if m.noteInSyncLocked(l, handed, now) && m.countsLocked(l) {
			n++
		}
	}
	return n
}

// countsLocked: l's acknowledgements count toward InSyncReplicas (with
// MasterConfig.RequiredOnly, only a required slave's do).
func (m *Master) countsLocked(l *link) bool {
	return !m.cfg.RequiredOnly || slices.Contains(m.mu.required, l.brokerID)
}

// noteInSyncLocked evaluates l's state and records when it changed.
func (m *Master) noteInSyncLocked(l *link, handed, now int64) bool {
	in := m.inSync(l, handed, now)
	if in != l.inSync {
		l.inSync, l.since = in, now
	}
	return in
}

// onAck records an acknowledgement and releases the waiters it covers.
func (m *Master) onAck(l *link, off int64) {
	l.ack.Store(off)
	l.heard.Store(m.now())
	if m.need == 0 {
		return
	}
	m.mu.Lock()
	if q := m.quorumLocked(); q > m.mu.quorum {
		m.setQuorumLocked(q)
		m.mu.pending.release(q, nil)
	}
	m.unlockAndFire()
}

// needthLocked returns the need-th highest acknowledged offset among the
// registered slaves that count (countsLocked), or -1 if fewer are
// registered.
func (m *Master) needthLocked() int64 {
	if len(m.mu.links) < m.need {
		return -1
	}
	if m.need == 1 {
		q := int64(-1)
		for _, l := range m.mu.links {
			if m.countsLocked(l) {
				q = max(q, l.ack.Load())
			}
		}
		return q
	}
	top := m.mu.top[:0] // the need highest, ascending
	for _, l := range m.mu.links {
		if !m.countsLocked(l) {
			continue
		}
		a := l.ack.Load()
		if len(top) < m.need {
			top = append(top, a)
			slices.Sort(top)
		} else if a > top[0] {
			top[0] = a
			slices.Sort(top)
		}
	}
	m.mu.top = top
	if len(top) < m.need {
		return -1
	}
	return top[0]
}

// register adds a link that finished its handshake, replacing (and
// closing) an older link of the same slave.
func (m *Master) register(l *link) bool {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return false
	}
	var old *link
	for i, o := range m.mu.links {
		if o.brokerID == l.brokerID {
			old = o
			m.mu.links = slices.Delete(m.mu.links, i, i+1)
			break
		}
	}
	m.mu.links = append(m.mu.links, l)
	now := m.now()
	l.inSync, l.since = m.inSync(l, m.log.HandedOffset(), now), now
	m.publishLocked()
	if q := m.quorumLocked(); q > m.mu.quorum {
		m.setQuorumLocked(q)
		m.mu.pending.release(q, nil)
	}
	m.unlockAndFire()
	if old != nil {
		old.close(fmt.Errorf("replaced by a new link from the same slave (%s)", l.remote))
	}
	return true
}

// unregister removes a link that ended. If too few slaves remain to
// release the waiters, they get ErrSlaveNotAvailable.
func (m *Master) unregister(l *link) {
	m.mu.Lock()
	i := slices.Index(m.mu.links, l)
	if i < 0 { // replaced by a newer link of the same slave
		m.unlockAndFire()
		return
	}
	m.mu.links = slices.Delete(m.mu.links, i, i+1)
	m.publishLocked()
	m.setQuorumLocked(m.quorumLocked())
	if len(m.mu.links) < m.need {
		m.mu.pending.failAll(ErrSlaveNotAvailable)
	}
	m.unlockAndFire()
	if m.cfg.OnLinkDown != nil {
		m.cfg.OnLinkDown(l.brokerID)
	}
}

func (m *Master) publishLocked() {
	s := slices.Clone(m.mu.links)
	m.links.Store(&s)
}

// setQuorumLocked sets the quorum, raising Acknowledged to it.
func (m *Master) setQuorumLocked(q int64) {
	m.mu.quorum = q
	if q > m.acknowledged.Load() {
		m.acknowledged.Store(q) // under mu: no lost raise
	}
}

// Acknowledged is the highest offset this master released writes up to:
// every WaitReplicated for an end at or below it returned (or would have
// returned) nil, so each required slave (SetRequired) and at least
// InSyncReplicas-1 slaves held it. -1 before the first release; the
// handed offset when no slave is needed. It never falls, unlike the
// quorum, which drops when a slave leaves or joins the required set.
// What a controller-mode master reports as confirmed cannot be above it:
// a byte above it was never acknowledged to a producer.
func (m *Master) Acknowledged() int64 {
	if m.need == 0 {
		return m.log.HandedOffset()
	}
	return m.acknowledged.Load()
}

// ConfirmOffset is the offset every in-sync replica holds: the lowest
// acknowledgement among the slaves in sync, or the handed offset when none
// is. It may step back when a slave joins the in-sync set.
func (m *Master) ConfirmOffset() int64 {
	handed := m.log.HandedOffset()
	now := m.now()
	c := handed
	for _, l := range *m.links.Load() {
		if m.inSync(l, handed, now) {
			c = min(c, l.ack.Load())
		}
	}
	return c
}

// SlaveStatus is a slave as its master sees it.
type SlaveStatus struct {
	BrokerID int64
	// Addr is the address the slave advertises (its remote address if
	// it advertises none).
	Addr string
	// AckOffset is the offset the slave acknowledged last.
	AckOffset int64
	// LagBytes is how far AckOffset trails the handed offset.
	LagBytes int64
	// LagTime is how long ago the handed offset passed AckOffset (0 when
	// caught up), to within 100 ms.
	LagTime time.Duration
	// InSync: the slave counts for SYNC_MASTER writes.
	InSync bool
	// Since is when InSync last changed (as observed) or the link was
	// made.
	Since time.Time
}

// Slaves returns the registered slaves, by broker id.
func (m *Master) Slaves() []SlaveStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	handed := m.log.HandedOffset()
	now := m.now()
	out := make([]SlaveStatus, 0, len(m.mu.links))
	for _, l := range m.mu.links {
		ack := l.ack.Load()
		s := SlaveStatus{BrokerID: l.brokerID, Addr: l.addr, AckOffset: ack, LagBytes: max(handed-ack, 0),
			InSync: m.noteInSyncLocked(l, handed, now), Since: m.base.Add(time.Duration(l.since))}
		if ack < handed {
			s.LagTime = m.lag.lag(ack, now, now)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b SlaveStatus) int { return cmp.Compare(a.BrokerID, b.BrokerID) })
	return out
}

// Close stops the master: every waiter gets ErrClosed, every link is
// closed. It returns once every goroutine has ended.
func (m *Master) Close() error {
	if !m.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(m.stop)
	err := m.ln.Close()
	m.mu.Lock()
	m.mu.closed = true
	m.mu.pending.failAll(ErrClosed)
	for c := range m.mu.conns {
		_ = c.Close()
	}
	links := slices.Clone(m.mu.links) // unregister edits m.mu.links in place
	m.unlockAndFire()
	for _, l := range links {
		l.close(ErrClosed)
	}
	m.wg.Wait()
	m.lg.Info("ha: master closed", "addr", m.ln.Addr().String())
	return err
}
