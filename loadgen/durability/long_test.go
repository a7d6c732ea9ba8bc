package durability

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

var long = flag.Bool("long", false, "run the kill loop against every backend × flush policy (minutes)")

// samsaBinary builds cmd/samsa once per test binary (or takes $SAMSA_BIN).
func samsaBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SAMSA_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "samsa-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "samsa")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/samsamq/samsa/cmd/samsa").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// testDir is where runs keep their data: the repository's .benchdata, on
// a real disk (a tmpfs /tmp has no O_DIRECT), or $SAMSA_TEST_DIR.
func testDir() string {
	if d := os.Getenv("SAMSA_TEST_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", ".benchdata", "durability-test")
}

// runLoop runs a short kill loop and fails the test on a missed target.
func runLoop(t *testing.T, backend, flush string, kills int) *Result {
	t.Helper()
	return runLoopOptions(t, Options{Backend: backend, Flush: flush, Kills: kills})
}

func runLoopOptions(t *testing.T, o Options) *Result {
	t.Helper()
	backend, flush := o.Backend, o.Flush
	res, err := runTestLoop(t, o)
	if err != nil {
		if backend == "uring" && strings.Contains(err.Error(), "uring") {
			t.Skipf("io_uring unavailable here: %v", err)
		}
		t.Fatal(err)
	}
	t.Logf("%s/%s seed %d: durability %s; %d kills, %d acked, %d lost (%d in the TERM cycle), %d offsets reused, %d acked offsets reassigned, %d seen then lost; recovery p50 %.0f ms max %.0f ms",
		backend, flush, res.Seed, res.Level(), res.Kills, res.Acked, res.Lost, res.LostInTerm, res.OffsetsReused,
		res.AckedReassigned, res.SeenLost, res.RecoveryMs.P50, res.RecoveryMs.Max)
	if res.Acked == 0 || res.Stored == 0 {
		t.Fatalf("nothing acknowledged or read back: %+v", res.Tally)
	}
	if !res.Met() {
		t.Fatalf("%s/%s (durability %s): target missed: lost %d %v, offsets reused %d, acked offsets reassigned %d, seen then lost %d, lost in the TERM cycle %d",
			backend, flush, res.Level(), res.Lost, res.LostSample, res.OffsetsReused, res.AckedReassigned, res.SeenLost, res.LostInTerm)
	}
	return res
}

// runTestLoop runs a kill loop of o with the tests' binary, data dir,
// progress and shorter up times, bounded to 5 minutes.
func runTestLoop(t *testing.T, o Options) (*Result, error) {
	o.Binary, o.Dir, o.Progress = samsaBinary(t), testDir(), testWriter{t}
	o.MinUp, o.MaxUp = 200*time.Millisecond, time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return Run(ctx, o)
}

// TestKillLoopLong kills every backend × flush policy's broker a few
// times (-long only): nothing acknowledged may be lost, no offset reused.
func TestKillLoopLong(t *testing.T) {
	if !*long {
		t.Skip("kill loop against real processes: run with -long")
	}
	for _, backend := range []string{"pwrite", "mmap", "odirect", "uring"} {
		for _, flush := range []string{"async", "sync"} {
			t.Run(backend+"/"+flush, func(t *testing.T) { runLoop(t, backend, flush, 5) })
		}
	}
	// The control: acknowledged from the write buffer (durability
	// memory), a kill loses what the buffer held. A loop that finds
	// nothing here has gone blind.
	t.Run("pwrite/async/ack-buffered", func(t *testing.T) {
		res := runLoopOptions(t, Options{Backend: "pwrite", Flush: "async", AckBuffered: true, Kills: 5})
		if res.Level() != "memory" || res.Lost == 0 {
			t.Fatalf("control: durability %s, %d lost in %d kills: want memory and losses", res.Level(), res.Lost, res.Kills)
		}
	})
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// TestKillLoopSmoke is the loop at its smallest (mmap, sync flush, two
// kills, about 6 s), so that make test keeps the instrument working. It
// runs when $SAMSA_BIN names a built binary (make test sets it after
// building), not otherwise: building cmd/samsa from a cold cache takes
// minutes here, too long for the default go test.
func TestKillLoopSmoke(t *testing.T) {
	if testing.Short() || *long || os.Getenv("SAMSA_BIN") == "" {
		t.Skip("needs $SAMSA_BIN (make test sets it); -long runs the full matrix")
	}
	runLoop(t, "mmap", "sync", 2)
}
