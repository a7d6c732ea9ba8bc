// Package repair mends a replica's damaged CommitLog ranges from a healthy
// copy. Replicas hold byte-identical logs, so a record a read quarantined,
// or the scrubber found bad, can be fetched whole from a peer replica that
// holds it intact (its master, or, on a master, its slaves) and written
// back at its offset (storage.Store.RepairRange). Until every damaged
// range is repaired the broker reports itself damaged to the fail-over
// controller, which elects no damaged replica while an undamaged one is
// alive; a pull that reaches a damaged record waits for the repair
// (Pending) instead of moving past it, unless no peer can supply it.
//
// A Repairer is a loop of its own: woken by Kick (a read found damage),
// by new damaged ranges (a restart's verification, the scrubber), or every
// Config.Interval, it lists Store.Damaged and tries each range on each
// peer in turn: the current ones, then those it was given before (a group
// without a master leaves its slaves none current). A range that every peer failed to supply
// Config.MaxAttempts rounds in a row over Config.GiveUpAfter is given up
// (Status.Unrepairable): reads may then move past its records, and it is
// logged at Error; it is still tried once every GiveUpAfter, and repaired
// when a peer supplies it. Safe for concurrent use.
package repair

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/samsamq/samsa/storage"
)

// Store is what the repairer needs of the log. *storage.Store has it.
type Store interface {
	// Damaged lists the ranges known bad.
	Damaged() []storage.DamagedRange
	// RepairRange writes a healthy copy of [from, from+len(data)) back.
	RepairRange(from int64, data []byte) error
}

// Config is what a Repairer needs.
type Config struct {
	Store Store
	// Peers returns the remoting addresses of the replicas that may hold
	// a healthy copy now (the master; a master's linked slaves).
	Peers func() []string
	// Fetch asks the replica at addr for its log's whole records from
	// `from` up to `to` (at most to-from bytes).
	Fetch func(ctx context.Context, addr string, from, to int64) ([]byte, error)
	// Interval between rounds when nothing kicks (default 5 s).
	Interval time.Duration
	// MaxAttempts and GiveUpAfter: a range every peer failed this many
	// rounds in a row, over at least this long, is given up (defaults 5
	// and 15 s): kicked rounds come fast, and a peer may be restarting.
	MaxAttempts int
	GiveUpAfter time.Duration
	// Timeout bounds one fetch (default 10 s).
	Timeout time.Duration
	// Remember is how many addresses Peers returned before (most recent
	// first) are still asked after the ones it returns now (default 8): a
	// group that lost its master leaves its slaves no current peer, yet
	// each may hold what the other lacks.
	Remember int
	// Watch is how often the loop looks for newly damaged ranges between
	// rounds (default 250 ms): damage a restart's verification or the
	// scrubber finds is fetched at once, not a whole Interval later.
	Watch  time.Duration
	Logger *slog.Logger
}

// Repairer is the loop; see the package doc.
type Repairer struct {
	cfg  Config
	kick chan struct{}
	mu   struct {
		sync.Mutex
		attempts map[int64]int       // range start → failed rounds in a row
		since    map[int64]time.Time // range start → its first failure of the streak
		last     map[int64]time.Time // range start → its last attempt
		known    []string            // addresses Peers returned, most recent first (Remember)
		repaired int64               // ranges repaired since start
		lastErr  string
	}
}

// New checks cfg and returns a Repairer (not yet running).
func New(cfg Config) (*Repairer, error) {
	if cfg.Store == nil || cfg.Peers == nil || cfg.Fetch == nil {
		return nil, errors.New("repair: Store, Peers and Fetch are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.GiveUpAfter <= 0 {
		cfg.GiveUpAfter = 15 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Remember <= 0 {
		cfg.Remember = 8
	}
	if cfg.Watch <= 0 {
		cfg.Watch = 250 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Repairer{cfg: cfg, kick: make(chan struct{}, 1)}
	r.mu.attempts, r.mu.since, r.mu.last = map[int64]int{}, map[int64]time.Time{}, map[int64]time.Time{}
	return r, nil
}

// Kick asks for a round now (a read found damage).
func (r *Repairer) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run is the loop; it returns when stop closes.
func (r *Repairer) Run(stop <-chan struct{}) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	w := time.NewTicker(r.cfg.Watch)
	defer w.Stop()
	seen := 0 // damaged ranges at the last look
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-r.kick:
		case <-w.C:
			n := len(r.cfg.Store.Damaged())
			grew := n > seen
			seen = n
			if !grew {
				continue
			}
		}
		r.Round()
	}
}

