package loadgen

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/internal/lab"
)

// BacklogPhase is what a run's backlog phase did (Workload.BacklogBytes),
// in OpenMessaging Benchmark's terms: the consumers stop, a backlog
// builds, the consumers drain it while production goes on.
type BacklogPhase struct {
	// Bytes is the backlog asked for; Messages the backlog (messages, all
	// groups) when the consumers resumed.
	Bytes    int64 `json:"bytes"`
	Messages int64 `json:"messages"`
	// BuildSeconds is how long it took to build; DrainSeconds how long the
	// consumers took to bring it down to the drain level.
	BuildSeconds float64 `json:"build_seconds"`
	DrainSeconds float64 `json:"drain_seconds,omitempty"`
	// DrainMsgsPerSec and DrainMBPerSec are what the consumers received
	// per second over the drain (the backlog and what was produced
	// meanwhile).
	DrainMsgsPerSec float64 `json:"drain_msgs_per_sec,omitempty"`
	DrainMBPerSec   float64 `json:"drain_mb_per_sec,omitempty"`
	// Drained: the backlog came down to the level within BacklogTimeout.
	// TimedOut names the step that ran out of it ("build" or "drain").
	Drained  bool   `json:"drained"`
	TimedOut string `json:"timed_out,omitempty"`
}

// gate holds the consumers' handlers while closed (the backlog build).
// Open, it costs a handler one atomic load.
type gate struct{ held atomic.Pointer[chan struct{}] }

// close makes handlers wait until open.
func (g *gate) close() {
	ch := make(chan struct{})
	g.held.CompareAndSwap(nil, &ch)
}

// open releases every waiting handler; it may be called when open.
func (g *gate) open() {
	if ch := g.held.Swap(nil); ch != nil {
		close(*ch)
	}
}

// wait returns once the gate is open.
func (g *gate) wait() {
	if ch := g.held.Load(); ch != nil {
		<-*ch
	}
}

// backlog is the messages acknowledged and not yet received, over every
// group.
func (r *run) backlog() int64 {
	return int64(r.w.ConsumerGroups)*r.c.acked.Load() - r.c.received.Load()
}

// measure is the measured window's course: Duration, or with a backlog
// phase, build, drain, then Duration. It returns the phase (nil without
// one) when the window should close, or ctx ends.
func (r *run) measure(ctx context.Context) *BacklogPhase {
	w := r.w
	if w.BacklogBytes <= 0 {
		_ = lab.Sleep(ctx, w.Duration) // ctx ending ends the window early, as Run says
		return nil
	}
	bp := &BacklogPhase{Bytes: w.BacklogBytes}
	want := (w.BacklogBytes + int64(w.MessageSize) - 1) / int64(w.MessageSize)
	r.gate.close()
	defer r.gate.open()
	t0 := time.Now()
	built := r.waitUntil(ctx, t0.Add(w.BacklogTimeout), func() bool { return r.backlog() >= want })
	bp.BuildSeconds, bp.Messages = time.Since(t0).Seconds(), r.backlog()
	if !built {
		if ctx.Err() == nil {
			bp.TimedOut = "build"
		}
		return bp
	}
	recv0 := r.c.received.Load()
	r.gate.open()
	t1 := time.Now()
	level := max(1000, int64((1-w.BacklogDrainRatio)*float64(want)))
	drained := r.waitUntil(ctx, t1.Add(w.BacklogTimeout), func() bool { return r.backlog() <= level })
	bp.DrainSeconds = time.Since(t1).Seconds()
	if bp.DrainSeconds > 0 {
		bp.DrainMsgsPerSec = float64(r.c.received.Load()-recv0) / bp.DrainSeconds
		bp.DrainMBPerSec = bp.DrainMsgsPerSec * float64(w.MessageSize) / 1e6
	}
	if !drained {
		if ctx.Err() == nil {
			bp.TimedOut = "drain"
		}
		return bp
	}
	bp.Drained = true
	_ = lab.Sleep(ctx, w.Duration) // ctx ending ends the window early, as Run says
	return bp
}

// waitUntil polls cond every 100 ms until it holds (true), deadline
// passes or ctx ends (false).
func (r *run) waitUntil(ctx context.Context, deadline time.Time, cond func() bool) bool {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}
