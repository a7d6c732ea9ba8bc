package storage

import "time"

// gatherer keeps closed-loop writers in one group-commit cohort.
//
// Without it a round starts the moment the previous one released its
// waiters: it takes only the appends that arrived during the previous
// fsync, while the writers just released are still on their way back. With
// W closed-loop writers the rounds settle into two alternating cohorts of
// W/2, and every fsync carries half of what it could. Before a round the
// flusher therefore waits, briefly, until as many appends wait as the
// previous round saw writers (released plus already waiting again),
// bounded by Flush.MaxGather and half the last fsync: a wait never costs
// more than half a round.
//
// Open-loop traffic does not come back on release; a wait that ends
// unfilled with fewer than half of the missing appends arrived makes the
// next rounds skip gathering, twice as many after each such miss (up to
// maxGatherBackoff), so that traffic pays at most a bounded share of
// rounds. A wait that ends with most of them arrived is closed-loop
// writers with a few slow ones, and the next round gathers again. Only the flusher goroutine uses a gatherer.
type gatherer struct {
	s       *Store
	max     time.Duration
	timer   *time.Timer
	want    int64         // writers seen by the last round
	last    time.Duration // the last flush's duration
	skip    int           // rounds left to skip after a miss
	backoff int           // the current skip length
}

const maxGatherBackoff = 64

func newGatherer(s *Store) *gatherer {
	if s.opts.Flush.MaxGather < 0 {
		return nil
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &gatherer{s: s, max: s.opts.Flush.MaxGather, timer: t}
}

// observe records a round: released waiters, those already waiting when it
// released them, and how long its flush took.
func (g *gatherer) observe(released, waiting int64, flush time.Duration) {
	g.want = released + waiting
	g.last = flush
}

// wait holds the next round until g.want appends wait, the bound passes,
// MaxBatchBytes bytes wait, or the store closes.
func (g *gatherer) wait() {
	s := g.s
	if n := s.pendingN.Load(); n == 0 || g.want <= 1 || n >= g.want {
		return
	}
	if g.skip > 0 {
		g.skip--
		return
	}
	bound := min(g.max, g.last/2)
	if bound <= 0 {
		return
	}
	maxBytes := s.opts.Flush.MaxBatchBytes
	start := time.Now()
	deadline := start.Add(bound)
	n0, n := s.pendingN.Load(), int64(0)
	s.m.gathers.Add(1)
	defer func() { s.m.gatherNanos.Add(int64(time.Since(start))) }()
	for n = s.pendingN.Load(); n < g.want; n = s.pendingN.Load() {
		if maxBytes > 0 && s.written.Load()-s.durable.Load() >= maxBytes {
			break
		}
		d := time.Until(deadline)
		if d <= 0 {
			s.m.gatherMisses.Add(1)
			if 2*(n-n0) >= g.want-n0 {
				// Most of the missing writers came: closed-loop writers,
				// a few of them slower. Keep gathering.
				g.backoff = 0
				return
			}
			g.backoff = min(max(1, 2*g.backoff), maxGatherBackoff)
			g.skip = g.backoff
			return
		}
		g.timer.Reset(d)
		select {
		case <-g.timer.C:
		case <-s.flushKick: // one more append: count again
			g.timer.Stop()
		case <-s.stop.flusher:
			g.timer.Stop()
			return
		}
	}
	g.backoff = 0
}