// peers are the addresses to ask, in order: what Config.Peers says now,
// then the others it said before (Config.Remember of them).
func (r *Repairer) peers() []string {
	cur := r.cfg.Peers()
	r.mu.Lock()
	defer r.mu.Unlock()
	known := append(slices.Clone(cur), r.mu.known...)
	known = uniq(known)
	if len(known) > r.cfg.Remember {
		known = known[:r.cfg.Remember]
	}
	r.mu.known = known
	return slices.Clone(known)
}

// uniq drops later repeats of an address, keeping the order.
func uniq(addrs []string) []string {
	seen := make(map[string]bool, len(addrs))
	out := addrs[:0]
	for _, a := range addrs {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// Round tries every damaged range once on each peer and returns how many
// it repaired.
func (r *Repairer) Round() int {
	damaged := r.cfg.Store.Damaged()
	if len(damaged) == 0 {
		return 0
	}
	peers := r.peers()
	n := 0
	for _, d := range damaged {
		if !r.due(d.From) {
			continue
		}
		err := r.repairOne(d, peers)
		r.mu.Lock()
		wasGivenUp := r.givenUpLocked(d.From)
		r.mu.last[d.From] = time.Now()
		if err == nil {
			delete(r.mu.attempts, d.From)
			delete(r.mu.since, d.From)
			delete(r.mu.last, d.From)
			r.mu.repaired++
			n++
		} else {
			if r.mu.attempts[d.From] == 0 {
				r.mu.since[d.From] = time.Now()
			}
			r.mu.attempts[d.From]++
			r.mu.lastErr = err.Error()
			if !wasGivenUp && r.givenUpLocked(d.From) {
				r.cfg.Logger.Error("repair: no peer could supply a damaged range; reads will move past its records (tried again every "+
					r.cfg.GiveUpAfter.String()+")", "from", d.From, "to", d.To, "why", d.Why, "err", err)
			}
		}
		r.mu.Unlock()
	}
	return n
}

// due: the range at from is tried this round. A range given up is still
// tried, once every GiveUpAfter: a peer may come back, and a range in the
// log's active segment (storage.ErrNotRepairable) becomes repairable once
// the segment is sealed and durable; until it is, the replica stays
// damaged (not elected cleanly).
func (r *Repairer) due(from int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.givenUpLocked(from) || time.Since(r.mu.last[from]) >= r.cfg.GiveUpAfter
}

func (r *Repairer) repairOne(d storage.DamagedRange, peers []string) error {
	if len(peers) == 0 {
		return fmt.Errorf("repair [%d, %d): no peer replica to fetch from", d.From, d.To)
	}
	var errs []error
	for _, p := range peers {
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
		data, err := r.cfg.Fetch(ctx, p, d.From, d.To)
		cancel()
		if err == nil && int64(len(data)) != d.To-d.From {
			err = fmt.Errorf("%d bytes for a %d-byte range (record boundaries differ: not a copy of this log)", len(data), d.To-d.From)
		}
		if err == nil {
			err = r.cfg.Store.RepairRange(d.From, data)
		}
		if err == nil {
			r.cfg.Logger.Warn("repair: damaged range repaired from a peer's copy", "from", d.From, "to", d.To, "peer", p, "why", d.Why)
			return nil
		}
		errs = append(errs, fmt.Errorf("peer %s: %w", p, err))
	}
	return fmt.Errorf("repair [%d, %d): %w", d.From, d.To, errors.Join(errs...))
}

func (r *Repairer) givenUp(from int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.givenUpLocked(from)
}

func (r *Repairer) givenUpLocked(from int64) bool {
	return r.mu.attempts[from] >= r.cfg.MaxAttempts && time.Since(r.mu.since[from]) >= r.cfg.GiveUpAfter
}

// Pending reports whether the damaged record at phys may still be
// repaired: there is a peer to ask and the range is not given up. A read
// should wait for it rather than move past it.
func (r *Repairer) Pending(phys int64) bool {
	if len(r.peers()) == 0 {
		return false
	}
	for _, d := range r.cfg.Store.Damaged() {
		if phys >= d.From && phys < d.To {
			return !r.givenUp(d.From)
		}
	}
	return false
}

// Status is what the repairer reports.
type Status struct {
	Damaged      int    // ranges known bad now
	Unrepairable int    // of those, given up
	Repaired     int64  // ranges repaired since start
	LastErr      string // the last failed attempt's error
}

// Status returns the repairer's state.
func (r *Repairer) Status() Status {
	d := r.cfg.Store.Damaged()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := Status{Damaged: len(d), Repaired: r.mu.repaired, LastErr: r.mu.lastErr}
	for _, x := range d {
		if r.givenUpLocked(x.From) {
			st.Unrepairable++
		}
	}
	return st
}
