package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen/killloop"
)

// Percentiles of a set of times, in ms (HdrHistogram, 3 significant
// digits, 1 ms to 1 h).
type Percentiles struct {
	N   int64   `json:"n"`
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

func percentilesOf(ms []float64) Percentiles {
	h := hdrhistogram.New(1, int64(time.Hour/time.Millisecond), 3)
	for _, v := range ms {
		_ = h.RecordValue(min(max(int64(v+0.5), 1), h.HighestTrackableValue()))
	}
	return Percentiles{N: h.TotalCount(), P50: float64(h.ValueAtQuantile(50)), P90: float64(h.ValueAtQuantile(90)),
		P99: float64(h.ValueAtQuantile(99)), Max: float64(h.Max())}
}

// Result is a chaos run's record and verdict.
type Result struct {
	resultfile.Header
	Config string        `json:"config"`
	Seed   uint64        `json:"seed"`
	Cycles []CycleResult `json:"cycles"`
	// Tally is the ledger's verdict: sent, acknowledged, stored, lost,
	// duplicates, acked_offsets_reassigned (offsets shared).
	killloop.Tally
	// Consumed counts the messages the final read-back read.
	Consumed      int64    `json:"consumed"`
	ReadBackShort []string `json:"read_back_short,omitempty"`
	Order         Order    `json:"order"`
	// TwoMasters are the epochs in which two brokers claimed the master
	// role, from RoleSamples samples.
	TwoMasters  []Conflict `json:"two_masters"`
	RoleSamples int        `json:"role_samples"`
	// RTO is Cycles' RecoveryMs by fault kind, GapMs the longest send
	// gap by fault kind (the judge of a controller leader's loss).
	RTO            map[string]Percentiles `json:"rto_by_fault"`
	GapMs          map[string]float64     `json:"longest_gap_ms_by_fault"`
	ElapsedSeconds float64                `json:"elapsed_seconds"`
	Dir            string                 `json:"dir,omitempty"`
}

// judge fills the verdict from the ledger (whose Final holds the
// read-back), the acknowledgements and the role samples.
func (res *Result) judge(l *killloop.Ledger, consumed int64, short []string, acks []Ack, samples []RoleSample) {
	res.Tally = l.Tally()
	res.Consumed, res.ReadBackShort = consumed, short
	res.Order = OutOfOrder(l.Found())
	res.TwoMasters, res.RoleSamples = TwoMasters(samples), len(samples)
	by := map[string][]float64{}
	res.GapMs = map[string]float64{}
	for _, c := range res.Cycles {
		by[c.Fault] = append(by[c.Fault], c.RecoveryMs)
		res.GapMs[c.Fault] = max(res.GapMs[c.Fault], c.GapMs)
	}
	res.RTO = map[string]Percentiles{}
	for f, v := range by {
		res.RTO[f] = percentilesOf(v)
	}
}

// Met says whether the run met the chaos checker's safety targets: nothing
// acknowledged lost, no acknowledged offset holding another message at
// the end, no two masters in one epoch.
func (res *Result) Met() bool {
	return res.Lost == 0 && res.AckedReassigned == 0 && len(res.TwoMasters) == 0
}

// Summary is one line for the progress output.
func (res *Result) Summary() string {
	return fmt.Sprintf("chaos: %d cycles: sent %d, acked %d, consumed %d, lost %d, duplicates %d, out of order %d, acked offsets shared %d, two masters %d (%d role samples); met: %v",
		len(res.Cycles), res.Sent, res.Acked, res.Consumed, res.Lost, res.Duplicates, res.Order.OutOfOrder,
		res.AckedReassigned, len(res.TwoMasters), res.RoleSamples, res.Met()) + shortNote(res.ReadBackShort)
}

// shortNote names the queues the read-back could not read to the end
// (a queue whose start was deleted reads as lost): "" when none.
func shortNote(short []string) string {
	if len(short) == 0 {
		return ""
	}
	return "; read-back short: " + strings.Join(short, "; ")
}

// WriteResult writes res as <dir>/<host>-<UTC start>.json (dir made if
// missing) and returns the path.
func WriteResult(dir string, res *Result) (string, error) {
	return res.WriteResultIn(dir, res)
}

// faultsOf lists the fault kinds of res in AllFaults' order.
func (res *Result) faultsOf() []string {
	var out []string
	for _, f := range AllFaults {
		if _, ok := res.RTO[f]; ok {
			out = append(out, f)
		}
	}
	for f := range res.RTO {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}
