package chaos

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var long = flag.Bool("long", false, "run the long chaos run: every fault kind, many cycles (tens of minutes)")

// samsaBin is $SAMSA_BIN (make test sets it); the run is skipped without.
func samsaBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("SAMSA_BIN")
	if p == "" {
		t.Skip("SAMSA_BIN is not set: the chaos run starts samsa processes (make test sets it; or go build -o /tmp/samsa ./cmd/samsa && SAMSA_BIN=/tmp/samsa go test ./loadgen/chaos)")
	}
	return p
}

func checkRun(t *testing.T, o Options, timeout time.Duration) {
	t.Helper()
	o.Progress = testWriter{t}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Markdown())
	if len(res.Cycles) != o.Cycles {
		t.Errorf("%d cycles ran, want %d", len(res.Cycles), o.Cycles)
	}
	if res.Acked == 0 {
		t.Errorf("nothing acknowledged")
	}
	for _, c := range res.Cycles {
		if c.At.IsZero() {
			t.Errorf("cycle %d has no fault time", c.Cycle)
		}
	}
	// The data is gone, the logs stay (KeepDir off).
	ents, err := os.ReadDir(res.Dir)
	if err != nil {
		t.Fatalf("the run's log dir: %v", err)
	}
	logs := 0
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("data left in %s: %s", res.Dir, e.Name())
		} else if filepath.Ext(e.Name()) == ".log" {
			logs++
		}
	}
	if logs < 2*replicas+1 {
		t.Errorf("%d logs kept in %s, want one per process (%d)", logs, res.Dir, 2*replicas+1)
	}
	if res.Lost != 0 {
		t.Errorf("%d acknowledged messages lost (seed %d): %v", res.Lost, res.Seed, res.LostSample)
	}
	if res.AckedReassigned != 0 {
		t.Errorf("%d acknowledged offsets hold another message (seed %d)", res.AckedReassigned, res.Seed)
	}
	if len(res.TwoMasters) != 0 {
		t.Errorf("two masters in one epoch (seed %d): %+v", res.Seed, res.TwoMasters)
	}
}

// TestShortChaos kills the master and the controller leader: nothing
// acknowledged is lost, no offset is shared, no epoch has two masters.
func TestShortChaos(t *testing.T) {
	bin := samsaBin(t)
	checkRun(t, Options{Binary: bin, Dir: t.TempDir(), Cycles: 2, Faults: []string{KillMaster, KillLeader},
		ElectionTimeout: 2 * time.Second, MinUp: 500 * time.Millisecond, MaxUp: time.Second}, 5*time.Minute)
}

// TestLongChaos (-long) runs every fault kind many times.
func TestLongChaos(t *testing.T) {
	if !*long {
		t.Skip("the long chaos run: go test ./loadgen/chaos -long (with SAMSA_BIN)")
	}
	bin := samsaBin(t)
	checkRun(t, Options{Binary: bin, Dir: t.TempDir(), Cycles: 6 * len(AllFaults)}, 2*time.Hour)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}

// TestGroupCrashChaos: the whole group is killed under load and one slave
// comes back without its unsynced tail, first. Nothing acknowledged is
// lost: the controller elects a replica that kept it, and no replica cuts
// its good copy to match the damaged one.
func TestGroupCrashChaos(t *testing.T) {
	bin := samsaBin(t)
	checkRun(t, Options{Binary: bin, Dir: t.TempDir(), Cycles: 2, Faults: []string{CrashGroup},
		ElectionTimeout: 2 * time.Second, MinUp: 500 * time.Millisecond, MaxUp: time.Second}, 5*time.Minute)
}

// TestDamagedSlaveChaos: a slave's sealed segment is damaged at rest and
// the master killed: nothing acknowledged is lost (the damaged record is
// repaired from a peer replica when read), nothing corrupt is served.
func TestDamagedSlaveChaos(t *testing.T) {
	bin := samsaBin(t)
	checkRun(t, Options{Binary: bin, Dir: t.TempDir(), Cycles: 2, Faults: []string{DamageSlave},
		ElectionTimeout: 2 * time.Second, MinUp: 500 * time.Millisecond, MaxUp: time.Second}, 5*time.Minute)
}
