package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Replication settings of a cell (Cluster.Replication).
const (
	ReplicationNone  = "none"  // no slave
	ReplicationAsync = "async" // ASYNC_MASTER: sends never wait for slaves
	ReplicationSync  = "sync"  // SYNC_MASTER: a send waits for a slave
)

// Link methods (Cluster.LinkMethod; Replication.LinkMethod adds
// LinkLoopback for a link without delay).
const (
	LinkAuto     = "auto"
	LinkNetem    = "netem"
	LinkProxy    = "proxy"
	LinkLoopback = "loopback" // slaves dial the master's HA port directly
	LinkLive     = "live"     // a live cluster's own link: not set, not measured
)

// DefaultLagInterval is how often Run samples the replication lag during
// the measured window.
const DefaultLagInterval = 5 * time.Millisecond

// Replicated reports whether the cell runs slaves.
func (c Cluster) Replicated() bool {
	return c.Replication == ReplicationAsync || c.Replication == ReplicationSync
}

// Delayed reports whether the cell's replication link goes through a
// delay (a proxy or netem), rather than straight over loopback.
func (c Cluster) Delayed() bool {
	return c.Replicated() && (c.LinkDelayMs > 0 || c.LinkMethod == LinkNetem || c.LinkMethod == LinkProxy)
}

// LinkDelay is the one-way delay as a duration.
func (c Cluster) LinkDelay() time.Duration {
	return time.Duration(c.LinkDelayMs * float64(time.Millisecond))
}

// EnsureReplication fills the replication defaults (none; 1 slave when
// replicated; method auto for a delayed link) and reports every
// inconsistent setting at once.
func (c *Cluster) EnsureReplication(driver string) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch c.Replication {
	case "":
		c.Replication = ReplicationNone
	case ReplicationNone, ReplicationAsync, ReplicationSync:
	default:
		bad("replication %q: want none, async or sync", c.Replication)
	}
	if c.Replicated() {
		if driver == "nats" || driver == "redis" || driver == "rabbitmq" || driver == "kafka" {
			bad("replication %s: the %s driver runs no Samsa cluster", c.Replication, driver)
		}
		if c.Slaves == 0 {
			c.Slaves = 1
		}
		if c.Slaves < 0 {
			bad("slaves %d must be >= 1", c.Slaves)
		}
	} else if c.Slaves != 0 || c.LinkDelayMs != 0 || c.LinkMethod != "" || c.SlaveAckFlushed {
		bad("slaves, slave_ack_flushed, link_delay_ms and link_method need replication async or sync")
	}
	if c.LinkDelayMs < 0 {
		bad("link_delay_ms %v must be >= 0", c.LinkDelayMs)
	}
	switch c.LinkMethod {
	case "":
		if c.LinkDelayMs > 0 {
			c.LinkMethod = LinkAuto
		}
	case LinkAuto, LinkNetem, LinkProxy:
	default:
		bad("link_method %q: want auto, netem or proxy", c.LinkMethod)
	}
	return errors.Join(errs...)
}

// Replication is what a replicated cell's cluster ran and what was
// measured beside the load: the link and the slaves' lag.
type Replication struct {
	// Role is the master's brokerRole: ASYNC_MASTER or SYNC_MASTER.
	Role   string `json:"role"`
	Slaves int    `json:"slaves"`
	// Link is how the slaves reach the master's HA port: "loopback", or
	// the delay and its method ("2ms one-way (proxy)").
	Link string `json:"link"`
	// LinkMethod is loopback, proxy or netem: what ran, never what was
	// asked for.
	LinkMethod string `json:"link_method"`
	// LinkWhy says why that method ran (the experiment's choice, or what
	// made auto take the proxy).
	LinkWhy string `json:"link_why,omitempty"`
	// LinkRTTUs is the median round trip of 8-byte pings (linkdelay.Ping)
	// through a link of the same method and delay to an echo, measured
	// when the cell's cluster started; over loopback for LinkLoopback.
	LinkRTTUs float64 `json:"link_rtt_us"`
	// Lag is the slaves' replication lag sampled during the measured
	// window; nil when not measured (LagNote says why).
	Lag     *ReplicationLag `json:"lag,omitempty"`
	LagNote string          `json:"lag_note,omitempty"`
}

// ReplicationLag is the sampled lag: every sample records, for each
// slave, how long ago the master's handed offset passed the slave's
// acknowledged offset (0 when caught up) and how many bytes it is behind.
//
// The time is the sampler's own estimate, not the master's LagTime (which
// package ha keeps at a 100 ms resolution, erring upwards): the sampler
// remembers the handed offset at each sample and interpolates between the
// two samples around the acknowledged offset, so its error is within one
// Interval. A slave behind everything the sampler remembers gets the
// master's figure.
type ReplicationLag struct {
	// Source names where the samples came from.
	Source      string        `json:"source"`
	Interval    time.Duration `json:"interval"`
	Samples     int64         `json:"samples"`
	Errors      int64         `json:"errors"`
	TimeUs      Percentiles   `json:"time_us"`
	BehindBytes Percentiles   `json:"behind_bytes"`
	// MasterTimeUs is the master's own LagTime, for comparison.
	MasterTimeUs Percentiles `json:"master_time_us"`
}

// LagReading is one look at a master: its handed offset and where each
// slave stands.
type LagReading struct {
	Handed int64
	Slaves []SlaveLag
}

