package sim

import (
	"errors"
	"os"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/samsamq/samsa/storage"
)

// seeds is how many seeds TestReplication runs: SAMSA_SIM_SEEDS, or a few
// in make test (make sim runs many).
func seeds(t *testing.T) int {
	if v := os.Getenv("SAMSA_SIM_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SAMSA_SIM_SEEDS=%q: want a count", v)
		}
		return n
	}
	return 8
}

// TestReplication runs the replication simulation over seeds 1..N, each
// in its own synctest bubble (virtual time), async and sync flush; a
// broken invariant fails with the seed and the trace that replay it
// (SAMSA_SIM_SEED=N runs that seed alone).
func TestReplication(t *testing.T) {
	first, n := int64(1), seeds(t)
	if v := os.Getenv("SAMSA_SIM_SEED"); v != "" {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("SAMSA_SIM_SEED=%q: %v", v, err)
		}
		first, n = s, 1
	}
	for _, flush := range []storage.FlushPolicy{storage.FlushAsync, storage.FlushSync} {
		for seed := first; seed < first+int64(n); seed++ {
			t.Run(flush.String()+"/seed="+strconv.FormatInt(seed, 10), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					res, err := Replication(Options{Seed: seed, Flush: flush})
					var v *Violation
					if errors.As(err, &v) {
						t.Fatal(v)
					}
					if err != nil {
						t.Fatal(err)
					}
					if res.Acked == 0 {
						t.Fatalf("seed %d: nothing acknowledged in %d steps:\n%v", seed, 60, res.Trace)
					}
					t.Logf("seed %d: %d acknowledged, %d faults", seed, res.Acked, res.Faults)
				})
			})
		}
	}
}

// TestReplicationCatchesLoss: with the master made to lose its last
// acknowledged record at each crash, some seed's run reports the
// acknowledged-record invariant broken, with its seed and trace: the
// checks can see a loss.
func TestReplicationCatchesLoss(t *testing.T) {
	for seed := int64(1); seed <= 50; seed++ {
		var v *Violation
		synctest.Test(t, func(t *testing.T) {
			_, err := Replication(Options{Seed: seed, sabotage: true})
			errors.As(err, &v)
		})
		if v != nil {
			if v.Invariant != InvAckedKept || v.Seed != seed || len(v.Trace) == 0 {
				t.Fatalf("seed %d: %v", seed, v)
			}
			return
		}
	}
	t.Fatal("50 sabotaged runs and no violation reported")
}
