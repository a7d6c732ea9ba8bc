package loadgen

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadServerStatsSelf reads this process: at least the test binary's
// own open files and some RSS.
func TestReadServerStatsSelf(t *testing.T) {
	st := ReadServerStats(ServerProcess{Self: true})
	if st.Error != "" {
		t.Skipf("no /proc here: %s", st.Error)
	}
	require.Equal(t, 1, st.Processes)
	require.Positive(t, st.OpenFiles)
	require.Positive(t, st.RSSBytes)
}

// TestReadServerStatsGroup sums a process group's members from a fake
// /proc, skipping processes of other groups and a comm with spaces and ')'.
func TestReadServerStatsGroup(t *testing.T) {
	proc := t.TempDir()
	mk := func(pid, stat string, fds int, rssKB string) {
		d := filepath.Join(proc, pid)
		require.NoError(t, os.MkdirAll(filepath.Join(d, "fd"), 0o755))
		for i := 0; i < fds; i++ {
			require.NoError(t, os.WriteFile(filepath.Join(d, "fd", string(rune('0'+i))), nil, 0o644))
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "status"), []byte("Name:\tx\nVmRSS:\t"+rssKB+" kB\n"), 0o644))
	}
	mk("100", "100 (beam.smp) S 1 100 100 0", 3, "1000")
	mk("101", "101 (a) b) c) S 100 100 100 0", 2, "24")
	mk("200", "200 (other) S 1 200 200 0", 5, "9999")
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "self"), 0o755))

	st := readServerStats(proc, ServerProcess{PGID: 100})
	require.Empty(t, st.Error)
	require.Equal(t, 2, st.Processes)
	require.EqualValues(t, 5, st.OpenFiles)
	require.EqualValues(t, 1024*1024, st.RSSBytes)

	gone := readServerStats(proc, ServerProcess{PGID: 300})
	require.Contains(t, gone.Error, "no process in group 300")
}

// TestExpandQuickLeavesOutFullOnly: a full_only cell runs only in the
// full form, and a quick result drops its comparisons.
func TestExpandQuickLeavesOutFullOnly(t *testing.T) {
	e, err := LoadExperiment("../experiments/queues-scaling.json")
	require.NoError(t, err)
	quick, err := e.Expand(true)
	require.NoError(t, err)
	full, err := e.Expand(false)
	require.NoError(t, err)
	require.Len(t, quick, 4)
	require.Len(t, full, 32)
	for _, c := range quick {
		require.Equal(t, "samsa", c.Driver)
		require.Equal(t, 20, c.Workload.Topics*c.Workload.Producers)
	}
	cs := quickComparisons(e.Compare, quick, true)
	require.Len(t, cs, 2)
}

// slowTopics never finishes making a topic until its context ends.
type slowTopics struct{ *memDriver }

func (slowTopics) CreateTopic(ctx context.Context, _ string, _ int) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestSetupTimeout: a system that cannot make the topics in time fails
// the run with a clear error instead of holding it.
func TestSetupTimeout(t *testing.T) {
	w := Workload{Topics: 3, QueuesPerTopic: 10000, SetupTimeout: 50 * time.Millisecond, Duration: time.Second}
	_, err := Run(context.Background(), slowTopics{newMemDriver()}, w, Options{Out: io.Discard})
	require.ErrorContains(t, err, "could not create 3 topics × 10000 queues within the setup timeout 50ms (topic 1")
	w.SetupTimeout = -1
	require.ErrorContains(t, w.Validate(), "setup timeout must be >= 0")
}
