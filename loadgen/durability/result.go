package durability

import (
	"math"
	"sort"
	"time"

	"github.com/samsamq/samsa/loadgen/killloop"
)

// Result is one kill loop's outcome.
type Result struct {
	// Config is Options.String(): everything that ran, on one line.
	Config string `json:"config"`
	// Seed replays the kill moments.
	Seed uint64 `json:"seed"`
	// Durability is the store's level for the configuration (memory,
	// process-crash, power-loss) and DurabilityNote its statement, from
	// storage.Options.
	Durability     string `json:"durability"`
	DurabilityNote string `json:"durability_note"`
	// BrokerDurability is the level the running broker states in its
	// stats (store_durability); "" from a broker that states none. The
	// target follows it when it is there.
	BrokerDurability string `json:"broker_durability,omitempty"`
	// Kills counts the SIGKILL cycles run; TermCycle says a SIGTERM cycle
	// followed them.
	Kills     int  `json:"kills"`
	TermCycle bool `json:"term_cycle"`
	killloop.Tally
	// LostInTerm counts losses acknowledged by the incarnation stopped
	// with SIGTERM (must be 0 at every durability level).
	LostInTerm int64 `json:"lost_in_term"`
	// KillsWithLoss counts kill cycles that lost at least one message.
	KillsWithLoss int `json:"kills_with_loss"`
	// RecoveryMs is the kill cycles' recovery time: restart to the first
	// acknowledged send (process start, store recovery, registration, the
	// client's next route refresh and retry).
	RecoveryMs Stats `json:"recovery_ms"`
	// TermRecoveryMs is the SIGTERM cycle's.
	TermRecoveryMs float64 `json:"term_recovery_ms,omitempty"`
	// Cycles has one entry per cycle.
	Cycles []Cycle `json:"cycles"`
	// ReadBackShort notes queues the read-back could not read to the end.
	ReadBackShort []string `json:"read_back_short,omitempty"`
	// SegmentFiles counts the CommitLog files at the end (did it roll?).
	SegmentFiles   int     `json:"segment_files"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Dir is the kept data dir ("" when removed).
	Dir string `json:"dir,omitempty"`
	// Replication is the replication loop's outcome (Options.Role set);
	// nil for the one-broker loop. The Tally above is then the last read
	// of the slave, after it caught up.
	Replication *ReplicationResult `json:"replication,omitempty"`
}

// Cycle is one stop and restart of the broker.
type Cycle struct {
	// Signal is KILL or TERM.
	Signal string `json:"signal"`
	// Epoch is the incarnation stopped.
	Epoch int `json:"epoch"`
	// UpMs is how long after its first acknowledgement it was stopped.
	UpMs float64 `json:"up_ms"`
	// Acked counts what that incarnation acknowledged.
	Acked int64 `json:"acked"`
	// Lost counts those not found at the end.
	Lost int64 `json:"lost"`
	// RecoveryMs is the restart's time to the first acknowledgement.
	RecoveryMs float64 `json:"recovery_ms"`
}

// Met says whether the result meets the target of its configuration:
// nothing acknowledged lost and no offset reused or reassigned, at the
// process-crash and power-loss levels; nothing lost in the SIGTERM cycle
// at any level. A replication result is held to ReplicationResult.Met.
func (r *Result) Met() bool {
	if r.Replication != nil {
		return r.Replication.Met() && len(r.ReadBackShort) == 0
	}
	if r.LostInTerm > 0 {
		return false
	}
	if r.Level() == "memory" {
		return true
	}
	return r.Lost == 0 && r.OffsetsReused == 0 && r.AckedReassigned == 0 && r.SeenLost == 0
}

// Level is the durability level the target is held to: the broker's
// statement if it made one, else the one computed from the options.
func (r *Result) Level() string {
	if r.BrokerDurability != "" {
		return r.BrokerDurability
	}
	return r.Durability
}

// Stats are nearest-rank percentiles of a few samples.
type Stats struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// statsOf summarises durations in milliseconds.
func statsOf(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	ms := make([]float64, len(ds))
	for i, d := range ds {
		ms[i] = float64(d) / 1e6
	}
	sort.Float64s(ms)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(ms)))) - 1
		return ms[min(max(i, 0), len(ms)-1)]
	}
	return Stats{Count: len(ms), P50: rank(0.50), P99: rank(0.99), Max: ms[len(ms)-1]}
}
