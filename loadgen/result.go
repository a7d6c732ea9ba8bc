package loadgen

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/samsamq/samsa/internal/resultfile"
)

// Result is one run's outcome; it is what --json writes.
type Result struct {
	Driver       string         `json:"driver"`
	DriverConfig map[string]any `json:"driver_config,omitempty"`
	Workload     Workload       `json:"workload"`
	// Config is Workload.String(): every option that ran, on one line.
	Config string    `json:"config"`
	Start  time.Time `json:"start"`
	// OpenLoop says latencies are from intended send times (Rate > 0).
	OpenLoop        bool    `json:"open_loop"`
	MeasuredSeconds float64 `json:"measured_seconds"`
	// MeasuredFrom and MeasuredTo bound the window, [from, to): the
	// messages due in it are the figures.
	MeasuredFrom time.Time `json:"measured_from"`
	MeasuredTo   time.Time `json:"measured_to"`
	Sent         int64     `json:"sent"`
	Acked        int64     `json:"acked"`
	// Errors are failed sends plus Unsent.
	Errors int64 `json:"errors"`
	// Unsent are messages due in the window that a stalled producer had
	// not sent when its grace after the window (Drain) ran out
	// (ProducerGraceExpired); every other message due in the window was
	// sent and recorded, however late.
	Unsent               int64 `json:"unsent,omitempty"`
	ProducerGraceExpired bool  `json:"producer_grace_expired,omitempty"`
	// Received counts each message once per consumer group that got it.
	Received int64 `json:"received"`
	// Duplicates are redeliveries of a message its group already had: not
	// in Received, nor a second time in the e2e latency.
	Duplicates int64 `json:"duplicates"`
	// NeverReceived counts, per group, acknowledged messages that had not
	// arrived when the drain ended.
	NeverReceived int64 `json:"never_received"`
	// Foreign are deliveries that were not this run's messages (left in
	// the topic by another run): ignored.
	Foreign int64 `json:"foreign,omitempty"`
	// Drained is false when consumers had not caught up when Drain ran out.
	Drained        bool        `json:"drained"`
	MsgsPerSec     float64     `json:"msgs_per_sec"`
	MBPerSec       float64     `json:"mb_per_sec"`
	ConsumedPerSec float64     `json:"consumed_per_sec"`
	SendLatencyUs  Percentiles `json:"send_latency_us"`
	E2ELatencyUs   Percentiles `json:"e2e_latency_us"`
	// SendLagUs (open loop only) is how late each send was issued after
	// its intended time (timer granularity, scheduling, or a Send blocked
	// on a full in-flight window): a share of both latencies above.
	SendLagUs *Percentiles `json:"send_lag_us,omitempty"`
	// ServiceLatencyUs (open loop only) is the send latency from the
	// actual send, lag left out: what the system took to acknowledge
	// (OpenMessaging Benchmark's publish latency).
	ServiceLatencyUs *Percentiles `json:"service_latency_us,omitempty"`
	// SendHistogram and E2EHistogram are the whole window's histograms
	// (µs) in HdrHistogram's compressed V2 encoding, base64, as in its log
	// files: the percentile-spectrum charts read them.
	SendHistogram string `json:"send_histogram,omitempty"`
	E2EHistogram  string `json:"e2e_histogram,omitempty"`
	// ServiceHistogram and LagHistogram are the whole window's service
	// latency and schedule lag histograms, encoded the same way: a
	// share's (Options.Part, open loop), for the merge, and a merged
	// result's.
	ServiceHistogram string `json:"service_histogram,omitempty"`
	LagHistogram     string `json:"lag_histogram,omitempty"`
	// Share marks one share's result (Options.Part): a part of a
	// distributed run, whose figures are whole only once merged.
	Share bool `json:"share,omitempty"`
	// Deliveries is a share's record of the messages its producers had
	// acknowledged and its consumers received (Options.Part), for the
	// merge to count what never arrived and what arrived at two shares;
	// nil otherwise (a merged result's too).
	Deliveries []DeliverySet `json:"deliveries,omitempty"`
	// Workers are a distributed run's workers (loadgen/distrib), each
	// with its share's figures and its clock against the coordinator's;
	// ClockNote says what that means for the e2e latency.
	Workers   []WorkerShare `json:"workers,omitempty"`
	ClockNote string        `json:"clock_note,omitempty"`
	// Backlog is the backlog phase (Workload.BacklogBytes); nil without.
	Backlog *BacklogPhase `json:"backlog,omitempty"`
	// Intervals are the measured window's report intervals, in order:
	// rates, backlog and latencies of each (OpenMessaging Benchmark's
	// per-period figures).
	Intervals []Interval `json:"intervals,omitempty"`
	// Replication is the cluster's replication and its sampled lag (a
	// ReplicatedDriver's); nil without slaves.
	Replication *Replication `json:"replication,omitempty"`
	// Server is the server processes' open files and RSS at the end of the
	// measured window (procstats.go); nil when the driver cannot name
	// its server.
	Server *ServerStats `json:"server,omitempty"`
	// Machine is filled by the caller (kernel, CPU, disk, commit).
	Machine *resultfile.Machine `json:"machine,omitempty"`
}

