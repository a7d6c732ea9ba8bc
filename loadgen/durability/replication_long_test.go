package durability

import (
	"os"
	"testing"
	"time"
)

// runReplicationLoop runs a short replication kill loop and fails the
// test when a kill's check misses its role's target: under SYNC_MASTER an
// acknowledged message missing on the slave, under either role a loss the
// lag before the kill does not account for, or anything missing once the
// slave caught up.
func runReplicationLoop(t *testing.T, role, flush string, kills int) *Result {
	t.Helper()
	return runReplicationLoopOptions(t, Options{Role: role, Backend: "pwrite", Flush: flush, Kills: kills})
}

func runReplicationLoopOptions(t *testing.T, o Options) *Result {
	t.Helper()
	role, flush, kills := o.Role, o.Flush, o.Kills
	res, err := runTestLoop(t, o)
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Replication
	t.Logf("%s %s seed %d: %d kills, %d acked, %d stored not replicated; missing on the slave %d (%d beyond the lag), %d duplicates, after catch-up %d; max lag before a kill %d B / %d ms; recovery p50 %.0f ms max %.0f ms",
		role, flush, res.Seed, rep.Kills, res.Acked, res.StoredNotAcked, rep.Missing, rep.BeyondLag, rep.Duplicates,
		rep.FinalMissing, rep.MaxLagBytes, rep.MaxLagMs, res.RecoveryMs.P50, res.RecoveryMs.Max)
	if res.Acked == 0 || res.Stored == 0 || rep.Kills != kills {
		t.Fatalf("nothing acknowledged or read from the slave, or kills missing: %d kills, %+v", rep.Kills, res.Tally)
	}
	for _, k := range rep.Checks {
		if !k.Met(role) {
			t.Errorf("%s (seed %d) kill %d: %d acknowledged missing on the slave (%d beyond the lag: slave acked %d, %d B behind), %d duplicates, %d reassigned, short %v; e.g. %v",
				role, res.Seed, k.Kill, k.Missing, k.BeyondLag, k.Lag.AckOffset, k.Lag.BehindBytes, k.Duplicates, k.AckedReassigned, k.ReadShort, k.MissingSample)
		}
	}
	if !res.Met() {
		t.Fatalf("%s (seed %d): target missed; after catch-up %d missing %v, %d duplicates, %d reassigned, short %v",
			role, res.Seed, rep.FinalMissing, res.LostSample, rep.FinalDuplicates, rep.FinalAckedReassigned, res.ReadBackShort)
	}
	return res
}

// TestReplicationKillLoopLong kills the master of a SYNC_MASTER and of an
// ASYNC_MASTER pair a few times each, under async and sync flush (-long
// only).
func TestReplicationKillLoopLong(t *testing.T) {
	if !*long {
		t.Skip("replication kill loop against real processes: run with -long")
	}
	for _, role := range []string{"SYNC_MASTER", "ASYNC_MASTER"} {
		for _, flush := range []string{"async", "sync"} {
			t.Run(role+"/"+flush, func(t *testing.T) { runReplicationLoop(t, role, flush, 4) })
		}
	}
}

// TestReplicationKillLoopSmoke is the replication loop at its smallest:
// SYNC_MASTER, one kill, for make test (with $SAMSA_BIN, as
// TestKillLoopSmoke).
func TestReplicationKillLoopSmoke(t *testing.T) {
	if testing.Short() || *long || os.Getenv("SAMSA_BIN") == "" {
		t.Skip("needs $SAMSA_BIN (make test sets it); -long runs more kills")
	}
	runReplicationLoop(t, "SYNC_MASTER", "async", 1)
}

// TestReplicationPausedSlaveLosesWithinLag is the control (-long only):
// an ASYNC_MASTER whose slave is stopped before each kill acknowledges
// what never reaches the slave; the check must see it, and each kill's
// loss must lie beyond what the slave had acknowledged in the lag sample.
func TestReplicationPausedSlaveLosesWithinLag(t *testing.T) {
	if !*long {
		t.Skip("replication kill loop against real processes: run with -long")
	}
	res := runReplicationLoopOptions(t, Options{Role: "ASYNC_MASTER", Backend: "pwrite", Flush: "async", Kills: 3,
		PauseSlave: 500 * time.Millisecond})
	if res.Replication.Missing == 0 {
		t.Fatalf("control: nothing missing on a slave paused before %d kills: the check has gone blind", res.Replication.Kills)
	}
}
