package durability

// ReplicationResult is the replication loop's outcome: one KillCheck per
// kill of the master, and their summary.
type ReplicationResult struct {
	// Role is the master's brokerRole.
	Role string `json:"role"`
	// Checks has one entry per kill.
	Checks []KillCheck `json:"checks"`
	// Kills counts them.
	Kills int `json:"kills"`
	// Missing sums, over the kills, the acknowledged messages the slave
	// did not hold just after the kill; MaxMissing is the most at one
	// kill, KillsWithMissing how many kills had any.
	Missing          int64 `json:"missing"`
	MaxMissing       int64 `json:"max_missing"`
	KillsWithMissing int   `json:"kills_with_missing"`
	// BeyondLag sums KillCheck.BeyondLag (must be 0); KillsOverLag counts
	// the kills that had any.
	BeyondLag    int64 `json:"beyond_lag"`
	KillsOverLag int   `json:"kills_over_lag"`
	// Duplicates and AckedReassigned are the most one check found.
	Duplicates      int64 `json:"duplicates"`
	AckedReassigned int64 `json:"acked_reassigned"`
	// ReadShort counts checks that could not read a queue to its end.
	ReadShort int `json:"read_short"`
	// MaxLagBytes and MaxLagMs are the largest lag sampled just before a
	// kill; RunMaxLagBytes and RunMaxLagMs the largest the poller saw
	// during the whole run (LagSamples samples).
	MaxLagBytes    int64 `json:"max_lag_bytes"`
	MaxLagMs       int64 `json:"max_lag_ms"`
	RunMaxLagBytes int64 `json:"run_max_lag_bytes"`
	RunMaxLagMs    int64 `json:"run_max_lag_ms"`
	LagSamples     int64 `json:"lag_samples"`
	// RecordBytes is one message's stored size.
	RecordBytes int64 `json:"record_bytes"`
	// SlaveBackMs is restart → the slave listed by the master again.
	SlaveBackMs Stats `json:"slave_back_ms"`
	// FinalMissing, FinalDuplicates and FinalAckedReassigned are the last
	// read's, once the slave caught up with the restarted master: every
	// acknowledged message must be there then, in both roles.
	FinalMissing         int64 `json:"final_missing"`
	FinalDuplicates      int64 `json:"final_duplicates"`
	FinalAckedReassigned int64 `json:"final_acked_reassigned"`
}

// summarize fills the totals from Checks.
func (r *ReplicationResult) summarize() {
	r.Kills = len(r.Checks)
	for i := range r.Checks {
		k := &r.Checks[i]
		r.Missing += k.Missing
		r.MaxMissing = max(r.MaxMissing, k.Missing)
		if k.Missing > 0 {
			r.KillsWithMissing++
		}
		r.BeyondLag += k.BeyondLag
		if k.BeyondLag > 0 {
			r.KillsOverLag++
		}
		r.Duplicates = max(r.Duplicates, k.Duplicates)
		r.AckedReassigned = max(r.AckedReassigned, k.AckedReassigned)
		if len(k.ReadShort) > 0 {
			r.ReadShort++
		}
		r.MaxLagBytes = max(r.MaxLagBytes, k.Lag.BehindBytes)
		r.MaxLagMs = max(r.MaxLagMs, k.Lag.LagMs)
	}
}

// Met says whether every kill's check met its role's target
// (KillCheck.Met: SYNC_MASTER loses no acknowledged message; neither role
// loses more than the lag before the kill) and the slave held everything
// once it caught up.
func (r *ReplicationResult) Met() bool {
	for i := range r.Checks {
		if !r.Checks[i].Met(r.Role) {
			return false
		}
	}
	return r.FinalMissing == 0 && r.FinalDuplicates == 0 && r.FinalAckedReassigned == 0
}
