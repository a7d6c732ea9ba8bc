package durability

import (
	"cmp"
	"context"
	"io"
	"time"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen/killloop"
)

// ExperimentResult is what a durability experiment writes under results/.
type ExperimentResult struct {
	resultfile.Header
	Seed  uint64       `json:"seed"`
	Cells []CellResult `json:"cells"`
	// ElapsedSeconds is the whole run's wall time.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
}

// CellResult is one cell's outcome: a Result, or why there is none.
type CellResult struct {
	CellSpec
	Settings Settings `json:"settings"`
	// Durability is the store's level for the cell, known even when the
	// run failed.
	Durability     string `json:"durability"`
	DurabilityNote string `json:"durability_note"`
	// Failed is why the loop could not run to the end (a broker that did
	// not start or recover, ...).
	Failed string  `json:"failed,omitempty"`
	Result *Result `json:"result,omitempty"`
}

// Met says whether the cell met its target (false when it failed): a
// control must have lost something to the kills, and nothing to SIGTERM
// (a replication control: something missing on the slave, nothing beyond
// the lag, everything there after the catch-up).
func (c *CellResult) Met() bool {
	if c.Failed != "" || c.Result == nil {
		return false
	}
	if rep := c.Result.Replication; rep != nil && c.ExpectLoss {
		return rep.Missing > 0 && c.Result.Met()
	}
	if c.ExpectLoss {
		return c.Result.Lost > 0 && c.Result.LostInTerm == 0
	}
	return c.Result.Met()
}

// RunOptions are an experiment run's plumbing.
type RunOptions struct {
	// Binary is the samsa binary the cells run (required).
	Binary string
	// Dir is where cells make their data dirs (see Options.Dir).
	Dir string
	// Quick applies the experiment's quick settings.
	Quick bool
	// Seed overrides the experiment's seed (0: the file's, or the clock).
	Seed uint64
	// Progress gets the cells' progress lines (default io.Discard).
	Progress io.Writer
}

// RunExperiment runs every cell in turn. A cell that fails is recorded
// and the next one runs; only ctx ending stops the run early.
func RunExperiment(ctx context.Context, e *Experiment, ro RunOptions) (*ExperimentResult, error) {
	cells, err := e.Expand(ro.Quick)
	if err != nil {
		return nil, err
	}
	ro.Progress = cmp.Or(ro.Progress, io.Discard)
	seed := killloop.Seed(cmp.Or(ro.Seed, e.Seed))
	res := &ExperimentResult{Header: e.Header(ro.Quick), Seed: seed}
	lab.Progressf(ro.Progress, "== %s: %d cells, seed %d (cell i uses seed+i)\n", e.Name, len(cells), seed)
	for i, c := range cells {
		o := c.Options(ro.Binary, ro.Dir, seed+uint64(i))
		o.Progress = lab.Indent(ro.Progress, "   ")
		cr := CellResult{CellSpec: c.CellSpec, Settings: c.Settings,
			Durability: o.Durability().String(), DurabilityNote: o.DurabilityNote()}
		lab.Progressf(ro.Progress, "== %s: cell %d/%d: %s (durability %s)\n", e.Name, i+1, len(cells), c.Label, cr.Durability)
		r, err := Run(ctx, o)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			cr.Failed = resultfile.RelativePaths(err.Error())
			lab.Progressf(ro.Progress, "   failed: %v\n", err)
		}
		cr.Result = r
		res.Cells = append(res.Cells, cr)
	}
	res.ElapsedSeconds = time.Since(res.Start).Seconds()
	return res, nil
}

// Missed lists the cells that failed or missed their target.
func (r *ExperimentResult) Missed() []string {
	var out []string
	for i := range r.Cells {
		if c := &r.Cells[i]; !c.Met() {
			out = append(out, c.Label)
		}
	}
	return out
}

// WriteResult writes res as <dir>/<experiment>/<host>-<UTC start>.json and
// returns the path.
func WriteResult(dir string, res *ExperimentResult) (string, error) {
	return res.WriteResult(dir, res)
}

// ReadResult reads a file written by WriteResult.
func ReadResult(path string) (*ExperimentResult, error) {
	return resultfile.Read[ExperimentResult](path)
}
