package ha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Slave follows a master: it connects to the master's HA port, agrees
// with it where their logs part (truncating a diverged tail, or copying
// afresh), then appends what the master streams and acknowledges it.
//
// Goroutines: one runs the link and reconnects with jittered exponential
// back-off after any failure (gap, bad record, epoch mismatch, I/O, a
// silent master); while a link is up, a second one sends the periodic
// acknowledgement. Status may be called at any time.
type Slave struct {
	cfg    SlaveConfig
	log    ReplicaLog
	epochs *EpochFile
	lg     *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// kick cuts a back-off short (Kick): the master's address changed.
	kick chan struct{}

	mu struct {
		sync.Mutex
		st        LinkStatus
		lastError string // the last reason logged at Warn
	}
}

// LinkStatus is a slave's view of its link.
type LinkStatus struct {
	// Connected: the handshake is done and frames are being applied.
	Connected bool
	// MasterAddr is the address of the current or last master.
	MasterAddr string
	// Offset is the end of the local log.
	Offset int64
	// MasterHanded is the master's handed offset as last heard:
	// MasterHanded-Offset is the lag.
	MasterHanded int64
	// ConfirmOffset is the offset every in-sync replica holds, as last
	// heard, capped at Offset.
	ConfirmOffset int64
	// LastError is why the last link ended (or the last attempt failed).
	LastError error
	// Reconnects counts links that ended and attempts that failed.
	Reconnects int64
	// CutRefused: the slave does not follow its master, because that
	// would cut messages its group acknowledged which it alone may hold
	// (ErrCutRefused; LastError says where). An operator's unclean
	// decision (SlaveConfig.MayCutAcked) lets it.
	CutRefused bool
}

// ErrCutRefused: following the master would cut bytes below the
// acknowledged mark (SlaveConfig.Acked) of a lineage no unclean decision
// gave up (SlaveConfig.MayCutAcked). The slave keeps them and retries.
var ErrCutRefused = errors.New("ha: refusing to cut messages the group acknowledged")

var errNoMasterAddr = errors.New("ha: master address not known yet")

// NewSlave starts a slave; it runs until Close.
func NewSlave(cfg SlaveConfig) (*Slave, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Slave{cfg: cfg, log: cfg.Log, epochs: cfg.Epochs, lg: cfg.Logger, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		kick: make(chan struct{}, 1)}
	s.lg.Info("ha: slave started", "config", cfg.String())
	go s.run()
	return s, nil
}

// Status returns the link's state.
func (s *Slave) Status() LinkStatus {
	s.mu.Lock()
	st := s.mu.st
	s.mu.Unlock()
	st.Offset = s.log.WrittenOffset()
	return st
}

// Kick tells the slave that its master's address may have changed: a
// back-off between links ends now and the next link starts from the
// shortest back-off. A link in progress is not affected. Safe for
// concurrent use; never blocks.
func (s *Slave) Kick() {
	select {
	case s.kick <- struct{}{}:
	default: // one pending kick is enough
	}
}

// Close stops the slave and returns once its goroutines have ended.
func (s *Slave) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// run is the slave's goroutine: link after link, with back-off between.
func (s *Slave) run() {
	defer close(s.done)
	backoff := s.cfg.BackoffMin
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		addr := s.cfg.MasterAddr()
		err, progressed := errNoMasterAddr, false
		if addr != "" {
			progressed, err = s.session(addr)
		}
		if s.ctx.Err() != nil {
			return
		}
		if progressed {
			backoff = s.cfg.BackoffMin
		}
		d := backoff/2 + rand.N(backoff/2+1) // equal jitter
		backoff = min(2*backoff, s.cfg.BackoffMax)
		s.linkEnded(addr, err, d)
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-s.kick:
			timer.Stop()
			backoff = s.cfg.BackoffMin
		case <-s.ctx.Done():
			timer.Stop()
			return
		}
	}
}

// linkEnded records and logs (once per distinct reason at Warn) why a
// link ended.
func (s *Slave) linkEnded(addr string, err error, retry time.Duration) {
	s.mu.Lock()
	st := &s.mu.st
	st.Connected = false
	st.LastError = err
	if addr != "" {
		st.MasterAddr = addr
		st.Reconnects++
	}
	refused := errors.Is(err, ErrCutRefused)
	st.CutRefused = refused
	repeat := err.Error() == s.mu.lastError
	s.mu.lastError = err.Error()
	s.mu.Unlock()
	level := slog.LevelWarn
	switch {
	case refused && !repeat:
		level = slog.LevelError
	case addr == "":
		level = slog.LevelInfo
	case repeat:
		level = slog.LevelDebug
	}
	s.lg.Log(s.ctx, level, "ha: replication link dropped", "master", addr, "offset", s.log.WrittenOffset(), "err", err, "retryIn", retry)
}

func (s *Slave) setConnected(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.st.Connected = true
	s.mu.st.CutRefused = false
	s.mu.st.MasterAddr = addr
	s.mu.lastError = ""
}

func (s *Slave) noteFrame(h transferHeader, end int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.st.MasterHanded = h.Handed
	s.mu.st.ConfirmOffset = min(h.Confirm, end)
}