// SlaveLag is one slave as its master reports it.
type SlaveLag struct {
	Slave string
	// Ack is the CommitLog offset the slave acknowledged.
	Ack int64
	// MasterTime is the master's own lag figure (ha's LagTime).
	MasterTime time.Duration
}

// LagProbe reads a master's replication state now. Called from one
// goroutine at a time.
type LagProbe interface {
	// Source describes the probe for the result ("embedded: the master's
	// Broker.Slaves()"; "stats ha").
	Source() string
	Read(ctx context.Context) (LagReading, error)
}

// ReplicatedDriver is a Driver whose cluster replicates. Run records its
// Replication in the result and, with a probe, samples the lag every
// DefaultLagInterval during the measured window.
type ReplicatedDriver interface {
	Driver
	// Replication is the cluster's replication (nil: none) and a probe of
	// its lag (nil: not measured; Replication.LagNote says why).
	Replication() (*Replication, LagProbe)
}

// maxHandedMarks bounds the handed-offset history (20 s at 5 ms).
const maxHandedMarks = 4096

// handedMark is the master's handed offset at a sample.
type handedMark struct {
	at     time.Time
	handed int64
}

// LagSampler records a LagProbe's figures into HDR histograms: from
// StartLagSampler, on its own goroutine (woken by a ticker, stopped by
// Stop), until Stop. It remembers the handed offset from its start but
// records figures only while measuring (SetMeasuring), so a run starts
// it with the warm-up: the first measured samples then find the offsets
// they need in its history.
type LagSampler struct {
	probe     LagProbe
	interval  time.Duration
	now       func() time.Time
	cancel    context.CancelFunc
	done      chan struct{}
	marks     []handedMark // owned by the sampling goroutine
	measuring atomic.Bool
	samples   atomic.Int64
	errors    atomic.Int64
	mu        sync.Mutex // guards the histograms: the goroutine and Stop
	timeUs    *hdr.Histogram
	masterUs  *hdr.Histogram
	behind    *hdr.Histogram
}

// NewLagSampler returns a sampler that is not running, measuring: call
// sample to take one, or StartLagSampler.
func NewLagSampler(p LagProbe, interval time.Duration) *LagSampler {
	s := &LagSampler{probe: p, interval: interval, now: time.Now, done: make(chan struct{}),
		timeUs: newHist(), masterUs: newHist(), behind: hdr.New(1, 1<<42, 3)}
	s.measuring.Store(true)
	return s
}

// SetMeasuring starts or stops recording figures; the handed offsets'
// history is kept either way.
func (s *LagSampler) SetMeasuring(on bool) { s.measuring.Store(on) }

// StartLagSampler samples p every interval until Stop; it records
// figures once SetMeasuring(true).
func StartLagSampler(ctx context.Context, p LagProbe, interval time.Duration) *LagSampler {
	s := NewLagSampler(p, interval)
	s.measuring.Store(false)
	ctx, s.cancel = context.WithCancel(ctx)
	go s.loop(ctx)
	return s
}

func (s *LagSampler) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample takes one reading: every slave is one value in each histogram.
func (s *LagSampler) sample(ctx context.Context) {
	r, err := s.probe.Read(ctx)
	now := s.now()
	if err != nil {
		if ctx.Err() == nil {
			s.errors.Add(1)
		}
		return
	}
	if n := len(s.marks); n == 0 || r.Handed >= s.marks[n-1].handed {
		if n == maxHandedMarks {
			s.marks = append(s.marks[:0], s.marks[n/2:]...)
		}
		s.marks = append(s.marks, handedMark{now, r.Handed})
	}
	if !s.measuring.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range r.Slaves {
		lag, ok := s.lagOf(sl.Ack, r.Handed, now)
		if !ok {
			lag = sl.MasterTime
		}
		recordClamped(s.timeUs, lag.Microseconds())
		recordClamped(s.masterUs, sl.MasterTime.Microseconds())
		recordClamped(s.behind, r.Handed-sl.Ack)
	}
	s.samples.Add(1)
}

// lagOf is how long before now the handed offset passed ack, from the
// remembered marks, interpolated between the last mark at or below ack
// and the first above it; false when ack is below every mark.
func (s *LagSampler) lagOf(ack, handed int64, now time.Time) (time.Duration, bool) {
	if ack >= handed {
		return 0, true
	}
	j := sort.Search(len(s.marks), func(i int) bool { return s.marks[i].handed > ack })
	if j == 0 || j == len(s.marks) {
		return 0, false
	}
	a, b := s.marks[j-1], s.marks[j]
	frac := float64(ack-a.handed) / float64(b.handed-a.handed)
	passed := a.at.Add(time.Duration(frac * float64(b.at.Sub(a.at))))
	return max(now.Sub(passed), 0), true
}

func recordClamped(h *hdr.Histogram, v int64) {
	_ = h.RecordValue(min(max(v, 0), h.HighestTrackableValue()))
}

// Stop ends a started sampler (waiting for its goroutine) and returns
// what it recorded; on a sampler never started it only summarizes.
func (s *LagSampler) Stop() *ReplicationLag {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &ReplicationLag{Source: s.probe.Source(), Interval: s.interval, Samples: s.samples.Load(),
		Errors: s.errors.Load(), TimeUs: Summarize(s.timeUs), BehindBytes: Summarize(s.behind),
		MasterTimeUs: Summarize(s.masterUs)}
}
