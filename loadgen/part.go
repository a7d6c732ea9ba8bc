package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/internal/lab"
)

// Part makes Run run one share of a workload spread over several processes
// (loadgen/distrib: a coordinator and its workers). Every share runs the
// same Workload with the same run Tag; each runs the producers and
// consumers named here, with global indices, so a message's header names
// its producer uniquely across the shares and any share's consumer can
// tell deliveries apart. Merge joins the shares' results.
//
// Times: a share's stamps, window and result times are on the
// coordinator's clock, this process's clock less ClockOffset, so a
// consumer's e2e latency subtracts a producer's stamp made on another host
// on the same (corrected) clock. It is only as good as the offset's
// measurement and the clocks' drift over the run.
//
// The course: Run makes the topics (CreateTopics), the consumers and the
// producers, then calls Ready, which returns the start time all shares
// share (a barrier). Production starts then, the window opens Warmup
// later and lasts Duration exactly: the same wall-clock window on every
// share. Report intervals tick on a grid from the window's start, so the
// shares' intervals line up. Once this share's producers are done, Run
// calls Drained, which returns when the consumers should stop (every
// share's deliveries are in, or the drain ran out). The backlog phase
// needs the shares' counts together and is refused.
//
// Counts may be called from any goroutine while Run runs.
type Part struct {
	// Tag is the run tag every share stamps in its payloads.
	Tag uint16
	// Producers are the global indices (topic × Producers + i) of the
	// producers this share runs, ascending; producer p sends to topic
	// p / Producers.
	Producers []int
	// Consumers are the consumers this share runs.
	Consumers []ConsumerSlot
	// CreateTopics: this share makes the topics (one share does, before
	// the others prepare).
	CreateTopics bool
	// ClockOffset is this process's clock minus the coordinator's.
	ClockOffset time.Duration
	// Payload, if set, is the payload file's bytes (read by the
	// coordinator; a share reads no files), cut or repeated to MessageSize.
	Payload []byte
	// Ready is called once the producers and consumers exist; it returns
	// the start time on the coordinator's clock, or an error that ends the
	// run.
	Ready func(ctx context.Context) (time.Time, error)
	// Drained is called once this share's producers are done; it returns
	// when the consumers should stop, with whether every share's
	// acknowledged messages had arrived (Result.Drained).
	Drained func(ctx context.Context) bool

	live atomic.Pointer[run]
}

// ConsumerSlot names one consumer of a workload: member Member of group
// Group (0 to ConsumerGroups-1) on topic Topic.
type ConsumerSlot struct {
	Topic  int `json:"topic"`
	Group  int `json:"group"`
	Member int `json:"member"`
}

// Counts are a run's counters so far.
type Counts struct {
	Sent     int64 `json:"sent"`
	Acked    int64 `json:"acked"`
	Failed   int64 `json:"failed"`
	Unsent   int64 `json:"unsent"`
	Received int64 `json:"received"`
}

// Counts are the share's counters so far; zero before Run has begun.
func (p *Part) Counts() Counts {
	r := p.live.Load()
	if r == nil {
		return Counts{}
	}
	return Counts{Sent: r.c.sent.Load(), Acked: r.c.acked.Load(), Failed: r.c.failed.Load(),
		Unsent: r.c.unsent.Load(), Received: r.c.received.Load()}
}

// Split divides w's producers and consumers over n shares in one
// rotation: producer p (global index topic × Producers + i) goes to share
// p mod n, then consumer c (global index (topic × ConsumerGroups + group)
// × Consumers + member) to share (topics × Producers + c) mod n. Each
// share's lists are ascending; a share may get none of either when there
// are fewer than n of them.
func Split(w *Workload, n int) (producers [][]int, consumers [][]ConsumerSlot) {
	producers, consumers = make([][]int, n), make([][]ConsumerSlot, n)
	np := w.Topics * w.Producers
	for p := range np {
		producers[p%n] = append(producers[p%n], p)
	}
	for c, s := range allConsumers(w) {
		consumers[(np+c)%n] = append(consumers[(np+c)%n], s)
	}
	return producers, consumers
}

// allConsumers are w's consumers in global order (none without consumers).
func allConsumers(w *Workload) []ConsumerSlot {
	if w.NoConsumers {
		return nil
	}
	var out []ConsumerSlot
	for t := range w.Topics {
		for g := range w.ConsumerGroups {
			for m := range w.Consumers {
				out = append(out, ConsumerSlot{Topic: t, Group: g, Member: m})
			}
		}
	}
	return out
}

// validate checks the share against its (defaulted, valid) workload.
func (p *Part) validate(w *Workload) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if p.Ready == nil || p.Drained == nil {
		bad("a share needs its Ready and Drained")
	}
	if w.BacklogBytes > 0 {
		bad("a backlog phase needs every share's counts at once: not supported over several processes")
	}
	if w.PayloadFile != "" && p.Payload != nil {
		bad("a share takes its payload from the coordinator, not from a file")
	}
	if p.Payload != nil && len(p.Payload) == 0 {
		bad("a share's payload is empty")
	}
	prev := -1
	for _, id := range p.Producers {
		if id <= prev || id >= w.Topics*w.Producers {
			bad("share producer %d: out of range (0 to %d) or not ascending", id, w.Topics*w.Producers-1)
			break
		}
		prev = id
	}
	if len(p.Consumers) > 0 && w.NoConsumers {
		bad("a share with consumers in a produce-only workload")
	}
	seen := map[ConsumerSlot]bool{}
	for _, s := range p.Consumers {
		if s.Topic < 0 || s.Topic >= w.Topics || s.Group < 0 || s.Group >= w.ConsumerGroups ||
			s.Member < 0 || s.Member >= w.Consumers || seen[s] {
			bad("share consumer %+v: out of range or repeated", s)
			break
		}
		seen[s] = true
	}
	return errors.Join(errs...)
}

// startPart waits at the barrier: it returns Ready's start time on this
// clock once it has come. The window is fixed from then, the same on
// every share, and the recorders keep samples from then: each sample
// is of a message due in the window (inWindow decides), so the warm-up
// adds none and no sample at the window's edges waits on this goroutine's
// wake-up.
func (r *run) startPart(ctx context.Context) (time.Time, error) {
	at, err := r.part.Ready(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("loadgen: share not started: %w", err)
	}
	start := time.Now().Add(time.Until(at.Add(r.part.ClockOffset))) // with a monotonic reading
	// The window from the coordinator's time itself: every share's is
	// the same to the nanosecond.
	r.partStart = at
	from := at.UnixNano() + int64(r.w.Warmup)
	r.window.from.Store(from)
	r.window.to.Store(from + int64(r.w.Duration))
	for _, rec := range []*Recorder{r.send, r.svc, r.e2e, r.lag} {
		rec.SetMeasuring(true)
	}
	_ = lab.Sleep(ctx, time.Until(start))
	return start, ctx.Err()
}