// align makes the local log agree with the master's before following it
// (the handshake's truncation step) and returns where the slave's log
// ends, where the master starts streaming:
//
//   - the last epoch both lists share with the same start gives the
//     consistent point (ConsistentPoint); a local tail past it is cut;
//   - with no shared epoch, no epoch history for a non-empty log, a
//     point below the local log's start, or a point the master no longer
//     retains, the local log is discarded and restarts empty at the
//     master's oldest byte (or its last segment base with
//     FromLastSegment), as a new slave's does.
func (s *Slave) align(rep handshakeReply) (int64, error) {
	w := s.log.WrittenOffset()
	// An epoch starting at or past the log's end holds nothing: one
	// recorded just before a crash took its data back, or one this
	// broker opened as master and wrote nothing under before it was
	// deposed. Kept, it could stand above the epoch of the master's data
	// from here on (an older lineage the election preferred), and every
	// frame would be refused as an epoch mismatch.
	if err := s.epochs.TruncateFrom(w); err != nil {
		return 0, err
	}
	local := s.epochs.Entries()
	lmin := s.log.CommitLogMinOffset()
	var why string
	diverged := lmin // where the local log stops agreeing with the master's, as far as known
	switch {
	case len(local) == 0 && lmin == w:
		why = "empty log"
	case len(local) == 0:
		why = "no epoch history for a non-empty log"
	default:
		point := ConsistentPoint(local, w, rep.Epochs, rep.Handed)
		diverged = max(point, lmin)
		switch {
		case point < 0:
			why = "no epoch in common with the master"
		case point < lmin:
			why = fmt.Sprintf("the logs agree only below %d, the local log starts at %d", point, lmin)
		case point < rep.MinOffset:
			why = fmt.Sprintf("the master no longer retains offset %d (it keeps from %d)", point, rep.MinOffset)
		default:
			if point < w {
				if err := s.checkCut(point, local); err != nil {
					return 0, err
				}
				// The log first, then the list: a crash between leaves
				// entries past the log's end, which the next start drops.
				if err := s.log.TruncateTo(point); err != nil {
					return 0, fmt.Errorf("truncate the local log to %d: %w", point, err)
				}
				if err := s.epochs.TruncateFrom(point); err != nil {
					return 0, err
				}
				s.lg.Warn("ha: slave cut its diverged tail (kept in lost+found)", "from", w, "to", point, "localEpochs", local, "masterEpochs", rep.Epochs)
				if err := s.cut(point, w); err != nil {
					return 0, err
				}
			}
			return point, nil
		}
	}
	start := rep.MinOffset
	if s.cfg.FromLastSegment {
		start = max(rep.Handed-rep.Handed%rep.SegmentSize, rep.MinOffset)
	}
	if len(local) == 0 && lmin == w && w == start {
		return start, nil
	}
	if w > diverged {
		if err := s.checkCut(diverged, local); err != nil {
			return 0, fmt.Errorf("%w (%s)", err, why)
		}
	}
	// The list first, then the log: a crash between leaves a log with no
	// history, which the next start discards again.
	if err := s.epochs.Reset(); err != nil {
		return 0, err
	}
	if err := s.log.ResetTo(start); err != nil {
		return 0, fmt.Errorf("reset the local log to %d: %w", start, err)
	}
	s.lg.Warn("ha: slave copies the master's log afresh", "reason", why, "from", start, "discarded", w-lmin)
	if w > lmin {
		if err := s.cut(lmin, w); err != nil {
			return 0, err
		}
	}
	return start, nil
}

// checkCut refuses a cut of the log from offset from when it reaches
// below the acknowledged mark and no unclean decision gave up the local
// lineage (local: the epoch list; its last entry wrote the tail): those
// bytes are messages the group acknowledged, and this replica may be the
// only one left that holds them. Without SlaveConfig.MayCutAcked the cut
// goes on (and is logged by cut).
func (s *Slave) checkCut(from int64, local []Epoch) error {
	m := s.cfg.Acked
	if m == nil || s.cfg.MayCutAcked == nil {
		return nil
	}
	mark := m.Value()
	if from >= mark {
		return nil
	}
	var lineage uint64
	if len(local) > 0 {
		lineage = local[len(local)-1].Epoch
	}
	if s.cfg.MayCutAcked(lineage) {
		return nil
	}
	return fmt.Errorf("%w: the master's log agrees with this one only below %d, and this replica holds acknowledged messages up to %d "+
		"(epoch %d); it keeps them and does not follow until an operator elects it or accepts the loss (samsa controller elect --unclean)",
		ErrCutRefused, from, mark, lineage)
}

// cut accounts for [from, to) cut from the log: what of it lay below the
// acknowledged mark was acknowledged by the group, lost from this replica
// (kept in lost+found by a TruncateTo, discarded by a reset), and is
// logged at Error; the mark comes down to the cut.
func (s *Slave) cut(from, to int64) error {
	var acked int64
	if m := s.cfg.Acked; m != nil {
		if mark := m.Value(); from < mark {
			acked = min(to, mark) - from
			s.lg.Error("ha: this replica cut messages its group acknowledged to follow the new master (elected without them: "+
				"an unclean election, or a replica back after the others moved on)", "from", from, "to", min(to, mark), "bytes", acked)
		}
		if err := m.Lower(from); err != nil {
			return err
		}
	}
	if s.cfg.OnCut != nil {
		s.cfg.OnCut(from, to, acked)
	}
	return nil
}
