package durability

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen/killloop"
)

// TestShippedExperimentLoads keeps experiments/durability-kill.json
// loadable: 4 backends × 2 flush policies, pwrite/async without its
// stage (a cell's own props) and the control, 50 kills, 3 with --quick.
func TestShippedExperimentLoads(t *testing.T) {
	e, err := LoadExperiment(filepath.Join("..", "..", "experiments", "durability-kill.json"))
	require.NoError(t, err)
	full, err := e.Expand(false)
	require.NoError(t, err)
	quick, err := e.Expand(true)
	require.NoError(t, err)
	require.Len(t, full, 10)
	require.True(t, full[9].AckBuffered && full[9].ExpectLoss, "the last cell is the AckBuffered control")
	require.Equal(t, []string{"stageAppends=false"}, full[8].Options("samsa", "", 1).Props, "a cell's props reach the broker")
	require.Equal(t, "pwrite/async", full[0].Label)
	require.Equal(t, 50, full[0].Settings.Kills)
	require.Equal(t, 3, quick[0].Settings.Kills)
	require.Equal(t, 300*time.Millisecond, time.Duration(quick[0].Settings.MinUp))
	o := full[1].Options("samsa", "", 7)
	require.Equal(t, "sync", o.Flush)
	require.Equal(t, int64(16<<20), o.SegmentSize)
}

// TestExperimentRejectsTyposAndBadCells: an unknown field or an unknown
// backend is an error when the file loads, not minutes into a run.
func TestExperimentRejectsTyposAndBadCells(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"typo":    `{"name":"x","kind":"durability-kill","base":{"kils":3},"backends":["mmap"],"flushes":["sync"]}`,
		"backend": `{"name":"x","kind":"durability-kill","backends":["tape"],"flushes":["sync"]}`,
		"kind":    `{"name":"x","kind":"e2e","backends":["mmap"],"flushes":["sync"]}`,
		"empty":   `{"name":"x","kind":"durability-kill"}`,
	} {
		p := filepath.Join(dir, name+".json")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		_, err := LoadExperiment(p)
		require.Error(t, err, name)
	}
}

// TestMarkdownMarksMisses renders a met cell, a missed one and a failed
// one, with the target and the durability notes.
func TestMarkdownMarksMisses(t *testing.T) {
	spec := func(b, f string) CellSpec { return CellSpec{Label: b + "/" + f, Backend: b, Flush: f} }
	r := &ExperimentResult{Header: resultfile.Header{Experiment: "durability-kill", Start: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)}, Seed: 42,
		Cells: []CellResult{
			{CellSpec: spec("mmap", "sync"), Durability: "power-loss", DurabilityNote: "durability=power-loss (mmap ...)",
				Result: &Result{Durability: "power-loss", Kills: 3, Tally: killloop.Tally{Sent: 104, Acked: 100}, RecoveryMs: Stats{Count: 3, P50: 200, P99: 400, Max: 400}}},
			{CellSpec: spec("pwrite", "async"), Durability: "process-crash", DurabilityNote: "durability=process-crash (pwrite ...)",
				Result: &Result{Durability: "process-crash", Kills: 3, KillsWithLoss: 3, Tally: killloop.Tally{Sent: 100, Acked: 100, Lost: 7, AckedReassigned: 7}}},
			{CellSpec: spec("uring", "sync"), Durability: "power-loss", DurabilityNote: "durability=power-loss (mmap ...)",
				Failed: "broker exited before acknowledging a send\nmore"},
		}}
	md := r.Markdown()
	require.Contains(t, md, "| mmap/sync | power-loss | 3 | 104 / 100 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 200 / 400 / 400 | 0 | met |")
	require.Contains(t, md, "| pwrite/async | process-crash | 3 | 100 / 100 | **7** | 0 | 3 | 0 | **7** | 0 | 0 |")
	require.Contains(t, md, "**MISSED**")
	require.Contains(t, md, "| uring/sync | power-loss | failed: broker exited before acknowledging a send |")
	require.Equal(t, 2, strings.Count(md, "- durability="))
	require.Equal(t, []string{"pwrite/async", "uring/sync"}, r.Missed())

	// a control is met by losing, missed by losing nothing
	ctl := CellResult{CellSpec: CellSpec{Label: "c", ExpectLoss: true, AckBuffered: true},
		Result: &Result{Durability: "memory", Tally: killloop.Tally{Lost: 3}}}
	require.True(t, ctl.Met())
	ctl.Result.Lost = 0
	require.False(t, ctl.Met())
}