// Histograms decodes SendHistogram and E2EHistogram (nil where absent).
func (r *Result) Histograms() (send, e2e *hdr.Histogram, err error) {
	dec := func(s string) (*hdr.Histogram, error) {
		if s == "" {
			return nil, nil
		}
		h, err := hdr.Decode([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("loadgen: result histogram: %w", err)
		}
		return h, nil
	}
	if send, err = dec(r.SendHistogram); err != nil {
		return nil, nil, err
	}
	e2e, err = dec(r.E2EHistogram)
	return send, e2e, err
}

// WriteJSON writes the result to path, indented.
func (r *Result) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Interval is one report interval of the measured window.
type Interval struct {
	Seconds     float64 `json:"seconds"`
	PublishRate float64 `json:"publish_rate"` // acknowledged msg/s
	PublishMBps float64 `json:"publish_mb_per_sec"`
	ErrorRate   float64 `json:"error_rate"` // failed sends/s
	ConsumeRate float64 `json:"consume_rate"`
	ConsumeMBps float64 `json:"consume_mb_per_sec"`
	// Backlog is acknowledged messages not yet received (all groups) at
	// the interval's end.
	Backlog   int64       `json:"backlog"`
	SendUs    Percentiles `json:"send_us"`
	ServiceUs Percentiles `json:"service_us"`
	LagUs     Percentiles `json:"lag_us"`
	E2EUs     Percentiles `json:"e2e_us"`
	// Share is a share's interval as the merge needs it (Options.Part);
	// nil otherwise.
	Share *IntervalShare `json:"share,omitempty"`
}

// IntervalShare is one share's report interval: its number on the grid
// every share's intervals follow (0 the window's first), its counts, and
// its histograms encoded as Result's.
type IntervalShare struct {
	Index    int    `json:"index"`
	Acked    int64  `json:"acked"`
	Failed   int64  `json:"failed"`
	Received int64  `json:"received"`
	Send     string `json:"send,omitempty"`
	Service  string `json:"service,omitempty"`
	Lag      string `json:"lag,omitempty"`
	E2E      string `json:"e2e,omitempty"`
}

// DeliverySet is one set of message sequence numbers of one producer
// (global index): the ones it had acknowledged (Group -1) or the ones
// group Group (topic × ConsumerGroups + group) received. Bits is the
// bitset, 64-bit little-endian words, DEFLATE-compressed, in base64 (as
// JSON carries []byte).
type DeliverySet struct {
	Group    int    `json:"group"`
	Producer int    `json:"producer"`
	Bits     []byte `json:"bits"`
}

// WorkerShare is one worker's part of a distributed run.
type WorkerShare struct {
	// Worker is its address as the coordinator named it; Host its host
	// name.
	Worker string `json:"worker"`
	Host   string `json:"host,omitempty"`
	// Producers and Consumers are how many of the run's it ran.
	Producers int `json:"producers"`
	Consumers int `json:"consumers"`
	// ClockOffsetUs is its clock minus the coordinator's, measured before
	// the run NTP-style (the sample with the smallest round trip of
	// several: offset = worker time − the request's midpoint), known to ±
	// half ClockRTTUs; ClockOffsetAfterUs is measured again after the
	// run: the difference is the drift over the run, which no correction
	// took out.
	ClockOffsetUs      float64 `json:"clock_offset_us"`
	ClockRTTUs         float64 `json:"clock_rtt_us"`
	ClockOffsetAfterUs float64 `json:"clock_offset_after_us"`
	// ClockAppliedUs is the offset the worker's stamps and window were
	// corrected by: ClockOffsetUs when it exceeds its uncertainty, else 0
	// (a correction within its own error would only add error).
	ClockAppliedUs float64 `json:"clock_applied_us"`
	// Its share's figures.
	Acked         int64        `json:"acked"`
	Received      int64        `json:"received"`
	Errors        int64        `json:"errors"`
	MsgsPerSec    float64      `json:"msgs_per_sec"`
	SendLatencyUs Percentiles  `json:"send_latency_us"`
	SendLagUs     *Percentiles `json:"send_lag_us,omitempty"`
	// E2ELatencyUs is of the messages its consumers received, from any
	// worker's producers.
	E2ELatencyUs Percentiles `json:"e2e_latency_us"`
}
